import Foundation
import HarkClient
import HarkSystem
import Testing

/// Hands a value to another thread that alone uses it from then on.
final class UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// harkd as a process, capturing through ALSA's file plugin (no sound card here, no mock of
/// ALSA), talked to over its socket.
@Suite(.serialized) struct DaemonEndToEndTests {
    @Test func shakeSessionHearsTheEmbeddedPayload() throws {
        let h = try DaemonHarness()
        try hark(["generate", "music", h.dir + "/host.wav", "--duration", "20"])
        try hark(["embed", h.dir + "/host.wav", h.dir + "/marked.wav", "--payload", "c0ffee42"])
        let raw = try h.raw(from: h.dir + "/marked.wav", name: "marked.raw")
        try h.start()
        h.feed(raw, speed: 8)
        let c = try h.connect()
        let answer = try #require(try c.ask(["cmd": "shake", "seconds": 10, "id": "t1"], until: "shake"))
        #expect(answer["result"] as? String == "detected", "\(answer)")
        #expect(answer["payload"] as? String == "c0ffee42")
        #expect(answer["id"] as? String == "t1")
        #expect((answer["after"] as? Double ?? 99) < 4)
        #expect(h.terminate() == 0)
    }

    @Test func aShakeThatHearsNothingSaysSoAndExits2() throws {
        // 2, not 1: a script must tell "no mark on air" from "could not listen".
        let h = try DaemonHarness()
        try hark(["generate", "music", h.dir + "/host.wav", "--duration", "12"])
        let raw = try h.raw(from: h.dir + "/host.wav", name: "host.raw")
        try h.start()
        h.feed(raw, speed: 4)
        let p = Process()
        p.executableURL = builtExecutable("hark")
        p.arguments = ["shake", "--seconds", "2", "--socket", h.socket]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 2, "\(text)")
        #expect(text.contains("no watermark heard in 2"), "\(text)")
        #expect(h.terminate() == 0)
    }

    @Test func listDevicesShowsWhatALSAOffers() throws {
        // alsa-lib's own configuration always defines `null`; this machine may have no card.
        let (status, text, _) = try runBuilt("harkd", ["--list-devices"])
        #expect(status == 0)
        #expect(text.hasPrefix("capture PCMs (use the name with -D or device =):\n"), "\(text)")
        #expect(text.contains("\n  null "), "\(text)")
        #expect(text.contains("\nsound cards:\n  "), "\(text)")
    }

    @Test func noiseSessionAgreesWithAnalyze() throws {
        let h = try DaemonHarness()
        try hark(["generate", "sine", h.dir + "/tone.wav", "--frequency", "1000", "--level", "-23", "--duration", "12"])
        try hark(["generate", "sine", h.dir + "/tone10.wav", "--frequency", "1000", "--level", "-23", "--duration", "10"])
        let raw = try h.raw(from: h.dir + "/tone.wav", name: "tone.raw")
        let analyzed = try #require(try JSONSerialization.jsonObject(with: Data(
            hark(["analyze", "--json", h.dir + "/tone10.wav"]).split(separator: "\n").last!.utf8)) as? [String: Any])
        try h.start()
        h.feed(raw, speed: 2)
        let c = try h.connect()
        try c.send(["cmd": "noise", "seconds": 10, "id": "n"])
        var levels = 0
        var report: [String: Any]?
        let deadline = Date(timeIntervalSinceNow: 20)
        while report == nil && Date() < deadline {
            guard let o = try c.readObject(timeout: 5) else { break }
            if o["class"] as? String == "level" { levels += 1; #expect(o["peak"] is Double && o["LAF"] is Double) }
            if o["class"] as? String == "report" { report = o }
        }
        let r = try #require(report)
        #expect(levels == 100)
        #expect((r["warnings"] as? [String])?.isEmpty == true, "\(r["warnings"] ?? "no warnings")")
        let daemonLAeq = try #require(r["LAeq"] as? Double), fileLAeq = try #require(analyzed["LAeq"] as? Double)
        #expect(abs(daemonLAeq - fileLAeq) <= 0.1, "harkd \(daemonLAeq) vs analyze \(fileLAeq)")
        for key in ["LCeq", "LZeq", "LAE", "LAFmax", "LAFmin", "LASmax", "LCpeak", "LA10", "LA50", "LA90", "bands", "duration"] {
            #expect(r[key] != nil, "report lacks \(key)")
        }
        h.terminate()
    }

    @Test func noisePlotDrawsTheSession() throws {
        // hark noise --plot: the session's levels and report become a picture.
        let h = try DaemonHarness()
        try hark(["generate", "sine", h.dir + "/tone.wav", "--frequency", "1000", "--level", "-23", "--duration", "6"])
        let raw = try h.raw(from: h.dir + "/tone.wav", name: "tone.raw")
        try h.start()
        h.feed(raw, speed: 2)
        let picture = h.dir + "/noise.png"
        let run = try runBuilt("hark", ["noise", "--seconds", "3", "--plot", picture, "--socket", h.socket])
        #expect(run.status == 0, "\(run.err)")
        let png = try Data(contentsOf: URL(fileURLWithPath: picture))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 10_000, "\(png.count) bytes")
        let bad = try runBuilt("hark", ["noise", "--seconds", "1", "--plot", h.dir + "/noise.bmp", "--socket", h.socket])
        #expect(bad.status == 64 && bad.err.contains("must end in .png or .svg"))
        h.terminate()
    }

    @Test func hundredWatchersGetTheDetectionAndASilentReaderIsDropped() throws {
        let h = try DaemonHarness()
        try hark(["generate", "music", h.dir + "/host.wav", "--duration", "20"])
        try hark(["embed", h.dir + "/host.wav", h.dir + "/marked.wav", "--payload", "00c0ffee"])
        let raw = try h.raw(from: h.dir + "/marked.wav", name: "marked.raw")
        try h.start(config: "mode = continuous\nclient-queue-kb = 64\n")
        var watchers: [HarkConnection] = []
        for _ in 0..<100 {
            let w = try h.connect()
            try w.send(["cmd": "watch", "classes": ["detection"]])
            _ = try w.readObject(timeout: 5)       // the watch acknowledgement
            watchers.append(w)
        }
        // A client that asks for status over and over and never reads the answers.
        let silent = UncheckedBox(try h.connect())
        let flood = Thread {
            for _ in 0..<50_000 { if (try? silent.value.send(#"{"cmd":"status"}"#)) == nil { return } }
        }
        flood.start()
        h.feed(raw, speed: 4)
        for (i, w) in watchers.enumerated() {
            let d = try w.readObject(timeout: 20)
            #expect(d?["class"] as? String == "detection" && d?["payload"] as? String == "00c0ffee", "watcher \(i): \(String(describing: d))")
        }
        // The silent client was cut off, and said so in the log.
        let deadline = Date(timeIntervalSinceNow: 10)
        while !h.logText.contains("not reading") && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        #expect(h.logText.contains("disconnected: not reading"))
        let status = try #require(try h.connect().ask(["cmd": "status"], until: "status"))
        #expect(status["clients"] as? Int == 101)       // the watchers, and this connection
        h.terminate()
    }

    @Test func catalogueLimitsDetectionsToThePayloadsOnAir() throws {
        // 12 s marked with a payload that is not on air, then 12 s with one that is.
        let h = try DaemonHarness()
        var raw = Data()
        for (seed, payload) in [("1", "0badcafe"), ("2", "c0ffee42")] {
            try hark(["generate", "music", h.dir + "/host.wav", "--duration", "12", "--seed", seed])
            try hark(["embed", h.dir + "/host.wav", h.dir + "/marked.wav", "--payload", payload])
            raw += FileManager.default.contents(atPath: try h.raw(from: h.dir + "/marked.wav", name: "\(payload).raw")) ?? Data()
        }
        try raw.write(to: URL(fileURLWithPath: h.dir + "/both.raw"))
        try h.start(config: "mode = continuous\ncatalogue = c0ffee42, 1a2b3c4d   # on air\n")
        let w = try h.connect()
        try w.send(["cmd": "watch", "classes": ["detection"]])
        _ = try w.readObject(timeout: 5)
        h.feed(h.dir + "/both.raw", speed: 4)
        let first = try #require(try w.readObject(timeout: 20))
        #expect(first["payload"] as? String == "c0ffee42", "\(first)")
        #expect((first["t"] as? Double ?? 0) > 12, "the first segment's payload is not on air: \(first)")
        h.terminate()
    }

    @Test func systemdSocketActivation() throws {
        // As systemd does it: the listening socket is fd 3, LISTEN_FDS=1 and LISTEN_PID is harkd's
        // own pid (set by a shell that then execs harkd, keeping its pid).
        let h = try DaemonHarness()
        let listener = try listeningSocket(at: h.socket)
        defer { close(listener) }
        let unused = h.dir + "/not-this.sock"
        let harkd = builtExecutable("harkd").path
        let shell = #"LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" "$@" 2>"$HARKD_LOG""#
        var env = ProcessInfo.processInfo.environment
        env["HARKD_LOG"] = h.log
        let pid = try spawn("/bin/sh", ["-c", shell, harkd, "--alsa-config", h.dir + "/alsa.conf", "--socket", unused],
                            environment: env, fd3: listener)
        defer { kill(pid, SIGKILL); var st: Int32 = 0; waitpid(pid, &st, 0) }
        let c = try HarkConnection(path: h.socket, timeout: 10)      // reads the version banner
        #expect(c.banner["class"] as? String == "version" && c.banner["proto"] as? Int == 1)
        #expect(try c.ask(["cmd": "status"], until: "status")?["state"] as? String == "idle")
        #expect(!FileManager.default.fileExists(atPath: unused), "harkd bound its own socket too")
        // The pending connection is served as soon as the socket is registered, which can be
        // before harkd's log line about it is written.
        let logged = Date(timeIntervalSinceNow: 5)
        while !h.logText.contains("systemd passed") && Date() < logged { Thread.sleep(forTimeInterval: 0.05) }
        #expect(h.logText.contains("listening on the socket systemd passed (fd 3)"))
        // SIGTERM: a clean exit that leaves the socket file to systemd, which owns it.
        kill(pid, SIGTERM)
        var status: Int32 = 0
        #expect(waitpid(pid, &status, 0) == pid && status == 0, "exit status \(status)")
        #expect(FileManager.default.fileExists(atPath: h.socket))
    }

    @Test func garbageAndOversizedLinesOverARealSocket() throws {
        let h = try DaemonHarness()
        try h.start()
        let c = try h.connect()
        try c.send("{{{")
        let error = try #require(try c.readObject(timeout: 5))
        #expect(error["class"] as? String == "error" && error["message"] as? String == "not valid JSON")
        #expect(try c.ask(["cmd": "version"], until: "version")?["proto"] as? Int == 1)
        try c.send(String(repeating: "a", count: 10_000))
        let last = try c.readObject(timeout: 5)
        #expect((last?["message"] as? String)?.hasPrefix("line longer than 4096 bytes") == true)
        #expect(throws: ClientError.connectionLost) { try c.readLine(timeout: 5) }
        h.terminate()
    }

    @Test func sigtermDuringASessionAnswersItAndCleansUp() throws {
        let h = try DaemonHarness()
        try hark(["generate", "pink", h.dir + "/noise.wav", "--duration", "30", "--level", "-30"])
        let raw = try h.raw(from: h.dir + "/noise.wav", name: "noise.raw")
        try h.start()
        h.feed(raw, speed: 1)
        let c = try h.connect()
        try c.send(["cmd": "shake", "seconds": 30, "id": "late"])
        // Wait until harkd holds the session (polled on a second connection, not slept on).
        let observer = try h.connect()
        let deadline = Date(timeIntervalSinceNow: 10)
        while (try observer.ask(["cmd": "status"], until: "status")?["sessions"] as? Int ?? 0) < 1 && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(h.terminate() == 0)
        let answer = try #require(try c.readObject(timeout: 5))
        #expect(answer["class"] as? String == "error" && answer["id"] as? String == "late")
        #expect((answer["message"] as? String)?.contains("shutting down") == true)
        #expect(!FileManager.default.fileExists(atPath: h.socket))
        #expect(h.logText.contains("stopped"))
    }

    @Test func aDeviceThatCannotBeOpenedIsReportedAndRetried() throws {
        let h = try DaemonHarness()
        try h.start(["--device", "nonexistent", "--mode", "continuous"])
        let c = try h.connect()
        var s = try #require(try c.ask(["cmd": "status"], until: "status"))
        let deadline = Date(timeIntervalSinceNow: 10)
        while s["state"] as? String != "device-lost" && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.02)
            s = try #require(try c.ask(["cmd": "status"], until: "status"))
        }
        #expect(s["state"] as? String == "device-lost")
        #expect((s["detail"] as? String)?.contains("cannot open capture device 'nonexistent'") == true)
        let shake = try #require(try c.ask(["cmd": "shake", "seconds": 1, "id": "s"], until: "error", timeout: 10))
        #expect(shake["id"] as? String == "s")
        #expect((shake["message"] as? String)?.contains("cannot open capture device 'nonexistent'") == true, "\(shake)")
        #expect(h.logText.contains("retrying in"))
        #expect(h.logText.contains("ALSA "), "ALSA's own message should be in the log")
        #expect(h.terminate() == 0)
    }

    @Test func aDeviceThatCannotBeOpenedFailsTheSessionsLoudly() throws {
        // harkd -D with no such device: it still starts (the device may appear later), but a
        // noise or shake session ends with an error naming the device and the reason, and the
        // client exits non-zero. Before: an empty report ("LAeq –, over 0.0 s") and exit 0.
        let h = try DaemonHarness()
        try h.start(["-D", "nosuch"])
        let c = try h.connect()
        let error = try #require(try c.ask(["cmd": "noise", "seconds": 1, "id": "n1"], until: "error", timeout: 10))
        #expect(error["id"] as? String == "n1" && error["device"] as? String == "nosuch")
        #expect((error["message"] as? String)?.contains("no audio from capture device 'nosuch'") == true, "\(error)")
        for command in [["noise", "--seconds", "1"], ["shake", "--seconds", "1"]] {
            let run = try runBuilt("hark", command + ["--socket", h.socket])
            #expect(run.status == 1, "hark \(command[0]) exited \(run.status), not 1 (an error)")
            #expect(run.err.contains("no audio from capture device 'nosuch'"), "\(run.err)")
        }
        h.stop()
    }

    @Test func aPipelinedBurstThenCloseLeavesNoSession() throws {
        // 60 lines the daemon answers with errors, a one-hour noise session, and the client
        // gone at once: before, the session outlived its client (10 of 10 tries).
        let h = try DaemonHarness()
        try h.start()
        for _ in 0..<5 {
            let fd = try #require(UnixSocketAddress.connectStream(h.socket))
            let burst = Array((String(repeating: "{\"cmd\":\"nope\"}\n", count: 60) + #"{"cmd":"noise","seconds":3600}"# + "\n").utf8)
            _ = burst.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            close(fd)
        }
        let c = try h.connect()
        var sessions: Int?
        let deadline = Date(timeIntervalSinceNow: 5)
        repeat {
            sessions = try c.ask(["cmd": "status"], until: "status")?["sessions"] as? Int
            if sessions == 0 { break }
            Thread.sleep(forTimeInterval: 0.05)
        } while Date() < deadline
        #expect(sessions == 0)
        h.stop()
    }

    @Test func aClientThatShutsItsSideGetsItsAnswer() throws {
        // Send a shake, shut down the writing side, read: before, harkd closed the connection
        // at the end of input and the shake was dropped without a word.
        let h = try DaemonHarness()
        try hark(["generate", "pink", h.dir + "/noise.wav", "--duration", "10", "--level", "-30"])
        let raw = try h.raw(from: h.dir + "/noise.wav", name: "noise.raw")
        try h.start()
        h.feed(raw, speed: 2)
        let fd = try #require(UnixSocketAddress.connectStream(h.socket))
        defer { close(fd) }
        let line = Array((#"{"cmd":"shake","seconds":1,"id":"hc"}"# + "\n").utf8)
        _ = line.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        shutdown(fd, Int32(SHUT_WR))
        var received = Data()
        var chunk = [UInt8](repeating: 0, count: 4096)
        var tv = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            received.append(contentsOf: chunk[0..<n])
        }
        let text = String(decoding: received, as: UTF8.self)
        #expect(text.contains(#""class":"shake","id":"hc""#), "\(text)")
        h.stop()
    }

    @Test func aShakeInALivingRoomIsAnsweredByTheCampaignsOwnSound() throws {
        // The campaign's creative (music, marked as aired, in a catalogue with another) through a
        // small speaker, a living room (RT60 0.5 s) and six talkers' babble 10 dB under it
        // (hark simulate's speech-shaped syllables and phrases; the bench's talkers are espeak-ng
        // voices), into a phone-like microphone, captured through ALSA. The sound names it well
        // within the shake.
        let h = try DaemonHarness()
        let catalogue = h.dir + "/campaigns.hark"
        try hark(["generate", "music", h.dir + "/host.wav", "--duration", "24", "--seed", "3"])
        try hark(["embed", h.dir + "/host.wav", h.dir + "/aired.wav", "--payload", "c0ffee42", "--catalogue", catalogue])
        try hark(["generate", "pink", h.dir + "/other.wav", "--duration", "10", "--seed", "4"])
        try hark(["catalogue", "add", catalogue, h.dir + "/other.wav", "--payload", "1234"])
        try hark(["simulate", h.dir + "/aired.wav", h.dir + "/room.wav", "--speaker", "150:12000", "--rt60", "0.5",
                  "--noise", "babble", "--snr", "10", "--mic", "100:8000", "--seed", "2"])
        let raw = try h.raw(from: h.dir + "/room.wav", name: "room.raw")
        // The landmarks' reading, whose votes this test counts (the learned reading's own test
        // is the README's walkthrough and EmbeddingMatcherTests).
        try h.start(config: "catalogue = \(catalogue)\nsound-reading = landmarks\n")
        let c = try h.connect()
        let status = try #require(try c.ask(["cmd": "status"], until: "status"))
        #expect(status["catalogue"] as? String == catalogue && status["campaigns"] as? Int == 2 && status["campaignsOnAir"] as? Int == 2, "\(status)")
        h.feed(raw, speed: 4)
        let answer = try #require(try c.ask(["cmd": "shake", "seconds": 12, "id": "room"], until: "shake", timeout: 30))
        #expect(answer["result"] as? String == "detected" && answer["payload"] as? String == "c0ffee42", "\(answer)")
        #expect(["sound", "mark+sound"].contains(answer["evidence"] as? String ?? ""), "\(answer)")
        #expect((answer["sound_votes"] as? Int ?? 0) >= 15, "\(answer)")
        #expect(h.terminate() == 0)
    }

    /// A campaign whose marks carry airing codes, captured through ALSA: aired now, a shake is
    /// answered with the airing; its recording played back half an hour later is heard as
    /// stale by a watcher, and no shake is answered, by the mark or by the creative's sound.
    @Test func anAiringIsFreshNowAndItsRecordingStaleLater() throws {
        let key = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss'Z'"
        for (minutesAgo, fresh) in [(0.0, true), (30.0, false)] {
            let h = try DaemonHarness()
            let catalogue = h.dir + "/campaigns.hark"
            try hark(["generate", "music", h.dir + "/host.wav", "--duration", "24", "--seed", "3"])
            try hark(["embed", h.dir + "/host.wav", h.dir + "/aired.wav", "--payload", "c0ffee01", "--catalogue", catalogue,
                      "--airing-key", key, "--channel", "7", "--airing-start", formatter.string(from: Date(timeIntervalSinceNow: -minutesAgo * 60))])
            let raw = try h.raw(from: h.dir + "/aired.wav", name: "aired.raw")
            try h.start(config: "catalogue = \(catalogue)\n")
            let watcher = try h.connect()
            try watcher.send(["cmd": "watch", "classes": ["detection"]])
            _ = try watcher.readObject(timeout: 5)
            let c = try h.connect()
            // Twice real time: a stale mark is decoded blindly at every hop, which a debug build
            // on a busy machine cannot do at four times.
            h.feed(raw, speed: 2)
            let answer = try #require(try c.ask(["cmd": "shake", "seconds": 8, "id": "air"], until: "shake", timeout: 30))
            var heard: [[String: Any]] = []
            while let o = try watcher.readObject(timeout: 3) { heard.append(o) }
            let marks = heard.filter { $0["evidence"] as? String != "sound" }
            if fresh {
                #expect(answer["result"] as? String == "detected" && answer["payload"] as? String == "c0ffee01", "\(answer)")
                #expect(answer["airing"] as? String == "fresh" && answer["channel"] as? Int == 7, "\(answer)")
            } else {
                #expect(answer["result"] as? String == "none", "\(answer)")
                #expect(!marks.isEmpty && marks.allSatisfy { $0["airing"] as? String == "stale" }, "\(heard)")
                #expect(heard.contains { $0["evidence"] as? String == "sound" }, "\(heard)")
            }
            #expect(h.terminate() == 0)
        }
    }

    /// The chain a playout and a living room make: the live embedder marks a programme as it
    /// streams, with the airing code of this minute, and harkd, capturing that through ALSA,
    /// answers a shake with the fresh airing.
    @Test func whatTheLiveEmbedderMarksNowHarkdHearsAsFresh() throws {
        let key = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
        let h = try DaemonHarness()
        let catalogue = h.dir + "/campaigns.hark"
        try hark(["generate", "music", h.dir + "/host.wav", "--duration", "24", "--seed", "5"])
        try hark(["catalogue", "add", catalogue, h.dir + "/host.wav", "--payload", "c0ffee01", "--airing-key", key, "--airing-channels", "7"])
        let host = try h.raw(from: h.dir + "/host.wav", name: "host.raw")
        let live = Process()
        live.executableURL = builtExecutable("hark")
        live.arguments = ["embed", "--live", "--input", "-", "--output", "-", "--channels", "1", "--payload", "c0ffee01",
                          "--airing-key", key, "--channel", "7", "--airing-start", "now", "--status-interval", "0"]
        live.standardInput = FileHandle(forReadingAtPath: host)
        let marked = h.dir + "/marked.raw"
        FileManager.default.createFile(atPath: marked, contents: nil)
        live.standardOutput = FileHandle(forWritingAtPath: marked)
        live.standardError = FileHandle.nullDevice
        try live.run()
        live.waitUntilExit()
        #expect(live.terminationStatus == 0)
        try h.start(config: "catalogue = \(catalogue)\n")
        let c = try h.connect()
        h.feed(marked, speed: 4)
        let answer = try #require(try c.ask(["cmd": "shake", "seconds": 6, "id": "live"], until: "shake", timeout: 30))
        #expect(answer["result"] as? String == "detected" && answer["payload"] as? String == "c0ffee01", "\(answer)")
        #expect(answer["airing"] as? String == "fresh" && answer["channel"] as? Int == 7, "\(answer)")
        #expect(h.terminate() == 0)
    }

    @Test func aCatalogueThatCannotBeReadIsShownAndTheOldOneKept() throws {
        let h = try DaemonHarness()
        let catalogue = h.dir + "/campaigns.hark"
        try hark(["generate", "pink", h.dir + "/a.wav", "--duration", "5"])
        try hark(["catalogue", "add", catalogue, h.dir + "/a.wav", "--payload", "c0ffee42"])
        try h.start(config: "catalogue = \(catalogue)\n")
        let c = try h.connect()
        #expect(try c.ask(["cmd": "status"], until: "status")?["campaigns"] as? Int == 1)
        try "c0ffee42\n".write(toFile: catalogue, atomically: true, encoding: .utf8)
        h.send(signal: SIGHUP)
        let deadline = Date(timeIntervalSinceNow: 5)
        var status: [String: Any]?
        while status?["catalogueError"] == nil && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.1)
            status = try c.ask(["cmd": "status"], until: "status")
        }
        #expect((status?["catalogueError"] as? String ?? "").contains("\(catalogue): not a Hark campaign catalogue"), "\(status ?? [:])")
        #expect(status?["campaigns"] as? Int == 1 && status?["campaignsOnAir"] as? Int == 1)
        #expect(h.logText.contains("still listening for the 1 campaign(s) read before"), "\(h.logText)")
        h.stop()
    }

    @Test func pastMaxClientsAClientIsToldWhyAndCounted() throws {
        let h = try DaemonHarness()
        try h.start(config: "max-clients = 2\n")
        let a = try h.connect()
        let b = try h.connect()
        do {
            _ = try h.connect()
            Issue.record("a third client was served past max-clients = 2")
        } catch {
            #expect("\(error)".contains("refused the connection: harkd serves at most 2 clients at once (max-clients)"), "\(error)")
        }
        let status = try #require(try a.ask(["cmd": "status"], until: "status"))
        #expect(status["maxClients"] as? Int == 2 && status["clientsRefused"] as? Int == 1 && status["clients"] as? Int == 2, "\(status)")
        #expect(h.logText.contains("a client was refused: 2 clients are connected (max-clients)"), "\(h.logText)")
        _ = b
        h.stop()
    }

    @Test func withClientsUpToTheDefaultCapTheCaptureDeviceStillOpens() throws {
        // With 1 024 descriptors and no cap, a connected client's noise session once failed with
        // "cannot open capture device 'default': Too many open files". 100 descriptors: 36 clients.
        let h = try DaemonHarness()
        try hark(["generate", "sine", h.dir + "/tone.wav", "--frequency", "1000", "--level", "-23", "--duration", "8"])
        let raw = try h.raw(from: h.dir + "/tone.wav", name: "tone.raw")
        try h.start(descriptorLimit: 100)
        let limit = 100 - 64      // the descriptors kept for the device, the spool and the uplink
        var clients = [try h.connect()]
        while clients.count < limit { clients.append(try h.connect()) }
        #expect(throws: (any Error).self) { try h.connect() }
        h.feed(raw, speed: 4)
        let report = try #require(try clients[0].ask(["cmd": "noise", "seconds": 1, "id": "n"], until: "report"))
        #expect(report["LAeq"] is Double, "\(report)")
        let status = try #require(try clients[1].ask(["cmd": "status"], until: "status"))
        #expect(status["maxClients"] as? Int == limit && status["clientsRefused"] as? Int == 1, "\(status)")
        h.stop()
    }

    @Test func sighupReloadsTheConfiguration() throws {
        let h = try DaemonHarness()
        try h.start(config: "mode = on-demand\n")
        let c = try h.connect()
        #expect(try c.ask(["cmd": "status"], until: "status")?["mode"] as? String == "on-demand")
        // The harness's ring kept: a ring of another size is a capture setting, which reopens the device.
        try (DaemonHarness.ringLine + "mode = continuous\nreport-interval = 5\n").write(toFile: h.dir + "/harkd.conf", atomically: true, encoding: .utf8)
        h.send(signal: SIGHUP)
        let deadline = Date(timeIntervalSinceNow: 5)
        var mode: String?
        while mode != "continuous" && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.1)
            mode = try c.ask(["cmd": "status"], until: "status")?["mode"] as? String
        }
        #expect(mode == "continuous")
        // The reload logs this last, after the capture has been reconfigured.
        while !h.logText.contains("configuration reloaded") && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(h.logText.contains("configuration reloaded"))
        // The capture settings (device, and the ALSA configuration from --alsa-config) did not
        // change, so the device is neither reopened nor lost.
        #expect(!h.logText.contains("reopening") && !h.logText.contains("Unknown PCM"), "\(h.logText)")
        // The file read is named at start, with the command-line settings over it.
        #expect(h.logText.contains("configuration read from \(h.dir)/harkd.conf, then --socket"), "\(h.logText)")
        // A file saved in another encoding is refused by name, line and byte; the settings stay.
        try Data(Array("mode = on-demand # caf".utf8) + [0xE9, 0x0A]).write(to: URL(fileURLWithPath: h.dir + "/harkd.conf"))
        h.send(signal: SIGHUP)
        let refused = "SIGHUP: configuration not reloaded: \(h.dir)/harkd.conf:1: not UTF-8 text: byte 0xE9 at column 23"
        let logged = Date(timeIntervalSinceNow: 5)
        while !h.logText.contains(refused) && Date() < logged { Thread.sleep(forTimeInterval: 0.05) }
        #expect(h.logText.contains(refused), "\(h.logText)")
        #expect(try c.ask(["cmd": "status"], until: "status")?["mode"] as? String == "continuous")
        h.stop()
    }
}

/// A Unix stream socket bound at `path` and listening, as systemd would make it.
private func listeningSocket(at path: String) throws -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EIO) }
    let address = try UnixSocketAddress(path).orThrow(POSIXError(.ENAMETOOLONG))
    let bound = address.withSockaddr { bind(fd, $0, $1) }
    guard bound == 0, listen(fd, 16) == 0 else { close(fd); throw POSIXError(.EADDRINUSE) }
    return fd
}

/// Starts `path` with `fd3` as the child's file descriptor 3 (Foundation's Process passes only 0–2).
private func spawn(_ path: String, _ arguments: [String], environment: [String: String], fd3: Int32) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, fd3, 3)
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { (argv + envp).forEach { free($0) } }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, path, &actions, nil, argv, envp)
    guard rc == 0 else { throw POSIXError(POSIXErrorCode(rawValue: rc) ?? .EIO) }
    return pid
}

extension Optional {
    func orThrow(_ error: Error) throws -> Wrapped {
        guard let self else { throw error }
        return self
    }
}
