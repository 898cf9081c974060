import Dispatch
import FoundationEssentials
import Glibc
import HarkSystem
import HarkCapture
import HarkDSP
import HarkEngine
import Logging

/// The analysis thread: takes captured audio from the ring and hands it to the
/// ``PipelineDriver`` that files take too (mixed to mono, the watermark search, the continuous
/// meter), and the mono audio to the noise sessions. It owns harkd's ``SessionTable``: at every
/// turn it applies what the ``Hub`` queued, feeds the table audio, detections, levels and
/// reports, and hands back what the table answers. It ticks the table even when no audio
/// comes, so sessions always end.
///
/// Time is the stream's: seconds of audio analysed since harkd started, counted in samples by
/// the driver's pipeline (``PipelineDriver/time``). A change of format starts a new pipeline at
/// the stream time the old one reached, so every detection, level and report arrives on the one
/// clock, and only the session table's stamps turn it into UTC.
final class AnalysisLoop: Sendable {
    struct Settings: Equatable {
        /// What the pipeline measures and listens for; its rate and start are the capture's.
        var analysis: AnalysisPipeline.Settings
        /// The capture device, as reports name it.
        var device: String
    }

    private let controller: CaptureController
    private let hub: Hub
    private let logger: Logger
    private let settings: Locked<Settings>
    private let running = Locked(false)
    private let done = DispatchSemaphore(value: 0)
    /// Wall-clock time of the loop's last iteration (for the systemd watchdog).
    let heartbeat = Locked(Date())
    /// Called when the capture state changes, after the status watchers were told (the log and
    /// systemd).
    private let onStateChange: @Sendable (String) -> Void
    /// Called once, from the analysis thread, when the audio cannot be analysed at all (the
    /// watermark detector or the band analyser cannot be built for the captured rate); the
    /// loop stops. harkd shuts down with the message rather than run without its analysers.
    private let onFatal: @Sendable (String) -> Void

    init(controller: CaptureController, hub: Hub, settings: Settings, logger: Logger,
         onStateChange: @escaping @Sendable (String) -> Void = { _ in }, onFatal: @escaping @Sendable (String) -> Void = { _ in }) {
        self.controller = controller
        self.hub = hub
        self.settings = Locked(settings)
        self.logger = logger
        self.onStateChange = onStateChange
        self.onFatal = onFatal
    }

    func update(_ new: Settings) {
        settings.withLock { $0 = new }
    }

    func start() throws {
        running.withLock { $0 = true }
        do {
            try DetachedThread.start(name: "hark-analysis") { [weak self] in self?.run() }
        } catch {
            running.withLock { $0 = false }
            throw error
        }
    }

    func stop() {
        guard running.withLock({ r -> Bool in let was = r; r = false; return was }) else { return }
        done.wait()
    }

    /// Captured audio is analysed in batches of this much at least, whatever the capture
    /// period: every batch wakes this thread and passes every stage of the pipeline once, so
    /// fewer wake-ups cost less of a core (docs/daemon.md has the runs). A detection, a level
    /// line or a shake's answer leaves up to this much later, and no figure changes, because
    /// the pipeline cuts the stream at interval boundaries itself. 60 ms is the sound
    /// matcher's review interval.
    static let batchSeconds = 0.06

    private func run() {
        var table = SessionTable(logger: logger, captureState: { [controller] in
            let s = controller.snapshot
            return (s.state, s.detail)
        })
        defer {
            // What came while it stopped, then every session still in flight: nothing else
            // will answer them.
            var out = table.apply(hub.take())
            out += table.shutdown(message: "harkd is shutting down")
            hub.deliver(out, table: table)
            done.signal()
        }
        var buffer = [Float](repeating: 0, count: 8192)
        var current = settings.withLock { $0 }
        // Its pipeline is built when audio comes, for the format it comes in.
        let driver = PipelineDriver(settings: current.analysis)
        /// Audio missing from the interval being measured, told in its report.
        var gaps = GapTally()
        var lastState = ""
        while running.withLock({ $0 }) {
            heartbeat.withLock { $0 = Date() }
            hub.deliver(table.apply(hub.take()), table: table)
            hub.deliver(table.tick(streamTime: driver.time), table: table)
            let snapshot = controller.snapshot
            let stateName = snapshot.state
            if stateName != lastState {
                lastState = stateName
                let watchers = table.watchers(of: .status)
                if !watchers.isEmpty {
                    let line = hub.statusMessage()
                    for c in watchers { hub.clients.send(line, to: c) }
                }
                onStateChange(stateName)
            }
            let latest = settings.withLock { $0 }
            if latest != current {
                current = latest
                driver.reconfigure(current.analysis)      // new key, calibration or intervals: start afresh
            }
            guard let source = controller.current, case .capturing(let format) = source.state else {
                driver.pause()
                DetachedThread.sleep(seconds: 0.02)
                continue
            }
            let rate = Double(format.rate)
            let (frames, channels, gap) = buffer.withUnsafeMutableBufferPointer {
                source.read(into: $0, minimumFrames: Int(Self.batchSeconds * rate), timeout: Self.batchSeconds + 0.1)
            }
            if let gap {
                logger.debug("gap in captured audio at \(String(cFormat: "%.3f", driver.time)) s: \(gap)")
                table.gap(gap, rate: rate)
                if driver.pipeline != nil { gaps.add(gap) }
                do { try driver.gap() } catch { return fail("\(error)", rate: rate) }
            }
            guard frames > 0 else { continue }
            do {
                try buffer.withUnsafeBufferPointer { b in
                    try driver.feed(b, frames: frames, format: .init(rate: rate, channels: channels)) { output in
                        let out: [SessionOutput]
                        switch output {
                        case .analysis(.detection(let d), _): out = table.detection(d)
                        case .analysis(.level(let levels, let end), _): out = table.level(levels, time: end)
                        case .analysis(.report(let m), let f):
                            out = table.report(event(m, f, settings: current, gaps: &gaps, extra: []), time: m.end)
                        case .cutShort(let m, let f):
                            // The device came back in another format: the interval so far.
                            out = table.report(event(m, f, settings: current, gaps: &gaps, extra: ["report cut short: the capture format changed"]),
                                               time: m.end)
                        case .started: gaps = GapTally(); out = []
                        case .nonFinite(let count):
                            // Before, NaN or infinity from the device was measured as silence without a word.
                            gaps.nonFinite += count
                            table.nonFinite(count)
                            out = []
                        case .mono(let block, let f): out = table.feed(block, rate: f.rate)
                        }
                        hub.deliver(out, table: table)
                    }
                }
            } catch {
                return fail("\(error)", rate: rate)
            }
        }
    }

    /// The continuous report of the interval just ended; the gaps it tells are then forgotten.
    private func event(_ m: AnalysisPipeline.Measurement, _ f: PipelineDriver.Format, settings current: Settings,
                       gaps: inout GapTally, extra: [String]) -> ReportEvent {
        let event = ReportEvent(source: current.device, measurement: m, calibration: current.analysis.calibration,
                                sampleRate: Int(f.rate), channels: f.channels, channelUse: f.channels == 1 ? "mono" : "average",
                                format: "live capture", warnings: gaps.warnings(rate: f.rate) + extra)
        gaps = GapTally()
        return event
    }

    /// Stops the loop: the audio cannot be analysed at this rate.
    private func fail(_ why: String, rate: Double) {
        let message = "cannot analyse the captured audio at \(Int(rate)) Hz: \(why)"
        logger.critical("\(message)")
        running.withLock { $0 = false }
        onFatal(message)
    }
}
