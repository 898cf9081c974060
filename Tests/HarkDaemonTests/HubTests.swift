import Foundation
import HarkDSP
import HarkTesting
import Logging
import NIOCore
import NIOEmbedded
import Synchronization
import Testing
@testable import HarkDaemon
import HarkSQLite
@testable import HarkSpool

/// Sessions driven by synthetic audio and detections, with EmbeddedChannel clients.
@Suite struct HubTests {
    final class Client {
        let channel = EmbeddedChannel()
        let connection: ClientConnection
        static let next = Atomic<Int>(100)

        init(hub: SessionHarness) {
            connection = ClientConnection(id: Client.next.add(1, ordering: .relaxed).newValue, channel: channel,
                                          logger: Logger(label: "test"))
            _ = hub.connect(connection)
            _ = lines()
        }

        func lines() -> [String] {
            // Output is written on the next turn of the event loop.
            channel.embeddedEventLoop.run()
            var out: [String] = []
            while var b = try? channel.readOutbound(as: ByteBuffer.self) {
                out += (b.readString(length: b.readableBytes) ?? "").split(separator: "\n").map(String.init)
            }
            return out
        }

        /// Lines with their record stamps checked and taken out, so the rest compares exactly.
        func unstampedLines() -> [String] {
            lines().map { line in
                let pattern = #/"unit":"[^"]*","rid":"[0-9a-f-]{36}","utcStart":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z","utcEnd":"[^"]*",/#
                #expect(line.contains(pattern), "no stamp in \(line)")
                return line.replacing(pattern, with: "")
            }
        }

        func objects() -> [[String: Any]] {
            lines().compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
        }
    }

    private func detection(_ payload: UInt32, time: Double) -> WatermarkDetection {
        WatermarkDetection(payload: WatermarkPayload(payload), time: time, start: time - 2.4,
                           mark: .init(score: 14, confidence: 1, copies: 1, clockScale: 1))
    }

    @Test func shakeGetsTheFirstDetectionAfterItStarted() {
        let hub = SessionHarness()
        let a = Client(hub: hub)
        hub.tick(streamTime: 10)
        hub.handle(.shake(seconds: 6, id: "s"), from: a.connection.id)
        hub.detection(detection(0xAAAA, time: 9.5), time: 9.5, start: 7)     // confirmed before: not this session's
        #expect(a.lines().isEmpty)
        hub.detection(detection(0xBBBB, time: 12.25), time: 12.25, start: 9.85)
        let out = a.objects()
        #expect(out.count == 1)
        #expect(out[0]["payload"] as? String == "0000bbbb" && out[0]["result"] as? String == "detected")
        #expect(abs((out[0]["after"] as? Double ?? 0) - 2.25) < 1e-9 && out[0]["id"] as? String == "s")
        #expect(hub.sessionCount == 0)
    }

    @Test func aShakeThatNeedsTheMarkWaitsForIt() {
        // harkd's shake-evidence = mark, or a shake that asks: the creative's sound alone does not
        // answer; the mark does, and the answer carries both readings.
        let hub = SessionHarness()
        hub.configure(continuous: false, calibration: 0, device: "d", shakeEvidence: .mark)
        let a = Client(hub: hub), b = Client(hub: hub)
        hub.tick(streamTime: 10)
        hub.handle(.shake(seconds: 6, id: "mark"), from: a.connection.id)
        hub.handle(.shake(seconds: 6, id: "any", evidence: .any), from: b.connection.id)
        var sound = detection(0xC0FFEE42, time: 1)
        let mark = sound.mark
        sound.mark = nil
        sound.sound = .init(votes: 40, offset: 11)
        hub.detection(sound, time: 11, start: 0)
        #expect(a.objects().isEmpty)
        let any = b.objects()
        #expect(any.count == 1 && any[0]["evidence"] as? String == "sound" && any[0]["score"] is NSNull, "\(any)")
        #expect(any[0]["sound_votes"] as? Int == 40 && any[0]["offset"] as? Double == 11)
        var both = sound
        both.mark = mark
        hub.detection(both, time: 12.4, start: 0)
        let marked = a.objects()
        #expect(marked.count == 1 && marked[0]["evidence"] as? String == "mark+sound" && marked[0]["score"] as? Double == 14, "\(marked)")
        #expect(hub.sessionCount == 0)
    }

    @Test func aStaleAiringDoesNotAnswerAShake() {
        // A recording of an airing played back: watchers hear of it, shakes do not pay for it.
        let hub = SessionHarness()
        let a = Client(hub: hub)
        hub.tick(streamTime: 10)
        hub.handle(.shake(seconds: 6, id: "s"), from: a.connection.id)
        var stale = detection(0xC0FFEE01, time: 11)
        stale.airing = Airing(campaign: WatermarkPayload(0xC0FFEE01), channel: 7, minute: 29_000_000)
        stale.airingCode = WatermarkPayload(0x66EEDD8F)
        stale.stale = true
        hub.detection(stale, time: 11, start: 8.6)
        #expect(a.objects().isEmpty)
        var fresh = stale
        fresh.stale = false
        hub.detection(fresh, time: 12, start: 9.6)
        let out = a.objects()
        #expect(out.count == 1 && out[0]["airing"] as? String == "fresh" && out[0]["channel"] as? Int == 7, "\(out)")
        #expect(out[0]["minute"] as? String == "2025-02-19T21:20Z" && out[0]["code"] as? String == "66eedd8f", "\(out)")
    }

    @Test func aWatcherHearsAStaleAiringAfterTheCampaignsSound() throws {
        // The sound names the campaign first; the mark then says the airing was a replay. The
        // watcher is told both: each code heard is an airing of its own.
        let hub = SessionHarness()
        let w = Client(hub: hub)
        hub.handle(.watch([.detection]), from: w.connection.id)
        _ = w.lines()
        var sound = detection(0xC0FFEE01, time: 3)
        sound.mark = nil
        sound.sound = .init(votes: 30)
        sound.airingCoded = true
        hub.detection(sound, time: 3, start: 0)
        var stale = detection(0xC0FFEE01, time: 4)
        stale.sound = .init(votes: 30)
        stale.airing = Airing(campaign: WatermarkPayload(0xC0FFEE01), channel: 7, minute: 29_000_000)
        stale.airingCode = WatermarkPayload(0x66EEDD8F)
        stale.stale = true
        hub.detection(stale, time: 4, start: 1.6)
        hub.detection(stale, time: 4.05, start: 1.6)
        let seen = w.objects().map { $0["airing"] as? String }
        #expect(seen == ["unknown", "stale"], "\(seen)")
    }

    /// A hub recording to a new spool (at `path`, for the caller to remove), and a client
    /// watching `classes`, its acknowledgement read.
    private static func spooled(unit: String = "u", watching classes: Set<Command.WatchClass>) throws
        -> (hub: SessionHarness, spool: Spool, client: Client, path: String) {
        let path = NSTemporaryDirectory() + "hark-hub-spool-\(UUID().uuidString).sqlite"
        let spool = try Spool(path: path)
        let hub = SessionHarness()
        hub.recorder = Recorder(unit: unit, spool: spool, logger: Logger(label: "test"))
        let client = Client(hub: hub)
        hub.handle(.watch(classes), from: client.connection.id)
        _ = client.lines()
        return (hub, spool, client, path)
    }

    @Test func aWatcherIsToldWhenTheMarkJoinsTheSoundAndTheSpoolKeepsOneRecord() throws {
        // The sound names the campaign, then the mark is heard within the same airing: the
        // watcher gets the sound's line and the `mark+sound` one under the airing's one stamp,
        // and nothing more while both keep being heard; one record.
        let (hub, spool, w, path) = try Self.spooled(watching: [.detection])
        defer { for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) } }
        var sound = detection(0xC0FFEE01, time: 3)
        sound.mark = nil
        sound.sound = .init(votes: 30)
        for t in [3.0, 3.5] { hub.detection(sound, time: t, start: 0.4) }
        var both = detection(0xC0FFEE01, time: 4)
        both.sound = .init(votes: 30)
        for t in [4.0, 4.05, 4.1] { hub.detection(both, time: t, start: 0.4) }
        let seen = w.objects()
        #expect(seen.map { $0["evidence"] as? String } == ["sound", "mark+sound"], "\(seen)")
        #expect(Set(seen.compactMap { $0["rid"] as? String }).count == 1)
        let stored = try spool.records(.all)
        #expect(stored.count == 1 && stored[0].body.contains(#""evidence":"sound""#), "\(stored.map(\.body))")
    }

    @Test func shakeWithNothingHeardEndsOnAudioTime() {
        let hub = SessionHarness()
        let a = Client(hub: hub)
        hub.handle(.shake(seconds: 2, id: nil), from: a.connection.id)
        hub.tick(streamTime: 1.9)
        #expect(a.lines().isEmpty)
        hub.tick(streamTime: 2.0)
        #expect(a.unstampedLines() == [#"{"class":"shake","result":"none","after":2.000,"warnings":[]}"#])
    }

    @Test func aShakeSpanningAGapSaysAudioWasMissing() throws {
        let hub = SessionHarness()
        let a = Client(hub: hub)
        hub.handle(.shake(seconds: 2, id: "g"), from: a.connection.id)
        hub.tick(streamTime: 0.5)
        hub.gap(.dropped(frames: 4_800), rate: 48_000)
        hub.gap(.overrun, rate: 48_000)
        hub.tick(streamTime: 2.0)
        let answer = try #require(a.objects().first)
        #expect(answer["result"] as? String == "none")
        #expect(answer["warnings"] as? [String] == [
            "audio missing: 1 capture overrun(s), the device dropped audio",
            "audio missing: 4800 frames (0.100 s) dropped, analysis fell behind capture",
        ])
    }

    @Test func aNoiseReportSpanningAGapSaysAudioWasMissing() throws {
        let hub = SessionHarness()
        let a = Client(hub: hub)
        hub.handle(.noise(seconds: 1, id: "g"), from: a.connection.id)
        let block = [Float](repeating: 0.01, count: 8_000)
        block.withUnsafeBufferPointer { hub.feed($0, rate: 16_000, streamTime: 0) }
        hub.gap(.reopened, rate: 16_000)
        block.withUnsafeBufferPointer { hub.feed($0, rate: 16_000, streamTime: 0.5) }
        let report = try #require(a.objects().last)
        #expect(report["class"] as? String == "report")
        #expect(report["warnings"] as? [String] == ["audio missing: the capture device was lost and reopened 1 time(s)"])
    }

    @Test func everyRecordIsCommittedToTheSpoolBeforeItIsSent() throws {
        let (hub, spool, a, path) = try Self.spooled(unit: "carriage-7", watching: [.detection, .report])
        defer { for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) } }
        // A shake answered by a detection, a noise session's report, and one airing confirmed
        // 40 times: three records, the airing once.
        hub.handle(.shake(seconds: 6, id: "s"), from: a.connection.id)
        hub.handle(.noise(seconds: 0.5, id: "n"), from: a.connection.id)
        let block = [Float](repeating: 0.01, count: 8_000)
        block.withUnsafeBufferPointer { hub.feed($0, rate: 16_000, streamTime: 0) }
        for i in 0..<40 {
            let t = 3 + 0.05 * Double(i)
            hub.detection(detection(0xC0FFEE, time: t), time: t, start: t - 2.4)
        }
        let sent = a.lines()
        let stored = try spool.records(.all)
        #expect(stored.map(\.kind).sorted() == ["detection", "report", "shake"], "\(stored.map(\.kind))")
        for record in stored {
            // What the client got is byte for byte what was committed, under the same rid.
            #expect(sent.contains(record.body), "\(record.body)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(record.body.utf8)) as? [String: Any])
            #expect(object["rid"] as? String == record.rid && object["unit"] as? String == "carriage-7")
            #expect(object["class"] as? String == record.kind)
            let start = try #require(object["utcStart"] as? String), end = try #require(object["utcEnd"] as? String)
            #expect(start <= end && end.hasSuffix("Z") && end.count == 24)
        }
        #expect(Set(stored.map(\.rid)).count == 3)
        // Every detection line of the airing carries the airing's one rid.
        let detectionRids = Set(sent.compactMap { line -> String? in
            guard line.contains(#""class":"detection""#) else { return nil }
            return (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["rid"] as? String
        })
        #expect(detectionRids == [stored.first { $0.kind == "detection" }!.rid])
        #expect(hub.recorder.status.pending == 3 && hub.recorder.status.state == "ok")
    }

    @Test func aSpoolThatCannotBeWrittenStillLetsRecordsThrough() throws {
        let temporary = TemporaryDirectory(prefix: "hark-hub-spool")
        let dir = temporary.path
        let spool = try Spool(path: dir + "/s.sqlite")
        let hub = SessionHarness()
        hub.recorder = Recorder(unit: "u", spool: spool, logger: Logger(label: "test"))
        // Its table dropped underneath harkd by another program: every commit fails.
        let other = try SQLiteDatabase(path: dir + "/s.sqlite")
        try other.execute("DROP TABLE records")
        other.close()
        let a = Client(hub: hub)
        hub.handle(.shake(seconds: 1, id: "x"), from: a.connection.id)
        hub.tick(streamTime: 1)
        #expect(a.objects().first?["result"] as? String == "none")
        let status = hub.recorder.status
        #expect(status.state == "error" && status.failed == 1 && (status.error ?? "").contains(dir + "/s.sqlite"), "\(status)")
    }

    @Test func sessionsAreBoundedPerConnectionAndInAll() throws {
        // 1 000 noise sessions asked for on one connection: the first four run, the rest are
        // refused with an error carrying their id. Before, every one ran (1 GB of meters).
        let hub = SessionHarness()
        let a = Client(hub: hub)
        for i in 0..<1000 { hub.handle(.noise(seconds: 3600, id: "n\(i)"), from: a.connection.id) }
        #expect(hub.sessionCount == SessionTable.sessionsPerClient)
        let errors = a.objects().filter { $0["class"] as? String == "error" }
        #expect(errors.count == 1000 - SessionTable.sessionsPerClient)
        #expect(errors.first?["id"] as? String == "n\(SessionTable.sessionsPerClient)")
        #expect((errors.first?["message"] as? String)?.hasPrefix("too many sessions: at most 4") == true)
        // All connections together: 64.
        let others = (0..<20).map { _ in Client(hub: hub) }
        for c in others { for _ in 0..<4 { hub.handle(.shake(seconds: 60, id: "s"), from: c.connection.id) } }
        #expect(hub.sessionCount == SessionTable.sessionsInAll)
        #expect(others.last!.objects().contains { ($0["message"] as? String)?.contains("at most 64 at a time") == true })
    }

    @Test func nonFiniteCapturedSamplesAreReportedNotSilentlyMeasured() throws {
        let hub = SessionHarness()
        let a = Client(hub: hub)
        hub.handle(.noise(seconds: 1, id: "nf"), from: a.connection.id)
        let block = [Float](repeating: 0.01, count: 8_000)
        block.withUnsafeBufferPointer { hub.feed($0, rate: 16_000, streamTime: 0) }
        hub.nonFinite(7)
        block.withUnsafeBufferPointer { hub.feed($0, rate: 16_000, streamTime: 0.5) }
        let report = try #require(a.objects().last)
        #expect(report["class"] as? String == "report")
        #expect(report["warnings"] as? [String] == ["7 captured samples were not finite numbers (NaN or infinity) and were measured as silence"])
    }

    @Test func commandsFromAClosedConnectionStartNoSession() {
        // Pipelined lines ending in a long noise session, then an immediate close: the framer
        // could deliver the last lines after the disconnect, leaving a session with no client
        // that kept the microphone open for an hour.
        let hub = SessionHarness()
        let a = Client(hub: hub)
        hub.disconnect(a.connection.id)
        hub.handle(.noise(seconds: 3600, id: "orphan"), from: a.connection.id)
        hub.handle(.shake(seconds: 60, id: "orphan"), from: a.connection.id)
        #expect(hub.sessionCount == 0)
        #expect(!hub.audioNeeded)
    }

    @Test func sessionsThatGetNoAudioEndWithAnErrorNamingTheDevice() {
        // Before, a shake answered "none" and a noise session an empty report, and the client
        // exited as if it had measured something.
        let hub = SessionHarness()
        hub.configure(continuous: false, calibration: 0, device: "hw:9,0")
        hub.statusProvider = {
            Messages.Status(state: "lost", device: "hw:9,0", rate: nil, mode: "on-demand", uptime: 1, overruns: 0, dropped: 0,
                            clients: 1, sessions: 2, detail: "cannot open hw:9,0: No such device")
        }
        let a = Client(hub: hub)
        hub.handle(.shake(seconds: 1, id: "w"), from: a.connection.id)
        hub.handle(.noise(seconds: 1, id: "n"), from: a.connection.id)
        hub.tick(streamTime: 0, now: Date(timeIntervalSinceNow: 1 + SessionTable.grace + 0.1))
        #expect(a.lines() == [
            #"{"class":"error","id":"w","code":"no-audio","message":"no audio from capture device 'hw:9,0' for this shake: cannot open hw:9,0: No such device","device":"hw:9,0"}"#,
            #"{"class":"error","id":"n","code":"no-audio","message":"no audio from capture device 'hw:9,0' for this noise session: cannot open hw:9,0: No such device","device":"hw:9,0"}"#,
        ])
        #expect(hub.sessionCount == 0)
    }

    @Test func pastMaxClientsAConnectionIsRefusedAndCounted() {
        let hub = SessionHarness()
        hub.limitClients(2)
        let a = Client(hub: hub), b = Client(hub: hub)
        let third = ClientConnection(id: 9_001, channel: EmbeddedChannel(), logger: Logger(label: "t"))
        #expect(hub.connect(third) == .full(2))
        #expect(hub.clientCount == 2 && hub.clientsRefused == 1)
        // One leaves: the next is served.
        hub.disconnect(a.connection.id)
        #expect(hub.connect(ClientConnection(id: 9_002, channel: EmbeddedChannel(), logger: Logger(label: "t"))) == nil)
        _ = b
        // The default keeps descriptors for the device, the spool and the uplink.
        #expect(DaemonConfiguration.defaultMaxClients(descriptorLimit: 1_024) == 960)
        #expect(DaemonConfiguration.defaultMaxClients(descriptorLimit: 524_288) == 1_024)
        #expect(DaemonConfiguration.defaultMaxClients(descriptorLimit: 40) == 1)
    }

    @Test func timedOutNoiseSessionsAreFinishedAndAnswered() {
        // When a device is lost, up to 64 sessions time out at once; their meters and bands
        // were finished inside the hub's lock while connect, handle and send waited on it. The
        // table that finishes them now has no lock: only the analysis thread holds it.
        let hub = SessionHarness()
        let clients = (0..<16).map { _ in Client(hub: hub) }
        for (k, c) in clients.enumerated() {
            for i in 0..<SessionTable.sessionsPerClient { hub.handle(.noise(seconds: 1, id: "n\(k).\(i)"), from: c.connection.id) }
        }
        let rate = 16_000.0
        let tone = [Float](repeating: 0.1, count: 4_000)
        tone.withUnsafeBufferPointer { hub.feed($0, rate: rate, streamTime: 0) }
        hub.tick(streamTime: 0.25, now: Date(timeIntervalSinceNow: 1 + SessionTable.grace + 0.1))
        #expect(clients.map { $0.objects().filter { $0["class"] as? String == "report" }.count }.reduce(0, +) == 64)
        #expect(hub.sessionCount == 0)
    }

    @Test func shakeEndsByTheWallClockWhenAudioStopsPartWay() {
        let hub = SessionHarness()
        let a = Client(hub: hub)
        hub.handle(.shake(seconds: 1, id: "w"), from: a.connection.id)
        hub.tick(streamTime: 0.4, now: Date(timeIntervalSinceNow: 1 + SessionTable.grace + 0.1))
        #expect(a.unstampedLines() == [#"{"class":"shake","id":"w","result":"none","after":0.400,"warnings":["audio stopped coming (capture device lost?): heard 0.40 s of 1.00 s"]}"#])
    }

    @Test func noiseSessionStreamsLevelsThenAReport() throws {
        let hub = SessionHarness()
        hub.configure(continuous: false, calibration: 100, device: "test-mic")
        let a = Client(hub: hub)
        hub.handle(.noise(seconds: 2, id: "n"), from: a.connection.id)
        let rate = 16_000.0
        let tone = (0..<Int(2.5 * rate)).map { Float(0.1 * sin(2 * Double.pi * 1000 * Double($0) / rate)) }
        var i = 0
        while i < tone.count {
            let n = min(1000, tone.count - i)
            tone[i..<(i + n)].withUnsafeBufferPointer { hub.feed($0, rate: rate, streamTime: Double(i) / rate) }
            i += n
        }
        let out = a.objects()
        let levels = out.filter { $0["class"] as? String == "level" }
        #expect(levels.count == 20)                       // ten a second for two seconds
        #expect(levels.allSatisfy { $0["id"] as? String == "n" && $0["peak"] is Double })
        // The IEC name beside the first one, the same figure.
        #expect(levels.allSatisfy { $0["LAFmax"] as? Double == $0["peak"] as? Double && $0["LAFmax"] is Double })
        let report = try #require(out.last)
        #expect(report["class"] as? String == "report" && report["device"] as? String == "test-mic")
        // A 0.1-amplitude sine reads −20 dB re full-scale sine, +100 dB calibration.
        #expect(abs((report["LAeq"] as? Double ?? 0) - 80) < 0.05)
        #expect(abs((report["duration"] as? Double ?? 0) - 2) < 1e-9)
        #expect((report["bands"] as? [String: Any])?["1000"] is Double)
        #expect(hub.sessionCount == 0)
    }

    @Test func detectionsReachWatchersOnceWhileThePayloadStaysOnAir() {
        let hub = SessionHarness()
        let watchers = (0..<5).map { _ in Client(hub: hub) }
        let bystander = Client(hub: hub)
        for w in watchers { hub.handle(.watch([.detection]), from: w.connection.id); _ = w.lines() }
        for t in stride(from: 3.0, to: 8.0, by: 0.05) { hub.detection(detection(0x1234, time: t), time: t, start: t - 2.4) }
        hub.detection(detection(0x1234, time: 15), time: 15, start: 12.6)      // back after a gap
        for w in watchers {
            let d = w.objects().filter { $0["class"] as? String == "detection" }
            #expect(d.count == 2)
        }
        #expect(bystander.lines().isEmpty)
    }

    @Test func aWatcherThatJoinsWhileAMarkPlaysHearsIt() {
        // Before, the "once, then after 6 s of absence" memory was shared: a watcher joining
        // during an advert heard nothing until the advert had been gone for 6 s.
        let hub = SessionHarness()
        let early = Client(hub: hub), late = Client(hub: hub)
        hub.handle(.watch([.detection]), from: early.connection.id)
        _ = early.lines()
        for t in stride(from: 3.0, to: 5.0, by: 0.05) { hub.detection(detection(0x1234, time: t), time: t, start: t - 2.4) }
        hub.handle(.watch([.detection]), from: late.connection.id)
        _ = late.lines()
        for t in stride(from: 5.0, to: 8.0, by: 0.05) { hub.detection(detection(0x1234, time: t), time: t, start: t - 2.4) }
        let earlyTimes = early.objects().compactMap { $0["t"] as? Double }
        let lateTimes = late.objects().compactMap { $0["t"] as? Double }
        #expect(earlyTimes == [3.0])
        #expect(lateTimes.count == 1 && abs(lateTimes[0] - 5.0) < 1e-9, "\(lateTimes)")
    }

    @Test func audioIsNeededOnlyForSessionsAndAudioWatchers() {
        let hub = SessionHarness()
        let changes = Mutex<[Bool]>([])
        hub.onAudioNeed = { need in changes.withLock { $0.append(need) } }
        let a = Client(hub: hub)
        hub.handle(.watch([.status]), from: a.connection.id)
        #expect(!hub.audioNeeded)
        hub.handle(.watch([.level]), from: a.connection.id)
        #expect(hub.audioNeeded)
        hub.handle(.watch([]), from: a.connection.id)
        #expect(!hub.audioNeeded)
        hub.configure(continuous: true, calibration: 0, device: "x")
        #expect(hub.audioNeeded)
        #expect(changes.withLock { $0 } == [true, false, true])
    }

    @Test func shutdownAnswersSessionsInFlight() {
        let hub = SessionHarness()
        let a = Client(hub: hub)
        hub.handle(.shake(seconds: 6, id: "s1"), from: a.connection.id)
        hub.handle(.noise(seconds: 10, id: "n1"), from: a.connection.id)
        hub.shutdown(message: "harkd is shutting down")
        #expect(a.lines() == [#"{"class":"error","id":"s1","code":"shutting-down","message":"harkd is shutting down"}"#,
                              #"{"class":"error","id":"n1","code":"shutting-down","message":"harkd is shutting down"}"#])
        #expect(hub.connect(ClientConnection(id: 999, channel: EmbeddedChannel(), logger: Logger(label: "t"))) == .shuttingDown)
    }
}
