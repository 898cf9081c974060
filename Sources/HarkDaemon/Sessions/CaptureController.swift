import Dispatch
import FoundationEssentials
import Glibc
import HarkCapture
import Logging

/// Starts and stops the ALSA capture as the daemon needs it, on its own queue so that no
/// caller (an NIO event loop in particular) waits on ALSA.
final class CaptureController: Sendable {
    private struct State {
        var source: CaptureSource?
        var settings: CaptureSettings
        var ringSeconds: Double
        var wanted = false
        /// Counters of sources already retired.
        var retired = CaptureSource.Counters()
        /// A source being stopped: its counters still count until they join `retired`.
        var retiring: CaptureSource?
    }

    private let state: Locked<State>
    private let queue = DispatchQueue(label: "hark.capture-control")
    private let logger: Logger
    private let opener: CaptureSource.Opener?

    init(settings: CaptureSettings, ringSeconds: Double, opener: CaptureSource.Opener? = nil, logger: Logger) {
        state = Locked(State(settings: settings, ringSeconds: ringSeconds))
        self.opener = opener
        self.logger = logger
    }

    /// The source capturing now, if any.
    var current: CaptureSource? { state.withLock { $0.source } }

    var settings: CaptureSettings { state.withLock { $0.settings } }

    /// Opens or closes the device to match `wanted` (asynchronously).
    func setWanted(_ wanted: Bool) {
        queue.async { [self] in
            state.withLock { $0.wanted = wanted }
            apply()
        }
    }

    /// Takes new settings; a running capture restarts if they differ.
    func reconfigure(settings: CaptureSettings, ringSeconds: Double) {
        queue.async { [self] in
            let changed = state.withLock { s -> Bool in
                let changed = s.settings != settings || s.ringSeconds != ringSeconds
                s.settings = settings
                s.ringSeconds = ringSeconds
                return changed
            }
            if changed && current != nil {
                logger.info("capture settings changed; reopening")
                retire()
            }
            apply()
        }
    }

    /// Closes the device and waits for the capture thread.
    func shutdown() {
        queue.sync { [self] in
            state.withLock { $0.wanted = false }
            retire()
        }
    }

    private func apply() {
        let (wanted, running) = state.withLock { ($0.wanted, $0.source != nil) }
        if wanted && !running {
            let (settings, ring) = state.withLock { ($0.settings, $0.ringSeconds) }
            let source = CaptureSource(settings: settings, ringSeconds: ring, opener: opener,
                                       log: { [logger] in logger.notice("\($0)") })
            state.withLock { $0.source = source }
            source.start()
        } else if !wanted && running {
            retire()
        }
    }

    private func retire() {
        guard let source = state.withLock({ s -> CaptureSource? in
            let old = s.source
            s.source = nil
            s.retiring = old
            return old
        }) else { return }
        if !source.stop() {
            logger.warning("capture thread still blocked in ALSA after 2 s; leaving it to finish")
        }
        let c = source.counters
        state.withLock { s in
            s.retired.overruns += c.overruns
            s.retired.droppedFrames += c.droppedFrames
            s.retired.capturedFrames += c.capturedFrames
            s.retired.suspends += c.suspends
            s.retired.reopenings += c.reopenings
            s.retiring = nil
        }
        logger.info("capture device closed after \(c.capturedFrames) frames (\(c.overruns) overrun(s), \(c.droppedFrames) frames dropped)")
    }

    /// State name, negotiated rate, and totals of overruns and dropped frames since start.
    var snapshot: (state: String, rate: Int?, overruns: Int, dropped: Int, detail: String?) {
        let (source, retiring, retired) = state.withLock { ($0.source, $0.retiring, $0.retired) }
        var past = retired
        if let r = retiring?.counters {
            past.overruns += r.overruns
            past.droppedFrames += r.droppedFrames
        }
        guard let source else { return ("idle", nil, past.overruns, past.droppedFrames, nil) }
        let c = source.counters
        let overruns = past.overruns + c.overruns, dropped = past.droppedFrames + c.droppedFrames
        switch source.state {
        case .capturing(let f): return ("capturing", f.rate, overruns, dropped, nil)
        case .deviceLost(let why): return ("device-lost", nil, overruns, dropped, why)
        case .opening: return ("opening", nil, overruns, dropped, nil)
        case .idle: return ("idle", nil, overruns, dropped, nil)
        }
    }
}
