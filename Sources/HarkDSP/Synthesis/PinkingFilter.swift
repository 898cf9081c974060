import Foundation

/// Turns white noise into pink noise (−3 dB per octave) at any sample rate.
///
/// A cascade of first-order pole–zero pairs, three per decade from 2 Hz up, each zero half a
/// step above its pole, approximates the −10 dB/decade slope within ±0.1 dB from 20 Hz to
/// 0.8·Nyquist (checked by the tests). Designed at run time, so it holds at every rate, unlike
/// fixed coefficient sets published for 44.1 kHz.
public struct PinkingFilter {
    private var sections: [(b0: Double, b1: Double, a1: Double)] = []
    private var states: [Double]
    /// RMS of the output for unit-variance white input.
    public let whiteNoiseGain: Double

    public init(sampleRate fs: Double) {
        let ratio = pow(10, 1.0 / 3)
        var f = 2.0
        var secs: [(Double, Double, Double)] = []
        while f * ratio.squareRoot() < 0.45 * fs {
            // Analog (s + ωz)/(s + ωp), pre-warped, through the bilinear transform.
            let wp = tan(Double.pi * f / fs), wz = tan(Double.pi * f * ratio.squareRoot() / fs)
            let norm = 1 / (1 + wp)
            secs.append(((1 + wz) * norm, (wz - 1) * norm, (wp - 1) * norm))
            f *= ratio
        }
        sections = secs
        states = [Double](repeating: 0, count: secs.count)
        // Output power for white input: the mean of |H|² over the band (Parseval).
        var power = 0.0
        let points = 1 << 14
        for i in 0..<points {
            let omega = Double.pi * (Double(i) + 0.5) / Double(points)
            var h = Complex(1)
            for s in secs {
                h = h * (Polynomial.evaluate([s.0, s.1], atAngle: omega) / Polynomial.evaluate([1, s.2], atAngle: omega))
            }
            power += h.magnitudeSquared
        }
        whiteNoiseGain = (power / Double(points)).squareRoot()
    }

    /// Gain in dB at `frequency` (for tests).
    func gain(atFrequency frequency: Double, sampleRate fs: Double) -> Double {
        let omega = 2 * Double.pi * frequency / fs
        var h = Complex(1)
        for s in sections {
            h = h * (Polynomial.evaluate([s.b0, s.b1], atAngle: omega) / Polynomial.evaluate([1, s.a1], atAngle: omega))
        }
        return 10 * log10(h.magnitudeSquared)
    }

    @inline(__always)
    public mutating func tick(_ x: Double) -> Double {
        var v = x
        for i in sections.indices {
            let s = sections[i]
            let y = s.b0 * v + states[i]
            states[i] = s.b1 * v - s.a1 * y
            v = y
        }
        return v
    }
}
