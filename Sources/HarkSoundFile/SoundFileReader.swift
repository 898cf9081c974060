import CSndFile
import FoundationEssentials
import Glibc
import HarkSystem

/// libsndfile reports why `sf_open` failed through process-wide state; opening under one lock
/// keeps each failure's message with its own file when files are opened from several threads.
/// A pthread mutex, which ThreadSanitizer sees (Synchronization's Mutex does not, when contended).
private let openLock = PosixLock()

/// Reads an audio file through libsndfile, block by block, as interleaved `Float` samples in
/// [−1, 1] (integer formats are scaled by libsndfile: 16-bit 32767 reads as 0.99997).
///
/// Anything libsndfile reads works (WAV incl. WAVE_FORMAT_EXTENSIBLE, RF64, AIFF, FLAC,
/// Ogg/Vorbis, Opus, MP3, CAF, W64, AU, …) with 1–8 channels at 8–192 kHz. Opening checks
/// the file before libsndfile sees it, so each failure gets a precise ``SoundFileError``. A
/// header that promises more audio than the file holds is read as far as it goes and reported
/// through ``warnings``. Memory use does not depend on the file's length.
///
/// Owns its `SNDFILE*`; not thread-safe.
public final class SoundFileReader {
    public let path: String
    public let sampleRate: Int
    public let channels: Int
    /// Frames the file declares (or libsndfile counted), 0 when unknown; the stream may end
    /// earlier.
    public let declaredFrames: Int64
    /// Human-readable container and encoding, e.g. "WAV (Microsoft), Signed 16 bit PCM".
    public let formatDescription: String
    /// The file's type and encoding as an ``OutputFormat``, when Hark can write the same.
    public let outputFormat: OutputFormat?
    /// Frames delivered so far.
    public private(set) var framesRead: Int64 = 0
    /// What was wrong but did not stop reading. Complete once ``read(into:)`` has returned 0.
    public private(set) var warnings: [SoundFileWarning] = []

    private var handle: OpaquePointer?
    private var finished = false
    private let probe: HeaderProbe

    /// What messages call standard input (`-`), in every command alike.
    public static let standardInputName = "standard input"

    /// Opens `path` for reading; `-` is standard input (``standardInputName`` in messages). With
    /// `raw`, the input is headerless samples in that layout (a `.raw` or `.pcm` file needs it).
    public init(path given: String, raw: RawLayout? = nil) throws(SoundFileError) {
        let path = given == "-" ? Self.standardInputName : given
        let file = given == "-" ? "/dev/stdin" : given
        self.path = path
        var st = stat()
        if stat(file, &st) != 0 {
            let e = errno
            throw e == ENOENT ? .notFound(path: path) : .unreadable(path: path, reason: String(cString: strerror(e)))
        }
        if (st.st_mode & S_IFMT) == S_IFDIR { throw .isDirectory(path: path) }
        if (st.st_mode & S_IFMT) == S_IFREG && st.st_size == 0 { throw .empty(path: path) }
        if (st.st_mode & S_IFMT) == S_IFIFO && Self.isEmptyPipe(file) { throw .empty(path: path) }
        if access(file, R_OK) != 0 { throw .unreadable(path: path, reason: String(cString: strerror(errno))) }

        if raw == nil, [".raw", ".pcm"].contains(where: { given.lowercased().hasSuffix($0) }) {
            throw .unrecognisedFormat(path: path, detail: "headerless samples: give their layout with --rate, --channels and --encoding")
        }
        probe = raw == nil && (st.st_mode & S_IFMT) == S_IFREG ? HeaderProbe.probe(path: file) : HeaderProbe()
        // libsndfile's words for these are vague ("SF_INFO struct incomplete"); the header's are not.
        if let format = probe.waveFormat {
            if format.channels == 0 { throw .noChannels(path: path) }
            if format.sampleRate == 0 { throw .unsupportedSampleRate(path: path, rate: 0) }
        }
        var info = SF_INFO()
        if let raw {
            guard SoundFileError.sampleRates.contains(raw.sampleRate) else { throw .unsupportedSampleRate(path: path, rate: raw.sampleRate) }
            guard SoundFileError.channelCounts.contains(raw.channels) else { throw .tooManyChannels(path: path, channels: raw.channels) }
            let layout = OutputFormat(container: .raw, encoding: raw.encoding)
            guard layout.isValid else {
                throw .unsupportedEncoding(path: path, detail: "headerless \(raw.encoding.rawValue) samples")
            }
            info = SF_INFO(frames: 0, samplerate: Int32(raw.sampleRate), channels: Int32(raw.channels),
                           format: layout.sndfileFormat, sections: 0, seekable: 0)
        }
        var opened: OpaquePointer
        do {
            opened = try Self.open(path: file, name: path, info: &info)
        } catch where (st.st_mode & S_IFMT) == S_IFIFO {
            // libsndfile reads WAV, AU and raw from a pipe, but FLAC, Ogg and others need to seek.
            if case .unrecognisedFormat = error { throw error }
            throw .unreadable(path: path, reason: "this format cannot be read from a pipe (\(error.reason)); save it to a file first")
        } catch {
            // libsndfile calls a WAV format tag it does not know a "malformed fmt chunk"; the
            // probe can say which encoding it is.
            if case .malformed = error, let tag = probe.waveFormat?.formatTag, !Self.knownWaveTags.contains(tag) {
                throw .unsupportedEncoding(path: path, detail: Self.describe(waveTag: tag))
            }
            throw error
        }

        // A WAV whose recorder never came back to fill in the data length reads as empty;
        // the samples are there, so read them as raw data in the header's own format.
        var unfinalised: Int64?
        if info.frames == 0, probe.declaredDataBytes == 0, let available = probe.availableDataBytes, available > 0,
           let format = probe.waveFormat, let raw = Self.rawFormat(for: format) {
            sf_close(opened)
            var rawInfo = SF_INFO(frames: 0, samplerate: Int32(format.sampleRate), channels: Int32(format.channels),
                                  format: raw, sections: 0, seekable: 0)
            opened = try Self.open(path: file, name: path, info: &rawInfo)
            var start = sf_count_t(probe.dataOffset ?? 0)
            sf_command(opened, Int32(SFC_SET_RAW_START_OFFSET), &start, Int32(MemoryLayout<sf_count_t>.size))
            // libsndfile 1.2 records the offset but leaves the read position at byte 0.
            sf_seek(opened, 0, SEEK_SET)
            info = rawInfo
            info.frames = sf_count_t(available / Int64(max(format.blockAlign, 1)))
            unfinalised = available
        }

        handle = opened
        sampleRate = Int(info.samplerate)
        channels = Int(info.channels)
        formatDescription = Self.describe(format: info.format)
        outputFormat = OutputFormat(sndfileFormat: info.format)
        // Prefer the header's own claim: libsndfile trims it to what the file holds. On a stream
        // of unknown length libsndfile reports SF_COUNT_MAX, which declares nothing.
        var declared = info.frames >= Int64.max / 2 ? 0 : Int64(info.frames)
        // A stream's WAV header carries a placeholder length where the true one is not yet
        // known: 0xFFFFFFFF (ffmpeg, hark itself) or 0x7FFFFFFF (arecord). Through a pipe that
        // reads as some 2 GB declared, which is no declaration at all.
        if (st.st_mode & S_IFMT) != S_IFREG,
           Int64(info.frames) * Int64(max(1, info.channels)) * Int64(Self.bytesPerSample(format: info.format)) >= 0x7FFF_0000 {
            declared = 0
        }
        if unfinalised == nil, let claimed = probe.declaredFrames, claimed > declared { declared = claimed }
        declaredFrames = declared
        if let bytes = unfinalised { warnings.append(.unfinalisedHeader(path: path, bytes: bytes)) }

        if channels == 0 { close(); throw .noChannels(path: path) }
        if !SoundFileError.channelCounts.contains(channels) {
            close()
            throw .tooManyChannels(path: path, channels: channels)
        }
        if !SoundFileError.sampleRates.contains(sampleRate) {
            close()
            throw .unsupportedSampleRate(path: path, rate: sampleRate)
        }
    }

    deinit { close() }

    /// Releases the file; further reads return 0.
    public func close() {
        if let h = handle { sf_close(h) }
        handle = nil
    }

    /// Reads up to `buffer.count / channels` frames of interleaved samples into `buffer` and
    /// returns how many frames it read; 0 means the end of the audio.
    ///
    /// A decoding error after some audio was read ends the stream with a warning; one before any
    /// audio throws ``SoundFileError/readFailed(path:detail:)``.
    public func read(into buffer: UnsafeMutableBufferPointer<Float>) throws(SoundFileError) -> Int {
        guard let h = handle, !finished else { return 0 }
        let wanted = buffer.count / channels
        guard wanted > 0 else { return 0 }
        let got = Int(sf_readf_float(h, buffer.baseAddress, sf_count_t(wanted)))
        framesRead += Int64(got)
        if got < wanted {
            let code = sf_error(h)
            if code != Int32(SF_ERR_NO_ERROR) {
                let detail = String(cString: sf_strerror(h))
                if framesRead == 0 { throw .readFailed(path: path, detail: detail) }
                finished = true
                warnings.append(.decodingStopped(path: path, atFrame: framesRead,
                                                 declaredFrames: max(declaredFrames, framesRead),
                                                 sampleRate: sampleRate, detail: detail))
            } else if got == 0 {
                finished = true
                if framesRead < declaredFrames {
                    warnings.append(.truncated(path: path, declaredFrames: declaredFrames,
                                               availableFrames: framesRead, sampleRate: sampleRate))
                }
            }
        }
        return got
    }

    // MARK: - libsndfile plumbing

    /// Bytes a sample of libsndfile format `format` takes in a WAV data chunk (2 when unsure).
    static func bytesPerSample(format: Int32) -> Int {
        switch Int(format) & SF_FORMAT_SUBMASK {
        case SF_FORMAT_PCM_S8, SF_FORMAT_PCM_U8, SF_FORMAT_ULAW, SF_FORMAT_ALAW: return 1
        case SF_FORMAT_PCM_24: return 3
        case SF_FORMAT_PCM_32, SF_FORMAT_FLOAT: return 4
        case SF_FORMAT_DOUBLE: return 8
        default: return 2
        }
    }

    /// WAV format tags libsndfile decodes.
    static let knownWaveTags: Set<UInt16> = [0x0001, 0x0002, 0x0003, 0x0006, 0x0007, 0x0011, 0x0031, 0x0040, 0xFFFE]

    static func describe(waveTag tag: UInt16) -> String {
        let names: [UInt16: String] = [0x0050: "MPEG", 0x0055: "MPEG Layer III", 0x0092: "Dolby AC-3 SPDIF",
                                       0x00FF: "AAC", 0x1610: "AAC (HE-AAC)", 0x0161: "Windows Media Audio",
                                       0x0022: "DSP Group TrueSpeech", 0x0045: "G.726", 0x0064: "G.726 ADPCM",
                                       0x0067: "G.722", 0x0083: "G.729"]
        let hex = String(cFormat: "0x%04X", tag)
        return "WAV format tag \(hex)" + (names[tag].map { " (\($0))" } ?? "")
    }

    private static func open(path: String, name: String, info: inout SF_INFO) throws(SoundFileError) -> OpaquePointer {
        let result: Result<OpaquePointer, SoundFileError> = openLock.withLock {
            if let h = sf_open(path, Int32(SFM_READ), &info) { return .success(h) }
            let code = sf_error(nil)
            let detail = String(cString: sf_strerror(nil))
            return .failure(classify(code: code, detail: detail, path: name))
        }
        return try result.get()
    }

    /// A pipe whose writer closed without writing a byte: told apart without reading from it
    /// (the bytes of one that is not empty must reach libsndfile whole). Waits, as reading
    /// would, until the writer writes or closes.
    private static func isEmptyPipe(_ path: String) -> Bool {
        let fd = Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { Glibc.close(fd) }
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, -1) == 1 else { return false }
        var available: Int32 = 0
        return ioctl(fd, UInt(FIONREAD), &available) == 0 && available == 0 && p.revents & Int16(POLLHUP) != 0
    }

    static func classify(code: Int32, detail: String, path: String) -> SoundFileError {
        switch code {
        case Int32(SF_ERR_UNRECOGNISED_FORMAT):
            return .unrecognisedFormat(path: path, detail: detail)
        case Int32(SF_ERR_UNSUPPORTED_ENCODING):
            return .unsupportedEncoding(path: path, detail: detail)
        case Int32(SF_ERR_MALFORMED_FILE):
            return .malformed(path: path, detail: detail)
        case Int32(SF_ERR_SYSTEM):
            return .unreadable(path: path, reason: detail)
        default:
            // libsndfile's other codes are specific messages ("Channel count is zero.",
            // "No 'data' chunk marker." …): all mean the header does not describe valid audio.
            let lower = detail.lowercased()
            if lower.contains("channel count is zero") || lower.contains("bad number of channels") && lower.contains("0") {
                return .noChannels(path: path)
            }
            if lower.contains("not supported") || lower.contains("unsupported") {
                return .unsupportedEncoding(path: path, detail: detail)
            }
            return .malformed(path: path, detail: detail)
        }
    }

    /// The libsndfile RAW format matching a WAV `fmt ` chunk, if it is plain PCM or float.
    static func rawFormat(for f: HeaderProbe.WaveFormat) -> Int32? {
        let endian = f.bigEndian ? SF_ENDIAN_BIG : SF_ENDIAN_LITTLE
        let sub: Int
        switch (f.formatTag, f.bitsPerSample) {
        case (1, 8): sub = SF_FORMAT_PCM_U8
        case (1, 16): sub = SF_FORMAT_PCM_16
        case (1, 24): sub = SF_FORMAT_PCM_24
        case (1, 32): sub = SF_FORMAT_PCM_32
        case (3, 32): sub = SF_FORMAT_FLOAT
        case (3, 64): sub = SF_FORMAT_DOUBLE
        default: return nil
        }
        guard SoundFileError.channelCounts.contains(f.channels), SoundFileError.sampleRates.contains(f.sampleRate),
              f.blockAlign == f.channels * f.bitsPerSample / 8 else { return nil }
        return Int32(truncatingIfNeeded: SF_FORMAT_RAW | sub | endian)
    }

    static func describe(format: Int32) -> String {
        func name(_ value: Int32) -> String? {
            var fi = SF_FORMAT_INFO(format: value, name: nil, extension: nil)
            guard sf_command(nil, Int32(SFC_GET_FORMAT_INFO), &fi, Int32(MemoryLayout<SF_FORMAT_INFO>.size)) == 0,
                  let n = fi.name else {
                return nil
            }
            return String(cString: n)
        }
        let major = format & Int32(truncatingIfNeeded: SF_FORMAT_TYPEMASK)
        let minor = format & Int32(truncatingIfNeeded: SF_FORMAT_SUBMASK)
        let m = name(major) ?? String(cFormat: "format 0x%x", major)
        let s = name(minor) ?? String(cFormat: "encoding 0x%x", minor)
        return "\(m), \(s)"
    }
}
