import CALSA
import FoundationEssentials
import Glibc
import HarkSystem
import Synchronization

/// Captures audio from an ALSA device on a dedicated thread into a bounded ring, whatever
/// the consumer is doing.
///
/// - The capture thread never waits on the consumer: samples that do not fit in the ring are
///   dropped and counted (``Counters/droppedFrames``), and the consumer is told where
///   (a ``CaptureGap`` returned by ``read(into:timeout:)``), never lost silently.
/// - Overruns (`-EPIPE`) are recovered with `snd_pcm_recover` and counted; a suspended device
///   (`-ESTRPIPE`) is resumed, or re-prepared if it cannot be.
/// - A device that fails to open, or disappears (`-ENODEV` and kin), is closed and opened
///   again with backoff (0.25 s doubling to 5 s) while ``state`` says `.deviceLost`; capture
///   resumes when it comes back, with a gap flagged to the consumer.
///
/// Sendable by hand: the state and counters other threads read sit behind `lock`, the
/// thread's own bookkeeping behind `finished`, and the PCM handle belongs to the capture
/// thread alone.
public final class CaptureSource: @unchecked Sendable {
    public enum State: Sendable, Equatable {
        case idle
        case opening
        case capturing(NegotiatedFormat)
        case deviceLost(String)

        public var name: String {
            switch self {
            case .idle: return "idle"
            case .opening: return "opening"
            case .capturing: return "capturing"
            case .deviceLost: return "device-lost"
            }
        }
    }

    public struct Counters: Sendable, Equatable {
        public var overruns = 0
        public var suspends = 0
        public var droppedFrames = 0
        public var capturedFrames = 0
        public var reopenings = 0
        /// Streams that delivered audio markedly faster than the wall clock (see
        /// ``fastDeliveryRatio``): a dead FIFO writer behind ALSA's file plugin, for instance.
        public var fasterThanRealTime = 0

        public init() {}
    }

    public typealias Opener = @Sendable (CaptureSettings) throws -> PCMStream

    public let settings: CaptureSettings
    private let opener: Opener
    private let log: @Sendable (String) -> Void
    private let ring: SampleRing
    private let lock = PosixLock()
    private var shared: (state: State, counters: Counters, running: Bool) = (.idle, Counters(), false)

    private func withShared<R>(_ body: (inout (state: State, counters: Counters, running: Bool)) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&shared)
    }
    private let finished = ConditionLock()
    private var threadDone = true
    /// Channel count of what is in the ring (the negotiated one, once open).
    private let channelCount = Atomic<Int>(0)

    public static let backoffStart = 0.25
    public static let backoffLimit = 5.0

    /// - Parameters:
    ///   - ringSeconds: how much audio the ring holds before dropping (at the requested rate).
    ///   - opener: makes the PCM; tests wrap ``PCMDevice`` here to inject errors.
    public init(settings: CaptureSettings, ringSeconds: Double = 2, opener: Opener? = nil,
                log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.settings = settings
        self.opener = opener ?? { try PCMDevice(settings: $0) }
        self.log = log
        ring = SampleRing(capacity: Int(ringSeconds * Double(settings.rate)) * max(settings.channels, 1))
    }

    public var state: State { withShared { $0.state } }
    public var counters: Counters {
        var c = withShared { $0.counters }
        c.droppedFrames = ring.dropped / max(channelCount.load(ordering: .relaxed), 1)
        return c
    }
    /// Channels of the samples ``read(into:timeout:)`` returns (0 before the device opens).
    public var channels: Int { channelCount.load(ordering: .relaxed) }

    /// Starts the capture thread (opening the device on it). Does nothing if already running.
    public func start() {
        let already = withShared { s -> Bool in
            if s.running { return true }
            s.running = true
            s.state = .opening
            return false
        }
        if already { return }
        ring.clear()     // nothing from an earlier run may pass for this one's audio
        finished.lock()
        threadDone = false
        finished.unlock()
        do {
            try DetachedThread.start(name: "hark-capture") { [weak self] in self?.run() }
        } catch {
            log("\(error)")
            withShared { $0 = (.idle, $0.counters, false) }
            finished.lock()
            threadDone = true
            finished.unlock()
        }
    }

    /// Stops capturing and closes the device; waits up to `timeout` seconds for the thread.
    /// What the ring still holds can be read until the next ``start()``.
    /// Returns false if the thread is still blocked inside ALSA (e.g. opening a FIFO no one
    /// writes), in which case it exits on its own later.
    @discardableResult
    public func stop(timeout: Double = 2) -> Bool {
        withShared { $0.running = false }
        ring.wake()
        finished.lock()
        defer { finished.unlock() }
        let deadline = Date(timeIntervalSinceNow: timeout)
        while !threadDone {
            if !finished.wait(until: deadline) { return false }
        }
        return true
    }

    /// Takes up to `out.count` samples (whole frames, interleaved), waiting up to `timeout`
    /// seconds for `minimumFrames` (or as many as `out` holds) or a gap; after the timeout,
    /// whatever frames are there. Returns the frames taken, the channels they have, and the
    /// gap, if any, just before them (the frames may be none when only a gap is to report).
    public func read(into out: UnsafeMutableBufferPointer<Float>, minimumFrames: Int = 1,
                     timeout: Double) -> (frames: Int, channels: Int, gap: CaptureGap?) {
        let c = max(channelCount.load(ordering: .relaxed), 1)
        let (n, gap) = ring.read(into: out, granule: c, minimum: minimumFrames * c, timeout: timeout)
        return (n / c, c, gap)
    }

    private var isRunning: Bool { withShared { $0.running } }

    private func setState(_ s: State) { withShared { $0.state = s } }

    private func count(_ body: (inout Counters) -> Void) { withShared { body(&$0.counters) } }

    // MARK: - the capture thread

    private func run() {
        defer {
            setState(.idle)
            finished.lock()
            threadDone = true
            finished.broadcast()
            finished.unlock()
        }
        var backoff = Self.backoffStart
        var opened = false
        while isRunning {
            let pcm: PCMStream
            do {
                pcm = try opener(settings)
            } catch {
                let reason = (error as? ALSAError)?.description ?? "\(error)"
                setState(.deviceLost(reason))
                log("\(reason); retrying in \(String(cFormat: "%.2f", backoff)) s")
                sleepWhileRunning(backoff)
                backoff = min(backoff * 2, Self.backoffLimit)
                continue
            }
            let format = pcm.negotiated
            if format.rate != settings.rate {
                log("device '\(settings.device)' captures at \(format.rate) Hz (asked for \(settings.rate) Hz)")
            }
            channelCount.store(format.channels, ordering: .relaxed)
            if opened {
                count { $0.reopenings += 1 }
                ring.mark(.reopened)
            }
            opened = true
            setState(.capturing(format))
            log("capturing from '\(settings.device)': \(format.rate) Hz, \(format.channels) channel(s), \(format.format.rawValue), period \(format.periodFrames) frames")
            let lost = captureLoop(pcm, format)
            pcm.close()
            if let reason = lost {
                setState(.deviceLost(reason))
                log("\(reason); reopening")
                backoff = Self.backoffStart
                sleepWhileRunning(backoff)
            }
        }
    }

    /// Audio seconds per wall-clock second past which a stream is reported as running faster
    /// than real time (after its first 2 s of audio; a real device stays within a fraction of a
    /// per cent, a burst after a stall within a period or two).
    public static let fastDeliveryRatio = 1.5

    /// Reads until stopped (returns nil) or the device is lost (returns why).
    private func captureLoop(_ pcm: PCMStream, _ format: NegotiatedFormat) -> String? {
        let started = Date()
        var delivered = 0
        var reportedFast = false
        let frames = format.periodFrames
        let bytes = frames * format.channels * format.format.bytesPerSample
        let raw = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 16)
        defer { raw.deallocate() }
        var floats = [Float](repeating: 0, count: frames * format.channels)
        while isRunning {
            let got = pcm.readInterleaved(into: raw, frames: frames)
            if got > 0 {
                let n = got * format.channels
                floats.withUnsafeMutableBufferPointer { out in SampleEncoding.decode(raw, format.format, count: n, into: out) }
                _ = floats.withUnsafeBufferPointer { ring.write(UnsafeBufferPointer(rebasing: $0[0..<n]), granule: format.channels) }
                count { $0.capturedFrames += got }
                delivered += got
                // Checked once per second of audio, from the second one on: a clock reading per
                // period would be waste on the capture thread.
                if !reportedFast && delivered >= 2 * format.rate && delivered % format.rate < got {
                    let audio = Double(delivered) / Double(format.rate), wall = Date().timeIntervalSince(started)
                    if audio > Self.fastDeliveryRatio * wall + 0.5 {
                        reportedFast = true
                        count { $0.fasterThanRealTime += 1 }
                        log(String(cFormat: "device '%@' delivered %.1f s of audio in %.2f s, faster than real time (a FIFO with no writer, or a file behind ALSA's file plugin?); sessions are timed in audio and will end early by the clock",
                                   settings.device, audio, wall))
                    }
                }
                continue
            }
            let code = Int32(got == 0 ? -Int(EAGAIN) : got)
            switch code {
            case -EAGAIN:
                continue
            case -EPIPE:
                count { $0.overruns += 1 }
                ring.mark(.overrun)
                let rc = pcm.recover(code)
                if rc < 0 { return ALSAError.read(code: rc, message: ALSAError.message(rc)).description }
            case -ESTRPIPE:
                count { $0.suspends += 1 }
                var rc = pcm.resume()
                while rc == -EAGAIN && isRunning {
                    DetachedThread.sleep(seconds: 0.1)
                    rc = pcm.resume()
                }
                if rc < 0 { rc = pcm.prepare() }
                if rc < 0 { return ALSAError.read(code: rc, message: ALSAError.message(rc)).description }
            default:
                if ALSAError.isLoss(code) { return ALSAError.deviceLost(code: code, message: ALSAError.message(code)).description }
                let rc = pcm.recover(code)
                if rc < 0 { return ALSAError.read(code: code, message: ALSAError.message(code)).description }
            }
        }
        return nil
    }

    private func sleepWhileRunning(_ seconds: Double) {
        let end = Date(timeIntervalSinceNow: seconds)
        while isRunning && Date() < end { DetachedThread.sleep(seconds: 0.05) }
    }
}
