import FoundationEssentials
import Glibc

/// One IIR section with a numerator of up to 4th order and a 2nd-order denominator:
///
///     H(z) = (b0 + b1 z⁻¹ + b2 z⁻² + b3 z⁻³ + b4 z⁻⁴) / (1 + a1 z⁻¹ + a2 z⁻²)
///
/// A plain biquad leaves `b3` and `b4` at zero. The wider numerator exists for the matched
/// high-frequency sections of the weighting filters (see ``FrequencyWeighting``). This type
/// describes a filter (design, frequency response); the meter runs it through `MeterKernel`.
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

extension FilterSection {
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
