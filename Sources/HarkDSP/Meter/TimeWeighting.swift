import FoundationEssentials
import Glibc

/// Exponential time weightings of IEC 61672-1: a single real pole at −1/τ applied to the
/// squared frequency-weighted signal.
public enum TimeWeighting: String, Sendable, CaseIterable {
    /// F ("fast"), τ = 125 ms.
    case fast = "F"
    /// S ("slow"), τ = 1 s.
    case slow = "S"

    /// The time constant in seconds.
    public var timeConstant: Double {
        switch self {
        case .fast: return 0.125
        case .slow: return 1.0
        }
    }

    /// The per-sample smoothing factor `α` of `m += α (x² − m)`.
    ///
    /// `1 − e^(−1/(τ fs))` rather than the first-order `1/(τ fs)`: it is exactly the analog
    /// pole sampled, so the decay rate is 10 lg(e)/τ (34.7 dB/s for F) at every sample rate.
    public func smoothingFactor(sampleRate: Double) -> Double {
        1 - exp(-1 / (timeConstant * sampleRate))
    }
}
