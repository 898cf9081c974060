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
            calibration = 112.5
            """, source: "harkd.conf")
        #expect(c.capture.device == "hw:1,0" && c.capture.rate == 44_100 && c.capture.channels == 2 && c.capture.format == .s32)
        #expect(c.mode == .continuous && c.reportInterval == 30 && c.socketMode == 0o600)
        #expect(c.captureSettings.periodFrames == 441)
        #expect(c.resolvedSocketPath == "/tmp/x.sock")
        #expect(c.calibration == 112.5 && c.watermarkKey.bytes == Array("line 7 ads".utf8))
    }

    @Test func errorsNameTheLine() {
        var c = DaemonConfiguration()
        #expect(throws: DaemonConfiguration.ParseError(source: "f", line: 2, message: "mode must be on-demand or continuous, not 'always'")) {
            try c.apply(file: "device = default\nmode = always\n", source: "f")
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

    @Test func socketDefaultsToTheRuntimeDirectory() {
        #expect(DaemonConfiguration.defaultSocketPath(environment: ["RUNTIME_DIRECTORY": "/run/hark"]) == "/run/hark/hark.sock")
        #expect(DaemonConfiguration.defaultSocketPath(environment: ["RUNTIME_DIRECTORY": "/run/a:/run/b"]) == "/run/a/hark.sock")
        #expect(DaemonConfiguration.defaultSocketPath(environment: [:]) == "/run/hark/hark.sock")
    }
}
