import HarkDSP

/// Runs a ``WatermarkDetector`` over an ``AudioSource`` (channels averaged).
public enum WatermarkScan {
    /// Reads `source` to the end, handing each detection to `emit` as it is confirmed. Returns
    /// how many samples the detector could not use as they were (not finite, or beyond
    /// ±``WatermarkDetector/sampleLimit``).
    /// - Parameters:
    ///   - profile: the band the marks were embedded in.
    ///   - catalogue: report only these payloads (nil: any payload).
    @discardableResult
    public static func run(source: AudioSource, key: WatermarkKey, profile: WatermarkProfile = .tv, catalogue: [WatermarkPayload]? = nil,
                           emit: (WatermarkDetection) throws -> Void) throws -> Int {
        let detector = try WatermarkDetector(format: WatermarkFormat(key: key, profile: profile), sampleRate: Double(source.sampleRate),
                                             catalogue: catalogue)
        var blocks = MonoBlockReader(source)
        while case let mono = try blocks.next(), !mono.isEmpty {
            for d in mono.withUnsafeBufferPointer({ detector.process($0) }) { try emit(d) }
        }
        return detector.unusableSamples
    }
}
