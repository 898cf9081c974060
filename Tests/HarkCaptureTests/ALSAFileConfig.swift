import Foundation
@testable import HarkCapture

/// A self-contained ALSA configuration whose `default` capture PCM reads raw S16_LE samples
/// from `path` through the `file` plugin, converted by `plug` to whatever the caller asks for.
/// Nothing from the machine's own ALSA configuration is used.
func fileConfiguration(raw path: String, rate: Int = 48_000, channels: Int = 1) -> String {
    """
    pcm.wavin {
        type file
        slave { pcm { type null } }
        file "/dev/null"
        infile "\(path)"
        format "raw"
    }
    pcm.wavin_plug {
        type plug
        slave { pcm "wavin"; format S16_LE; rate \(rate); channels \(channels) }
    }
    pcm.default {
        type asym
        capture.pcm "wavin_plug"
        playback.pcm { type null }
    }
    """
}

/// Writes `samples` (interleaved) as raw S16_LE to a new temporary file.
func writeRaw(_ samples: [Int16]) -> String {
    let path = NSTemporaryDirectory() + "hark-capture-\(UUID().uuidString).raw"
    let data = samples.withUnsafeBufferPointer { Data(buffer: $0) }
    _ = FileManager.default.createFile(atPath: path, contents: data)
    return path
}

func ramp(_ count: Int) -> [Int16] { (0..<count).map { Int16(truncatingIfNeeded: ($0 * 37) % 60_000 - 30_000) } }

func settings(raw path: String, format: SampleFormat = .s16, channels: Int = 1, period: Int = 480) -> CaptureSettings {
    var s = CaptureSettings()
    s.configuration = fileConfiguration(raw: path, channels: channels)
    s.format = format
    s.channels = channels
    s.periodFrames = period
    s.bufferFrames = period * 8
    return s
}

/// Reads exactly `frames` frames from a started source (the file plugin never signals the end
/// of its file, so tests stop by count). `gaps` collects the breaks reported on the way, with
/// the sample count before each.
func collect(_ source: CaptureSource, frames: Int, timeout: Double = 5, gaps: UnsafeMutablePointer<[(Int, CaptureGap)]>? = nil) -> [Float] {
    var out: [Float] = []
    var buffer = [Float](repeating: 0, count: 4096)
    var channels = 1
    let deadline = Date(timeIntervalSinceNow: timeout)
    while out.count < frames * channels && Date() < deadline {
        let (n, c, gap) = buffer.withUnsafeMutableBufferPointer { source.read(into: $0, timeout: 0.1) }
        if let gap { gaps?.pointee.append((out.count, gap)) }
        channels = c
        out += buffer[0..<(n * c)]
    }
    return Array(out.prefix(frames * channels))
}

/// A ``PCMStream`` that forwards to a real device but fails chosen reads with chosen codes.
final class FaultyPCM: PCMStream, @unchecked Sendable {
    let real: PCMStream
    private var faults: [Int: Int32]      // read number → error code
    private var reads = 0
    private(set) var recoveries: [Int32] = []

    init(_ real: PCMStream, faults: [Int: Int32]) {
        self.real = real
        self.faults = faults
    }

    var negotiated: NegotiatedFormat { real.negotiated }

    func readInterleaved(into buffer: UnsafeMutableRawPointer, frames: Int) -> Int {
        reads += 1
        if let code = faults.removeValue(forKey: reads) { return Int(code) }
        return real.readInterleaved(into: buffer, frames: frames)
    }

    func recover(_ code: Int32) -> Int32 {
        recoveries.append(code)
        // The real recover on the real handle: for -EPIPE it re-prepares the stream.
        return real.recover(code == -ESTRPIPE ? -EPIPE : code)
    }

    func resume() -> Int32 { -ENOSYS }     // as many devices answer: resume not supported
    func prepare() -> Int32 { real.prepare() }
    func close() { real.close() }
}
