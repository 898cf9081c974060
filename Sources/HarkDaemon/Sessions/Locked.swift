import FoundationEssentials
import Glibc
import HarkSystem

/// A value behind a lock, for state whose parts (class instances) move in and out of the
/// critical section: `Mutex`'s `sending` rules forbid that. Sendable when its value is: every
/// access goes through ``withLock(_:)``.
final class Locked<Value> {
    private var value: Value
    private let lock = PosixLock()

    init(_ value: Value) {
        self.value = value
    }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

extension Locked: @unchecked Sendable where Value: Sendable {}
