import FoundationEssentials
import Glibc
import HarkDSP
import HarkSoundFile

/// Measures one recording: source → frames → the ``AnalysisPipeline`` (meter, band analyser
/// and, when asked, the watermark search) → events, through the one driver that harkd's capture
/// takes too (``PipelineDriver/drive(_:emit:progress:)``).
///
/// Reads the source in blocks (memory does not grow with its length), and ends with one
/// `report` event. Events go to a closure as they happen; nothing is buffered.
public final class LevelAnalysis {
    /// Recordings longer than this get a measured FFT plan (0.4 s to make, 1.9× faster to run).
    static let measuredPlanThreshold: Double = 1800

    public let source: AudioSource
    public let settings: AnalysisPipeline.Settings
    /// The one channel measured, numbered from 1; nil: the channels' average.
    public let channel: Int?

    private let driver: PipelineDriver

    /// The settings of a measurement of `source` with the meter's defaults: a level every
    /// second, bands, no search.
    public static func settings(for source: AudioSource) -> AnalysisPipeline.Settings {
        var s = AnalysisPipeline.Settings(sampleRate: Double(source.sampleRate))
        s.levelInterval = 1
        return s
    }

    /// Prepares to analyse `source` with `settings`, made for its rate (``settings(for:)``).
    /// - Parameter channel: one channel to measure, numbered from 1; nil averages them all.
    /// - Throws: ``SoundFileError/channelOutOfRange(path:channel:channels:)`` for a channel the
    ///   source does not have; FFT errors if the band analyser cannot be planned.
    public init(source: AudioSource, settings: AnalysisPipeline.Settings? = nil, channel: Int? = nil) throws {
        let rate = Double(source.sampleRate)
        var settings = settings ?? Self.settings(for: source)
        precondition(settings.sampleRate == rate, "settings made for the source's rate")
        self.source = source
        self.channel = channel
        let selection: ChannelMixer.Selection
        if let c = channel {
            guard (1...source.channels).contains(c) else {
                throw SoundFileError.channelOutOfRange(path: source.name, channel: c, channels: source.channels)
            }
            selection = .channel(c - 1)
        } else {
            selection = .average
        }
        settings.measuredBandPlan = settings.measuredBandPlan || Double(source.expectedFrames ?? 0) / rate > Self.measuredPlanThreshold
        self.settings = settings
        driver = try PipelineDriver(settings: settings, format: .init(rate: rate, channels: source.channels), selection: selection)
    }

    /// Runs the analysis to the end of the source.
    /// - Parameters:
    ///   - emit: receives each event as soon as it is known.
    ///   - progress: receives the number of frames read after every block.
    /// - Returns: the final report (also emitted).
    @discardableResult
    public func run(emit: (AnalysisEvent) throws -> Void, progress: ((Int64) -> Void)? = nil) throws -> ReportEvent {
        var last: AnalysisPipeline.Measurement?
        let name = source.name
        func forward(_ output: AnalysisPipeline.Output) throws {
            switch output {
            case .detection(let d): try emit(.detection(DetectionEvent(source: name, detection: d)))
            case .level(let levels, _): try emit(.level(LevelEvent(source: name, levels: levels)))
            case .report(let m): last = m
            }
        }
        // A report of no audio would read as a measurement ("LAeq –, over 0.0 s").
        guard try driver.drive(source, emit: forward, progress: progress) > 0 else { throw LevelAnalysisError.noAudio(source.warnings) }
        var warnings = source.warnings
        if driver.replacedSamples > 0 {
            warnings.append("\(source.name): \(driver.replacedSamples) samples were not finite numbers (NaN or infinity) and were measured as silence")
        }
        if driver.clampedSamples > 0 {
            warnings.append("\(source.name): \(driver.clampedSamples) samples lay beyond ±\(Int(ChannelMixer.sampleLimit)) × full scale (+80 dB) and were measured at that limit: the file's levels are not to be trusted")
        }
        let report = ReportEvent(
            source: source.name,
            measurement: last!,
            calibration: settings.calibration,
            sampleRate: source.sampleRate,
            channels: source.channels,
            channelUse: channel.map { "channel \($0)" } ?? (source.channels == 1 ? "mono" : "average"),
            format: source.formatDescription,
            warnings: warnings)
        try emit(.report(report))
        return report
    }
}

/// Why a source could not be measured at all.
public enum LevelAnalysisError: Error, Equatable, CustomStringConvertible {
    /// The source held no audio frames; what its reader noticed about it, if anything.
    case noAudio([String])

    public var description: String {
        switch self {
        case .noAudio(let notes):
            return "no audio frames to measure" + (notes.isEmpty ? "" : " (" + notes.joined(separator: "; ") + ")")
        }
    }
}
