import FoundationEssentials
import Glibc

/// A pthread mutex with a condition variable: wait for state another thread changes.
/// Deadlines run on the monotonic clock, so a wall-clock step neither cuts a wait short nor
/// stretches it.
public final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }
    /// Wakes one waiter. Call with the lock held.
    public func signal() { pthread_cond_signal(condition) }
    /// Wakes every waiter. Call with the lock held.
    public func broadcast() { pthread_cond_broadcast(condition) }

    /// Waits (lock held) until signalled or until `deadline`; false when the deadline passed.
    /// Like every condition wait it may return early: check the state in a loop.
    public func wait(until deadline: Date) -> Bool {
        let remaining = deadline.timeIntervalSinceNow
        if remaining <= 0 { return false }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let whole = remaining.rounded(.down)
        var end = timespec(tv_sec: now.tv_sec + Int(whole),
                           tv_nsec: now.tv_nsec + Int((remaining - whole) * 1e9))
        if end.tv_nsec >= 1_000_000_000 { end.tv_sec += 1; end.tv_nsec -= 1_000_000_000 }
        return pthread_cond_timedwait(condition, mutex, &end) != ETIMEDOUT
    }
}
