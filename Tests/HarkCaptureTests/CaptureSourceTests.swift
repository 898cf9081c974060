import CALSA
import Foundation
import Synchronization
import Testing
@testable import HarkCapture
import HarkCaptureTesting

@Suite struct CaptureSourceTests {
    @Test func capturesTheFileSampleForSample() throws {
        let samples = ramp(48_000)
        let path = writeRaw(samples)
        defer { unlink(path) }
        let source = CaptureSource(settings: settings(raw: path))
        source.start()
        let got = collect(source, frames: 48_000)
        source.stop()
        #expect(got.count == 48_000)
        #expect(zip(got, samples).allSatisfy { $0 == Float($1) / 32_768 })
        #expect(source.counters.overruns == 0)
        #expect(source.state == .idle)
    }

    @Test func negotiatesThroughHardwareParameters() throws {
        let path = writeRaw(ramp(4_800))
        defer { unlink(path) }
        var s = settings(raw: path, period: 1023)
        s.rate = 44_100
        let pcm = try PCMDevice(settings: s)
        defer { pcm.close() }
        #expect(pcm.negotiated.rate == 44_100)          // plug resamples to what is asked
        #expect(abs(pcm.negotiated.periodFrames - 1023) <= 1)
        #expect(pcm.negotiated.bufferFrames >= 2 * pcm.negotiated.periodFrames)
    }

    /// S32 and FLOAT through ALSA's own conversion. The `file` plugin corrupts everything after
    /// its first period when `plug` converts the format (arecord shows the same), so only the
    /// first period is compared: that is enough to check Hark's conversion of each format.
    @Test(arguments: [SampleFormat.s32, .float])
    func otherFormatsConvertToTheSameValues(format: SampleFormat) throws {
        let samples = ramp(9_600)
        let path = writeRaw(samples)
        defer { unlink(path) }
        let source = CaptureSource(settings: settings(raw: path, format: format))
        source.start()
        let got = collect(source, frames: 480)
        source.stop()
        #expect(got.count == 480)
        #expect(zip(got, samples).allSatisfy { abs($0 - Float($1) / 32_768) < 1e-6 })
    }

    @Test func stereo() throws {
        let samples = ramp(2 * 4_800)
        let path = writeRaw(samples)
        defer { unlink(path) }
        let source = CaptureSource(settings: settings(raw: path, channels: 2))
        source.start()
        let got = collect(source, frames: 4_800)
        source.stop()
        #expect(got.count == 9_600)
        #expect(zip(got, samples).allSatisfy { $0 == Float($1) / 32_768 })
    }

    @Test func aDeviceThatCannotBeOpenedIsRetried() throws {
        var s = CaptureSettings()
        s.configuration = "pcm.present { type null }"
        s.device = "absent"
        let messages = Mutex<[String]>([])
        let source = CaptureSource(settings: s, log: { m in messages.withLock { $0.append(m) } })
        source.start()
        // The first attempt and at least one retry (0.25 s later), polled.
        let deadline = Date(timeIntervalSinceNow: 10)
        while messages.withLock({ $0.count }) < 2 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        guard case .deviceLost(let reason) = source.state else {
            Issue.record("state \(source.state)")
            source.stop()
            return
        }
        #expect(reason.contains("cannot open capture device 'absent'"))
        #expect(messages.withLock { $0.count } >= 2)
        #expect(messages.withLock { $0.first?.contains("retrying in 0.25 s") } == true)
        #expect(source.stop())
    }

    @Test func anInjectedOverrunIsRecoveredAndCounted() throws {
        let samples = ramp(48_000)
        let path = writeRaw(samples)
        defer { unlink(path) }
        let faulty = Mutex<FaultyPCM?>(nil)
        let source = CaptureSource(settings: settings(raw: path), opener: { s in
            let f = FaultyPCM(try PCMDevice(settings: s), faults: [3: -EPIPE])
            faulty.withLock { $0 = f }
            return f
        })
        source.start()
        var gaps: [(Int, CaptureGap)] = []
        let got = collect(source, frames: 48_000, gaps: &gaps)
        source.stop()
        #expect(source.counters.overruns == 1)
        // The consumer hears of the overrun where it happened: after the two good reads.
        let period = source.settings.periodFrames
        #expect(gaps.count == 1 && gaps.first?.1 == .overrun && gaps.first?.0 == 2 * period, "\(gaps)")
        #expect(faulty.withLock { $0?.recoveries } == [-EPIPE])
        // Reading went on after recovery: every sample arrived, in order.
        #expect(got.count == 48_000)
        #expect(zip(got, samples).allSatisfy { $0 == Float($1) / 32_768 })
    }

    @Test func aSuspendedDeviceIsPreparedAgain() throws {
        let path = writeRaw(ramp(24_000))
        defer { unlink(path) }
        let source = CaptureSource(settings: settings(raw: path), opener: { s in
            FaultyPCM(try PCMDevice(settings: s), faults: [2: -ESTRPIPE])
        })
        source.start()
        #expect(collect(source, frames: 24_000).count == 24_000)
        source.stop()
        #expect(source.counters.suspends == 1 && source.counters.overruns == 0)
    }

    @Test func aLostDeviceIsReopenedAndTheBreakFlagged() throws {
        let path = writeRaw(ramp(96_000))
        defer { unlink(path) }
        let opens = Atomic<Int>(0)
        let source = CaptureSource(settings: settings(raw: path), opener: { s in
            let n = opens.add(1, ordering: .relaxed).newValue
            return FaultyPCM(try PCMDevice(settings: s), faults: n == 1 ? [4: -ENODEV] : [:])
        })
        source.start()
        var buffer = [Float](repeating: 0, count: 4096)
        var sawBreak = false
        let deadline = Date(timeIntervalSinceNow: 5)
        while !sawBreak && Date() < deadline {
            let (_, _, gap) = buffer.withUnsafeMutableBufferPointer { source.read(into: $0, timeout: 0.1) }
            sawBreak = gap == .reopened
        }
        #expect(sawBreak)
        #expect(source.counters.reopenings == 1)
        // The break is marked as the device reopens, just before the state says so: poll.
        var capturing = false
        while !capturing && Date() < deadline.addingTimeInterval(5) {
            if case .capturing = source.state { capturing = true } else { Thread.sleep(forTimeInterval: 0.005) }
        }
        if !capturing { Issue.record("not capturing again: \(source.state)") }
        source.stop()
    }

    @Test func aSourceFasterThanRealTimeIsNoticed() throws {
        // A regular file behind the file plugin delivers seconds of audio in milliseconds, as
        // a FIFO whose writer died does: it is counted and logged once.
        let path = writeRaw(ramp(4 * 48_000))
        defer { unlink(path) }
        let messages = Mutex<[String]>([])
        let source = CaptureSource(settings: settings(raw: path), ringSeconds: 8, log: { m in messages.withLock { $0.append(m) } })
        source.start()
        let deadline = Date(timeIntervalSinceNow: 10)
        while source.counters.fasterThanRealTime == 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
        source.stop()
        #expect(source.counters.fasterThanRealTime == 1)
        #expect(messages.withLock { $0.filter { $0.contains("faster than real time") }.count } == 1)
    }

    @Test func aConsumerThatFallsBehindCostsCountedDrops() throws {
        let path = writeRaw(ramp(96_000))
        defer { unlink(path) }
        // A ring of 0.1 s, never read: the file plugin delivers far faster than real time.
        let source = CaptureSource(settings: settings(raw: path), ringSeconds: 0.1)
        source.start()
        // Until the ring (4 800 frames) has overflowed by at least as much again.
        let deadline = Date(timeIntervalSinceNow: 10)
        while source.counters.capturedFrames < 9_600 && Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
        source.stop()
        let c = source.counters
        #expect(c.capturedFrames > 4_800)
        #expect(c.droppedFrames == c.capturedFrames - 4_800)
        // Reading now gives the 0.1 s that fitted, then the gap with the count of what was lost.
        var buffer = [Float](repeating: 0, count: 48_000)
        let first = buffer.withUnsafeMutableBufferPointer { source.read(into: $0, timeout: 0.1) }
        #expect(first.frames == 4_800 && first.gap == nil)
        let second = buffer.withUnsafeMutableBufferPointer { source.read(into: $0, timeout: 0.1) }
        if case .dropped(let n) = second.gap { #expect(n == c.droppedFrames) } else { Issue.record("no gap: \(second)") }
    }

    @Test func alsaMessagesReachTheLog() throws {
        let messages = Mutex<[String]>([])
        ALSALog.route { m in messages.withLock { $0.append(m) } }
        defer { ALSALog.reset() }
        var s = CaptureSettings()
        s.configuration = "pcm.broken { type file slave { pcm { type null } } file \"/dev/null\" infile \"/nonexistent/dir/x.raw\" format \"raw\" }"
        s.device = "broken"
        #expect(throws: ALSAError.self) { try PCMDevice(settings: s) }
        #expect(messages.withLock { $0.contains { $0.hasPrefix("ALSA ") } })
    }

    @Test func aConfigurationThatDoesNotParseIsReported() {
        var s = CaptureSettings()
        s.configuration = "pcm.x { type "
        #expect { try PCMDevice(settings: s) } throws: { error in
            if case .configuration = error as? ALSAError { return true }
            return false
        }
    }
}
