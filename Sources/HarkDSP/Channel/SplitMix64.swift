import FoundationEssentials
import Glibc

/// A small, fast, seedable random generator (SplitMix64), so that every generated test signal
/// is reproducible bit for bit from its seed on every platform.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    private var spareGaussian: Double?

    public init(seed: UInt64) {
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    public mutating func nextUniform() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// Standard normal (mean 0, variance 1), by the Box–Muller transform.
    public mutating func nextGaussian() -> Double {
        if let g = spareGaussian {
            spareGaussian = nil
            return g
        }
        var u1 = nextUniform()
        while u1 <= 0 { u1 = nextUniform() }
        let u2 = nextUniform()
        let r = (-2 * log(u1)).squareRoot()
        spareGaussian = r * sin(2 * Double.pi * u2)
        return r * cos(2 * Double.pi * u2)
    }
}
