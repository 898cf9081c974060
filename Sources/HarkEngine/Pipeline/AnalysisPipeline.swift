import Dispatch
import FoundationEssentials
import Glibc
import HarkDSP

/// The one analysis chain that `hark analyze`, `hark detect`, harkd's continuous analysis and
/// its noise sessions share: mono frames → watermark detector, level meter, band analyser →
/// interval levels, reports and detections. A new analyser added here appears in every use.
///
/// Feed it mono samples at one rate with ``process(_:emit:)``; it splits the stream at interval
/// boundaries, so every level covers exactly its interval and every report its report interval.
///
/// One time base: the pipeline counts the samples it was given, and every time it or its
/// analysers emit is the stream's, ``Settings/startTime`` plus that count over the rate. Each
/// analyser is built knowing the stream time of its first sample, so nothing shifts a time on
/// its way out; seconds become UTC only at the edge (a file's start, harkd's stamps). One owner
/// (a thread) drives it; with ``Settings/concurrentReadings`` its readers run on the pool's
/// threads within each call, which returns when they are done.
public final class AnalysisPipeline {
    /// What to measure: the one settings type of every use, `hark analyze`, `hark detect`,
    /// `hark plot`, harkd's capture and its noise sessions. Two are equal when they would build
    /// the same pipeline (harkd starts afresh only when its settings change).
    public struct Settings: Sendable, Equatable {
        public var sampleRate: Double
        /// Stream seconds of the first sample (0 for a file; harkd's capture continues its
        /// stream's time across a change of format, which starts a new pipeline).
        public var startTime: Double = 0
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
        /// The pipeline's last stage (``AiringMemory``): a campaign already reported is not
        /// reported again while the same airing goes on, until it has been absent this long
        /// (seconds) or is heard from audio that shares nothing with its previous detection.
        /// 0: every confirmation, as harkd takes them, whose record and watchers each keep
        /// their own memory.
        public var repeatInterval = AiringMemory.standardInterval
        /// Read each block with the watermark search and each sound reading side by side, on
        /// threads of the process's pool: a search of a file (`hark detect`) uses the machine's
        /// cores. The marks the sound asks to confirm at the end of a block are then read with
        /// the next block's search, on its thread, before it reads on, and reported before that
        /// block's findings (or at ``finish(emit:)``): the same detections, at the same times, in
        /// the same order, but a block later than the levels of the meter, if it runs. Off, all
        /// run on the owner's thread one after another, as harkd runs them: its budget is a
        /// share of one core, and handing every batch of a live capture to other threads costs
        /// their wake-ups for no gain.
        public var concurrentReadings = false

        public init(sampleRate: Double) {
            self.sampleRate = sampleRate
        }
    }

    /// A watermark search.
    public struct WatermarkSearch: Sendable, Equatable {
        public var key: WatermarkKey
        public var profile: WatermarkProfile
        public var catalogue: [WatermarkPayload]?
        /// Campaigns whose marks carry airing codes, listened for beside the catalogue.
        public var airing: AiringListening?

        public init(key: WatermarkKey, profile: WatermarkProfile = .tv, catalogue: [WatermarkPayload]? = nil,
                    airing: AiringListening? = nil) {
            self.key = key
            self.profile = profile
            self.catalogue = catalogue
            self.airing = airing
        }
    }

    /// Airing codes to listen for (``AiringCode``): the schedule's codes for the minutes within
    /// its window of the audio's own UTC time, renewed as each minute turns; a mark of the
    /// campaigns' codes from an older minute, up to ``staleHorizon``, is reported as stale.
    public struct AiringListening: Sendable, Equatable {
        /// Live listeners are equal whatever their clock and the moment each was made, which
        /// only a recording's listener reads its minutes from.
        public static func == (a: AiringListening, b: AiringListening) -> Bool {
            a.schedule == b.schedule && a.staleHorizon == b.staleHorizon && (a.clock == nil) == (b.clock == nil)
                && (a.clock != nil || a.startUTC == b.startUTC)
        }

        public var schedule: AiringSchedule
        /// UTC (seconds since 1970) of stream second 0: a recording's time runs with its
        /// samples.
        public var startUTC: Double
        /// The wall clock (UTC seconds since 1970), when the audio is live: a capture's sample
        /// clock drifts from it by up to a hundred parts per million, seconds a day.
        public var clock: (@Sendable () -> Double)?
        /// Minutes before now that a code heard outside the window is looked for: what a
        /// recording replayed within this is reported as (stale); one older than this is an
        /// unknown mark, not reported.
        public var staleHorizon: Int

        public static let defaultStaleHorizon = 60

        /// UTC (seconds since 1970) of stream second `t`, when the stream is at `now`: a
        /// recording's by its samples, live audio's by the clock less what came since.
        func utc(at t: Double, now: Double) -> Double {
            clock.map { $0() - (now - t) } ?? startUTC + t
        }

        public init(schedule: AiringSchedule, startUTC: Double, staleHorizon: Int = AiringListening.defaultStaleHorizon) {
            self.schedule = schedule
            self.startUTC = startUTC
            self.staleHorizon = staleHorizon
        }

        /// Live audio, its minutes told by `clock`.
        public init(schedule: AiringSchedule, staleHorizon: Int = AiringListening.defaultStaleHorizon,
                    clock: @escaping @Sendable () -> Double) {
            self.init(schedule: schedule, startUTC: clock(), staleHorizon: staleHorizon)
            self.clock = clock
        }
    }

    /// A search for a catalogue's creatives by their own sound. Two are equal when they share
    /// one index (built once) and its payloads.
    public struct SoundSearch: Sendable, Equatable {
        public static func == (a: SoundSearch, b: SoundSearch) -> Bool {
            a.index === b.index && a.payloads == b.payloads && a.offAir == b.offAir
                && a.restartAfter == b.restartAfter && a.embeddings === b.embeddings && a.landmarks == b.landmarks
        }

        /// The creatives' landmarks; `payloads[i]` is the campaign of the index's creative `i`.
        public var index: SoundIndex
        public var payloads: [WatermarkPayload]
        /// Creatives the index holds but that are not listened for (campaigns off air that day):
        /// harkd indexes a catalogue once and changes only this at midnight. Never reported.
        public var offAir: Set<Int>
        /// Seconds of audio a matcher reads before a new one takes over
        /// (``SoundMatcher/longestRun``; the handover forgets at most one window's evidence).
        public var restartAfter = SoundMatcher.longestRun
        /// The creatives' learned readings (``EmbeddingMatcher``), listened for beside their
        /// landmarks; nil: landmarks alone.
        public var embeddings: EmbeddingIndex?
        /// Listen by landmarks too (off: the learned reading alone, which needs ``embeddings``).
        public var landmarks = true

        public init(index: SoundIndex, payloads: [WatermarkPayload], offAir: Set<Int> = [],
                    embeddings: EmbeddingIndex? = nil) {
            precondition(index.creatives == payloads.count, "a payload for each creative")
            precondition(embeddings.map { $0.creatives == payloads.count } ?? true, "embeddings for each creative")
            self.index = index
            self.embeddings = embeddings
            self.payloads = payloads
            self.offAir = offAir
        }
    }

    /// A campaign heard by one witness (mark or sound) is reported with both when the other
    /// heard it within this many seconds before.
    public static let fusionWindow = 10.0

    /// The meter's and the band analyser's figures over one report interval (or the whole run).
    public struct Measurement {
        public var meter: MeterReport
        public var bands: [(label: String, level: Double?)]
        /// Stream seconds at the end of what it covers.
        public var end: Double
    }

    public enum Output {
        /// A verified watermark; its `time` and `start` are stream seconds.
        case detection(WatermarkDetection)
        /// Levels over the interval ending at `end` (stream seconds).
        case level(IntervalLevels, end: Double)
        /// A report interval's measurement (``Settings/reportInterval``) or, from
        /// ``finish(emit:)``, the last one.
        case report(Measurement)
    }

    public let settings: Settings
    private let meter: LevelMeter?
    private var bands: ThirdOctaveBands?
    private var detector: WatermarkDetector?
    private var listener: SoundMatcher?
    private var learner: EmbeddingMatcher?
    /// Times the sound's matcher was replaced by a new one after ``SoundSearch/restartAfter``.
    public private(set) var soundRestarts = 0
    /// Per campaign, when each witness last heard it (stream seconds), and its last reading.
    private var lastMark: [WatermarkPayload: (time: Double, mark: WatermarkDetection.Mark?, airing: Airing?)] = [:]
    private var lastSound: [WatermarkPayload: (time: Double, sound: WatermarkDetection.Sound?)] = [:]
    /// Which airings were reported (``report(_:_:)``).
    private var news: AiringMemory
    /// Per campaign, when a stale airing of it was last heard (stream seconds).
    private var lastStale: [WatermarkPayload: Double] = [:]
    /// The campaigns whose marks carry airing codes.
    private lazy var airingCampaigns = Set(settings.watermark?.airing?.schedule.campaigns.map(\.campaign) ?? [])
    /// The airing codes listened for now, with what each names, and the minute they are for.
    private var airingCodes: [WatermarkPayload: Airing] = [:]
    private var airingMinute: Int64?
    /// Codes heard outside the window, and the past airing each turned out to be (nil: none).
    private var pastAirings: [WatermarkPayload: Airing?] = [:]
    /// Stream seconds at the end of the samples being processed: what has come by now.
    private var blockEnd = 0.0
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
        news = AiringMemory(repeatInterval: settings.repeatInterval)
        levelFrames = sampleCount(settings.levelInterval)
        reportFrames = sampleCount(settings.reportInterval)
        bands = try Self.makeBands(settings)
        detector = try Self.makeDetector(settings, startTime: settings.startTime)
        listener = try Self.makeListener(settings, startTime: settings.startTime)
        learner = try Self.makeLearner(settings, startTime: settings.startTime)
    }

    private static func makeListener(_ s: Settings, startTime: Double) throws -> SoundMatcher? {
        guard let search = s.sound, search.landmarks else { return nil }
        return try SoundMatcher(index: search.index, sampleRate: s.sampleRate, startTime: startTime)
    }

    private static func makeLearner(_ s: Settings, startTime: Double) throws -> EmbeddingMatcher? {
        guard let search = s.sound, let embeddings = search.embeddings else { return nil }
        return EmbeddingMatcher(index: embeddings, sampleRate: s.sampleRate, embedder: try SoundEmbedder(), startTime: startTime)
    }

    private static func makeBands(_ s: Settings) throws -> ThirdOctaveBands? {
        guard s.bands && s.meter else { return nil }
        return try ThirdOctaveBands(sampleRate: s.sampleRate, planning: s.measuredBandPlan ? .measure : .estimate)
    }

    private static func makeDetector(_ s: Settings, startTime: Double) throws -> WatermarkDetector? {
        guard let w = s.watermark else { return nil }
        // Airing codes join the catalogue; its threshold is set for every code of a minute.
        let capacity = w.airing.map { (w.catalogue?.count ?? 0) + $0.schedule.codesPerMinute }
        let detector = try WatermarkDetector(format: WatermarkFormat(key: w.key, profile: w.profile), sampleRate: s.sampleRate,
                                             catalogue: w.catalogue, capacity: capacity,
                                             startTime: startTime)
        detector.decodesUnlisted = w.airing != nil
        // A confirmation at the sound's place must outscore every campaign the sound knows too.
        detector.confirmationRivals = s.sound?.payloads ?? []
        return detector
    }

    /// The watermark detector and the sound's matcher in use, for studies of their margins on
    /// unmarked audio (their highest scores); nil when not searching.
    public var watermarkDetector: WatermarkDetector? { detector }
    public var soundMatcher: SoundMatcher? { listener }
    public var embeddingMatcher: EmbeddingMatcher? { learner }

    /// Stream seconds at the end of the audio processed.
    public var time: Double { seconds(atFrame: frames) }

    /// Stream seconds at sample `frame` of the pipeline's input: the one conversion from the
    /// sample count to seconds.
    private func seconds(atFrame frame: Int) -> Double { settings.startTime + Double(frame) / settings.sampleRate }

    /// Samples the watermark search could not read as they were (``WatermarkDetector/unusableSamples``).
    public var unusableSamples: Int { detector?.unusableSamples ?? 0 }

    /// Starts the watermark search afresh at the current time: its frame alignment does not
    /// survive a gap in the audio.
    public func restartWatermarkSearch() throws {
        // The old searches go before the new ones are built, so that a gap (an overrun) never
        // holds two detectors' state at once (0.75 MB each with a catalogue of 100).
        (detector, listener, learner) = (nil, nil, nil)
        // Confirmations asked of the old detector go with it: it no longer reads on.
        pendingConfirmations = []
        detector = try Self.makeDetector(settings, startTime: time)
        airingMinute = nil
        listener = try Self.makeListener(settings, startTime: time)
        learner = try Self.makeLearner(settings, startTime: time)
    }

    /// Analyses the next mono samples.
    public func process(_ samples: UnsafeBufferPointer<Float>, emit: (Output) throws -> Void) throws {
        blockEnd = seconds(atFrame: frames + samples.count)
        bands?.process(samples)
        if let detector { renewAiringCodes(detector) }
        if let search = settings.sound, let old = listener, old.time >= search.restartAfter {
            listener = try Self.makeListener(settings, startTime: time)!
            soundRestarts += 1
        }
        let read = BlockReading(samples: samples, detector: detector, confirming: pendingConfirmations,
                                listener: listener, learner: learner)
        pendingConfirmations = []
        read.run(concurrently: settings.concurrentReadings)
        try reportConfirmations(read.confirmed, emit)
        for d in read.marks {
            guard let placed = placeAiring(d) else { continue }
            try report(fuse(placed), emit)
        }
        if let search = settings.sound {
            func reportSound(_ matches: [SoundMatch]) throws {
                for m in matches where !search.offAir.contains(m.reference) {
                    try report(fuse(WatermarkDetection(sound: m, payload: search.payloads[m.reference])), emit)
                }
            }
            try reportSound(read.landmarks)
            try reportSound(read.learned)
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

    /// Both readings' leads, the stronger first, a creative once (its learned lead first: its
    /// place is read from a second of sound, not from a few landmarks).
    private func soundLeads(limit: Int) -> [SoundLead] {
        var out = learner?.leads(limit: limit) ?? []
        for lead in listener?.leads(limit: limit) ?? [] where !out.contains(where: { $0.reference == lead.reference }) {
            out.append(lead)
        }
        return Array(out.prefix(limit))
    }

    /// The last ``WatermarkDetector/confirmationInterval`` (of the detector's input) in which
    /// the sound's leads were confirmed.
    private var confirmationTick = -1

    /// Once every ``WatermarkDetector/confirmationInterval``, reads the mark where the sound's
    /// leading candidates place their creatives (``SoundMatcher/leads(limit:)``,
    /// ``WatermarkDetector/confirm(_:creativeStart:)``): one codeword at one place, which a
    /// mark too faint for the blind search can reach. A campaign the mark was heard for within
    /// the last copy (2.4 s) is not asked again: the mark is being heard, and each confirmation
    /// costs some 2 ms of a core. What it finds is `mark+sound`.
    private func confirmMarks(after count: Int, emit: (Output) throws -> Void) throws {
        guard let detector, listener != nil || learner != nil, let search = settings.sound else { return }
        let tick = Int(detector.elapsed / WatermarkDetector.confirmationInterval)
        guard tick != confirmationTick else { return }
        confirmationTick = tick
        let now = seconds(atFrame: frames + count)
        var asked: [ConfirmationAsk] = []
        for lead in soundLeads(limit: WatermarkDetector.confirmationsPerInterval) where !search.offAir.contains(lead.reference) {
            let payload = search.payloads[lead.reference]
            // An airing campaign's own payload never airs: its codes are what the search hears.
            if airingCampaigns.contains(payload) { continue }
            if let m = lastMark[payload], now - m.time < WatermarkFormat.copyDuration { continue }
            asked.append(.init(payload: payload, creativeStart: lead.creativeStart, votes: lead.votes))
        }
        // Side by side, the confirmations are read with the next block's search, on its
        // thread, before it reads on (they read the detector as it stands now).
        if settings.concurrentReadings {
            pendingConfirmations = asked
        } else {
            try reportConfirmations(ConfirmationAsk.read(asked, by: detector), emit)
        }
    }

    /// Confirmations asked at the end of the last block, read with this one's search.
    private var pendingConfirmations: [ConfirmationAsk] = []

    private func reportConfirmations(_ found: [WatermarkDetection], _ emit: (Output) throws -> Void) throws {
        for d in found {
            lastMark[d.payload] = (d.time, d.mark, nil)
            try report(d, emit)
        }
    }

    /// The last stage: a detection that is news (``Settings/repeatInterval``) goes out.
    private func report(_ d: WatermarkDetection, _ emit: (Output) throws -> Void) throws {
        guard news.isNews(d) else { return }
        try emit(.detection(d))
    }

    /// When the audio's UTC minute has turned, listens for the codes valid in the new one.
    private func renewAiringCodes(_ detector: WatermarkDetector) {
        guard let airing = settings.watermark?.airing else { return }
        let minute = AiringCode.minute(atUTC: airing.utc(at: time, now: time))
        guard minute != airingMinute else { return }
        airingMinute = minute
        let listed = settings.watermark?.catalogue ?? []
        airingCodes = airing.schedule.codes(around: minute, reserved: Set(listed))
        detector.replaceCatalogue(listed + airingCodes.keys)
        if pastAirings.count > 256 { pastAirings = [:] }
    }

    /// A detection of an airing code as its campaign's, with the airing it names; a code heard
    /// outside the window as the stale airing it was, if the campaigns made it within the
    /// horizon; nil for an unknown mark.
    private func placeAiring(_ heard: WatermarkDetection) -> WatermarkDetection? {
        var d = heard
        if let airing = airingCodes[d.payload] {
            (d.airingCode, d.payload, d.airing) = (d.payload, airing.campaign, airing)
            return d
        }
        guard d.mark?.unlisted == true else { return d }
        guard let listening = settings.watermark?.airing, let minute = airingMinute else { return nil }
        if pastAirings[d.payload] == nil {
            pastAirings[d.payload] = .some(listening.schedule.pastAiring(of: d.payload, before: minute, horizon: listening.staleHorizon))
        }
        guard let past = pastAirings[d.payload] ?? nil else { return nil }
        (d.airingCode, d.payload, d.airing, d.stale) = (d.payload, past.campaign, past, true)
        lastStale[past.campaign] = d.time
        return d
    }

    /// Adds to a detection what the other witness heard of the same campaign within
    /// ``fusionWindow``. The sound of a campaign whose mark was just heard stale is the same
    /// recording played back: it is stale too.
    private func fuse(_ heard: WatermarkDetection) -> WatermarkDetection {
        var d = heard
        let recent = { (t: Double) in d.time - t <= Self.fusionWindow }
        if let t = lastStale[d.payload], recent(t) { d.stale = true }
        d.airingCoded = airingCampaigns.contains(d.payload)
        if heard.evidence == .mark {
            if !d.stale { lastMark[d.payload] = (d.time, d.mark, d.airing) }
            if let s = lastSound[d.payload], recent(s.time), var sound = s.sound {
                sound.offset = sound.offset.map { $0 + (d.time - s.time) }
                d.sound = sound
            }
        } else {
            lastSound[d.payload] = (d.time, d.sound)
            if let m = lastMark[d.payload], recent(m.time), let mark = m.mark {
                d.mark = mark
                d.airing = m.airing
            }
        }
        placeInSlot(&d)
        return d
    }

    /// An airing-coded campaign heard without a fresh mark is fresh when its creative's start,
    /// as the sound places it, falls in one of the campaign's airing slots (``AiringSlot``);
    /// heard at any other time it stays unknown, and it never answers a shake.
    private func placeInSlot(_ d: inout WatermarkDetection) {
        guard d.airingCoded, !d.stale, d.airing == nil, let offset = d.sound?.offset,
              let listening = settings.watermark?.airing else { return }
        let start = listening.utc(at: d.time, now: blockEnd) - offset
        guard let slot = listening.schedule.slot(of: d.payload, creativeStart: start) else { return }
        d.airing = Airing(campaign: d.payload, channel: slot.channel, minute: AiringCode.minute(atUTC: start))
        d.airingSlot = slot
    }

    /// Whether audio has arrived since the last report (for a report cut short).
    public var hasUnreportedAudio: Bool { sinceReport > 0 }

    /// Ends the run: the level of a partial interval, then the report of what is left.
    public func finish(emit: (Output) throws -> Void) throws {
        if let detector, !pendingConfirmations.isEmpty {
            try reportConfirmations(ConfirmationAsk.read(pendingConfirmations, by: detector), emit)
            pendingConfirmations = []
        }
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

/// A mark the pipeline asks the detector to confirm where the sound places its creative
/// (``WatermarkDetector/confirm(_:creativeStart:)``).
struct ConfirmationAsk {
    var payload: WatermarkPayload
    var creativeStart: Double
    var votes: Int

    /// The confirmations found, in the order asked; a campaign once (a second lead of a campaign
    /// already confirmed here is not asked: its mark has just been heard).
    static func read(_ asked: [ConfirmationAsk], by detector: WatermarkDetector) -> [WatermarkDetection] {
        var found: [WatermarkDetection] = []
        for ask in asked where !found.contains(where: { $0.payload == ask.payload }) {
            guard var d = detector.confirm(ask.payload, creativeStart: ask.creativeStart) else { continue }
            d.sound = WatermarkDetection.Sound(votes: ask.votes, offset: d.time - ask.creativeStart)
            found.append(d)
        }
        return found
    }
}

/// One block read by the pipeline's readers (the watermark search, the landmarks, the learned
/// reading), one after another or side by side (``AnalysisPipeline/Settings/concurrentReadings``).
///
/// `@unchecked Sendable`: its readers are handed to the pool's threads. Each reader, and the
/// result it fills, is touched by one iteration of `concurrentPerform` alone; the readers share
/// no state (FFTW's planner, the one thing they could share, takes its own lock); and the call
/// returns only when every iteration has, while the pipeline's owner waits in it, so nothing
/// else touches them meanwhile.
private final class BlockReading: @unchecked Sendable {
    let samples: UnsafeBufferPointer<Float>
    let detector: WatermarkDetector?
    /// Marks to confirm before the detector reads the block (``ConfirmationAsk/read(_:by:)``).
    let confirming: [ConfirmationAsk]
    let listener: SoundMatcher?
    let learner: EmbeddingMatcher?
    private(set) var confirmed: [WatermarkDetection] = []
    private(set) var marks: [WatermarkDetection] = []
    private(set) var landmarks: [SoundMatch] = []
    private(set) var learned: [SoundMatch] = []

    init(samples: UnsafeBufferPointer<Float>, detector: WatermarkDetector?, confirming: [ConfirmationAsk],
         listener: SoundMatcher?, learner: EmbeddingMatcher?) {
        (self.samples, self.detector, self.confirming, self.listener, self.learner) = (samples, detector, confirming, listener, learner)
    }

    private enum Reader: Int, CaseIterable { case mark, landmarks, learned }

    func run(concurrently: Bool) {
        let present = (detector != nil ? 1 : 0) + (listener != nil ? 1 : 0) + (learner != nil ? 1 : 0)
        guard concurrently, present > 1 else {
            for r in Reader.allCases { read(r) }
            return
        }
        DispatchQueue.concurrentPerform(iterations: Reader.allCases.count) { read(Reader(rawValue: $0)!) }
    }

    /// What `reader` finds in the block, if the pipeline has it.
    private func read(_ reader: Reader) {
        switch reader {
        case .mark:
            guard let detector else { return }
            confirmed = ConfirmationAsk.read(confirming, by: detector)
            marks = detector.process(samples)
        case .landmarks: landmarks = listener?.process(samples) ?? []
        case .learned: learned = learner?.process(samples) ?? []
        }
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
