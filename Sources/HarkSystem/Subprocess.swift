import Glibc

/// Runs a program to its end and keeps what it printed: the codec simulations (ffmpeg) and the
/// transparency grader (peaq). posix_spawn, so nothing between fork and exec runs Swift code.
public struct Subprocess: Sendable {
    public var status: Int32
    public var standardOutput: [UInt8]
    public var standardError: [UInt8]
    /// True when the program outran its time limit and was killed (its status is then 137).
    public var timedOut = false

    public enum Failure: Error, CustomStringConvertible {
        case cannotRun(String, String)
        public var description: String {
            switch self {
            case let .cannotRun(path, reason): "cannot run \(path): \(reason)"
            }
        }
    }

    /// Runs `executable` (a path) with `arguments`; its standard input is /dev/null.
    /// - Parameters:
    ///   - keepOutput: false sends its standard output to /dev/null.
    ///   - timeLimit: seconds after which the program is killed (``timedOut``); none when nil.
    public static func run(_ executable: String, _ arguments: [String], keepOutput: Bool = true,
                           timeLimit: Double? = nil) throws -> Subprocess {
        var out: [Int32] = [-1, -1], err: [Int32] = [-1, -1]
        guard pipe(&out) == 0 else { throw Failure.cannotRun(executable, String(cString: strerror(errno))) }
        guard pipe(&err) == 0 else {
            close(out[0]); close(out[1])
            throw Failure.cannotRun(executable, String(cString: strerror(errno)))
        }
        // Not inherited by programs other threads start meanwhile (the child gets its copies
        // through dup2, which clears the flag).
        for fd in out + err { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if keepOutput {
            posix_spawn_file_actions_adddup2(&actions, out[1], 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_adddup2(&actions, err[1], 2)

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let rc = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        close(out[1]); close(err[1])
        guard rc == 0 else {
            close(out[0]); close(err[0])
            throw Failure.cannotRun(executable, String(cString: strerror(rc)))
        }
        // Both pipes at once: a child that fills one while we block on the other would hang.
        var result = Subprocess(status: -1, standardOutput: [], standardError: [])
        var fds = [pollfd(fd: out[0], events: Int16(POLLIN), revents: 0),
                   pollfd(fd: err[0], events: Int16(POLLIN), revents: 0)]
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let deadline = timeLimit.map { monotonicSeconds() + $0 }
        while fds.contains(where: { $0.fd >= 0 }) {
            var wait: Int32 = -1
            if let deadline {
                let left = deadline - monotonicSeconds()
                if left <= 0 && !result.timedOut {
                    kill(pid, SIGKILL)
                    result.timedOut = true
                }
                // Killed, its pipes close and the reads below end; a grandchild that kept a copy
                // of them (GStreamer's plugin scanner) is given a second, then left behind.
                if result.timedOut && left < -1 {
                    for i in fds.indices where fds[i].fd >= 0 { close(fds[i].fd); fds[i].fd = -1 }
                    break
                }
                wait = Int32(min((result.timedOut ? left + 1 : left) * 1000 + 1, 60_000))
            }
            let ready = poll(&fds, nfds_t(fds.count), wait)
            if ready < 0 {
                if errno == EINTR { continue }
                break
            }
            for i in fds.indices where fds[i].fd >= 0 && fds[i].revents != 0 {
                let n = read(fds[i].fd, &buffer, buffer.count)
                if n > 0 {
                    if i == 0 { result.standardOutput += buffer[..<n] } else { result.standardError += buffer[..<n] }
                } else if n == 0 || errno != EINTR {
                    close(fds[i].fd)
                    fds[i].fd = -1
                }
            }
        }
        var wstatus: Int32 = 0
        while waitpid(pid, &wstatus, 0) < 0 && errno == EINTR {}
        // WIFEXITED / WEXITSTATUS are macros Swift cannot import.
        result.status = (wstatus & 0x7f) == 0 ? (wstatus >> 8) & 0xff : 128 + (wstatus & 0x7f)
        return result
    }

    private static func monotonicSeconds() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}
