import HarkDSP

/// A watermark search over an ``AudioSource`` (channels averaged): the ``AnalysisPipeline``
/// with its watermark search alone, as `hark detect` runs it.
public enum WatermarkScan {
    /// Reads `source` to the end through a pipeline of `settings` (made for its rate) with the
    /// meter off, handing each detection to `emit` as it is confirmed. Returns how many samples
    /// the detector could not use as they were (not finite, or beyond
    /// ±``WatermarkDetector/sampleLimit``).
    @discardableResult
    public static func run(source: AudioSource, settings: AnalysisPipeline.Settings,
                           emit: (WatermarkDetection) throws -> Void) throws -> Int {
        precondition(settings.sampleRate == Double(source.sampleRate), "settings made for the source's rate")
        var settings = settings
        settings.meter = false
        let driver = try PipelineDriver(settings: settings, format: .init(rate: settings.sampleRate, channels: source.channels))
        try driver.drive(source) { if case .detection(let d) = $0 { try emit(d) } }
        return driver.unusableSamples
    }
}
