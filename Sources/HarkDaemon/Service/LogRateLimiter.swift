import FoundationEssentials
import Glibc

/// Lets at most `burst` messages through per `window`, and says how many it held back when the
/// next window opens. A device in a loop of errors (a dead FIFO behind ALSA's file plugin once
/// logged 12 918 lines in a few seconds) then costs the log a few lines a window.
final class LogRateLimiter: Sendable {
    private struct State {
        var windowStart: Date?
        var passed = 0
        var held = 0
    }

    let burst: Int
    let window: TimeInterval
    private let state = Locked(State())

    init(burst: Int = 5, window: TimeInterval = 10) {
        self.burst = burst
        self.window = window
    }

    /// The lines to log for `message` at `now`: nothing while held back, a note of how many
    /// were held before the first one of a new window.
    func admit(_ message: String, now: Date = Date()) -> [String] {
        state.withLock { state in admit(message, now: now, state: &state) }
    }

    private func admit(_ message: String, now: Date, state: inout State) -> [String] {
        var out: [String] = []
        if state.windowStart.map({ now.timeIntervalSince($0) >= window }) ?? true {
            if state.held > 0 { out.append("\(state.held) more such message(s) held back in the last \(Int(window)) s") }
            state = State(windowStart: now)
        }
        guard state.passed < burst else {
            state.held += 1
            return out
        }
        state.passed += 1
        out.append(message)
        return out
    }
}
