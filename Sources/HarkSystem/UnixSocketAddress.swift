import FoundationEssentials
import Glibc

/// A Unix-domain socket address for a path: the one place `sockaddr_un` is filled in, for the
/// client, harkd's socket checks and its systemd notifications.
public struct UnixSocketAddress {
    public private(set) var storage = sockaddr_un()
    /// The length to pass with it: the family and the path's bytes (what an abstract address
    /// needs; harmless for a path).
    public let length: socklen_t

    /// `path`, or with a leading `@`, a name in Linux's abstract namespace (as systemd's
    /// NOTIFY_SOCKET may give). Nil when the path does not fit in `sun_path`.
    public init?(_ path: String) {
        storage.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: storage.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &storage.sun_path) { raw in
            raw.initializeMemory(as: UInt8.self, repeating: 0)
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
    }

    /// Calls `body` with the address as a `sockaddr` pointer and its length.
    public func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> T) rethrows -> T {
        var copy = storage
        return try withUnsafePointer(to: &copy) { p in
            try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, length) }
        }
    }

    /// Connects a new stream socket to `path`: the descriptor, or nil with `errno` set.
    public static func connectStream(_ path: String) -> Int32? {
        guard let address = UnixSocketAddress(path) else {
            errno = ENAMETOOLONG
            return nil
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        guard address.withSockaddr({ Glibc.connect(fd, $0, $1) }) == 0 else {
            let e = errno
            close(fd)
            errno = e
            return nil
        }
        return fd
    }
}
