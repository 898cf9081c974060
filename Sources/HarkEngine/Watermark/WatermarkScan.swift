import HarkDSP

/// Runs a ``WatermarkDetector`` over an ``AudioSource`` (channels averaged).
public enum WatermarkScan {
    /// Reads `source` to the end, handing each detection to `emit` as it is confirmed.
    /// - Parameters:
    ///   - profile: the band the marks were embedded in.
    ///   - catalogue: report only these payloads (nil: any payload).
    public static func run(source: AudioSource, key: WatermarkKey, profile: WatermarkProfile = .tv, catalogue: [WatermarkPayload]? = nil,
                           emit: (WatermarkDetection) throws -> Void) throws {
        let detector = try WatermarkDetector(format: WatermarkFormat(key: key, profile: profile), sampleRate: Double(source.sampleRate),
                                             catalogue: catalogue)
        var blocks = MonoBlockReader(source)
        while case let mono = try blocks.next(), !mono.isEmpty {
            for d in mono.withUnsafeBufferPointer({ detector.process($0) }) { try emit(d) }
        }
    }
}
