import Foundation

/// One IIR section with a numerator of up to 4th order and a 2nd-order denominator:
///
///     H(z) = (b0 + b1 z⁻¹ + b2 z⁻² + b3 z⁻³ + b4 z⁻⁴) / (1 + a1 z⁻¹ + a2 z⁻²)
///
/// A plain biquad leaves `b3` and `b4` at zero. The wider numerator exists for the matched
/// high-frequency sections of the weighting filters (see ``FrequencyWeighting``).
public struct FilterSection: Sendable, Equatable {
    public var b0, b1, b2, b3, b4: Double
    public var a1, a2: Double

    public init(b0: Double, b1: Double = 0, b2: Double = 0, b3: Double = 0, b4: Double = 0,
                a1: Double = 0, a2: Double = 0) {
        (self.b0, self.b1, self.b2, self.b3, self.b4) = (b0, b1, b2, b3, b4)
        (self.a1, self.a2) = (a1, a2)
    }

    /// The section that passes its input unchanged.
    public static let identity = FilterSection(b0: 1)

    /// Complex response at the normalised angular frequency `omega` (radians per sample).
    func response(atAngle omega: Double) -> Complex {
        let num = Polynomial.evaluate([b0, b1, b2, b3, b4], atAngle: omega)
        let den = Polynomial.evaluate([1, a1, a2], atAngle: omega)
        return num / den
    }

    /// Multiplies the numerator by `g`.
    func scaled(by g: Double) -> FilterSection {
        FilterSection(b0: b0 * g, b1: b1 * g, b2: b2 * g, b3: b3 * g, b4: b4 * g, a1: a1, a2: a2)
    }
}

/// The running state of a ``FilterSection`` in transposed direct form II.
///
/// Transposed DF-II keeps the states small (they hold partial sums, not raw history), which
/// is what double precision needs for the low-frequency poles of the weighting filters.
public struct FilterState: Sendable {
    var s1 = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0
    public init() {}
}

extension FilterSection {
    /// Filters one sample.
    @inline(__always)
    func tick(_ x: Double, _ s: inout FilterState) -> Double {
        let y = b0 * x + s.s1
        s.s1 = b1 * x - a1 * y + s.s2
        s.s2 = b2 * x - a2 * y + s.s3
        s.s3 = b3 * x + s.s4
        s.s4 = b4 * x
        return y
    }

    /// Filters one sample through a section whose `b3` and `b4` are zero (a plain biquad),
    /// skipping the unused half of the state.
    @inline(__always)
    func tickBiquad(_ x: Double, _ s: inout FilterState) -> Double {
        let y = b0 * x + s.s1
        s.s1 = b1 * x - a1 * y + s.s2
        s.s2 = b2 * x - a2 * y
        return y
    }

    /// Whether the numerator is at most 2nd order.
    var isBiquad: Bool { b3 == 0 && b4 == 0 }
}

/// Gain of a cascade of sections at `frequency` Hz, in dB.
public func cascadeGain(_ sections: [FilterSection], frequency: Double, sampleRate: Double) -> Double {
    let omega = 2 * Double.pi * frequency / sampleRate
    var h = Complex(1)
    for s in sections { h = h * s.response(atAngle: omega) }
    return 10 * log10(h.magnitudeSquared)
}
