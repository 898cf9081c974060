/// Why an audio file could not be read or written. Every case names the file; `description`
/// is one line for the user.
public enum SoundFileError: Error, Equatable, CustomStringConvertible {
    case notFound(path: String)
    case isDirectory(path: String)
    case unreadable(path: String, reason: String)
    case empty(path: String)
    /// libsndfile does not recognise the contents as any format it reads.
    case unrecognisedFormat(path: String, detail: String)
    /// The header is recognised but broken (cut short, inconsistent).
    case malformed(path: String, detail: String)
    /// The container is known but its sample encoding is not supported.
    case unsupportedEncoding(path: String, detail: String)
    case noChannels(path: String)
    case tooManyChannels(path: String, channels: Int)
    case unsupportedSampleRate(path: String, rate: Int)
    case channelOutOfRange(path: String, channel: Int, channels: Int)
    /// Decoding failed before any audio could be read.
    case readFailed(path: String, detail: String)
    case cannotCreate(path: String, detail: String)
    case unknownOutputType(path: String)
    case unsupportedOutputEncoding(path: String, detail: String)
    case writeFailed(path: String, detail: String)

    /// The supported range of sample rates, in Hz.
    public static let sampleRates = 8_000...192_000
    /// The supported range of channel counts.
    public static let channelCounts = 1...8

    public var path: String {
        switch self {
        case .notFound(let p), .isDirectory(let p), .unreadable(let p, _), .empty(let p),
             .unrecognisedFormat(let p, _), .malformed(let p, _), .unsupportedEncoding(let p, _),
             .noChannels(let p), .tooManyChannels(let p, _), .unsupportedSampleRate(let p, _),
             .channelOutOfRange(let p, _, _), .readFailed(let p, _), .cannotCreate(let p, _),
             .unknownOutputType(let p), .unsupportedOutputEncoding(let p, _), .writeFailed(let p, _):
            return p
        }
    }

    /// What is wrong, without the path.
    public var reason: String {
        switch self {
        case .notFound: return "no such file"
        case .isDirectory: return "is a directory, not an audio file"
        case .unreadable(_, let r): return "cannot be read: \(r)"
        case .empty(let p): return p == SoundFileReader.standardInputName ? "empty input (nothing was written to it)" : "empty file (0 bytes)"
        case .unrecognisedFormat(_, let d): return "not an audio format Hark can read (\(d))"
        case .malformed(_, let d): return "malformed or truncated header (\(d))"
        case .unsupportedEncoding(_, let d): return "unsupported sample encoding (\(d))"
        case .noChannels: return "header declares 0 channels"
        case .tooManyChannels(_, let c):
            return "\(c) channels; Hark reads \(Self.channelCounts.lowerBound)–\(Self.channelCounts.upperBound)"
        case .unsupportedSampleRate(_, let r):
            return "sample rate \(r) Hz is outside the supported \(Self.sampleRates.lowerBound)–\(Self.sampleRates.upperBound) Hz"
        case .channelOutOfRange(_, let c, let n): return "channel \(c) requested, but the file has \(n)"
        case .readFailed(_, let d): return "decoding failed: \(d)"
        case .cannotCreate(_, let d): return "cannot create: \(d)"
        case .unknownOutputType(let p):
            return "cannot tell the output format from the name '\(p.split(separator: "/").last ?? "")'; use .wav, .flac, .ogg, .aiff or .raw"
        case .unsupportedOutputEncoding(_, let d): return d
        case .writeFailed(_, let d): return "writing failed: \(d)"
        }
    }

    public var description: String { "\(path): \(reason)" }
}

/// Something wrong with a file that did not stop it from being read. The audio that is there
/// was read; the warning says what is missing.
public enum SoundFileWarning: Equatable, CustomStringConvertible, Sendable {
    /// The header declares more audio than the file holds (a recorder stopped mid-write).
    case truncated(path: String, declaredFrames: Int64, availableFrames: Int64, sampleRate: Int)
    /// Decoding stopped early with an error; what came before it was read.
    case decodingStopped(path: String, atFrame: Int64, declaredFrames: Int64, sampleRate: Int, detail: String)
    /// The header was never finalised (data length 0) but audio follows; it was read as raw
    /// samples in the format the header describes.
    case unfinalisedHeader(path: String, bytes: Int64)

    public var description: String {
        func seconds(_ frames: Int64, _ rate: Int) -> String {
            String(cFormat: "%.3f s", Double(frames) / Double(max(rate, 1)))
        }
        switch self {
        case let .truncated(path, declared, available, rate):
            return "\(path): header declares \(seconds(declared, rate)) (\(declared) frames) but the file holds "
                + "\(seconds(available, rate)) (\(available) frames); analysed what is there, "
                + "\(seconds(declared - available, rate)) missing"
        case let .decodingStopped(path, at, declared, rate, detail):
            return "\(path): decoding stopped at \(seconds(at, rate)) of \(seconds(declared, rate)) (\(detail)); "
                + "analysed what was read, \(seconds(declared - at, rate)) missing"
        case let .unfinalisedHeader(path, bytes):
            return "\(path): header declares no audio data but \(bytes) bytes follow it (recording not finalised); "
                + "read them as the header's sample format"
        }
    }
}
