import Foundation
import HarkDSP
import HarkSoundFile

/// Measures one recording: source → frames → meter, band analyser and (optionally) watermark
/// detector → events.
///
/// Reads the source in blocks (memory does not grow with its length), splits the stream at
/// interval boundaries so every `level` event covers exactly its interval, and ends with one
/// `report` event. Events go to a closure as they happen; nothing is buffered.
public final class LevelAnalysis {
    /// Frames read per block.
    public static let blockFrames = 4096
    /// Recordings longer than this get a measured FFT plan (0.4 s to make, 1.9× faster to run).
    static let measuredPlanThreshold: Double = 1800

    public let source: AudioSource
    public let options: AnalysisOptions

    private let meter: LevelMeter
    private let bands: ThirdOctaveBands?
    private let watermark: WatermarkDetector?
    private var mixer: ChannelMixer
    private let intervalFrames: Int?

    /// Prepares to analyse `source`.
    /// - Throws: ``SoundFileError/channelOutOfRange(path:channel:channels:)`` for a channel the
    ///   source does not have; FFT errors if the band analyser cannot be planned.
    public init(source: AudioSource, options: AnalysisOptions = .init()) throws {
        self.source = source
        self.options = options
        let rate = Double(source.sampleRate)
        let selection: ChannelMixer.Selection
        if let c = options.channel {
            guard (1...source.channels).contains(c) else {
                throw SoundFileError.channelOutOfRange(path: source.name, channel: c, channels: source.channels)
            }
            selection = .channel(c - 1)
        } else {
            selection = .average
        }
        mixer = ChannelMixer(channels: source.channels, selection: selection)
        meter = LevelMeter(sampleRate: rate, calibration: options.calibration)
        if options.bands {
            let seconds = Double(source.expectedFrames ?? 0) / rate
            bands = try ThirdOctaveBands(sampleRate: rate,
                                         planning: seconds > Self.measuredPlanThreshold ? .measure : .estimate)
        } else {
            bands = nil
        }
        intervalFrames = options.interval.map { max(1, Int(($0 * rate).rounded())) }
        watermark = try options.watermarkKey.map {
            try WatermarkDetector(format: WatermarkFormat(key: $0, profile: options.watermarkProfile), sampleRate: rate,
                                  catalogue: options.watermarkCatalogue)
        }
    }

    /// Runs the analysis to the end of the source.
    /// - Parameters:
    ///   - emit: receives each event as soon as it is known.
    ///   - progress: receives the number of frames read after every block.
    /// - Returns: the final report (also emitted).
    @discardableResult
    public func run(emit: (AnalysisEvent) throws -> Void, progress: ((Int64) -> Void)? = nil) throws -> ReportEvent {
        let channels = source.channels
        var interleaved = [Float](repeating: 0, count: Self.blockFrames * channels)
        var mono = [Float](repeating: 0, count: Self.blockFrames)
        var framesRead: Int64 = 0
        var inInterval = 0
        while true {
            let frames = try interleaved.withUnsafeMutableBufferPointer { try source.read(into: $0) }
            if frames == 0 { break }
            framesRead += Int64(frames)
            interleaved.withUnsafeBufferPointer { input in
                mono.withUnsafeMutableBufferPointer { mixer.mix(input, frames: frames, into: $0) }
            }
            try mono.withUnsafeBufferPointer { all in
                bands?.process(UnsafeBufferPointer(rebasing: all[0..<frames]))
                for d in watermark?.process(UnsafeBufferPointer(rebasing: all[0..<frames])) ?? [] {
                    try emit(.detection(DetectionEvent(source: source.name, detection: d)))
                }
                var done = 0
                while done < frames {
                    var n = frames - done
                    if let every = intervalFrames { n = min(n, every - inInterval) }
                    meter.process(UnsafeBufferPointer(rebasing: all[done..<(done + n)]))
                    done += n
                    inInterval += n
                    if let every = intervalFrames, inInterval == every {
                        inInterval = 0
                        try emit(.level(LevelEvent(source: source.name, levels: meter.takeInterval())))
                    }
                }
            }
            progress?(framesRead)
        }
        meter.finish()
        if intervalFrames != nil && inInterval > 0 {
            try emit(.level(LevelEvent(source: source.name, levels: meter.takeInterval())))
        }
        bands?.finish()
        var warnings = source.warnings
        if mixer.replacedSamples > 0 {
            warnings.append("\(source.name): \(mixer.replacedSamples) samples were not finite numbers (NaN or infinity) and were measured as silence")
        }
        let report = ReportEvent(
            source: source.name,
            meter: meter.report(),
            bands: bands.map { b in zip(b.bands, b.levels(calibration: options.calibration)).map { ($0.label, $1) } } ?? [],
            calibration: options.calibration,
            sampleRate: source.sampleRate,
            channels: channels,
            channelUse: options.channel.map { "channel \($0)" } ?? (channels == 1 ? "mono" : "average"),
            format: source.formatDescription,
            warnings: warnings)
        try emit(.report(report))
        return report
    }
}
