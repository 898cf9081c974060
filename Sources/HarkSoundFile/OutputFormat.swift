import CSndFile

/// The layout of headerless samples (little-endian, interleaved), which a raw input cannot tell.
public struct RawLayout: Sendable, Equatable {
    public var sampleRate: Int
    public var channels: Int
    public var encoding: OutputFormat.Encoding

    public init(sampleRate: Int, channels: Int, encoding: OutputFormat.Encoding) {
        (self.sampleRate, self.channels, self.encoding) = (sampleRate, channels, encoding)
    }
}

/// A file type and sample encoding Hark can write.
public struct OutputFormat: Equatable, Sendable, CustomStringConvertible {
    public enum Container: String, Sendable, CaseIterable {
        case wav, flac, ogg, aiff, raw
    }

    public enum Encoding: String, Sendable, CaseIterable {
        case s16, s24, s32, f32, f64, vorbis

        /// Integer encodings clip; float ones carry values beyond full scale.
        public var isInteger: Bool { [.s16, .s24, .s32].contains(self) }
    }

    public var container: Container
    public var encoding: Encoding

    public init(container: Container, encoding: Encoding) {
        self.container = container
        self.encoding = encoding
    }

    /// The format for an output path, from its extension; `encoding` defaults to 16-bit PCM
    /// (Vorbis for .ogg). `.raw` is headerless little-endian, as ALSA's `file` plugin reads.
    /// `-` (standard output) is WAV.
    public static func forPath(_ path: String, encoding: Encoding? = nil) throws(SoundFileError) -> OutputFormat {
        let ext = path == "-" ? "wav" : path.split(separator: "/").last.flatMap { name -> Substring? in
            guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return nil }
            return name[name.index(after: dot)...]
        }.map { $0.lowercased() } ?? ""
        let container: Container
        switch ext {
        case "wav", "wave": container = .wav
        case "flac": container = .flac
        case "ogg", "oga": container = .ogg
        case "aif", "aiff": container = .aiff
        case "raw", "pcm": container = .raw
        default: throw .unknownOutputType(path: path)
        }
        let chosen = encoding ?? (container == .ogg ? .vorbis : .s16)
        let format = OutputFormat(container: container, encoding: chosen)
        guard format.isValid else {
            throw .unsupportedOutputEncoding(path: path, detail: "\(container.rawValue.uppercased()) cannot hold \(chosen.rawValue) samples")
        }
        return format
    }

    /// The format matching a libsndfile format code, if Hark writes it.
    init?(sndfileFormat code: Int32) {
        let major = Int(code) & SF_FORMAT_TYPEMASK, minor = Int(code) & SF_FORMAT_SUBMASK
        let containers: [Int: Container] = [SF_FORMAT_WAV: .wav, SF_FORMAT_FLAC: .flac, SF_FORMAT_OGG: .ogg,
                                            SF_FORMAT_AIFF: .aiff, SF_FORMAT_RAW: .raw]
        let encodings: [Int: Encoding] = [SF_FORMAT_PCM_16: .s16, SF_FORMAT_PCM_24: .s24, SF_FORMAT_PCM_32: .s32,
                                          SF_FORMAT_FLOAT: .f32, SF_FORMAT_DOUBLE: .f64, SF_FORMAT_VORBIS: .vorbis]
        guard let c = containers[major], let e = encodings[minor] else { return nil }
        self.init(container: c, encoding: e)
        guard isValid else { return nil }
    }

    var sndfileFormat: Int32 {
        let major: Int
        switch container {
        case .wav: major = SF_FORMAT_WAV
        case .flac: major = SF_FORMAT_FLAC
        case .ogg: major = SF_FORMAT_OGG
        case .aiff: major = SF_FORMAT_AIFF
        case .raw: major = SF_FORMAT_RAW | SF_ENDIAN_LITTLE
        }
        let minor: Int
        switch encoding {
        case .s16: minor = SF_FORMAT_PCM_16
        case .s24: minor = SF_FORMAT_PCM_24
        case .s32: minor = SF_FORMAT_PCM_32
        case .f32: minor = SF_FORMAT_FLOAT
        case .f64: minor = SF_FORMAT_DOUBLE
        case .vorbis: minor = SF_FORMAT_VORBIS
        }
        return Int32(truncatingIfNeeded: major | minor)
    }

    /// Whether libsndfile can write this combination (FLAC has no float, Ogg only Vorbis, …).
    public var isValid: Bool {
        var info = SF_INFO(frames: 0, samplerate: 48_000, channels: 1, format: sndfileFormat, sections: 0, seekable: 0)
        return sf_format_check(&info) != 0
    }

    public var description: String { "\(container.rawValue) \(encoding.rawValue)" }
}
