import Foundation
import HarkDSP
import HarkSystem
import HarkTesting
import Testing
@testable import HarkDaemon

@Suite struct ConfigurationTests {
    @Test func readsAFile() throws {
        var c = DaemonConfiguration()
        try c.apply(file: """
            # harkd on the train
            device = hw:1,0
            rate = 44100
            channels = 2
            format = s32          # case does not matter
            mode = continuous
            report-interval = 30
            period-ms = 10
            socket = /tmp/x.sock
            socket-mode = 0600
            key = line 7 ads
            profile = stadium
            calibration = 112.5
            """, source: "harkd.conf")
        #expect(c.capture.device == "hw:1,0" && c.capture.rate == 44_100 && c.capture.channels == 2 && c.capture.format == .s32)
        #expect(c.mode == .continuous && c.reportInterval == 30 && c.socketMode == 0o600)
        #expect(c.captureSettings.periodFrames == 441)
        #expect(c.resolvedSocketPath == "/tmp/x.sock")
        #expect(c.calibration == 112.5 && c.watermarkKey.bytes == Array("line 7 ads".utf8))
        #expect(c.watermarkProfile == .stadium && DaemonConfiguration().watermarkProfile == .tv)
    }

    @Test func unitAndSpool() throws {
        var c = DaemonConfiguration()
        #expect(c.spoolPath == nil && !c.resolvedUnit.isEmpty && !c.resolvedUnit.contains("/"))
        try c.apply(file: """
            unit = carriage-7
            spool = /var/lib/hark/spool.sqlite
            spool-max-mb = 8
            spool-max-days = 2.5
            """, source: "harkd.conf")
        #expect(c.resolvedUnit == "carriage-7" && c.spoolPath == "/var/lib/hark/spool.sqlite")
        #expect(c.spoolMaxMB == 8 && c.spoolMaxDays == 2.5)
        for bad in ["unit = a/b", "unit = a b", "unit = #", "spool-max-mb = 0", "spool-max-days = lots"] {
            var d = DaemonConfiguration()
            #expect(throws: DaemonConfiguration.ParseError.self, "\(bad)") { try d.apply(file: bad, source: "f") }
        }
    }

    @Test func mqttURLsAndSettings() throws {
        var c = DaemonConfiguration()
        try c.apply(file: """
            mqtt-keepalive = 20
            mqtt-url = mqtts://fleet:p%40ss@broker.example.net
            mqtt-ca = /etc/hark/ca.crt
            mqtt-client-id = coach-12
            """, source: "harkd.conf")
        let u = try #require(c.uplink)
        #expect(u.host == "broker.example.net" && u.port == 8883 && u.tls && u.username == "fleet" && u.password == "p@ss")
        #expect(u.caFile == "/etc/hark/ca.crt" && u.clientID == "coach-12" && u.keepalive == 20)
        for (url, host, port, tls) in [("mqtt://10.0.0.2", "10.0.0.2", 1883, false), ("mqtt://h:1884/", "h", 1884, false),
                                       ("mqtts://[::1]:9000", "::1", 9000, true)] {
            var d = DaemonConfiguration()
            try d.apply(file: "mqtt-url = \(url)", source: "f")
            #expect(d.uplink?.host == host && d.uplink?.port == port && d.uplink?.tls == tls, "\(url)")
        }
        for bad in ["http://h", "mqtt://", "mqtt://h:0", "mqtt://h:99999", "mqtt://h:x", "mqtt://h/topic", "mqtt://@h",
                    "mqtt://[::1", "mqtt-keepalive = 1", "mqtt-max-rate = 0"] {
            var d = DaemonConfiguration()
            let line = bad.contains("=") ? bad : "mqtt-url = \(bad)"
            #expect(throws: DaemonConfiguration.ParseError.self, "\(bad)") { try d.apply(file: line, source: "f") }
        }
        do {
            var d = DaemonConfiguration()
            try d.apply(file: "mqtt-url = ftp://x", source: "harkd.conf")
        } catch {
            #expect(error.description == "harkd.conf:1: mqtt-url must be mqtt://host[:port] or mqtts://host[:port] (unknown scheme), not 'ftp://x'")
        }
    }

    @Test func errorsNameTheLine() {
        var c = DaemonConfiguration()
        #expect(throws: DaemonConfiguration.ParseError(source: "f", line: 2, message: "mode must be on-demand or continuous, not 'always'")) {
            try c.apply(file: "device = default\nmode = always\n", source: "f")
        }
        #expect(throws: DaemonConfiguration.ParseError(source: "f", line: 1, message: "profile must be tv or stadium, not 'arena'")) {
            try c.apply(file: "profile = arena", source: "f")
        }
        #expect(throws: DaemonConfiguration.ParseError(source: "f", line: 1, message: "unknown setting 'volume'")) {
            try c.apply(file: "volume = 11", source: "f")
        }
        #expect(throws: DaemonConfiguration.ParseError(source: "f", line: 1, message: "expected 'key = value', found 'rate 48000'")) {
            try c.apply(file: "rate 48000", source: "f")
        }
        #expect(throws: DaemonConfiguration.ParseError(source: "--rate", line: 0, message: "rate must be a number from 8000.0 to 192000.0, not 'fast'")) {
            try c.override("rate", "fast")
        }
    }

    @Test func aFileThatIsNotTextIsNamedWithItsLineAndByte() throws {
        let dir = TemporaryDirectory()
        // Latin-1 "é" (0xE9) in a comment on line 2, as an editor set to another encoding saves it.
        let latin1 = dir.write("harkd.conf", Array("device = default\n# caf".utf8) + [0xE9] + Array("\nmode = continuous\n".utf8))
        #expect(throws: DaemonConfiguration.ParseError(source: latin1, line: 2, message: "not UTF-8 text: byte 0xE9 at column 6 (save the file as UTF-8)")) {
            try DaemonConfiguration.text(ofFile: latin1)
        }
        let missing = dir.file("none.conf")
        #expect(throws: DaemonConfiguration.ParseError(source: missing, line: 0, message: "cannot read the configuration file: No such file or directory")) {
            try DaemonConfiguration.text(ofFile: missing)
        }
        #expect(throws: DaemonConfiguration.ParseError(source: dir.path, line: 0, message: "cannot read the configuration file: Is a directory")) {
            try DaemonConfiguration.text(ofFile: dir.path)
        }
        let good = dir.write("good.conf", Array("# café, naïve, 1–8\nmode = continuous\n".utf8))
        #expect(try DaemonConfiguration.text(ofFile: good) == "# café, naïve, 1–8\nmode = continuous\n")
        #expect("\(DaemonConfiguration.ParseError(source: missing, line: 0, message: "m"))" == "\(missing): m")
    }

    /// The packaged configuration and units, read from the source tree.
    private func packaged(_ name: String) throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return try String(contentsOf: root.appendingPathComponent("tools/systemd/" + name), encoding: .utf8)
    }

    @Test func thePackagedConfigurationParsesAndSaysWhatTheCodeDoes() throws {
        let text = try packaged("harkd.conf")
        var c = DaemonConfiguration()
        try c.apply(file: text, source: "harkd.conf")
        // The thresholds it quotes are today's (it once quoted 7.55 / 9.58).
        let catalogue = String(cFormat: "%.2f", WatermarkDetector.threshold(payloads: 100))
        let open = String(cFormat: "%.2f", WatermarkDetector.threshold)
        #expect(text.contains("needs a score of \(catalogue) instead of \(open)"), "quotes other thresholds than \(catalogue) / \(open)")
        // A packaged user has no tools/install: it says where the package puts the drop-in.
        #expect(text.contains("/usr/share/doc/hark/harkd-uplink.conf"))
        // An instance rereads its own file on SIGHUP, not harkd.conf.
        let instance = try packaged("harkd@.service")
        #expect(instance.contains("SIGHUP rereads the instance's /etc/hark/%i.conf") && !instance.contains("SIGHUP rereads /etc/hark/harkd.conf"))
    }

    @Test func catalogueFromTheFileOrAListFile() throws {
        var c = DaemonConfiguration()
        #expect(c.catalogue.isEmpty)
        try c.apply(file: "catalogue = c0ffee42, 1a2b3c4d c0ffee42   # on air\n", source: "f")
        #expect(c.catalogue == [WatermarkPayload(0xC0FFEE42), WatermarkPayload(0x1A2B3C4D)])
        #expect(Daemon.analysisSettings(c, CampaignsOnAir()).analysis.watermark?.catalogue == c.catalogue)
        let list = FileManager.default.temporaryDirectory.appendingPathComponent("hark-catalogue-\(getpid()).txt").path
        try "# this week\nda7e0001\nda7e0002\n".write(toFile: list, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: list) }
        try c.override("catalogue-file", list)
        #expect(c.catalogue == [WatermarkPayload(0xDA7E0001), WatermarkPayload(0xDA7E0002)])
        #expect(throws: DaemonConfiguration.ParseError(source: "f", line: 1,
                                                       message: "catalogue: 'c0ffeeXX' is not hexadecimal; give 1 to 8 hex digits, e.g. 1a2b3c4d")) {
            try c.apply(file: "catalogue = c0ffeeXX", source: "f")
        }
        #expect(throws: DaemonConfiguration.ParseError(source: "--catalogue-file", line: 0, message: "catalogue-file /nonexistent/list: missing or unreadable")) {
            try c.override("catalogue-file", "/nonexistent/list")
        }
    }

    @Test func socketDefaultsToTheRuntimeDirectory() {
        #expect(DaemonConfiguration.defaultSocketPath(environment: ["RUNTIME_DIRECTORY": "/run/hark"]) == "/run/hark/hark.sock")
        #expect(DaemonConfiguration.defaultSocketPath(environment: ["RUNTIME_DIRECTORY": "/run/a:/run/b"]) == "/run/a/hark.sock")
        #expect(DaemonConfiguration.defaultSocketPath(environment: [:]) == "/run/hark/hark.sock")
        // Where the clients look first is where harkd listens first.
        #expect(DaemonConfiguration.defaultSocketPath(environment: ["HARK_SOCKET": "/tmp/h.sock", "RUNTIME_DIRECTORY": "/run/hark"]) == "/tmp/h.sock")
    }
}
