import HarkDSP

/// A watermark search over an ``AudioSource`` (channels averaged): the ``AnalysisPipeline``
/// with its watermark search alone, as `hark detect` runs it.
public enum WatermarkScan {
    /// Reads `source` to the end, handing each detection to `emit` as it is confirmed. Returns
    /// how many samples the detector could not use as they were (not finite, or beyond
    /// ±``WatermarkDetector/sampleLimit``).
    /// - Parameters:
    ///   - profile: the band the marks were embedded in.
    ///   - catalogue: report only these payloads (nil: any payload).
    ///   - sound: also listen for these creatives by their own sound.
    ///   - airing: also listen for these campaigns' airing codes.
    @discardableResult
    public static func run(source: AudioSource, key: WatermarkKey, profile: WatermarkProfile = .tv, catalogue: [WatermarkPayload]? = nil,
                           sound: AnalysisPipeline.SoundSearch? = nil, airing: AnalysisPipeline.AiringListening? = nil,
                           emit: (WatermarkDetection) throws -> Void) throws -> Int {
        var settings = AnalysisPipeline.Settings(sampleRate: Double(source.sampleRate))
        settings.meter = false
        settings.watermark = AnalysisPipeline.WatermarkSearch(key: key, profile: profile, catalogue: catalogue, airing: airing)
        settings.sound = sound
        let pipeline = try AnalysisPipeline(settings)
        var blocks = MonoBlockReader(source)
        try pipeline.drive(&blocks) { if case .detection(let d) = $0 { try emit(d) } }
        // The mix-down replaces them before the detector sees them; either may have.
        return max(blocks.unusableSamples, pipeline.unusableSamples)
    }
}
