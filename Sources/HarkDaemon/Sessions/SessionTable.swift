import FoundationEssentials
import Glibc
import HarkCapture
import HarkDSP
import HarkEngine
import Logging

/// What a ``SessionTable`` asks its owner to do, in the order given.
enum SessionOutput: Equatable {
    /// A line for one client.
    case send(String, to: Int)
    /// A record: committed to the spool first, then sent to each of `to` (none: the spool alone).
    case record(Recorder.Kind, RecordStamp, line: String, to: [Int])
    /// Close the client's connection once what it was sent is written.
    case close(Int)
    /// The microphone became needed, or no longer is.
    case audioNeed(Bool)
}

/// harkd's sessions as a value: the clients (their subscriptions and what each was sent), the
/// shakes and noise sessions in flight, audio time and the airings recorded. Commands and audio
/// go in, ``SessionOutput``s come out; it knows no thread, socket or spool, so it is tested as
/// it is, and harkd's analysis thread owns the one that runs (``AnalysisLoop``), which is why
/// nothing in it is locked.
///
/// Sessions are timed in audio time (frames analysed), so a busy machine does not cut a
/// measurement short; a wall-clock deadline a few seconds later ends a session whose audio
/// stopped coming (device lost).
struct SessionTable {
    /// How long after its nominal end a session waits for audio before giving up.
    static let grace = 3.0
    /// A detection already sent to a watcher is not sent to it again while the same airing goes
    /// on (``AiringMemory``): until its payload has been absent this long (audio seconds) or is
    /// confirmed from audio that shares nothing with its previous confirmation. The memory is
    /// each connection's own, so a watcher that joins while a mark is playing hears it at the
    /// next confirmation.
    static let rebroadcastInterval = 6.0
    static let sessionLevelInterval = 0.1
    /// Sessions one connection may have in flight, and all connections together. A noise
    /// session holds a meter and a band analyser (about 1 MB); 1 000 of them on one connection
    /// once took harkd to 1 GB and made it drop audio for everyone.
    static let sessionsPerClient = 4
    static let sessionsInAll = 64

    /// What a (re)loaded configuration sets.
    struct Settings: Equatable {
        var continuous = false
        var calibration = 0.0
        var device = "default"
        /// What answers a shake that does not say (the `shake-evidence` setting).
        var shakeEvidence = Command.ShakeEvidence.any
        /// The unit named in every record's stamp.
        var unit = "test"
    }

    private struct Client {
        var watching: Set<Command.WatchClass> = []
        /// Which airings this client, watching detections, has been sent.
        var airings = AiringMemory(repeatInterval: SessionTable.rebroadcastInterval)
        /// The client shut down its side: close once its sessions have answered.
        var inputClosed = false
    }

    private struct Shake {
        let id: String?
        let client: Int
        let start: Double
        let seconds: Double
        /// Whether only a detection that heard the mark answers it.
        let needsMark: Bool
        let wallStart: Date
        let wallDeadline: Date
        var gaps = GapTally()
        var rate = 0.0
    }

    private struct Noise {
        let id: String?
        let client: Int
        let start: Double
        let seconds: Double
        let wallDeadline: Date
        /// The shared analysis chain, made when the first audio arrives (at its rate).
        var pipeline: AnalysisPipeline?
        var rate = 0.0
        var framesDone = 0
        var framesWanted = 0
        var peak: Double?
        var gaps = GapTally()
    }

    private(set) var settings = Settings()
    private var clients: [Int: Client] = [:]
    private var shakes: [Shake] = []
    private var noises: [Noise] = []
    private var streamTime = 0.0
    /// For the log only: when each payload was last confirmed.
    private var logged = AiringMemory(repeatInterval: SessionTable.rebroadcastInterval)
    /// The stamp of each payload's current airing (its record in the spool).
    private var airingStamps: [WatermarkPayload: RecordStamp] = [:]
    private(set) var audioNeeded = false
    private var closing = false
    private let logger: Logger
    /// The capture's state, for the error a session that heard nothing is answered with.
    private let captureState: @Sendable () -> (state: String, detail: String?)

    init(logger: Logger, captureState: @escaping @Sendable () -> (state: String, detail: String?) = { ("idle", nil) }) {
        self.logger = logger
        self.captureState = captureState
    }

    var sessionCount: Int { shakes.count + noises.count }
    var clientCount: Int { clients.count }

    mutating func configure(_ new: Settings) -> [SessionOutput] {
        settings = new
        return updateAudioNeed()
    }

    // MARK: - clients

    mutating func connect(_ client: Int) -> [SessionOutput] {
        guard !closing else { return [] }
        clients[client] = Client()
        return []
    }

    mutating func disconnect(_ client: Int) -> [SessionOutput] {
        clients[client] = nil
        // Sessions of a client that left have no one to answer.
        shakes.removeAll { $0.client == client }
        noises.removeAll { $0.client == client }
        return updateAudioNeed()
    }

    /// The client will send nothing more. Its connection closes now if no session of its is in
    /// flight, else when the last one has answered.
    mutating func inputClosed(_ client: Int) -> [SessionOutput] {
        clients[client]?.inputClosed = true
        return closeFinished()
    }

    /// The connections whose input is closed and whose sessions have all answered.
    private func closeFinished() -> [SessionOutput] {
        clients.filter { id, c in
            c.inputClosed && !shakes.contains { $0.client == id } && !noises.contains { $0.client == id }
        }.keys.sorted().map { .close($0) }
    }

    /// A command that changes sessions or subscriptions (``Hub`` answers the others).
    mutating func handle(_ command: Command, from client: Int, now: Date = Date()) -> [SessionOutput] {
        var out: [SessionOutput] = []
        switch command {
        case .version, .status:
            break
        case .watch(let classes, _):
            // A new watch starts with a clean memory: the next confirmation is news to it.
            clients[client]?.watching = classes
            clients[client]?.airings.reset()
        case .shake(let seconds, let id, let evidence):
            // A line decoded after its connection closed (a pipelined burst, then close) must
            // not leave a session nobody will read, holding the microphone open.
            guard clients[client] != nil else { break }
            if let why = refusal(client: client) {
                out.append(.send(Messages.error(.tooManySessions, why, id: id), to: client))
                break
            }
            shakes.append(Shake(id: id, client: client, start: streamTime, seconds: seconds,
                                needsMark: (evidence ?? settings.shakeEvidence) == .mark, wallStart: now,
                                wallDeadline: now.addingTimeInterval(seconds + Self.grace)))
        case .noise(let seconds, let id):
            guard clients[client] != nil else { break }
            if let why = refusal(client: client) {
                out.append(.send(Messages.error(.tooManySessions, why, id: id), to: client))
                break
            }
            noises.append(Noise(id: id, client: client, start: streamTime, seconds: seconds,
                                wallDeadline: now.addingTimeInterval(seconds + Self.grace)))
        }
        return out + updateAudioNeed()
    }

    /// Why a new session for `client` is refused, if it is.
    private func refusal(client: Int) -> String? {
        let mine = shakes.count { $0.client == client } + noises.count { $0.client == client }
        if mine >= Self.sessionsPerClient {
            return "too many sessions: at most \(Self.sessionsPerClient) at a time on one connection"
        }
        if shakes.count + noises.count >= Self.sessionsInAll {
            return "too many sessions: harkd runs at most \(Self.sessionsInAll) at a time; try again when one ends"
        }
        return nil
    }

    /// The clients watching `what` (a level line asks ten times a second: no dictionary is
    /// built for it).
    func watchers(of what: Command.WatchClass) -> [Int] {
        clients.compactMap { $0.value.watching.contains(what) ? $0.key : nil }
    }

    /// Works out whether anything needs the microphone, and says so when that changes.
    private mutating func updateAudioNeed() -> [SessionOutput] {
        let need = settings.continuous || !shakes.isEmpty || !noises.isEmpty
            || clients.values.contains { $0.watching.contains { $0.needsAudio } }
        guard need != audioNeeded else { return [] }
        audioNeeded = need
        return [.audioNeed(need)]
    }

    private func stamp(start: Date, end: Date) -> RecordStamp {
        RecordStamp(unit: settings.unit, start: start, end: end)
    }

    // MARK: - audio

    /// Feeds noise sessions the next mono samples, captured at `rate`.
    mutating func feed(_ samples: UnsafeBufferPointer<Float>, rate: Double, now: Date = Date()) -> [SessionOutput] {
        guard !noises.isEmpty else { return [] }
        // Every session's level lines first, then the reports of those that finished.
        var levels: [SessionOutput] = [], out: [SessionOutput] = []
        var finished: [Int] = []
        for i in noises.indices {
            if noises[i].pipeline == nil || noises[i].rate != rate {
                var p = AnalysisPipeline.Settings(sampleRate: rate)
                p.calibration = settings.calibration
                p.levelInterval = Self.sessionLevelInterval
                // The rate was usable for the analysis thread's own pipeline, so this one can be
                // made too; if not, the session ends by the clock with what it has.
                noises[i].pipeline = try? AnalysisPipeline(p)
                noises[i].rate = rate
                noises[i].framesWanted = Int((noises[i].seconds * rate).rounded())
            }
            guard let pipeline = noises[i].pipeline else { continue }
            var measurement: AnalysisPipeline.Measurement?
            var peak = noises[i].peak
            let (client, id) = (noises[i].client, noises[i].id)
            func forward(_ output: AnalysisPipeline.Output) {
                switch output {
                case .level(let l, let end):
                    if let fmax = l.LAFmax { peak = max(peak ?? fmax, fmax) }
                    levels.append(.send(Messages.sessionLevel(id: id, t: end, levels: l, peak: peak), to: client))
                case .report(let m):
                    measurement = m
                case .detection:
                    break
                }
            }
            let count = min(samples.count, noises[i].framesWanted - noises[i].framesDone)
            if count > 0 {
                try? pipeline.process(UnsafeBufferPointer(rebasing: samples[0..<count]), emit: forward)
                noises[i].framesDone += count
            }
            if noises[i].framesDone >= noises[i].framesWanted {
                try? pipeline.finish(emit: forward)
                if let m = measurement {
                    out.append(report(for: noises[i], measurement: m, warnings: noises[i].gaps.warnings(rate: rate), now: now))
                    finished.append(i)
                }
            }
            noises[i].peak = peak
        }
        guard !finished.isEmpty else { return levels }
        for i in finished.reversed() { noises.remove(at: i) }
        return levels + out + updateAudioNeed() + closeFinished()
    }

    private func report(for n: Noise, measurement m: AnalysisPipeline.Measurement, warnings: [String], now: Date) -> SessionOutput {
        let event = ReportEvent(source: settings.device, measurement: m, calibration: n.pipeline?.settings.calibration ?? 0,
                                sampleRate: Int(n.rate), channels: 1, channelUse: "mono", format: "live capture", warnings: warnings)
        let stamp = stamp(start: now.addingTimeInterval(-m.meter.duration), end: now)
        return .record(.report, stamp, line: Messages.report(id: n.id, t: nil, device: settings.device, report: event, stamp: stamp),
                       to: [n.client])
    }

    /// Captured samples that were not finite at the current point: every session in flight
    /// reports how many it measured as silence.
    mutating func nonFinite(_ count: Int) {
        for i in noises.indices { noises[i].gaps.nonFinite += count }
        for i in shakes.indices { shakes[i].gaps.nonFinite += count }
    }

    /// A break in the audio at the current point, which every session in flight must report.
    mutating func gap(_ gap: CaptureGap, rate: Double) {
        for i in noises.indices { noises[i].gaps.add(gap) }
        for i in shakes.indices {
            shakes[i].gaps.add(gap)
            shakes[i].rate = rate
        }
    }

    /// A verified watermark or a creative's sound, its times on the stream's clock (audio
    /// seconds since harkd started); `now` is when it arrived, what its stamp is made from.
    ///
    /// Each airing is one record (spooled once, with one `rid`): a watcher that joins during an
    /// airing is sent the confirmation at hand under that airing's stamp.
    mutating func detection(_ d: WatermarkDetection, now: Date = Date()) -> [SessionOutput] {
        let (time, start) = (d.time, d.start)
        var answers: [SessionOutput] = []
        let unit = settings.unit
        shakes.removeAll { shake in
            guard time >= shake.start, ShakePolicy.answers(d), d.markHeard || !shake.needsMark else { return false }
            let stamp = RecordStamp(unit: unit, start: shake.wallStart, end: now)
            answers.append(.record(.shake, stamp, line: Messages.shakeDetected(id: shake.id, detection: d, after: time - shake.start,
                                                                               stamp: stamp), to: [shake.client]))
            return true
        }
        // An airing code names its minute and whether it is stale: each code heard is an airing
        // of its own, so a replay heard after the campaign's sound is news too.
        let key = d.airingCode ?? d.payload
        // One record per airing; a watcher is told when the mark joins the sound as well.
        let news = logged.verdict(d) == .airing
        if news || airingStamps[key] == nil {
            if airingStamps.count > 64 { airingStamps = [:] }
            airingStamps[key] = stamp(start: now.addingTimeInterval(-(time - start)), end: now)
        }
        // Each watcher's memory is updated in place: no list of keys is made per confirmation.
        var watchers: [Int] = []
        for i in clients.indices where clients.values[i].watching.contains(.detection) {
            if clients.values[i].airings.isNews(d) {
                watchers.append(clients.keys[i])
            }
        }
        var out: [SessionOutput] = []
        // Confirmations come 20 times a second while a mark plays; most are news to no one.
        if news || !watchers.isEmpty {
            let airing = airingStamps[key]!
            let line = Messages.detection(d, t: time, start: start, stamp: airing)
            if news {
                let how = d.mark.map { String(cFormat: "score %.1f", $0.score) } ?? "by its sound, " + DetectionEvent.reading(d)
                logger.info("campaign \(d.payload.hex) heard: \(d.evidence.rawValue) (\(how))")
                out.append(.record(.detection, airing, line: line, to: watchers))
            } else {
                out += watchers.map { .send(line, to: $0) }
            }
        }
        out += answers
        if !answers.isEmpty { out += closeFinished() + updateAudioNeed() }
        return out
    }

    func level(_ levels: IntervalLevels, time: Double) -> [SessionOutput] {
        let line = Messages.level(t: time, levels: levels)
        return watchers(of: .level).map { .send(line, to: $0) }
    }

    func report(_ event: ReportEvent, time: Double, now: Date = Date()) -> [SessionOutput] {
        let stamp = stamp(start: now.addingTimeInterval(-event.meter.duration), end: now)
        let line = Messages.report(id: nil, t: time, device: event.source, report: event, stamp: stamp)
        return [.record(.report, stamp, line: line, to: watchers(of: .report))]
    }

    /// Advances audio time and ends sessions whose time is up. A session that got no audio at
    /// all by its wall-clock deadline ends with an `error` naming the device and what the
    /// capture last reported: not "none", not an empty report.
    mutating func tick(streamTime: Double, now: Date = Date()) -> [SessionOutput] {
        var records: [SessionOutput] = []
        var unheard: [(client: Int, id: String?, what: String)] = []
        self.streamTime = streamTime
        let settings = settings
        shakes.removeAll { shake in
            let heard = streamTime - shake.start
            guard heard >= shake.seconds || now >= shake.wallDeadline else { return false }
            guard heard > 0 else {
                unheard.append((shake.client, shake.id, "shake"))
                return true
            }
            var warnings = shake.gaps.warnings(rate: shake.rate)
            if heard < shake.seconds {
                warnings.append(String(cFormat: "audio stopped coming (capture device lost?): heard %.2f s of %.2f s", heard, shake.seconds))
            }
            let stamp = RecordStamp(unit: settings.unit, start: shake.wallStart, end: now)
            records.append(.record(.shake, stamp, line: Messages.shakeNone(id: shake.id, after: min(heard, shake.seconds), warnings: warnings,
                                                                            stamp: stamp), to: [shake.client]))
            return true
        }
        var expired: [Noise] = []
        noises.removeAll { n in
            guard now >= n.wallDeadline else { return false }
            if n.framesDone > 0 { expired.append(n) } else { unheard.append((n.client, n.id, "noise session")) }
            return true
        }
        for n in expired {
            let measured = Double(n.framesDone) / n.rate
            let warning = String(cFormat: "audio stopped coming (capture device lost?): measured %.2f s of %.2f s", measured, n.seconds)
            var measurement: AnalysisPipeline.Measurement?
            try? n.pipeline?.finish { if case .report(let m) = $0 { measurement = m } }
            if let m = measurement {
                records.append(report(for: n, measurement: m, warnings: n.gaps.warnings(rate: n.rate) + [warning], now: now))
            }
        }
        var answers: [SessionOutput] = []
        if !unheard.isEmpty {
            let capture = captureState()
            let why = capture.detail.map { ": \($0)" } ?? " (capture state: \(capture.state))"
            let device = settings.device
            for u in unheard {
                answers.append(.send(Messages.error(.noAudio, "no audio from capture device '\(device)' for this \(u.what)\(why)", id: u.id,
                                                    device: device), to: u.client))
            }
            logger.error("a \(unheard[0].what) got no audio from capture device '\(device)'\(why)")
        }
        var out = records + answers
        if !out.isEmpty { out += updateAudioNeed() + closeFinished() }
        return out
    }

    /// Answers every session in flight with an error and takes no more clients.
    mutating func shutdown(message: String) -> [SessionOutput] {
        closing = true
        let out = shakes.map { SessionOutput.send(Messages.error(.shuttingDown, message, id: $0.id), to: $0.client) }
            + noises.map { SessionOutput.send(Messages.error(.shuttingDown, message, id: $0.id), to: $0.client) }
        shakes.removeAll()
        noises.removeAll()
        return out
    }
}
