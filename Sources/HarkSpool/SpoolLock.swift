import FoundationEssentials
import Glibc
import HarkSystem

/// One process's claim on a spool, held while any ``Spool`` of this process has it open: two
/// harkd writing one spool publish each other's records under their own unit and fight over
/// the broker's client id, so the second is refused by name.
///
/// The claim is an exclusive `flock` on `<spool>-lock`, a file beside the spool that holds the
/// owner's process id (for the refusal's message). It is not the spool itself: closing any
/// other descriptor of the database file would drop SQLite's own locks on it. The kernel
/// releases the claim when the process ends, however it ends; the file stays, empty of meaning.
final class SpoolLock: Sendable {
    let path: String

    /// Claims `spoolPath` for this process, or shares the claim this process already holds
    /// (a reload opens the spool again before the old one closes).
    init(spoolPath: String) throws(SpoolError) {
        path = spoolPath + "-lock"
        let key = path
        Self.lock.lock()
        defer { Self.lock.unlock() }
        if Self.claims[key] != nil {
            Self.claims[key]!.count += 1
            return
        }
        let fd = open(key, O_RDWR | O_CREAT | O_CLOEXEC, 0o640)
        guard fd >= 0 else { throw .cannotOpen(spoolPath, "cannot create its lock file \(key): \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let why = errno
            var text = [UInt8](repeating: 0, count: 32)
            let n = read(fd, &text, text.count)
            close(fd)
            guard why == EWOULDBLOCK else {
                throw .cannotOpen(spoolPath, "cannot lock \(key): \(String(cString: strerror(why)))")
            }
            let owner = String(decoding: text.prefix(max(0, n)), as: UTF8.self).trimmingWhitespace()
            throw .inUse(spoolPath, owner: Int32(owner))
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, pid, pid.count, 0)
        Self.claims[key] = Claim(fd: fd, count: 1)
    }

    deinit {
        Self.lock.lock()
        defer { Self.lock.unlock() }
        guard var claim = Self.claims[path] else { return }
        claim.count -= 1
        if claim.count == 0 {
            close(claim.fd)     // releases the flock
            Self.claims[path] = nil
        } else {
            Self.claims[path] = claim
        }
    }

    private struct Claim { var fd: Int32; var count: Int }
    /// This process's claims by lock file, under `lock`.
    nonisolated(unsafe) private static var claims: [String: Claim] = [:]
    private static let lock = PosixLock()
}
