import Foundation
import HarkCapture

// Test doubles for capture, shared by the capture and daemon tests: real ALSA through its
// `file` plugin (there is no sound card here), with faults injected at the PCM seam.

/// A self-contained ALSA configuration whose `default` capture PCM reads raw S16_LE samples
/// from `path` through the `file` plugin, converted by `plug` to whatever the caller asks for.
/// Nothing from the machine's own ALSA configuration is used.
public func fileConfiguration(raw path: String, rate: Int = 48_000, channels: Int = 1) -> String {
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
public func writeRaw(_ samples: [Int16]) -> String {
    let path = NSTemporaryDirectory() + "hark-capture-\(UUID().uuidString).raw"
    let data = samples.withUnsafeBufferPointer { Data(buffer: $0) }
    _ = FileManager.default.createFile(atPath: path, contents: data)
    return path
}


/// A ``PCMStream`` that forwards to a real device but fails chosen reads with chosen codes,
/// and can pace reads like a sound card (the `file` plugin delivers as fast as it is asked).
public final class FaultyPCM: PCMStream, @unchecked Sendable {
    public let real: PCMStream
    private var faults: [Int: Int32]      // read number → error code
    private var reads = 0
    private let speed: Double?
    private var started: Date?
    private var framesDelivered = 0
    public private(set) var recoveries: [Int32] = []

    /// - Parameters:
    ///   - faults: read number (from 1) → the error code that read returns instead.
    ///   - speed: if set, reads return no faster than this multiple of real time.
    public init(_ real: PCMStream, faults: [Int: Int32], speed: Double? = nil) {
        self.real = real
        self.faults = faults
        self.speed = speed
    }

    public var negotiated: NegotiatedFormat { real.negotiated }

    public func readInterleaved(into buffer: UnsafeMutableRawPointer, frames: Int) -> Int {
        reads += 1
        if let code = faults.removeValue(forKey: reads) { return Int(code) }
        if let speed {
            let start = started ?? Date()
            started = start
            let due = Double(framesDelivered + frames) / Double(negotiated.rate) / speed
            let wait = due - Date().timeIntervalSince(start)
            if wait > 0 { Thread.sleep(forTimeInterval: wait) }
        }
        let n = real.readInterleaved(into: buffer, frames: frames)
        if n > 0 { framesDelivered += n }
        return n
    }

    public func recover(_ code: Int32) -> Int32 {
        recoveries.append(code)
        // The real recover on the real handle: for -EPIPE it re-prepares the stream.
        return real.recover(code == -ESTRPIPE ? -EPIPE : code)
    }

    public func resume() -> Int32 { -ENOSYS }     // as many devices answer: resume not supported
    public func prepare() -> Int32 { real.prepare() }
    public func close() { real.close() }
}
