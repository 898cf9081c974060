import FoundationEssentials
import Glibc

/// A cascade of biquads run in double precision, for filters off the meter's hot path
/// (the acoustic-path simulation).
public struct BiquadCascade: Sendable {
    private var sections: [FilterSection]
    private var s1: [Double], s2: [Double]

    public init(_ sections: [FilterSection]) {
        precondition(sections.allSatisfy(\.isBiquad))
        self.sections = sections
        s1 = [Double](repeating: 0, count: sections.count)
        s2 = [Double](repeating: 0, count: sections.count)
    }

    /// Filters `samples` in place.
    public mutating func process(_ samples: UnsafeMutableBufferPointer<Float>) {
        for (i, c) in sections.enumerated() {
            var a = s1[i], b = s2[i]
            for n in samples.indices {
                let x = Double(samples[n])
                let y = c.b0 * x + a
                a = c.b1 * x - c.a1 * y + b
                b = c.b2 * x - c.a2 * y
                samples[n] = Float(y)
            }
            s1[i] = a
            s2[i] = b
        }
    }

    /// Butterworth band-pass of order 2·`order` (a high-pass at `low` and a low-pass at
    /// `high`, each of `order`), pre-warped bilinear. `high` at or above 0.49·fs is left out.
    public static func bandPass(low: Double, high: Double, order: Int = 4, sampleRate fs: Double) -> BiquadCascade {
        var sections = butterworth(highPass: true, cutoff: low, order: order, sampleRate: fs)
        if high < 0.49 * fs { sections += butterworth(highPass: false, cutoff: high, order: order, sampleRate: fs) }
        return BiquadCascade(sections)
    }

    /// Butterworth sections (order must be even).
    static func butterworth(highPass: Bool, cutoff: Double, order: Int, sampleRate fs: Double) -> [FilterSection] {
        precondition(order % 2 == 0 && order >= 2)
        let k = tan(Double.pi * cutoff / fs)
        return (0..<(order / 2)).map { i in
            let q = 1 / (2 * sin(Double.pi * Double(2 * i + 1) / Double(2 * order)))
            let norm = 1 / (1 + k / q + k * k)
            let a1 = 2 * (k * k - 1) * norm, a2 = (1 - k / q + k * k) * norm
            if highPass {
                return FilterSection(b0: norm, b1: -2 * norm, b2: norm, a1: a1, a2: a2)
            } else {
                return FilterSection(b0: k * k * norm, b1: 2 * k * k * norm, b2: k * k * norm, a1: a1, a2: a2)
            }
        }
    }
}
