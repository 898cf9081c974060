import Foundation

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
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }      // abstract namespace
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { return }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let message = Array(state.utf8)
        _ = withUnsafePointer(to: &addr) { a in
            a.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                message.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, 0, sa, length) }
            }
        }
    }
}
