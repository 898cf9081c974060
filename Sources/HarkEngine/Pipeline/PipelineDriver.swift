import HarkDSP

/// The one driver of the analysis, for a file and for harkd's capture alike: interleaved frames
/// in (a file's blocks as they are read, a capture's batches as they arrive), mixed down to
/// mono and fed through an ``AnalysisPipeline`` on the stream's one clock.
///
/// It builds the pipeline for the format the frames come in. A capture device that comes back
/// in another format ends the pipeline (the report of what it measured so far, cut short) and
/// starts a new one at the stream time reached; a gap in the audio restarts the watermark
/// search, whose frame alignment does not survive it; a pause (nothing captured, new settings)
/// drops the pipeline and keeps the clock. A file is one format from its first block to its
/// last. One owner (a thread) drives it.
public final class PipelineDriver {
    /// The audio a pipeline was built for.
    public struct Format: Sendable, Equatable {
        public var rate: Double
        public var channels: Int

        public init(rate: Double, channels: Int) {
            (self.rate, self.channels) = (rate, channels)
        }
    }

    public enum Output {
        /// What the pipeline emitted, with the format it analysed.
        case analysis(AnalysisPipeline.Output, Format)
        /// The report of a pipeline ended before its interval was over because the format
        /// changed: what it measured so far.
        case cutShort(AnalysisPipeline.Measurement, Format)
        /// A new pipeline, for `Format`, starting at the stream time it gives (the one before
        /// it, if any, has ended).
        case started(Format)
        /// How many samples of the frames being fed were not finite (read as 0), before they are
        /// analysed; only when some were.
        case nonFinite(Int)
        /// The mono samples just analysed, valid during the call (harkd's noise sessions read
        /// them too).
        case mono(UnsafeBufferPointer<Float>, Format)
    }

    /// What a pipeline is built from; its rate and start are the audio's.
    public private(set) var settings: AnalysisPipeline.Settings
    public let selection: ChannelMixer.Selection
    /// The pipeline analysing now, if any.
    public private(set) var pipeline: AnalysisPipeline?
    public private(set) var format: Format?
    private var mixer: ChannelMixer?
    private var mono: [Float] = []
    /// Where the stream's clock stood when the pipeline was dropped; while one runs, the
    /// clock is its own.
    private var pausedAt: Double
    /// Samples read as 0 (not finite) and clamped (beyond ±``ChannelMixer/sampleLimit``) by
    /// every mixer so far.
    public private(set) var replacedSamples = 0
    public private(set) var clampedSamples = 0
    private var replacedBefore = 0, clampedBefore = 0

    /// A driver that builds its pipeline when the first frames come (a capture's).
    /// - Parameter settings: the pipeline's; its ``AnalysisPipeline/Settings/startTime`` is
    ///   where the stream's clock starts.
    public init(settings: AnalysisPipeline.Settings, selection: ChannelMixer.Selection = .average) {
        self.settings = settings
        self.selection = selection
        pausedAt = settings.startTime
    }

    /// A driver for audio whose format is known (a file's): the pipeline is built now, so that
    /// a rate it cannot analyse is refused before any audio is read.
    public convenience init(settings: AnalysisPipeline.Settings, format: Format, selection: ChannelMixer.Selection = .average) throws {
        self.init(settings: settings, selection: selection)
        try start(format)
    }

    /// Stream seconds reached.
    public var time: Double { pipeline?.time ?? pausedAt }

    /// Samples of the watermark search could not read as they were, the mix-down's and the
    /// detector's (either may have replaced them first).
    public var unusableSamples: Int { max(replacedSamples + clampedSamples, pipeline?.unusableSamples ?? 0) }

    /// Drops the pipeline, keeping the clock: the next frames start a new one.
    public func pause() {
        pausedAt = time
        pipeline = nil
        foldCounts()
        (mixer, format) = (nil, nil)
    }

    /// New settings: the pipeline in use, if any, is dropped (``pause()``).
    public func reconfigure(_ new: AnalysisPipeline.Settings) {
        pause()
        settings = new
    }

    /// A gap in the audio: the watermark search starts afresh at the current time.
    public func gap() throws {
        try pipeline?.restartWatermarkSearch()
    }

    /// Mixes `frames` frames of `interleaved` (`format.channels` to a frame) down to mono and
    /// analyses them.
    public func feed(_ interleaved: UnsafeBufferPointer<Float>, frames: Int, format: Format,
                     emit: (Output) throws -> Void) throws {
        if let current = self.format, current != format {
            if let p = pipeline, p.hasUnreportedAudio {
                try p.finish { if case .report(let m) = $0 { try emit(.cutShort(m, current)) } }
            }
            pause()
        }
        if pipeline == nil {
            try start(format)
            try emit(.started(format))
        }
        guard frames > 0, let pipeline else { return }
        if mono.count < frames { mono = [Float](repeating: 0, count: frames) }
        let before = mixer!.replacedSamples
        mono.withUnsafeMutableBufferPointer { mixer!.mix(interleaved, frames: frames, into: $0) }
        let replaced = mixer!.replacedSamples - before
        (replacedSamples, clampedSamples) = (replacedBefore + mixer!.replacedSamples, clampedBefore + mixer!.clampedSamples)
        if replaced > 0 { try emit(.nonFinite(replaced)) }
        try mono.withUnsafeBufferPointer { all in
            let block = UnsafeBufferPointer(rebasing: all[0..<frames])
            try pipeline.process(block) { try emit(.analysis($0, format)) }
            try emit(.mono(block, format))
        }
    }

    /// Ends the stream: the level of a partial interval, then the report of what is left.
    public func finish(emit: (Output) throws -> Void) throws {
        guard let pipeline, let format else { return }
        try pipeline.finish { try emit(.analysis($0, format)) }
    }

    /// Reads `source` to the end, in blocks of 4 096 frames; returns the frames read. A source
    /// with no frames is not finished: there is nothing to report, and the caller says so.
    /// - Parameters:
    ///   - emit: receives each output as soon as it is known.
    ///   - progress: receives the number of frames read after every block.
    @discardableResult
    public func drive(_ source: AudioSource, emit: (AnalysisPipeline.Output) throws -> Void,
                      progress: ((Int64) -> Void)? = nil) throws -> Int64 {
        let format = Format(rate: Double(source.sampleRate), channels: source.channels)
        var interleaved = [Float](repeating: 0, count: Self.blockFrames * format.channels)
        var total: Int64 = 0
        func forward(_ output: Output) throws {
            if case .analysis(let o, _) = output { try emit(o) }
        }
        while true {
            let n = try interleaved.withUnsafeMutableBufferPointer { try source.read(into: $0) }
            guard n > 0 else { break }
            total += Int64(n)
            try interleaved.withUnsafeBufferPointer { try feed($0, frames: n, format: format, emit: forward) }
            progress?(total)
        }
        if total > 0 { try finish(emit: forward) }
        return total
    }

    static let blockFrames = 4096

    private func start(_ format: Format) throws {
        var p = settings
        (p.sampleRate, p.startTime) = (format.rate, pausedAt)
        pipeline = try AnalysisPipeline(p)
        mixer = ChannelMixer(channels: format.channels, selection: selection)
        self.format = format
    }

    private func foldCounts() {
        (replacedBefore, clampedBefore) = (replacedSamples, clampedSamples)
    }
}
