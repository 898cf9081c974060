import Dispatch
import FoundationEssentials
import Glibc
import HarkSystem
import HarkCapture
import HarkDSP
import HarkEngine
import Logging

/// The analysis thread: takes captured audio from the ring, mixes it to mono, and runs it
/// through the watermark detector, a continuous level meter and the noise sessions. It owns
/// harkd's ``SessionTable``: at every turn it applies what the ``Hub`` queued, feeds the table
/// audio, detections, levels and reports, and hands back what the table answers. It ticks the
/// table even when no audio comes, so sessions always end.
///
/// Time is the stream's: seconds of audio analysed since harkd started, counted in samples by
/// the pipeline of the format being captured (``AnalysisPipeline/time``). A change of format
/// starts a new pipeline at the stream time the old one reached, so every detection, level and
/// report arrives on the one clock, and only the session table's stamps turn it into UTC.
final class AnalysisLoop: Sendable {
    struct Settings: Equatable {
        /// What the pipeline measures and listens for; its rate and start are the capture's.
        var analysis: AnalysisPipeline.Settings
        /// The capture device, as reports name it.
        var device: String
    }

    /// The analysis of one stretch of audio at one rate and channel count: the shared
    /// ``AnalysisPipeline`` behind a channel mixer.
    private final class Analysers {
        let rate: Double
        let pipeline: AnalysisPipeline
        var mixer: ChannelMixer
        var gaps = GapTally()

        /// - Parameter startTime: the stream time its first sample continues from.
        init(rate: Double, channels: Int, settings: Settings, startTime: Double) throws {
            self.rate = rate
            mixer = ChannelMixer(channels: channels)
            var p = settings.analysis
            (p.sampleRate, p.startTime) = (rate, startTime)
            pipeline = try AnalysisPipeline(p)
        }
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
        var mono = [Float](repeating: 0, count: 8192)
        var analysers: Analysers?
        /// Where the stream's clock stood when the pipeline in use (if any) was built; while
        /// one runs, the clock is its own.
        var pausedAt = 0.0
        var streamTime: Double { analysers?.pipeline.time ?? pausedAt }
        var lastState = ""
        var current = settings.withLock { $0 }
        while running.withLock({ $0 }) {
            heartbeat.withLock { $0 = Date() }
            hub.deliver(table.apply(hub.take()), table: table)
            hub.deliver(table.tick(streamTime: streamTime), table: table)
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
                pausedAt = streamTime
                analysers = nil      // new key, calibration or intervals: start afresh
            }
            guard let source = controller.current, case .capturing(let format) = source.state else {
                pausedAt = streamTime
                analysers = nil
                DetachedThread.sleep(seconds: 0.02)
                continue
            }
            let rate = Double(format.rate)
            let (frames, channels, gap) = buffer.withUnsafeMutableBufferPointer {
                source.read(into: $0, minimumFrames: Int(Self.batchSeconds * rate), timeout: Self.batchSeconds + 0.1)
            }
            if let gap {
                logger.debug("gap in captured audio at \(String(cFormat: "%.3f", streamTime)) s: \(gap)")
                table.gap(gap, rate: rate)
                analysers?.gaps.add(gap)
                do { try analysers?.pipeline.restartWatermarkSearch() } catch { return fail("\(error)", rate: rate) }
            }
            guard frames > 0 else { continue }
            if let a = analysers, a.rate != rate || a.mixer.channels != channels {
                // The device came back in another format: close the interval so far, start afresh.
                if a.pipeline.hasUnreportedAudio {
                    do {
                        try a.pipeline.finish { output in
                            if case .report(let m) = output {
                                hub.deliver(table.report(event(a, m, settings: current, channels: a.mixer.channels,
                                                               extra: ["report cut short: the capture format changed"]),
                                                         time: m.end), table: table)
                            }
                        }
                    } catch { return fail("\(error)", rate: rate) }
                }
                pausedAt = streamTime
                analysers = nil
            }
            if analysers == nil {
                do {
                    analysers = try Analysers(rate: rate, channels: channels, settings: current, startTime: pausedAt)
                } catch {
                    return fail("\(error)", rate: rate)
                }
            }
            let a = analysers!
            let replacedBefore = a.mixer.replacedSamples
            buffer.withUnsafeBufferPointer { b in mono.withUnsafeMutableBufferPointer { a.mixer.mix(b, frames: frames, into: $0) } }
            if a.mixer.replacedSamples > replacedBefore {
                // Before, NaN or infinity from the device was measured as silence without a word.
                let count = a.mixer.replacedSamples - replacedBefore
                a.gaps.nonFinite += count
                table.nonFinite(count)
            }
            do {
                try mono.withUnsafeBufferPointer { all in
                    let block = UnsafeBufferPointer(rebasing: all[0..<frames])
                    try a.pipeline.process(block) { output in
                        let out: [SessionOutput]
                        switch output {
                        case .detection(let d): out = table.detection(d)
                        case .level(let levels, let end): out = table.level(levels, time: end)
                        case .report(let m):
                            out = table.report(event(a, m, settings: current, channels: channels, extra: []), time: m.end)
                        }
                        hub.deliver(out, table: table)
                    }
                    hub.deliver(table.feed(block, rate: rate), table: table)
                }
            } catch {
                return fail("\(error)", rate: rate)
            }
        }
    }

    /// The continuous report of the interval just ended.
    private func event(_ a: Analysers, _ m: AnalysisPipeline.Measurement, settings current: Settings, channels: Int,
                       extra: [String]) -> ReportEvent {
        let event = ReportEvent(source: current.device, measurement: m, calibration: current.analysis.calibration,
                                sampleRate: Int(a.rate), channels: channels, channelUse: channels == 1 ? "mono" : "average",
                                format: "live capture", warnings: a.gaps.warnings(rate: a.rate) + extra)
        a.gaps = GapTally()
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
