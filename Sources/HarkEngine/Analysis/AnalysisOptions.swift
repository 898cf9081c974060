import HarkDSP

/// How ``LevelAnalysis`` measures a recording.
public struct AnalysisOptions: Sendable {
    /// Seconds per `level` event; `nil` for none.
    public var interval: Double? = 1
    /// Decibels added to every level (from `hark calibrate`).
    public var calibration: Double = 0
    /// One channel to measure, numbered from 1; `nil` averages all channels.
    public var channel: Int?
    /// Whether to compute 1/3-octave bands.
    public var bands = true
    /// Search for watermarks made with this key (nil: no search).
    public var watermarkKey: WatermarkKey?
    /// Report only these payloads, at the lower threshold their number allows (nil: any).
    public var watermarkCatalogue: [WatermarkPayload]?
    /// The band the marks were embedded in.
    public var watermarkProfile: WatermarkProfile
    /// Also listen for a catalogue's creatives by their own sound (nil: not).
    public var sound: AnalysisPipeline.SoundSearch?
    /// Campaigns whose marks carry airing codes, and the recording's time (nil: none).
    public var airing: AnalysisPipeline.AiringListening?

    public init(interval: Double? = 1, calibration: Double = 0, channel: Int? = nil, bands: Bool = true,
                watermarkKey: WatermarkKey? = nil, watermarkCatalogue: [WatermarkPayload]? = nil,
                sound: AnalysisPipeline.SoundSearch? = nil, watermarkProfile: WatermarkProfile = .tv,
                airing: AnalysisPipeline.AiringListening? = nil) {
        self.sound = sound
        self.airing = airing
        self.watermarkCatalogue = watermarkCatalogue
        self.watermarkProfile = watermarkProfile
        self.interval = interval
        self.calibration = calibration
        self.channel = channel
        self.bands = bands
        self.watermarkKey = watermarkKey
    }
}
