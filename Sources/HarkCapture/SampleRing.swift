import Foundation

/// A bounded single-producer, single-consumer queue of interleaved `Float` samples.
///
/// The producer (the capture thread) never waits: what does not fit is dropped and counted.
/// The consumer waits, with a timeout, for samples to arrive.
final class SampleRing: @unchecked Sendable {
    private var storage: [Float]
    private var head = 0          // next read
    private var count = 0
    private let condition = NSCondition()
    private(set) var dropped = 0  // samples, not frames
    /// Set by the producer on a break in the stream (the device was reopened).
    private var discontinuity = false

    init(capacity: Int) {
        storage = [Float](repeating: 0, count: max(capacity, 1))
    }

    var capacity: Int { storage.count }

    /// Appends as much of `samples` as fits; returns how many were dropped.
    @discardableResult
    func write(_ samples: UnsafeBufferPointer<Float>) -> Int {
        condition.lock()
        defer { condition.unlock() }
        let space = storage.count - count
        let n = min(space, samples.count)
        var tail = (head + count) % storage.count
        for i in 0..<n {
            storage[tail] = samples[i]
            tail += 1
            if tail == storage.count { tail = 0 }
        }
        count += n
        let lost = samples.count - n
        dropped += lost
        if n > 0 { condition.signal() }
        return lost
    }

    func markDiscontinuity() {
        condition.lock()
        discontinuity = true
        condition.signal()
        condition.unlock()
    }

    /// Wakes a waiting consumer (for shutdown).
    func wake() {
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    /// Moves up to `out.count` samples (a multiple of `granule`) into `out`, waiting up to
    /// `timeout` seconds for some to arrive. Returns the count and whether the stream broke
    /// since the last read.
    func read(into out: UnsafeMutableBufferPointer<Float>, granule: Int, timeout: Double) -> (count: Int, discontinuity: Bool) {
        condition.lock()
        defer { condition.unlock() }
        if count < granule && !discontinuity {
            _ = condition.wait(until: Date(timeIntervalSinceNow: timeout))
        }
        let broke = discontinuity
        discontinuity = false
        let n = (min(count, out.count) / granule) * granule
        for i in 0..<n {
            out[i] = storage[head]
            head += 1
            if head == storage.count { head = 0 }
        }
        count -= n
        return (n, broke)
    }

    func clear() {
        condition.lock()
        head = 0
        count = 0
        condition.unlock()
    }
}
