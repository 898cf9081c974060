import HarkDSP

/// Runs a ``WatermarkDetector`` over an ``AudioSource`` (channels averaged).
public enum WatermarkScan {
    /// Reads `source` to the end, handing each detection to `emit` as it is confirmed.
    /// - Parameter catalogue: report only these payloads (nil: any payload).
    public static func run(source: AudioSource, key: WatermarkKey, catalogue: [WatermarkPayload]? = nil,
                           emit: (WatermarkDetection) throws -> Void) throws {
        let detector = try WatermarkDetector(format: WatermarkFormat(key: key), sampleRate: Double(source.sampleRate),
                                             catalogue: catalogue)
        var mixer = ChannelMixer(channels: source.channels)
        var interleaved = [Float](repeating: 0, count: 4096 * source.channels)
        var mono = [Float](repeating: 0, count: 4096)
        while true {
            let n = try interleaved.withUnsafeMutableBufferPointer { try source.read(into: $0) }
            if n == 0 { break }
            interleaved.withUnsafeBufferPointer { i in mono.withUnsafeMutableBufferPointer { mixer.mix(i, frames: n, into: $0) } }
            for d in mono.withUnsafeBufferPointer({ detector.process(UnsafeBufferPointer(rebasing: $0[0..<n])) }) {
                try emit(d)
            }
        }
    }
}
