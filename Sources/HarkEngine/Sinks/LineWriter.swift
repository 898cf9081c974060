import FoundationEssentials
import Glibc
import HarkSystem

/// Writes text lines to a file descriptor, each line in whole `write(2)` calls so that a
/// reader never sees half a line from Hark, and a closed pipe is an error to stop on rather
/// than a signal that kills the process.
public final class LineWriter: Sendable {
    /// The reader went away (`EPIPE`).
    public struct Closed: Error {}

    public static let standardOutput = LineWriter(fd: STDOUT_FILENO)
    public static let standardError = LineWriter(fd: STDERR_FILENO)

    /// Where a command reports what it wrote to `output`: standard output, unless the audio
    /// itself goes there (`-`).
    public static func report(writing output: String) -> LineWriter {
        output == "-" ? standardError : standardOutput
    }

    public let fd: Int32
    private let lock = PosixLock()

    public init(fd: Int32) {
        self.fd = fd
    }

    /// Whether the descriptor is a terminal.
    public var isTerminal: Bool { isatty(fd) == 1 }

    /// Writes `line` and a newline.
    public func write(line: String) throws {
        try write(raw: line + "\n")
    }

    /// Writes `text` as is.
    public func write(raw text: String) throws {
        lock.lock()
        defer { lock.unlock() }
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { buffer in
                Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EPIPE { throw Closed() }
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
            offset += n
        }
        bytes.removeAll()
    }
}
