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
