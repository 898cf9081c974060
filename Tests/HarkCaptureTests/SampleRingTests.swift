import Foundation
import HarkSystem
import Synchronization
import Testing
@testable import HarkCapture

/// The ring between the capture thread and analysis, on its own: order across the wrap-around,
/// drops when full, and gaps reported exactly where they happened.
@Suite struct SampleRingTests {
    private func write(_ ring: SampleRing, _ values: [Float], granule: Int = 1) -> Int {
        values.withUnsafeBufferPointer { ring.write($0, granule: granule) }
    }

    private func read(_ ring: SampleRing, max: Int, granule: Int = 1) -> ([Float], CaptureGap?) {
        var out = [Float](repeating: .nan, count: max)
        let (n, gap) = out.withUnsafeMutableBufferPointer { ring.read(into: $0, granule: granule, timeout: 0) }
        return (Array(out.prefix(n)), gap)
    }

    @Test func keepsOrderAcrossTheWrapAround() {
        let ring = SampleRing(capacity: 10)
        var next: Float = 0
        var expected: [Float] = []
        var got: [Float] = []
        // Writes of 7 and reads of 6 move the ends through every offset of the storage.
        for _ in 0..<20 {
            let block = (0..<7).map { _ in next += 1; return next }
            #expect(write(ring, block) == max(0, 7 - (10 - (expected.count - got.count))))
            expected += block.prefix(10 - (expected.count - got.count))
            got += read(ring, max: 6).0
            got += read(ring, max: 6).0
        }
        #expect(got == expected)
    }

    @Test func aFullRingDropsWholeFramesAndMarksOneGap() {
        let ring = SampleRing(capacity: 9)                     // room for 4 stereo frames
        #expect(write(ring, [1, 2, 3, 4, 5, 6], granule: 2) == 0)
        #expect(write(ring, [7, 8, 9, 10], granule: 2) == 2)    // one frame fits, one is dropped
        #expect(write(ring, [11, 12], granule: 2) == 2)         // another, in the same gap
        #expect(ring.dropped == 4)
        let (before, gap0) = read(ring, max: 20, granule: 2)
        #expect(before == [1, 2, 3, 4, 5, 6, 7, 8] && gap0 == nil)
        #expect(write(ring, [13, 14], granule: 2) == 0)
        let (after, gap1) = read(ring, max: 20, granule: 2)
        #expect(after == [13, 14] && gap1 == .dropped(frames: 2))
    }

    @Test func aReadStopsAtAMarkAndTheNextOneReportsIt() {
        let ring = SampleRing(capacity: 16)
        _ = write(ring, [1, 2, 3])
        ring.mark(.overrun)
        _ = write(ring, [4, 5])
        let (first, gap0) = read(ring, max: 16)
        #expect(first == [1, 2, 3] && gap0 == nil)
        let (second, gap1) = read(ring, max: 16)
        #expect(second == [4, 5] && gap1 == .overrun)
    }

    /// A reader that asks for a batch is handed the batch, not the first write: the analysis
    /// thread wakes once per batch instead of once per capture period.
    @Test func aReaderWaitingForABatchGetsTheBatchOrWhatATimeoutLeaves() throws {
        let ring = SampleRing(capacity: 100)
        let got = Mutex<(count: Int, gap: CaptureGap?)?>(nil)
        try DetachedThread.start(name: "ring-reader") {
            var out = [Float](repeating: 0, count: 100)
            let r = out.withUnsafeMutableBufferPointer { ring.read(into: $0, granule: 1, minimum: 30, timeout: 30) }
            got.withLock { $0 = r }
        }
        // Three writes of 10, a while apart so that a reader woken by each would take it.
        for k in 0..<3 {
            Thread.sleep(forTimeInterval: 0.02)
            #expect(got.withLock { $0 } == nil, "woken after \(k) writes of 10")
            _ = write(ring, [Float](repeating: 1, count: 10))
        }
        let deadline = Date(timeIntervalSinceNow: 20)
        while got.withLock({ $0 }) == nil && Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
        #expect(got.withLock { $0?.count } == 30)

        // Short of the batch when the time is up: what is there.
        _ = write(ring, [Float](repeating: 2, count: 10))
        var out = [Float](repeating: 0, count: 100)
        #expect(out.withUnsafeMutableBufferPointer { ring.read(into: $0, granule: 1, minimum: 30, timeout: 0.01) }.count == 10)
        // A batch larger than the reader's buffer is what the buffer holds.
        _ = write(ring, [Float](repeating: 3, count: 40))
        var small = [Float](repeating: 0, count: 20)
        #expect(small.withUnsafeMutableBufferPointer { ring.read(into: $0, granule: 1, minimum: 30, timeout: 30) }.count == 20)
    }

    /// A gap wakes a reader waiting for a batch: it is news now, not when the batch is full.
    @Test func aGapWakesAReaderWaitingForABatch() throws {
        let ring = SampleRing(capacity: 100)
        let got = Mutex<[Float]?>(nil)
        try DetachedThread.start(name: "ring-reader") {
            var out = [Float](repeating: 0, count: 100)
            let r = out.withUnsafeMutableBufferPointer { ring.read(into: $0, granule: 1, minimum: 50, timeout: 30) }
            got.withLock { $0 = Array(out.prefix(r.count)) }
        }
        _ = write(ring, [1, 2, 3])
        Thread.sleep(forTimeInterval: 0.02)
        ring.mark(.overrun)
        let deadline = Date(timeIntervalSinceNow: 20)
        while got.withLock({ $0 }) == nil && Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
        #expect(got.withLock { $0 } == [1, 2, 3])
        let (after, gap) = read(ring, max: 16)
        #expect(after.isEmpty && gap == .overrun)
    }
}
