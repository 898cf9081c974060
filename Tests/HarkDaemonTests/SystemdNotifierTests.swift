import Foundation
import Testing
@testable import HarkDaemon

@Suite struct SystemdNotifierTests {
    @Test func sendsDatagramsToNotifySocket() throws {
        let path = NSTemporaryDirectory() + "hark-notify-\(UUID().uuidString).sock"
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd); unlink(path) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in for (i, b) in Array(path.utf8).enumerated() { raw[i] = b } }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": path, "WATCHDOG_USEC": "4000000"])
        #expect(notifier.isActive && notifier.watchdogInterval == 2)
        notifier.notify("READY=1\nSTATUS=idle")
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        #expect(n > 0)
        #expect(String(decoding: buffer[0..<max(n, 0)], as: UTF8.self) == "READY=1\nSTATUS=idle")
    }

    @Test func silentWithoutNotifySocket() {
        let notifier = SystemdNotifier(environment: [:])
        #expect(!notifier.isActive && notifier.watchdogInterval == nil)
        notifier.notify("READY=1")     // does nothing, does not crash
    }
}
