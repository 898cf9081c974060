import CSndFile
import FoundationEssentials
import Glibc
import HarkSystem

/// Writes interleaved `Float` samples to an audio file through libsndfile.
///
/// The audio goes to a temporary file beside the destination, renamed into place by
/// ``finish()``: an interrupted or failed write never leaves a half-written file under the
/// requested name. Samples beyond full scale are clipped (and counted) for integer encodings.
/// The path `-` is standard output, written as a WAV stream as it goes (``StreamedWAV``):
/// nothing can be taken back there, so ``abandon()`` only stops. Owns its `SNDFILE*`; not
/// thread-safe.
public final class SoundFileWriter {
    public let path: String
    public let sampleRate: Int
    public let channels: Int
    public let format: OutputFormat
    /// Samples that were beyond ±1 and were clipped (integer encodings only).
    public private(set) var clippedSamples = 0
    /// Frames written so far.
    public private(set) var framesWritten: Int64 = 0

    private var handle: OpaquePointer?
    private var stream: StreamedWAV?
    private let temporaryPath: String

    public init(path: String, sampleRate: Int, channels: Int, format: OutputFormat) throws(SoundFileError) {
        guard SoundFileError.sampleRates.contains(sampleRate) else {
            throw .unsupportedSampleRate(path: path, rate: sampleRate)
        }
        guard SoundFileError.channelCounts.contains(channels) else {
            throw .tooManyChannels(path: path, channels: channels)
        }
        self.path = path
        self.sampleRate = sampleRate
        self.channels = channels
        self.format = format
        if path == "-" {
            temporaryPath = ""
            guard format.container == .wav else {
                throw .unsupportedOutputEncoding(path: path, detail: "standard output is written as WAV, not \(format.container.rawValue.uppercased())")
            }
            stream = try StreamedWAV(fd: STDOUT_FILENO, sampleRate: sampleRate, channels: channels, encoding: format.encoding)
            return
        }
        let url = URL(fileURLWithPath: path)
        temporaryPath = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(getpid()).partial").path
        var info = SF_INFO(frames: 0, samplerate: Int32(sampleRate), channels: Int32(channels),
                           format: format.sndfileFormat, sections: 0, seekable: 0)
        guard sf_format_check(&info) != 0 else {
            throw .unsupportedOutputEncoding(path: path, detail: "libsndfile cannot write \(format) at \(sampleRate) Hz")
        }
        guard let h = sf_open(temporaryPath, Int32(SFM_WRITE), &info) else {
            throw .cannotCreate(path: path, detail: missingFolder(of: path) ?? String(cString: sf_strerror(nil)))
        }
        handle = h
        if format.encoding.isInteger {
            sf_command(h, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
        }
    }

    deinit {
        if let h = handle {
            sf_close(h)
            unlink(temporaryPath)
        }
    }

    /// Appends `samples` (interleaved, a whole number of frames).
    public func write(_ samples: UnsafeBufferPointer<Float>) throws(SoundFileError) {
        precondition(samples.count % channels == 0, "partial frame")
        if format.encoding.isInteger {
            for s in samples where s > 1 || s < -1 { clippedSamples += 1 }
        }
        let frames = samples.count / channels
        if let stream {
            try stream.write(samples)
            framesWritten += Int64(frames)
            return
        }
        guard let h = handle else { throw .writeFailed(path: path, detail: "already finished") }
        let written = sf_writef_float(h, samples.baseAddress, sf_count_t(frames))
        guard written == frames else {
            let detail = String(cString: sf_strerror(h))
            abandon()
            throw .writeFailed(path: path, detail: detail)
        }
        framesWritten += Int64(frames)
    }

    /// Completes the file and moves it into place.
    public func finish() throws(SoundFileError) {
        if let stream {
            stream.finish()
            self.stream = nil
            return
        }
        guard let h = handle else { return }
        handle = nil
        let status = sf_close(h)
        guard status == 0 else {
            unlink(temporaryPath)
            throw .writeFailed(path: path, detail: String(cString: sf_error_number(status)))
        }
        guard rename(temporaryPath, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporaryPath)
            throw .cannotCreate(path: path, detail: reason)
        }
    }

    /// Discards what was written.
    public func abandon() {
        stream = nil
        if let h = handle { sf_close(h) }
        handle = nil
        if !temporaryPath.isEmpty { unlink(temporaryPath) }
    }
}
