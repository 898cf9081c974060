import Foundation

/// A value behind a lock, for state whose parts (class instances) move in and out of the
/// critical section: `Mutex`'s `sending` rules forbid that, and the owner here guarantees
/// every access goes through ``withLock(_:)``.
final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()

    init(_ value: Value) {
        self.value = value
    }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
