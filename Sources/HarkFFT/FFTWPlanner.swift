import CFFTW
import FoundationEssentials
import Glibc
import HarkSystem

/// Serialises every call into FFTW's planner.
///
/// FFTW's planner keeps global state (wisdom, twiddle tables) and is not thread-safe;
/// `fftwf_execute_*` on distinct buffers is. Plans are therefore made and destroyed
/// under this one lock, and executed without it.
enum FFTWPlanner {
    // A pthread mutex, which ThreadSanitizer sees (Synchronization's Mutex hands a contended
    // lock over through a priority-inheriting futex that it does not).
    private static let lock = PosixLock()

    static func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}
