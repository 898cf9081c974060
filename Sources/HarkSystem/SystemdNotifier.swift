import FoundationEssentials
import Glibc

/// Tells systemd about the service over `$NOTIFY_SOCKET` (sd_notify's protocol: one datagram
/// of `KEY=value` lines). Silent when the variable is not set.
public struct SystemdNotifier: Sendable {
    private let path: String?
    /// How often systemd wants `WATCHDOG=1`, if it does (half of `$WATCHDOG_USEC`).
    public let watchdogInterval: Double?

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        if let usec = environment["WATCHDOG_USEC"].flatMap(Double.init),
           environment["WATCHDOG_PID"].flatMap(Int32.init).map({ $0 == getpid() }) ?? true {
            watchdogInterval = usec / 2_000_000
        } else {
            watchdogInterval = nil
        }
    }

    public var isActive: Bool { path != nil }

    /// Sends `state` (e.g. "READY=1", "STATUS=capturing"). Failures are ignored, as sd_notify does.
    public func notify(_ state: String) {
        guard let path else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        guard let address = UnixSocketAddress(path) else { return }
        let message = Array(state.utf8)
        _ = address.withSockaddr { sa, length in
            message.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, 0, sa, length) }
        }
    }
}
