import Foundation
import HarkClient
import HarkSpool
import Testing

/// harkd with a spool, through ALSA's file plugin: what a client was sent was committed first,
/// and survives `kill -9`.
@Suite(.serialized) struct SpoolEndToEndTests {
    /// Reports a watcher received while harkd ran, read on a thread of its own.
    final class Received: @unchecked Sendable {
        private let lock = NSLock()
        private var rids: [String] = []
        func add(_ rid: String) { lock.withLock { rids.append(rid) } }
        var all: [String] { lock.withLock { rids } }

        func watch(_ connection: HarkConnection) {
            let box = UncheckedBox(connection)
            let t = Thread { [self] in
                let connection = box.value
                try? connection.send(["cmd": "watch", "classes": ["report"]])
                while let o = try? connection.readObject(timeout: 30) {
                    if o["class"] as? String == "report", let rid = o["rid"] as? String { add(rid) }
                }
            }
            t.start()
        }
    }

    @Test func whatAClientWasSentSurvivesKill9() throws {
        let h = try DaemonHarness()
        try hark(["generate", "pink", h.dir + "/noise.wav", "--duration", "60", "--level", "-30"])
        let raw = try h.raw(from: h.dir + "/noise.wav", name: "noise.raw")
        let spoolPath = h.dir + "/spool.sqlite"
        let received = Received()
        var committedBefore: [String] = []
        var rng = SystemRandomNumberGenerator()
        for round in 0..<20 {
            try h.start(["--mode", "continuous", "--report-interval", "1", "--spool", spoolPath, "--unit", "e2e"], dropsWhenBehind: true)
            h.feed(raw, speed: 8)
            received.watch(try h.connect())
            // A report every 1/8 s of wall time; kill somewhere between two and twelve of them.
            Thread.sleep(forTimeInterval: Double.random(in: 0.25...1.5, using: &rng))
            h.killHard()
            let spool = try Spool(path: spoolPath, readOnly: true)
            #expect(try spool.integrityCheck() == "ok", "round \(round)")
            let records = try spool.records(.all)
            let rids = records.map(\.rid)
            // Nothing committed before is lost, and every record is whole.
            #expect(Array(rids.prefix(committedBefore.count)) == committedBefore, "round \(round)")
            for r in records {
                let o = try JSONSerialization.jsonObject(with: Data(r.body.utf8)) as? [String: Any]
                #expect(o?["class"] as? String == "report" && o?["rid"] as? String == r.rid && o?["unit"] as? String == "e2e")
            }
            committedBefore = rids
        }
        // Every report a client got was in the spool by then.
        let sent = received.all
        #expect(sent.count >= 20, "\(sent.count) reports received")
        #expect(Set(sent).isSubset(of: Set(committedBefore)), "\(Set(sent).subtracting(committedBefore).count) sent but not spooled")
        #expect(Set(committedBefore).count == committedBefore.count)
        // And `hark spool` exports them, oldest first, as they were sent.
        let export = try hark(["spool", "--spool", spoolPath, "--show", "all", "--json"])
        let exported = export.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["rid"] as? String
        }
        #expect(exported == committedBefore)

        // Restarted with an uplink, harkd delivers every record it committed, in order.
        let broker = try MosquittoBroker(dir: h.dir)
        let sub = try broker.subscribe()
        try h.start(["--spool", spoolPath, "--unit", "e2e"],
                    config: "mqtt-url = mqtt://\(MosquittoBroker.user):\(MosquittoBroker.password.replacingOccurrences(of: " ", with: "%20"))@127.0.0.1:\(broker.port)")
        let delivered = { Set(sub.rids(on: "hark/e2e/report")).isSuperset(of: committedBefore) }
        let deadline = Date(timeIntervalSinceNow: 60)
        while !delivered(), Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        #expect(delivered(), "\(Set(committedBefore).subtracting(sub.rids(on: "hark/e2e/report")).count) of \(committedBefore.count) not delivered")
        var firstSeen: [String] = []
        for r in sub.rids(on: "hark/e2e/report") where !firstSeen.contains(r) { firstSeen.append(r) }
        #expect(firstSeen == committedBefore)
        // The subscriber can see the last records before harkd has their PUBACKs: a record is
        // marked delivered only then, and one still in flight at a stop stays pending (it is
        // published again at the next start). So wait for the marks, then stop.
        let pending = { (try? Spool(path: spoolPath, readOnly: true).stats.pending) ?? -1 }
        let marked = Date(timeIntervalSinceNow: 30)
        while pending() != 0, Date() < marked { Thread.sleep(forTimeInterval: 0.1) }
        h.stop()
        #expect(try Spool(path: spoolPath, readOnly: true).stats.pending == 0)
    }

    @Test func withoutConfigHarkdReadsTheDefaultFile() throws {
        // `$HARKD_CONFIG` here stands in for /etc/hark/harkd.conf, which harkd reads when it
        // exists and no --config is given.
        let h = try DaemonHarness()
        try h.start(config: "unit = from-the-file\nspool = \(h.dir)/default.sqlite\n", configByEnvironment: true)
        let status = try #require(try h.connect().ask(["cmd": "status"], until: "status"))
        #expect(status["spool"] as? String == "ok", "\(status)")
        #expect(FileManager.default.fileExists(atPath: h.dir + "/default.sqlite"))
        #expect(h.logText.contains("unit from-the-file"), "\(h.logText)")
        #expect(h.terminate() == 0)
    }

    @Test func aSpoolItCannotOpenIsAnErrorInStatusAndHarkdGoesOnMeasuring() throws {
        let h = try DaemonHarness()
        try Data("not a database, ".utf8 + Data(repeating: 0x5a, count: 4096)).write(to: URL(fileURLWithPath: h.dir + "/bad.sqlite"))
        try hark(["generate", "sine", h.dir + "/tone.wav", "--frequency", "1000", "--level", "-23", "--duration", "8"])
        let raw = try h.raw(from: h.dir + "/tone.wav", name: "tone.raw")
        try h.start(["--spool", h.dir + "/bad.sqlite"])
        h.feed(raw, speed: 4)
        let c = try h.connect()
        let status = try #require(try c.ask(["cmd": "status"], until: "status"))
        #expect(status["spool"] as? String == "error")
        #expect((status["spoolError"] as? String)?.contains("bad.sqlite") == true, "\(status)")
        let report = try #require(try c.ask(["cmd": "noise", "seconds": 1, "id": "n"], until: "report"))
        #expect(report["LAeq"] is Double && report["rid"] is String)
        #expect(h.logText.contains("spool setting: spool \(h.dir)/bad.sqlite is damaged"), "\(h.logText)")
        #expect(h.terminate() == 0)
        // Left as it was.
        #expect(try Data(contentsOf: URL(fileURLWithPath: h.dir + "/bad.sqlite")).prefix(16) == Data("not a database, ".utf8))
    }

    @Test func aSecondHarkdOnOneSpoolRefusesItByNameAndGoesOnMeasuring() throws {
        let first = try DaemonHarness(), second = try DaemonHarness()
        try hark(["generate", "sine", first.dir + "/tone.wav", "--frequency", "1000", "--level", "-23", "--duration", "8"])
        let raw = try first.raw(from: first.dir + "/tone.wav", name: "tone.raw")
        let spoolPath = first.dir + "/spool.sqlite"
        try first.start(["--spool", spoolPath, "--unit", "one"])
        #expect(try first.connect().ask(["cmd": "status"], until: "status")?["spool"] as? String != "error")
        try second.start(["--spool", spoolPath, "--unit", "two"])
        second.feed(raw, speed: 4)
        let c = try second.connect()
        let status = try #require(try c.ask(["cmd": "status"], until: "status"))
        #expect(status["spool"] as? String == "error")
        let why = status["spoolError"] as? String ?? ""
        #expect(why.contains("spool \(spoolPath) is in use by another process (pid ") && why.contains("one harkd per spool"), "\(status)")
        let report = try #require(try c.ask(["cmd": "noise", "seconds": 1, "id": "n"], until: "report"))
        #expect(report["LAeq"] is Double)
        #expect(second.terminate() == 0)
        // The first kept its spool, and nothing of the second's went into it.
        #expect(first.terminate() == 0)
        let records = try Spool(path: spoolPath, readOnly: true).records(.all)
        #expect(!records.contains { $0.body.contains(#""unit":"two""#) })
        var info = stat()
        #expect(stat(spoolPath + "-wal", &info) != 0 || info.st_size == 0, "a clean stop leaves no log")
    }
}
