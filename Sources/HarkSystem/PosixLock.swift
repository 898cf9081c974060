import Glibc

/// A pthread mutex.
///
/// Hark's targets use FoundationEssentials, not Foundation: the full module brings
/// CoreFoundation and ICU (33 MB of locale data, megabytes of it resident in harkd) for a lock,
/// a thread and a subprocess. And not Synchronization's `Mutex` either: on Linux that one hands
/// a contended lock over through a priority-inheriting futex, which ThreadSanitizer cannot
/// see, so it reported races between accesses that were both under the lock.
public final class PosixLock: @unchecked Sendable {
    // Heap-allocated: a pthread mutex must not move once initialised.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }
    /// Takes the lock if no one holds it; true when it did.
    public func tryLock() -> Bool { pthread_mutex_trylock(mutex) == 0 }

    public func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}
