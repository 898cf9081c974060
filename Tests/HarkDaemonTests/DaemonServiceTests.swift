import Foundation
import HarkCapture
import HarkCaptureTesting
import HarkClient
import Logging
import ServiceLifecycle
import Testing
@testable import HarkDaemon

/// Runs blocking client I/O on its own thread, so the daemon's async work keeps the
/// cooperative pool.
private func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// The daemon as a service in this process, capturing through real ALSA (the file plugin) with
/// faults injected at the PCM seam: what a process-level test cannot reach.
@Suite struct DaemonServiceTests {
    @Test func anInjectedOverrunIsCountedInStatusAndWarnedInTheReport() async throws {
        let dir = NSTemporaryDirectory() + "hark-service-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let tone = (0..<(6 * 48_000)).map { Int16(8_000 * sin(2 * Double.pi * 1000 * Double($0) / 48_000)) }
        let raw = writeRaw(tone)
        defer { unlink(raw) }
        var config = DaemonConfiguration()
        config.capture.configuration = fileConfiguration(raw: raw)
        config.socketPath = dir + "/hark.sock"
        // Read 25 (0.48 s into the capture) overruns; reads are paced at 4× real time.
        let daemon = Daemon(configuration: config, configurationFile: nil, overrides: [], logger: Logger(label: "test"),
                            environment: [:], opener: { s in FaultyPCM(try PCMDevice(settings: s), faults: [25: -EPIPE], speed: 4) })
        let group = ServiceGroup(configuration: .init(services: [.init(service: daemon)], logger: Logger(label: "test")))
        async let running: Void = group.run()

        let socket = dir + "/hark.sock"
        let (reportLine, statusLine, heard) = try await blocking { () throws -> (String?, String?, [String]) in
            var heard: [String] = []
            // The service starts on the cooperative pool, which other tests may keep busy for
            // a while: be patient.
            var client: HarkConnection?
            let deadline = Date(timeIntervalSinceNow: 120)
            while client == nil && Date() < deadline {
                client = try? HarkConnection(path: socket, timeout: 5)
                if client == nil { Thread.sleep(forTimeInterval: 0.05) }
            }
            guard let c = client else { return (nil, nil, ["could not connect"]) }
            try c.send(["cmd": "noise", "seconds": 2, "id": "o"])
            var report: String?
            while report == nil, let m = try c.readMessage(timeout: 10) {
                heard.append(m.line)
                if m.object["class"] as? String == "report" { report = m.line }
            }
            try c.send(["cmd": "status"])
            var status: String?
            while status == nil, let m = try c.readMessage(timeout: 5) {
                if m.object["class"] as? String == "status" { status = m.line }
            }
            return (report, status, heard)
        }
        await group.triggerGracefulShutdown()
        try await running

        func object(_ line: String?) -> [String: Any]? {
            line.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
        let r = try #require(object(reportLine), "heard: \(heard.prefix(5))")
        #expect(r["id"] as? String == "o")
        #expect(r["warnings"] as? [String] == ["audio missing: 1 capture overrun(s), the device dropped audio"])
        #expect(abs((r["duration"] as? Double ?? 0) - 2) < 1e-9)
        let s = try #require(object(statusLine))
        #expect(s["overruns"] as? Int == 1)
        #expect(s["dropped"] as? Int == 0)
        #expect(!FileManager.default.fileExists(atPath: socket))
    }
}
