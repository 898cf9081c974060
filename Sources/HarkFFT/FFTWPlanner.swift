import CFFTW
import Synchronization

/// Serialises every call into FFTW's planner.
///
/// FFTW's planner keeps global state (wisdom, twiddle tables) and is not thread-safe;
/// `fftwf_execute_*` on distinct buffers is. Plans are therefore made and destroyed
/// under this one lock, and executed without it.
enum FFTWPlanner {
    private static let lock = Mutex(())

    static func withLock<T>(_ body: () throws -> T) rethrows -> T {
        try lock.withLock { _ in try body() }
    }
}
