import Foundation
import Testing
import HarkSystem

@Suite struct SystemdNotifierTests {
    @Test func sendsDatagramsToNotifySocket() throws {
        let path = NSTemporaryDirectory() + "hark-notify-\(UUID().uuidString).sock"
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd); unlink(path) }
        let bound = UnixSocketAddress(path)!.withSockaddr { bind(fd, $0, $1) }
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
