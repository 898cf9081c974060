import FoundationEssentials
import Glibc
import HarkSystem
import HarkCapture
import HarkDSP
import HarkEngine
import Logging


/// Where commands meet audio: connected clients and their subscriptions, shake and noise
/// sessions, and the fan-out of detections, levels, reports and status.
///
/// Commands arrive on NIO's threads, audio on the analysis thread; one lock guards the state
/// (clients, subscriptions, the lists of sessions). No DSP runs under it: a noise session's
/// pipeline and counters belong to the analysis thread, which alone feeds, ticks and ends them.
/// Sessions are timed in audio time (frames analysed), so a busy machine does not cut a
/// measurement short; a wall-clock deadline a few seconds later ends a session whose audio
/// stopped coming (device lost).
///
/// Sendable by hand: every part of its state is reached only under its lock, except a noise
/// session's analysis chain, which the lock hands to the analysis thread alone (the DSP runs
/// outside the lock so socket handlers never wait on it) and which no other thread touches.
public final class Hub: @unchecked Sendable {
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

    private struct ClientState {
        let connection: ClientConnection
        var watching: Set<Command.WatchClass> = []
        /// Which airings this client, watching detections, has been sent.
        var airings = AiringMemory(repeatInterval: Hub.rebroadcastInterval)
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
        let wallStart = Date()
        let wallDeadline: Date
        var gaps = GapTally()
        var rate = 0.0
    }

    private final class Noise {
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

        init(id: String?, client: Int, start: Double, seconds: Double) {
            self.id = id
            self.client = client
            self.start = start
            self.seconds = seconds
            wallDeadline = Date(timeIntervalSinceNow: seconds + Hub.grace)
        }
    }

    private struct State {
        var clients: [Int: ClientState] = [:]
        var shakes: [Shake] = []
        var noises: [Noise] = []
        var streamTime = 0.0
        /// For the log only: when each payload was last confirmed.
        var logged = AiringMemory(repeatInterval: Hub.rebroadcastInterval)
        /// The stamp of each payload's current airing (its record in the spool).
        var airingStamps: [WatermarkPayload: RecordStamp] = [:]
        var audioNeeded = false
        var continuous = false
        /// What answers a shake that does not say (the `shake-evidence` setting).
        var shakeEvidence = Command.ShakeEvidence.any
        var calibration = 0.0
        var closing = false
        var maxClients = Int.max
        var clientsRefused = 0
        var device = "default"
    }

    private let state = Locked(State())
    /// Called as each timed-out noise session's meter is finished, with whether the hub's lock
    /// is held then (tests: it must not be). Given at init, never changed.
    private let finishingExpiredSession: (@Sendable (_ lockHeld: Bool) -> Void)?

    /// A record made under the lock, committed to the spool and sent after it.
    private struct Outgoing {
        var client: Int
        var kind: Recorder.Kind
        var stamp: RecordStamp
        var line: String
    }

    /// Commits each record, then sends it: nothing reaches a client that a crash could lose.
    private func deliver(_ records: [Outgoing], recorder: Recorder) {
        for r in records {
            recorder.commit(r.kind, stamp: r.stamp, line: r.line)
            send(r.line, to: r.client)
        }
    }
    private let logger: Logger
    private let hooks = Locked(Hooks())
    private struct Hooks {
        var recorder = Recorder.unspooled()
        var onAudioNeed: @Sendable (Bool) -> Void = { _ in }
        var statusProvider: @Sendable () -> Messages.Status = {
            Messages.Status(state: "idle", device: "", rate: nil, mode: "", uptime: 0, overruns: 0, dropped: 0, clients: 0, sessions: 0)
        }
    }
    /// Stamps every report, detection and shake result and commits it to the spool before it
    /// is sent.
    var recorder: Recorder {
        get { hooks.withLock { $0.recorder } }
        set { hooks.withLock { $0.recorder = newValue } }
    }
    /// Told whenever the microphone becomes needed or not (on-demand mode).
    var onAudioNeed: @Sendable (Bool) -> Void {
        get { hooks.withLock { $0.onAudioNeed } }
        set { hooks.withLock { $0.onAudioNeed = newValue } }
    }
    /// Supplies the figures of a status message.
    var statusProvider: @Sendable () -> Messages.Status {
        get { hooks.withLock { $0.statusProvider } }
        set { hooks.withLock { $0.statusProvider = newValue } }
    }

    init(logger: Logger, finishingExpiredSession: (@Sendable (_ lockHeld: Bool) -> Void)? = nil) {
        self.logger = logger
        self.finishingExpiredSession = finishingExpiredSession
    }

    /// Applies the parts of a (re)loaded configuration the hub uses.
    func configure(continuous: Bool, calibration: Double, device: String, shakeEvidence: Command.ShakeEvidence = .any) {
        state.withLock {
            $0.continuous = continuous
            $0.shakeEvidence = shakeEvidence
            $0.calibration = calibration
            $0.device = device
        }
        updateAudioNeed()
    }

    var clientCount: Int { state.withLock { $0.clients.count } }
    var sessionCount: Int { state.withLock { $0.shakes.count + $0.noises.count } }

    // MARK: - clients (NIO threads)

    /// Why a connection was not taken.
    enum Refusal: Equatable {
        case shuttingDown
        /// ``maxClients`` are connected.
        case full(Int)
    }

    /// Takes a new client (and sends it the version banner), or says why not.
    func connect(_ connection: ClientConnection) -> Refusal? {
        let refusal = state.withLock { s -> Refusal? in
            guard !s.closing else { return .shuttingDown }
            guard s.clients.count < s.maxClients else {
                s.clientsRefused += 1
                return .full(s.maxClients)
            }
            s.clients[connection.id] = ClientState(connection: connection)
            return nil
        }
        switch refusal {
        case nil: connection.send(Messages.version())
        case .full(let n):
            for line in refusals.admit("a client was refused: \(n) clients are connected (max-clients)") { logger.warning("\(line)") }
        case .shuttingDown: break
        }
        return refusal
    }

    /// Serves at most `n` clients at once (harkd's `max-clients`): each is a descriptor, and the
    /// capture device, the spool and the uplink must still find theirs.
    func limitClients(_ n: Int) {
        state.withLock { $0.maxClients = max(1, n) }
    }

    var maxClients: Int { state.withLock { $0.maxClients } }
    /// Connections refused for ``maxClients`` since start.
    var clientsRefused: Int { state.withLock { $0.clientsRefused } }
    private let refusals = LogRateLimiter(burst: 1, window: 60)

    func disconnect(_ id: Int) {
        state.withLock { s in
            s.clients[id] = nil
            // Sessions of a client that left have no one to answer.
            s.shakes.removeAll { $0.client == id }
            s.noises.removeAll { $0.client == id }
        }
        updateAudioNeed()
    }

    /// The client will send nothing more. Its connection closes now if no session of its is in
    /// flight, else when the last one has answered.
    func inputClosed(_ client: Int) {
        state.withLock { $0.clients[client]?.inputClosed = true }
        closeFinishedConnections()
    }

    /// Closes the connections whose input is closed and whose sessions have all answered.
    private func closeFinishedConnections() {
        let done = state.withLock { s -> [ClientConnection] in
            s.clients.values.filter { c in
                c.inputClosed && !s.shakes.contains { $0.client == c.connection.id } && !s.noises.contains { $0.client == c.connection.id }
            }.map(\.connection)
        }
        for c in done { c.closeWhenWritten() }
    }

    func handle(_ command: Command, from client: Int) {
        switch command {
        case .version(let id):
            send(Messages.version(id: id), to: client)
        case .status(let id):
            send(Messages.status(statusProvider(), id: id), to: client)
        case .watch(let classes, let id):
            state.withLock { s in
                // A new watch starts with a clean memory: the next confirmation is news to it.
                s.clients[client]?.watching = classes
                s.clients[client]?.airings.reset()
            }
            var j = JSONLine()
            j.add("class", "watch")
            if let id { j.add("id", id) }
            j.add("classes", strings: classes.sorted().map(\.rawValue))
            send(j.line, to: client)
            if classes.contains(.status) { send(Messages.status(statusProvider()), to: client) }
        case .shake(let seconds, let id, let evidence):
            let refusal = state.withLock { s -> String? in
                // A line decoded after its connection closed (a pipelined burst, then close)
                // must not leave a session nobody will read, holding the microphone open.
                guard s.clients[client] != nil else { return nil }
                if let why = Self.refusal(s, client: client) { return why }
                s.shakes.append(Shake(id: id, client: client, start: s.streamTime, seconds: seconds,
                                      needsMark: (evidence ?? s.shakeEvidence) == .mark,
                                      wallDeadline: Date(timeIntervalSinceNow: seconds + Self.grace)))
                return nil
            }
            if let refusal { send(Messages.error(.tooManySessions, refusal, id: id), to: client) }
        case .noise(let seconds, let id):
            let refusal = state.withLock { s -> String? in
                guard s.clients[client] != nil else { return nil }
                if let why = Self.refusal(s, client: client) { return why }
                s.noises.append(Noise(id: id, client: client, start: s.streamTime, seconds: seconds))
                return nil
            }
            if let refusal { send(Messages.error(.tooManySessions, refusal, id: id), to: client) }
        }
        updateAudioNeed()
    }

    /// Why a new session for `client` is refused, if it is.
    private static func refusal(_ s: State, client: Int) -> String? {
        let mine = s.shakes.count { $0.client == client } + s.noises.count { $0.client == client }
        if mine >= sessionsPerClient {
            return "too many sessions: at most \(sessionsPerClient) at a time on one connection"
        }
        if s.shakes.count + s.noises.count >= sessionsInAll {
            return "too many sessions: harkd runs at most \(sessionsInAll) at a time; try again when one ends"
        }
        return nil
    }

    func reject(_ rejection: Command.Rejection, from client: Int) {
        send(Messages.error(rejection.code, rejection.message, id: rejection.id), to: client)
    }

    private func send(_ line: String, to client: Int) {
        let connection = state.withLock { $0.clients[client]?.connection }
        connection?.send(line)
    }

    private func broadcast(_ line: String, to watchers: Command.WatchClass) {
        let targets = state.withLock { s in s.clients.values.filter { $0.watching.contains(watchers) }.map(\.connection) }
        for c in targets { c.send(line) }
    }

    /// Works out whether anything needs the microphone, and says so when that changes.
    private func updateAudioNeed() {
        let change = state.withLock { s -> Bool? in
            let need = s.continuous || !s.shakes.isEmpty || !s.noises.isEmpty
                || s.clients.values.contains { $0.watching.contains { $0.needsAudio } }
            guard need != s.audioNeeded else { return nil }
            s.audioNeeded = need
            return need
        }
        if let need = change { onAudioNeed(need) }
    }

    var audioNeeded: Bool { state.withLock { $0.audioNeeded } }

    // MARK: - audio (analysis thread)

    /// Feeds noise sessions the next mono samples, captured at `rate`.
    ///
    /// The measuring runs outside the hub's lock, so socket handlers never wait on DSP: only
    /// the analysis thread touches a session's pipeline and counters (here, in ``gap(_:rate:)``
    /// and in ``tick(streamTime:now:)``); the handlers only add and remove sessions, which is
    /// why a finished one is answered only if it is still there.
    func feed(_ samples: UnsafeBufferPointer<Float>, rate: Double, streamTime: Double) {
        let (sessions, calibration, device) = state.withLock { s in (s.noises, s.calibration, s.device) }
        guard !sessions.isEmpty else { return }
        let recorder = self.recorder
        var finished: [(Noise, Outgoing)] = []
        var levels: [(Int, String)] = []
        for n in sessions {
            if n.pipeline == nil || n.rate != rate {
                var settings = AnalysisPipeline.Settings(sampleRate: rate)
                settings.calibration = calibration
                settings.levelInterval = Self.sessionLevelInterval
                // The rate was usable for the analysis thread's own pipeline, so this one can be
                // made too; if not, the session ends by the clock with what it has.
                n.pipeline = try? AnalysisPipeline(settings)
                n.rate = rate
                n.framesWanted = Int((n.seconds * rate).rounded())
            }
            guard let pipeline = n.pipeline else { continue }
            var measurement: AnalysisPipeline.Measurement?
            func forward(_ output: AnalysisPipeline.Output) {
                switch output {
                case .level(let l, let end):
                    if let fmax = l.LAFmax { n.peak = max(n.peak ?? fmax, fmax) }
                    levels.append((n.client, Messages.sessionLevel(id: n.id, t: end, levels: l, peak: n.peak)))
                case .report(let m):
                    measurement = m
                case .detection:
                    break
                }
            }
            let count = min(samples.count, n.framesWanted - n.framesDone)
            if count > 0 {
                try? pipeline.process(UnsafeBufferPointer(rebasing: samples[0..<count]), emit: forward)
                n.framesDone += count
            }
            if n.framesDone >= n.framesWanted {
                try? pipeline.finish(emit: forward)
                if let m = measurement {
                    finished.append((n, report(for: n, measurement: m, device: device, warnings: n.gaps.warnings(rate: rate),
                                               recorder: recorder, now: Date())))
                }
            }
        }
        let answered = state.withLock { s -> [(Noise, Outgoing)] in
            let live = finished.filter { f in s.noises.contains { $0 === f.0 } }
            s.noises.removeAll { n in finished.contains { $0.0 === n } }
            return live
        }
        for (client, line) in levels { send(line, to: client) }
        deliver(answered.map(\.1), recorder: recorder)
        if !answered.isEmpty {
            updateAudioNeed()
            closeFinishedConnections()
        }
    }

    private func report(for n: Noise, measurement m: AnalysisPipeline.Measurement, device: String, warnings: [String],
                        recorder: Recorder, now: Date) -> Outgoing {
        let event = ReportEvent(source: device, measurement: m, calibration: n.pipeline?.settings.calibration ?? 0,
                                sampleRate: Int(n.rate), channels: 1, channelUse: "mono", format: "live capture", warnings: warnings)
        let stamp = recorder.stamp(start: now.addingTimeInterval(-m.meter.duration), end: now)
        return Outgoing(client: n.client, kind: .report, stamp: stamp,
                        line: Messages.report(id: n.id, t: nil, device: device, report: event, stamp: stamp))
    }

    /// Captured samples that were not finite at the current point: every session in flight
    /// reports how many it measured as silence.
    func nonFinite(_ count: Int) {
        state.withLock { s in
            for n in s.noises { n.gaps.nonFinite += count }
            for i in s.shakes.indices { s.shakes[i].gaps.nonFinite += count }
        }
    }

    /// A break in the audio at the current point, which every session in flight must report.
    func gap(_ gap: CaptureGap, rate: Double) {
        state.withLock { s in
            for n in s.noises { n.gaps.add(gap) }
            for i in s.shakes.indices {
                s.shakes[i].gaps.add(gap)
                s.shakes[i].rate = rate
            }
        }
    }

    /// A verified watermark; `time` and `start` in audio seconds.
    ///
    /// Each airing is one record (spooled once, with one `rid`): a watcher that joins during an
    /// airing is sent the confirmation at hand under that airing's stamp.
    func detection(_ d: WatermarkDetection, time: Double, start: Double, now: Date = Date()) {
        let recorder = self.recorder
        var answers: [Outgoing] = []
        var watchers: [ClientConnection] = []
        let airing = state.withLock { s -> (stamp: RecordStamp, news: Bool) in
            s.shakes.removeAll { shake in
                guard time >= shake.start, ShakePolicy.answers(d), d.markHeard || !shake.needsMark else { return false }
                let stamp = recorder.stamp(start: shake.wallStart, end: now)
                answers.append(Outgoing(client: shake.client, kind: .shake, stamp: stamp,
                                        line: Messages.shakeDetected(id: shake.id, detection: d, after: time - shake.start, stamp: stamp)))
                return true
            }
            let windowStart = time - (d.time - d.windowStart)
            // An airing code names its minute and whether it is stale: each code heard is an
            // airing of its own, so a replay heard after the campaign's sound is news too.
            let key = d.airingCode ?? d.payload
            let news = s.logged.isNews(key, time: time, windowStart: windowStart, copyStart: start)
            if news || s.airingStamps[key] == nil {
                if s.airingStamps.count > 64 { s.airingStamps = [:] }
                s.airingStamps[key] = recorder.stamp(start: now.addingTimeInterval(-(time - start)), end: now)
            }
            for (id, var c) in s.clients where c.watching.contains(.detection) {
                if c.airings.isNews(key, time: time, windowStart: windowStart, copyStart: start) { watchers.append(c.connection) }
                s.clients[id] = c
            }
            return (s.airingStamps[key]!, news)
        }
        // Confirmations come 20 times a second while a mark plays; most are news to no one.
        if airing.news || !watchers.isEmpty {
            let line = Messages.detection(d, t: time, start: start, stamp: airing.stamp)
            if airing.news {
                let how = d.mark.map { String(cFormat: "score %.1f", $0.score) } ?? "by its sound, " + DetectionEvent.reading(d)
                logger.info("campaign \(d.payload.hex) heard: \(d.evidence.rawValue) (\(how))")
                recorder.commit(.detection, stamp: airing.stamp, line: line)
            }
            for c in watchers { c.send(line) }
        }
        deliver(answers, recorder: recorder)
        if !answers.isEmpty {
            closeFinishedConnections()
            updateAudioNeed()
        }
    }

    func level(_ levels: IntervalLevels, time: Double) {
        broadcast(Messages.level(t: time, levels: levels), to: .level)
    }

    func report(_ event: ReportEvent, time: Double, now: Date = Date()) {
        let recorder = self.recorder
        let stamp = recorder.stamp(start: now.addingTimeInterval(-event.meter.duration), end: now)
        let line = Messages.report(id: nil, t: time, device: event.source, report: event, stamp: stamp)
        recorder.commit(.report, stamp: stamp, line: line)
        broadcast(line, to: .report)
    }

    func statusChanged() {
        broadcast(Messages.status(statusProvider()), to: .status)
    }

    /// Advances audio time and ends sessions whose time is up. A session that got no audio at
    /// all by its wall-clock deadline ends with an `error` naming the device and what the
    /// capture last reported: not "none", not an empty report.
    func tick(streamTime: Double, now: Date = Date()) {
        let recorder = self.recorder
        var records: [Outgoing] = []
        var answers: [(Int, String)] = []
        var unheard: [(client: Int, id: String?, what: String)] = []
        var expired: [Noise] = []
        let device = state.withLock { s -> String in
            s.streamTime = streamTime
            s.shakes.removeAll { shake in
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
                let stamp = recorder.stamp(start: shake.wallStart, end: now)
                records.append(Outgoing(client: shake.client, kind: .shake, stamp: stamp,
                                        line: Messages.shakeNone(id: shake.id, after: min(heard, shake.seconds), warnings: warnings, stamp: stamp)))
                return true
            }
            // Only taken out here: finishing their meters and bands (up to 64 sessions at once
            // when a device is lost) runs after the lock is released, as in ``feed``.
            s.noises.removeAll { n in
                guard now >= n.wallDeadline else { return false }
                if n.framesDone > 0 { expired.append(n) } else { unheard.append((n.client, n.id, "noise session")) }
                return true
            }
            return s.device
        }
        for n in expired {
            finishingExpiredSession?(state.isHeld)
            let measured = Double(n.framesDone) / n.rate
            let warning = String(cFormat: "audio stopped coming (capture device lost?): measured %.2f s of %.2f s", measured, n.seconds)
            var measurement: AnalysisPipeline.Measurement?
            try? n.pipeline?.finish { if case .report(let m) = $0 { measurement = m } }
            if let m = measurement {
                records.append(report(for: n, measurement: m, device: device, warnings: n.gaps.warnings(rate: n.rate) + [warning],
                                      recorder: recorder, now: now))
            }
        }
        if !unheard.isEmpty {
            let status = statusProvider()
            let why = status.detail.map { ": \($0)" } ?? " (capture state: \(status.state))"
            for u in unheard {
                answers.append((u.client, Messages.error(.noAudio, "no audio from capture device '\(device)' for this \(u.what)\(why)", id: u.id, device: device)))
            }
            logger.error("a \(unheard[0].what) got no audio from capture device '\(device)'\(why)")
        }
        deliver(records, recorder: recorder)
        for (client, line) in answers { send(line, to: client) }
        if !answers.isEmpty || !records.isEmpty {
            updateAudioNeed()
            closeFinishedConnections()
        }
    }

    /// Answers every session in flight with an error and stops accepting clients.
    func shutdown(message: String) {
        let answers = state.withLock { s -> [(Int, String)] in
            s.closing = true
            let a = s.shakes.map { ($0.client, Messages.error(.shuttingDown, message, id: $0.id)) }
                + s.noises.map { ($0.client, Messages.error(.shuttingDown, message, id: $0.id)) }
            s.shakes.removeAll()
            s.noises.removeAll()
            return a
        }
        for (client, line) in answers { send(line, to: client) }
    }

    /// Every connected client (to close them).
    var connections: [ClientConnection] { state.withLock { $0.clients.values.map(\.connection) } }
}
