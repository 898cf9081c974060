import Foundation
import HarkSystem

/// Why talking to harkd failed.
public enum ClientError: Error, Equatable, CustomStringConvertible {
    case noDaemon(path: String)
    case permission(path: String)
    case connectionLost
    case io(String)

    public var description: String {
        switch self {
        case .noDaemon(let p): return "no harkd listening on \(p) (is it running? use --socket to point elsewhere)"
        case .permission(let p): return "not allowed to connect to \(p) (join the socket's group)"
        case .connectionLost: return "harkd closed the connection"
        case .io(let m): return m
        }
    }
}

/// A blocking client of harkd's JSON-lines protocol over its Unix-domain socket.
public final class HarkConnection {
    /// Where harkd listens unless told otherwise: `$HARK_SOCKET`, else `/run/hark/hark.sock`.
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        environment["HARK_SOCKET"] ?? "/run/hark/hark.sock"
    }

    private let fd: Int32
    private var pending: [UInt8] = []
    /// The version banner harkd sent on connecting.
    public private(set) var banner: [String: Any] = [:]

    public init(path: String, timeout: Double = 5) throws(ClientError) {
        guard UnixSocketAddress(path) != nil else { throw .io("socket path too long: \(path)") }
        guard let s = UnixSocketAddress.connectStream(path) else {
            throw errno == EACCES || errno == EPERM ? .permission(path: path) : .noDaemon(path: path)
        }
        fd = s
        let answer = try readObject(timeout: timeout)
        guard let first = answer, first["class"] as? String == "version" else {
            close(s)
            // harkd refuses with an error line (shutting down, max-clients): say its words.
            if let message = answer?["message"] as? String, answer?["class"] as? String == "error" {
                throw .io("harkd at \(path) refused the connection: \(message)")
            }
            throw .io("\(path) did not answer with harkd's version banner")
        }
        banner = first
    }

    deinit { close(fd) }

    /// Sends one command line (a newline is added).
    public func send(_ line: String) throws(ClientError) {
        var bytes = Array((line + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            // MSG_NOSIGNAL: a program using this client must not die of SIGPIPE when harkd
            // closes the socket; it gets `.connectionLost` instead.
            let n = bytes.withUnsafeMutableBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw errno == EPIPE || errno == ECONNRESET ? .connectionLost : .io("write: \(String(cString: strerror(errno)))")
            }
            offset += n
        }
    }

    /// Sends a command given as a dictionary.
    public func send(_ object: [String: Any]) throws(ClientError) {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else {
            throw .io("cannot encode command")
        }
        try send(String(decoding: data, as: UTF8.self))
    }

    /// The next line, waiting up to `timeout` seconds (nil: forever). Returns nil on timeout;
    /// throws ``ClientError/connectionLost`` at end of stream.
    public func readLine(timeout: Double? = nil) throws(ClientError) -> String? {
        let deadline = timeout.map { Date(timeIntervalSinceNow: $0) }
        while true {
            if let i = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<i], as: UTF8.self)
                pending.removeFirst(i + 1)
                return line
            }
            var wait: Int32 = -1
            if let deadline {
                let left = deadline.timeIntervalSinceNow
                if left <= 0 { return nil }
                wait = Int32(left * 1000) + 1
            }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let r = poll(&p, 1, wait)
            if r < 0 { if errno == EINTR { continue }; throw .io("poll: \(String(cString: strerror(errno)))") }
            if r == 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 8192)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                // harkd closing with our unread input still queued resets rather than ends.
                if errno == ECONNRESET { throw .connectionLost }
                throw .io("read: \(String(cString: strerror(errno)))")
            }
            if n == 0 { throw .connectionLost }
            pending += chunk[0..<n]
        }
    }

    /// The next line parsed as a JSON object (lines that are not objects are skipped).
    public func readObject(timeout: Double? = nil) throws(ClientError) -> [String: Any]? {
        try readMessage(timeout: timeout)?.object
    }

    /// The next line that is a JSON object: the line as harkd sent it, and parsed.
    public func readMessage(timeout: Double? = nil) throws(ClientError) -> (line: String, object: [String: Any])? {
        let deadline = timeout.map { Date(timeIntervalSinceNow: $0) }
        while true {
            let left = deadline.map { max(0, $0.timeIntervalSinceNow) }
            guard let line = try readLine(timeout: left) else { return nil }
            if let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] { return (line, object) }
        }
    }
}
