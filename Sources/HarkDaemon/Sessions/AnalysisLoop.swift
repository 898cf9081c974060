import Foundation
import HarkCapture
import HarkDSP
import HarkEngine
import Logging

/// The analysis thread: takes captured audio from the ring, mixes it to mono, and runs it
/// through the watermark detector, a continuous level meter and the noise sessions, handing
/// what they produce to the ``Hub``. It also keeps audio time (seconds analysed since harkd
/// started) and ticks the hub even when no audio comes, so sessions always end.
final class AnalysisLoop: @unchecked Sendable {
    struct Settings: Equatable {
        var key: WatermarkKey
        var profile: WatermarkProfile = .tv
        var catalogue: [WatermarkPayload] = []
        var calibration: Double
        var levelInterval: Double
        var reportInterval: Double
        var device: String
    }

    /// The analysers of one stretch of audio at one rate and channel count.
    private final class Analysers {
        let rate: Double
        let format: WatermarkFormat
        let catalogue: [WatermarkPayload]
        /// Restarted after every gap: its frame alignment does not survive one.
        var detector: WatermarkDetector?
        var detectorOrigin: Double       // audio time the detector's clock starts at
        let meter: LevelMeter
        var bands: ThirdOctaveBands?
        var mixer: ChannelMixer
        var levelFrames: Int
        var sinceLevel = 0
        var reportFrames: Int
        var sinceReport = 0
        var gaps = GapTally()

        init(rate: Double, channels: Int, settings: Settings, origin: Double) {
            self.rate = rate
            format = WatermarkFormat(key: settings.key, profile: settings.profile)
            catalogue = settings.catalogue
            meter = LevelMeter(sampleRate: rate, calibration: settings.calibration)
            bands = try? ThirdOctaveBands(sampleRate: rate)
            detectorOrigin = origin
            mixer = ChannelMixer(channels: channels)
            levelFrames = max(1, Int(settings.levelInterval * rate))
            reportFrames = max(1, Int(settings.reportInterval * rate))
            restartDetector(at: origin)
        }

        func restartDetector(at origin: Double) {
            detector = try? WatermarkDetector(format: format, sampleRate: rate, repeatInterval: 0,
                                              catalogue: catalogue.isEmpty ? nil : catalogue)
            detectorOrigin = origin
        }
    }

    private let controller: CaptureController
    private let hub: Hub
    private let logger: Logger
    private let settings: Locked<Settings>
    private let running = Locked(false)
    private var thread: Thread?
    private let done = DispatchSemaphore(value: 0)
    /// Wall-clock time of the loop's last iteration (for the systemd watchdog).
    let heartbeat = Locked(Date())
    /// Called when the capture state changes (for status messages and systemd).
    var onStateChange: @Sendable (String) -> Void = { _ in }

    init(controller: CaptureController, hub: Hub, settings: Settings, logger: Logger) {
        self.controller = controller
        self.hub = hub
        self.settings = Locked(settings)
        self.logger = logger
    }

    func update(_ new: Settings) {
        settings.withLock { $0 = new }
    }

    func start() {
        running.withLock { $0 = true }
        let t = Thread { [weak self] in self?.run() }
        t.name = "hark-analysis"
        thread = t
        t.start()
    }

    func stop() {
        guard running.withLock({ r -> Bool in let was = r; r = false; return was }) else { return }
        done.wait()
    }

    private func run() {
        defer { done.signal() }
        var buffer = [Float](repeating: 0, count: 8192)
        var mono = [Float](repeating: 0, count: 8192)
        var analysers: Analysers?
        var audioTime = 0.0
        var lastState = ""
        var current = settings.withLock { $0 }
        while running.withLock({ $0 }) {
            heartbeat.withLock { $0 = Date() }
            hub.tick(streamTime: audioTime)
            let snapshot = controller.snapshot
            let stateName = snapshot.state
            if stateName != lastState {
                lastState = stateName
                onStateChange(stateName)
            }
            let latest = settings.withLock { $0 }
            if latest != current {
                current = latest
                analysers = nil      // new key, calibration or intervals: start afresh
            }
            guard let source = controller.current, case .capturing(let format) = source.state else {
                analysers = nil
                Thread.sleep(forTimeInterval: 0.02)
                continue
            }
            let (frames, channels, gap) = buffer.withUnsafeMutableBufferPointer { source.read(into: $0, timeout: 0.05) }
            let rate = Double(format.rate)
            if let gap {
                logger.debug("gap in captured audio at \(String(format: "%.3f", audioTime)) s: \(gap)")
                hub.gap(gap, rate: rate)
                analysers?.gaps.add(gap)
                analysers?.restartDetector(at: audioTime)
            }
            guard frames > 0 else { continue }
            if let a = analysers, a.rate != rate || a.mixer.channels != channels {
                // The device came back in another format: close the interval so far, start afresh.
                if a.sinceReport > 0 {
                    emitReport(a, time: audioTime, settings: current, channels: a.mixer.channels,
                               extra: ["report cut short: the capture format changed"])
                }
                analysers = nil
            }
            if analysers == nil {
                analysers = Analysers(rate: rate, channels: channels, settings: current, origin: audioTime)
            }
            let a = analysers!
            buffer.withUnsafeBufferPointer { b in mono.withUnsafeMutableBufferPointer { a.mixer.mix(b, frames: frames, into: $0) } }
            mono.withUnsafeBufferPointer { all in
                let block = UnsafeBufferPointer(rebasing: all[0..<frames])
                for d in a.detector?.process(block) ?? [] {
                    hub.detection(d, time: a.detectorOrigin + d.time, start: a.detectorOrigin + d.start)
                }
                var done = 0
                while done < frames {
                    let n = min(frames - done, a.levelFrames - a.sinceLevel, a.reportFrames - a.sinceReport)
                    let part = UnsafeBufferPointer(rebasing: all[done..<(done + n)])
                    a.meter.process(part)
                    a.bands?.process(part)
                    done += n
                    a.sinceLevel += n
                    a.sinceReport += n
                    let now = audioTime + Double(done) / rate
                    if a.sinceLevel == a.levelFrames {
                        a.sinceLevel = 0
                        hub.level(a.meter.takeInterval(), time: now)
                    }
                    if a.sinceReport == a.reportFrames {
                        emitReport(a, time: now, settings: current, channels: channels, extra: [])
                    }
                }
                hub.feed(block, rate: rate, streamTime: audioTime)
            }
            audioTime += Double(frames) / rate
        }
    }

    /// Sends the continuous report of the interval just ended and starts the next.
    private func emitReport(_ a: Analysers, time: Double, settings current: Settings, channels: Int, extra: [String]) {
        a.sinceReport = 0
        a.bands?.finish()
        let bands = a.bands.map { b in zip(b.bands, b.levels(calibration: current.calibration)).map { ($0.label, $1) } } ?? []
        let event = ReportEvent(source: current.device, meter: a.meter.report(), bands: bands,
                                calibration: current.calibration, sampleRate: Int(a.rate), channels: channels,
                                channelUse: channels == 1 ? "mono" : "average", format: "live capture",
                                warnings: a.gaps.warnings(rate: a.rate) + extra)
        hub.report(event, time: time)
        a.meter.restartMeasurement()
        a.bands = try? ThirdOctaveBands(sampleRate: a.rate)
        a.gaps = GapTally()
    }
}
