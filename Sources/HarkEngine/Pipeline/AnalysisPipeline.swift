import FoundationEssentials
import Glibc
import HarkDSP

/// The one analysis chain that `hark analyze`, `hark detect`, harkd's continuous analysis and
/// its noise sessions share: mono frames → watermark detector, level meter, band analyser →
/// interval levels, reports and detections. A new analyser added here appears in every use.
///
/// Feed it mono samples at one rate with ``process(_:emit:)``; it splits the stream at interval
/// boundaries, so every level covers exactly its interval and every report its report interval.
/// Times are seconds of audio since the pipeline started. One owner (a thread) drives it.
public final class AnalysisPipeline {
    /// What to measure.
    public struct Settings: Sendable {
        public var sampleRate: Double
        /// dB added to every level (0: dB re full scale).
        public var calibration: Double = 0
        /// Run the level meter. Off for a watermark search alone (`hark detect`): then there are
        /// no levels, bands or reports, and ``finish(emit:)`` emits nothing.
        public var meter = true
        /// Run the 1/3-octave band analyser (it reports with the meter).
        public var bands = true
        /// Plan the band analyser's FFT by measuring (worth it for long recordings).
        public var measuredBandPlan = false
        /// Emit a level every this many seconds (nil: none).
        public var levelInterval: Double?
        /// Emit a report every this many seconds and start a new one (nil: only at the end).
        public var reportInterval: Double?
        /// Search for watermarks with this key, profile and catalogue (nil: no search).
        public var watermark: WatermarkSearch?
        /// Listen for the catalogue's creatives by their own sound (nil: not).
        public var sound: SoundSearch?

        public init(sampleRate: Double) {
            self.sampleRate = sampleRate
        }
    }

    /// A watermark search.
    public struct WatermarkSearch: Sendable {
        public var key: WatermarkKey
        public var profile: WatermarkProfile
        public var catalogue: [WatermarkPayload]?
        /// Seconds of absence before a payload is reported again (0: every confirmation).
        public var repeatInterval: Double

        public init(key: WatermarkKey, profile: WatermarkProfile = .tv, catalogue: [WatermarkPayload]? = nil,
                    repeatInterval: Double = WatermarkDetector.defaultRepeatInterval) {
            self.key = key
            self.profile = profile
            self.catalogue = catalogue
            self.repeatInterval = repeatInterval
        }
    }

    /// A search for a catalogue's creatives by their own sound. Two are equal when they share
    /// one index (built once) and its payloads.
    public struct SoundSearch: Sendable, Equatable {
        public static func == (a: SoundSearch, b: SoundSearch) -> Bool {
            a.index === b.index && a.payloads == b.payloads && a.offAir == b.offAir && a.repeatInterval == b.repeatInterval
                && a.restartAfter == b.restartAfter
        }

        /// The creatives' landmarks; `payloads[i]` is the campaign of the index's creative `i`.
        public var index: SoundIndex
        public var payloads: [WatermarkPayload]
        /// Creatives the index holds but that are not listened for (campaigns off air that day):
        /// harkd indexes a catalogue once and changes only this at midnight. Never reported.
        public var offAir: Set<Int>
        public var repeatInterval: Double
        /// Seconds of audio a matcher reads before a new one takes over
        /// (``SoundMatcher/longestRun``; the handover forgets at most one window's evidence).
        public var restartAfter = SoundMatcher.longestRun

        public init(index: SoundIndex, payloads: [WatermarkPayload], offAir: Set<Int> = [],
                    repeatInterval: Double = WatermarkDetector.defaultRepeatInterval) {
            precondition(index.creatives == payloads.count, "a payload for each creative")
            self.index = index
            self.payloads = payloads
            self.offAir = offAir
            self.repeatInterval = repeatInterval
        }
    }

    /// A campaign heard by one witness (mark or sound) is reported with both when the other
    /// heard it within this many seconds before.
    public static let fusionWindow = 10.0

    /// The meter's and the band analyser's figures over one report interval (or the whole run).
    public struct Measurement {
        public var meter: MeterReport
        public var bands: [(label: String, level: Double?)]
        /// Seconds of audio since the pipeline started, at the end of what it covers.
        public var end: Double
    }

    public enum Output {
        /// A verified watermark; its `time` and `start` are pipeline seconds.
        case detection(WatermarkDetection)
        /// Levels over the interval ending at `end` (pipeline seconds).
        case level(IntervalLevels, end: Double)
        /// A report interval's measurement (``Settings/reportInterval``) or, from
        /// ``finish(emit:)``, the last one.
        case report(Measurement)
    }

    public let settings: Settings
    private let meter: LevelMeter?
    private var bands: ThirdOctaveBands?
    private var detector: WatermarkDetector?
    private var detectorOrigin = 0.0
    private var listener: SoundMatcher?
    private var listenerOrigin = 0.0
    /// Times the sound's matcher was replaced by a new one after ``SoundSearch/restartAfter``.
    public private(set) var soundRestarts = 0
    /// Per campaign, when each witness last heard it (pipeline seconds), and its last reading.
    private var lastMark: [WatermarkPayload: (time: Double, score: Double, confidence: Double)] = [:]
    private var lastSound: [WatermarkPayload: (time: Double, votes: Int, offset: Double?)] = [:]
    private let levelFrames: Int?
    private let reportFrames: Int?
    private var sinceLevel = 0
    private var sinceReport = 0
    private var frames = 0

    /// - Throws: ``RateOutOfRange`` outside 8–192 kHz with the meter on; when the band analyser
    ///   cannot be planned or the watermark detector cannot be built (``WatermarkDetectorError``):
    ///   callers stop rather than run without them.
    public init(_ settings: Settings) throws {
        // The meter's range; a search alone takes what the detector takes (8 kHz and up).
        guard !settings.meter || (8_000...192_000).contains(settings.sampleRate) else { throw RateOutOfRange(rate: settings.sampleRate) }
        self.settings = settings
        // Levels and reports are the meter's: without it there are none.
        func sampleCount(_ seconds: Double?) -> Int? {
            guard settings.meter, let seconds else { return nil }
            return max(1, Int((seconds * settings.sampleRate).rounded()))
        }
        meter = settings.meter ? LevelMeter(sampleRate: settings.sampleRate, calibration: settings.calibration) : nil
        levelFrames = sampleCount(settings.levelInterval)
        reportFrames = sampleCount(settings.reportInterval)
        bands = try Self.makeBands(settings)
        detector = try Self.makeDetector(settings)
        listener = try Self.makeListener(settings)
    }

    private static func makeListener(_ s: Settings) throws -> SoundMatcher? {
        guard let search = s.sound else { return nil }
        return try SoundMatcher(index: search.index, sampleRate: s.sampleRate, repeatInterval: search.repeatInterval)
    }

    private static func makeBands(_ s: Settings) throws -> ThirdOctaveBands? {
        guard s.bands && s.meter else { return nil }
        return try ThirdOctaveBands(sampleRate: s.sampleRate, planning: s.measuredBandPlan ? .measure : .estimate)
    }

    private static func makeDetector(_ s: Settings) throws -> WatermarkDetector? {
        guard let w = s.watermark else { return nil }
        let detector = try WatermarkDetector(format: WatermarkFormat(key: w.key, profile: w.profile), sampleRate: s.sampleRate,
                                             repeatInterval: w.repeatInterval, catalogue: w.catalogue)
        // A confirmation at the sound's place must outscore every campaign the sound knows too.
        detector.confirmationRivals = s.sound?.payloads ?? []
        return detector
    }

    /// The watermark detector and the sound's matcher in use, for studies of their margins on
    /// unmarked audio (their highest scores); nil when not searching.
    public var watermarkDetector: WatermarkDetector? { detector }
    public var soundMatcher: SoundMatcher? { listener }

    /// Seconds of audio processed.
    public var time: Double { Double(frames) / settings.sampleRate }

    /// Samples the watermark search could not read as they were (``WatermarkDetector/unusableSamples``).
    public var unusableSamples: Int { detector?.unusableSamples ?? 0 }

    /// Starts the watermark search afresh at the current time: its frame alignment does not
    /// survive a gap in the audio.
    public func restartWatermarkSearch() throws {
        detector = try Self.makeDetector(settings)
        detectorOrigin = time
        listener = try Self.makeListener(settings)
        listenerOrigin = time
    }

    /// Analyses the next mono samples.
    public func process(_ samples: UnsafeBufferPointer<Float>, emit: (Output) throws -> Void) throws {
        bands?.process(samples)
        if let detector {
            for var d in detector.process(samples) {
                d.time += detectorOrigin
                d.start += detectorOrigin
                d.windowStart += detectorOrigin
                try emit(.detection(fuse(d)))
            }
        }
        if var listener, let search = settings.sound {
            if listener.time >= search.restartAfter {
                listener = try Self.makeListener(settings)!
                self.listener = listener
                listenerOrigin = time
                soundRestarts += 1
            }
            for m in listener.process(samples) where !search.offAir.contains(m.reference) {
                var d = WatermarkDetection(sound: m, payload: search.payloads[m.reference])
                d.time += listenerOrigin
                d.start += listenerOrigin
                d.windowStart += listenerOrigin
                try emit(.detection(fuse(d)))
            }
            try confirmMarks(after: samples.count, emit: emit)
        }
        guard let meter else {
            frames += samples.count
            return
        }
        var done = 0
        while done < samples.count {
            var n = samples.count - done
            if let every = levelFrames { n = min(n, every - sinceLevel) }
            if let every = reportFrames { n = min(n, every - sinceReport) }
            meter.process(UnsafeBufferPointer(rebasing: samples[done..<(done + n)]))
            done += n
            frames += n
            sinceLevel += n
            sinceReport += n
            if let every = levelFrames, sinceLevel == every {
                sinceLevel = 0
                try emit(.level(meter.takeInterval(), end: time))
            }
            if let every = reportFrames, sinceReport == every {
                try emit(.report(takeMeasurement()))
                meter.restartMeasurement()
                bands = try Self.makeBands(settings)
            }
        }
    }

    /// The last ``WatermarkDetector/confirmationInterval`` (of the detector's input) in which
    /// the sound's leads were confirmed.
    private var confirmationTick = -1

    /// Once every ``WatermarkDetector/confirmationInterval``, reads the mark where the sound's
    /// leading candidates place their creatives (``SoundMatcher/leads(limit:)``,
    /// ``WatermarkDetector/confirm(_:creativeStart:)``): one codeword at one place, which a
    /// mark too faint for the blind search can reach. A campaign the mark was heard for within
    /// the search's repeat interval, or within a copy (2.4 s) when that is shorter (harkd reports
    /// every hop's detection), is not asked again: the mark is being heard, and each confirmation
    /// costs some 2 ms of a core. What it finds is `mark+sound`.
    private func confirmMarks(after count: Int, emit: (Output) throws -> Void) throws {
        guard let detector, let listener, let search = settings.sound, let w = settings.watermark else { return }
        let tick = Int(detector.elapsed / WatermarkDetector.confirmationInterval)
        guard tick != confirmationTick else { return }
        confirmationTick = tick
        let now = Double(frames + count) / settings.sampleRate
        for lead in listener.leads(limit: WatermarkDetector.confirmationsPerInterval) where !search.offAir.contains(lead.reference) {
            let payload = search.payloads[lead.reference]
            if let m = lastMark[payload], now - m.time < max(w.repeatInterval, WatermarkFormat.copyDuration) { continue }
            let start = lead.creativeStart + listenerOrigin
            guard var d = detector.confirm(payload, creativeStart: start - detectorOrigin) else { continue }
            d.time += detectorOrigin
            d.start += detectorOrigin
            d.windowStart += detectorOrigin
            d.evidence = .markAndSound
            d.soundVotes = lead.votes
            d.creativeOffset = d.time - start
            lastMark[payload] = (d.time, d.score, d.confidence)
            try emit(.detection(d))
        }
    }

    /// Adds to a detection what the other witness heard of the same campaign within
    /// ``fusionWindow``.
    private func fuse(_ heard: WatermarkDetection) -> WatermarkDetection {
        var d = heard
        let recent = { (t: Double) in d.time - t <= Self.fusionWindow }
        if heard.evidence == .mark {
            lastMark[d.payload] = (d.time, d.score, d.confidence)
            if let s = lastSound[d.payload], recent(s.time) {
                d.evidence = .markAndSound
                d.soundVotes = s.votes
                d.creativeOffset = s.offset.map { $0 + (d.time - s.time) }
            }
        } else {
            lastSound[d.payload] = (d.time, d.soundVotes ?? 0, d.creativeOffset)
            if let m = lastMark[d.payload], recent(m.time) {
                d.evidence = .markAndSound
                d.score = m.score
                d.confidence = m.confidence
            }
        }
        return d
    }

    /// Whether audio has arrived since the last report (for a report cut short).
    public var hasUnreportedAudio: Bool { sinceReport > 0 }

    /// Ends the run: the level of a partial interval, then the report of what is left.
    public func finish(emit: (Output) throws -> Void) throws {
        guard let meter else { return }
        meter.finish()
        if levelFrames != nil && sinceLevel > 0 {
            sinceLevel = 0
            try emit(.level(meter.takeInterval(), end: time))
        }
        try emit(.report(takeMeasurement()))
    }

    private func takeMeasurement() -> Measurement {
        guard let meter else { preconditionFailure("a measurement needs the meter") }
        sinceReport = 0
        bands?.finish()
        let levels = bands.map { b in zip(b.bands, b.levels(calibration: settings.calibration)).map { ($0.label, $1) } } ?? []
        return Measurement(meter: meter.report(), bands: levels, end: time)
    }
}

/// The meter, the band analyser and the watermark search need 8–192 kHz.
public struct RateOutOfRange: Error, Equatable, CustomStringConvertible {
    public let rate: Double
    public var description: String { "audio at \(Int(rate)) Hz: the meter and the watermark search need 8 to 192 kHz" }
}

extension ReportEvent {
    /// A report event from a pipeline's measurement and what the caller knows of the source.
    public init(source: String, measurement: AnalysisPipeline.Measurement, calibration: Double, sampleRate: Int, channels: Int,
                channelUse: String, format: String, warnings: [String]) {
        self.init(source: source, meter: measurement.meter, bands: measurement.bands, calibration: calibration,
                  sampleRate: sampleRate, channels: channels, channelUse: channelUse, format: format, warnings: warnings)
    }
}
