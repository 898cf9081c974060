import Foundation

// What the daemon and delivery benchmarks share: timing, /proc figures of a process, and a
// local Mosquitto broker.

/// Prints `message` on stderr, prefixed with the benchmark's name, and exits 1.
public func fail(_ message: String) -> Never {
    let name = URL(fileURLWithPath: CommandLine.arguments[0]).lastPathComponent
    FileHandle.standardError.write(Data("\(name): \(message)\n".utf8))
    exit(1)
}

/// Seconds on the monotonic clock.
public func monotonic() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

/// utime + stime of process `pid`, seconds.
public func cpuSeconds(_ pid: pid_t) -> Double {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return 0 }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    // Fields after the command name start at field 3 (state); utime and stime are 14 and 15.
    let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
    return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// A VmHWM/VmRSS line of /proc/pid/status, in MB.
public func memory(_ pid: pid_t, _ key: String) -> Double {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix(key + ":") }),
          let kB = Double(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
    return kB / 1024
}

/// A loopback TCP port no one listens on now.
public func freePort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
    _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
    return Int(UInt16(bigEndian: addr.sin_port))
}

/// Debian's Mosquitto on a free loopback port, anonymous, without persistence; killed by
/// ``stop()``.
public final class LocalBroker {
    public let port: Int
    private let process: Process

    public init(dir: String) {
        guard let path = ["/usr/sbin/mosquitto", "/usr/bin/mosquitto"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            fail("mosquitto not found (apt-get install mosquitto)")
        }
        port = freePort()
        try? "listener \(port) 127.0.0.1\nallow_anonymous true\npersistence false\nuser root\nmax_queued_messages 0\n"
            .write(toFile: dir + "/mosquitto.conf", atomically: true, encoding: .utf8)
        process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["-c", dir + "/mosquitto.conf"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { fail("cannot start mosquitto: \(error)") }
        usleep(300_000)
    }

    public func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

@discardableResult
public func run(_ path: String, _ args: [String]) -> Int32 {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = args
    p.standardOutput = FileHandle.nullDevice
    do { try p.run() } catch { fail("cannot run \(path): \(error)") }
    p.waitUntilExit()
    return p.terminationStatus
}

/// Payload of the marked segment `i` of ``markedSegments(hark:data:seconds:)``.
public func markedSegmentPayload(_ i: Int) -> String { String(format: "da7e%04x", i + 1) }

/// Raw mono S16 at 48 kHz: one 10 s segment of generated music per payload, each marked 20 dB
/// over the transparent default so that every segment is heard (the benchmarks measure the
/// daemon's cost; the watermark bench what the default survives). Made once with `hark` and
/// kept in `data`.
public func markedSegments(hark: String, data: String, seconds: Int) -> Data {
    let raw = data + "/daemon-\(seconds)s-strength10.raw"
    if let d = FileManager.default.contents(atPath: raw) { return d }
    print("(making \(raw) once: \(seconds / 10) segments of generated music, each marked with its own payload)")
    var all = Data()
    for i in 0..<(seconds / 10) {
        let host = data + "/segment.wav", marked = data + "/segment-marked.wav", seg = data + "/segment.raw"
        guard run(hark, ["generate", "music", host, "--duration", "10", "--seed", "\(100 + i)"]) == 0,
              run(hark, ["embed", host, marked, "--payload", markedSegmentPayload(i), "--strength", "10"]) == 0,
              run(hark, ["simulate", marked, seg]) == 0,
              let d = FileManager.default.contents(atPath: seg) else { fail("could not make the signal") }
        all.append(d)
        for f in [host, marked, seg] { try? FileManager.default.removeItem(atPath: f) }
    }
    guard all.count == seconds * 48_000 * 2 else { fail("signal has \(all.count) bytes, expected \(seconds * 48_000 * 2)") }
    _ = FileManager.default.createFile(atPath: raw, contents: all)
    return all
}

/// A value handed to another thread that alone uses it from then on.
public final class UncheckedBox<T>: @unchecked Sendable {
    public let value: T
    public init(_ value: T) { self.value = value }
}

/// A value behind a lock, shared between a benchmark's threads.
public final class Locked<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T
    public init(_ value: T) { self.value = value }
    public func with<R>(_ body: (inout T) -> R) -> R { lock.withLock { body(&value) } }
}
