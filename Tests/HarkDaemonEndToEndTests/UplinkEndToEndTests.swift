import Foundation
import HarkClient
import HarkSpool
import Testing

/// harkd's uplink against a real Mosquitto broker started here: nothing lost across an outage,
/// in order per topic, refusals and bad certificates loud, nothing in clear when TLS is asked for.
@Suite(.serialized) struct UplinkEndToEndTests {
    private func noise(_ h: DaemonHarness) throws -> String {
        try hark(["generate", "pink", h.dir + "/noise.wav", "--duration", "120", "--level", "-30"])
        return try h.raw(from: h.dir + "/noise.wav", name: "noise.raw")
    }

    /// A report a second of audio (these tests start harkd with `dropsWhenBehind`: they count
    /// reports, made at the feed's pace even when a sanitized harkd falls behind it).
    private func config(_ lines: [String], spool: String) -> String {
        (["mode = continuous", "report-interval = 1", "unit = coach-12", "spool = \(spool)"] + lines).joined(separator: "\n")
    }

    private func waitFor(_ seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while Date() < deadline {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return try condition()
    }

    private func status(_ h: DaemonHarness) throws -> [String: Any] {
        try #require(try h.connect().ask(["cmd": "status"], until: "status"))
    }

    @Test func everyReportArrivesInOrderAcrossABrokerOutage() throws {
        let h = try DaemonHarness()
        let broker = try MosquittoBroker(dir: h.dir)
        let sub = try broker.subscribe()
        let raw = try noise(h)
        let spoolPath = h.dir + "/spool.sqlite"
        try h.start(config: config(["mqtt-url = mqtt://127.0.0.1:\(broker.port)", "mqtt-username = \(MosquittoBroker.user)",
                                    "mqtt-password = \(MosquittoBroker.password)"], spool: spoolPath), dropsWhenBehind: true)
        h.feed(raw, speed: 12)
        let topic = "hark/coach-12/report"
        // Generous deadlines: under ThreadSanitizer harkd analyses at a few times real time only.
        #expect(waitFor(90) { Set(sub.rids(on: topic)).count >= 60 }, "before the outage: \(sub.rids(on: topic).count)")
        #expect(sub.messages.contains { $0.topic == "hark/coach-12/status" && $0.payload.contains(#""state":"online""#) })
        // The broker goes away for three seconds; harkd goes on measuring into its spool.
        broker.stop()
        let pendingBefore = try Spool(path: spoolPath, readOnly: true).stats.pending
        Thread.sleep(forTimeInterval: 3)
        let during = try status(h)
        #expect(during["uplink"] as? String != "connected", "\(during)")
        #expect((during["spoolPending"] as? Int ?? 0) > pendingBefore, "\(during)")
        try broker.start()
        #expect(waitFor(120) { Set(sub.rids(on: topic)).count >= 200 }, "after: \(Set(sub.rids(on: topic)).count)")
        h.stop()
        // Every record the spool holds up to the 200th arrived; first arrivals in the order made.
        let records = try Spool(path: spoolPath, readOnly: true).records(.all).filter { $0.kind == "report" }
        let received = sub.rids(on: topic)
        var firstSeen: [String] = []
        var seen = Set<String>()
        for r in received where seen.insert(r).inserted { firstSeen.append(r) }
        let made = records.map(\.rid)
        #expect(firstSeen == Array(made.prefix(firstSeen.count)), "out of order or missing")
        #expect(firstSeen.count >= 200)
        let duplicates = received.count - firstSeen.count
        #expect(duplicates < 2 * 100, "\(duplicates) duplicates")          // at most a window's worth per reconnection
        // Delivered means acknowledged: every delivered record was received.
        let delivered = Set(records.filter { $0.delivered != nil }.map(\.rid))
        #expect(delivered.isSubset(of: seen))
    }

    @Test func aShakeHeardOnAirReachesTheBrokerAsTheAppWasAnswered() throws {
        // The TV Shake path end to end: music marked as a campaign is aired (the default
        // strength), captured through ALSA, heard by a shake session; the answer the app got, and
        // the detection behind it, are on the broker under the same record ids, with nothing of
        // the audio in them.
        let h = try DaemonHarness()
        let broker = try MosquittoBroker(dir: h.dir)
        let sub = try broker.subscribe()
        try hark(["generate", "music", h.dir + "/host.wav", "--duration", "20"])
        try hark(["embed", h.dir + "/host.wav", h.dir + "/marked.wav", "--payload", "c0ffee42"])
        let raw = try h.raw(from: h.dir + "/marked.wav", name: "marked.raw")
        let spoolPath = h.dir + "/spool.sqlite"
        try h.start(config: ["unit = coach-12", "spool = \(spoolPath)", "mqtt-url = mqtt://127.0.0.1:\(broker.port)",
                             "mqtt-username = \(MosquittoBroker.user)", "mqtt-password = \(MosquittoBroker.password)"]
            .joined(separator: "\n"))
        h.feed(raw, speed: 4)
        let answer = try #require(try h.connect().ask(["cmd": "shake", "seconds": 10, "id": "app-1"], until: "shake"))
        #expect(answer["result"] as? String == "detected" && answer["payload"] as? String == "c0ffee42", "\(answer)")
        let rid = try #require(answer["rid"] as? String)
        #expect(waitFor(60) { sub.rids(on: "hark/coach-12/shake").contains(rid) }, "\(sub.messages.map(\.topic))")
        #expect(waitFor(60) { !sub.rids(on: "hark/coach-12/detection").isEmpty })
        let published = sub.messages.filter { $0.topic == "hark/coach-12/shake" || $0.topic == "hark/coach-12/detection" }
        for message in published {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(message.payload.utf8)) as? [String: Any])
            #expect(object["payload"] as? String == "c0ffee42" && object["unit"] as? String == "coach-12", "\(message)")
            // Records name what was heard, never carry it: a few hundred bytes, no arrays.
            #expect(message.payload.utf8.count < 1_000 && !object.values.contains { $0 is [Any] }, "\(message)")
        }
        // What the app was answered is byte for byte what the spool holds and the broker got.
        let stored = try Spool(path: spoolPath, readOnly: true).records(.all)
        let shake = try #require(stored.first { $0.rid == rid })
        #expect(shake.kind == "shake" && published.contains { $0.payload == shake.body })
        #expect(try waitFor(30) { try Spool(path: spoolPath, readOnly: true).stats.pending == 0 })
        h.stop()
    }

    @Test func refusedCredentialsAreLoudAndTheSpoolKeepsGrowing() throws {
        let h = try DaemonHarness()
        let broker = try MosquittoBroker(dir: h.dir)
        let sub = try broker.subscribe()
        let raw = try noise(h)
        try h.start(config: config(["mqtt-url = mqtt://\(MosquittoBroker.user):wrong@127.0.0.1:\(broker.port)"],
                                   spool: h.dir + "/spool.sqlite"), dropsWhenBehind: true)
        h.feed(raw, speed: 8)
        #expect(try waitFor(10) { try status(h)["uplink"] as? String == "refused" }, "\(h.logText)")
        let s = try status(h)
        #expect((s["uplinkDetail"] as? String ?? "").lowercased().contains("not authorised")
                || (s["uplinkDetail"] as? String ?? "").lowercased().contains("bad user name or password"), "\(s)")
        #expect(try waitFor(10) { (try status(h)["spoolPending"] as? Int ?? 0) >= 10 })
        #expect(h.logText.contains("uplink: broker refused the connection"), "\(h.logText)")
        #expect(sub.rids(on: "hark/coach-12/report").isEmpty)
        #expect(h.terminate() == 0)
    }

    @Test func tlsDeliversAndAWrongCertificateDeliversNothing() throws {
        let h = try DaemonHarness()
        let good = try MosquittoBroker.makeCertificates(in: h.dir, name: "good")
        let other = try MosquittoBroker.makeCertificates(in: h.dir, name: "other")
        let broker = try MosquittoBroker(dir: h.dir, tls: good)
        let tlsPort = try #require(broker.tlsPort)
        let sub = try broker.subscribe()
        let raw = try noise(h)
        let credentials = ["mqtt-username = \(MosquittoBroker.user)", "mqtt-password = \(MosquittoBroker.password)"]

        // A CA that did not sign the broker's certificate: no connection, nothing published.
        try h.start(config: config(["mqtt-url = mqtts://127.0.0.1:\(tlsPort)", "mqtt-ca = \(other.ca)"] + credentials,
                                   spool: h.dir + "/wrong.sqlite"), dropsWhenBehind: true)
        h.feed(raw, speed: 8)
        #expect(try waitFor(10) { (try status(h)["spoolPending"] as? Int ?? 0) >= 5 })
        let wrong = try status(h)
        #expect(wrong["uplink"] as? String == "disconnected", "\(wrong)")
        #expect(sub.messages.isEmpty, "\(sub.messages.map(\.topic))")
        h.stop()

        let h2 = try DaemonHarness()
        try h2.start(config: config(["mqtt-url = mqtts://127.0.0.1:\(tlsPort)", "mqtt-ca = \(good.ca)"] + credentials,
                                    spool: h2.dir + "/good.sqlite"), dropsWhenBehind: true)
        h2.feed(raw, speed: 8)
        #expect(waitFor(15) { sub.rids(on: "hark/coach-12/report").count >= 5 }, "\(broker.log)")
        #expect(try status(h2)["uplink"] as? String == "connected")
        // The broker saw harkd only on its TLS listener.
        #expect(!broker.log.contains("on port \(broker.port) as hark-coach-12"), "\(broker.log)")
        h2.stop()
    }

    @Test func anUnreadableCertificateIsNamedAndMeasuringGoesOn() throws {
        let h = try DaemonHarness()
        try hark(["generate", "sine", h.dir + "/tone.wav", "--frequency", "1000", "--level", "-23", "--duration", "8"])
        let raw = try h.raw(from: h.dir + "/tone.wav", name: "tone.raw")
        try h.start(config: config(["mqtt-url = mqtts://127.0.0.1:8883", "mqtt-ca = \(h.dir)/missing-ca.crt"],
                                   spool: h.dir + "/spool.sqlite"), dropsWhenBehind: true)
        h.feed(raw, speed: 4)
        #expect(try waitFor(5) { try status(h)["uplink"] as? String == "error" })
        let s = try status(h)
        #expect((s["uplinkDetail"] as? String)?.contains("mqtt-ca \(h.dir)/missing-ca.crt cannot be read") == true, "\(s)")
        let report = try #require(try h.connect().ask(["cmd": "noise", "seconds": 1, "id": "n"], until: "report"))
        #expect(report["LAeq"] is Double)
        #expect(h.terminate() == 0)
    }
}
