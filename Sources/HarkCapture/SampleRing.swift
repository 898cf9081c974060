import FoundationEssentials
import Glibc
import HarkSystem

/// A bounded single-producer, single-consumer queue of interleaved `Float` samples.
///
/// The producer (the capture thread) never waits: what does not fit is dropped and counted,
/// and a ``CaptureGap`` is recorded at that point of the stream, so the consumer learns
/// exactly where audio is missing. The consumer waits, with a timeout, for samples to arrive.
/// Sendable by hand: its buffer and counters are reached only under its condition lock.
final class SampleRing: @unchecked Sendable {
    private struct Mark {
        var position: Int         // samples accepted before the gap
        var gap: CaptureGap
    }

    private var storage: [Float]
    private var head = 0          // next read
    private var count = 0
    private var accepted = 0      // samples ever written
    private var taken = 0         // samples ever read
    private var marks: [Mark] = []
    private let condition = ConditionLock()
    private var droppedSamples = 0
    /// Samples the waiting reader asked for: a write wakes it only once they are there.
    private var wakeAt = 1

    /// Samples (not frames) dropped so far. Read under the ring's lock: the capture thread
    /// writes it while status readers ask (ThreadSanitizer caught the unguarded read).
    var dropped: Int {
        condition.lock()
        defer { condition.unlock() }
        return droppedSamples
    }

    init(capacity: Int) {
        storage = [Float](repeating: 0, count: max(capacity, 1))
    }

    var capacity: Int { storage.count }

    /// Appends as much of `samples` as fits; returns how many were dropped. `granule` is the
    /// number of samples per frame, so that gaps are reported in frames.
    @discardableResult
    func write(_ samples: UnsafeBufferPointer<Float>, granule: Int = 1) -> Int {
        condition.lock()
        defer { condition.unlock() }
        let space = ((storage.count - count) / granule) * granule
        let n = min(space, samples.count)
        let tail = (head + count) % storage.count
        // At most two runs: to the end of the storage, then from its start.
        let first = min(n, storage.count - tail)
        storage.withUnsafeMutableBufferPointer { st in
            guard let base = st.baseAddress, let src = samples.baseAddress, n > 0 else { return }
            (base + tail).update(from: src, count: first)
            base.update(from: src + first, count: n - first)
        }
        count += n
        accepted += n
        let lost = samples.count - n
        if lost > 0 {
            droppedSamples += lost
            let frames = lost / max(granule, 1)
            // Drops with nothing accepted in between are one gap.
            if let last = marks.last, last.position == accepted, case .dropped(let before) = last.gap {
                marks[marks.count - 1].gap = .dropped(frames: before + frames)
            } else {
                marks.append(Mark(position: accepted, gap: .dropped(frames: frames)))
            }
        }
        // A reader waits for a batch (``read(into:granule:minimum:timeout:)``): waking it for
        // less would only put it back to sleep.
        if (n > 0 && count >= wakeAt) || lost > 0 { condition.signal() }
        return lost
    }

    /// Records a break at the current end of the stream.
    func mark(_ gap: CaptureGap) {
        condition.lock()
        marks.append(Mark(position: accepted, gap: gap))
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
    /// `timeout` seconds until `minimum` of them (at least a granule, at most what `out`
    /// holds) have arrived or a gap is to report; after the timeout, whatever whole granules
    /// are there. Never reads across a gap: returns the samples after a gap together with that
    /// gap (and, if several gaps meet at one point, the first; the others follow with no
    /// samples).
    func read(into out: UnsafeMutableBufferPointer<Float>, granule: Int, minimum: Int = 0, timeout: Double) -> (count: Int, gap: CaptureGap?) {
        condition.lock()
        defer { condition.unlock() }
        let wanted = max(granule, min(minimum, out.count / granule * granule))
        if count < wanted && marks.first?.position != taken {
            wakeAt = wanted
            _ = condition.wait(until: Date(timeIntervalSinceNow: timeout))
            wakeAt = 1
        }
        var gap: CaptureGap?
        if let first = marks.first, first.position == taken {
            gap = first.gap
            marks.removeFirst()
        }
        var limit = min(count, out.count)
        if let next = marks.first { limit = min(limit, next.position - taken) }
        let n = (limit / granule) * granule
        let first = min(n, storage.count - head)
        storage.withUnsafeBufferPointer { st in
            guard let base = st.baseAddress, let dst = out.baseAddress, n > 0 else { return }
            dst.update(from: base + head, count: first)
            (dst + first).update(from: base, count: n - first)
        }
        head = (head + n) % storage.count
        count -= n
        taken += n
        return (n, gap)
    }

    func clear() {
        condition.lock()
        head = 0
        taken += count
        count = 0
        marks.removeAll()
        condition.unlock()
    }
}
