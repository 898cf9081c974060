import FoundationEssentials
import Glibc

/// Turns white noise into pink noise (−3 dB per octave) at any sample rate.
///
/// A cascade of first-order pole–zero pairs, three per decade from 2 Hz to beyond Nyquist, each
/// zero half a step above its pole, placed by matched-z (`e^(−2π f/fs)`), gives the
/// −10 dB/decade slope except for a smooth 1.2 dB rise near Nyquist; a fitted 4th-order
/// minimum-phase FIR (``MagnitudeFit``) removes it. The result is within ±0.05 dB of the ideal
/// slope from 20 Hz to 0.9·Nyquist at every rate from 8 to 192 kHz (checked by the tests).
public struct PinkingFilter {
    private let poles: [Double]
    private let zeros: [Double]
    private var states: [Double]
    private let correction: [Double]
    private var history = [Double](repeating: 0, count: 4)
    /// RMS of the output for unit-variance white input.
    public let whiteNoiseGain: Double

    public init(sampleRate fs: Double) {
        let ratio = pow(10, 1.0 / 3)
        var f = 2.0
        var p: [Double] = [], z: [Double] = []
        while f < fs {
            p.append(exp(-2 * Double.pi * f / fs))
            z.append(exp(-2 * Double.pi * f * ratio.squareRoot() / fs))
            f *= ratio
        }
        poles = p
        zeros = z
        states = [Double](repeating: 0, count: p.count)
        func cascade(_ omega: Double) -> Double {
            var h = Complex(1)
            for (pi, zi) in zip(p, z) {
                h = h * (Polynomial.evaluate([1, -zi], atAngle: omega) / Polynomial.evaluate([1, -pi], atAngle: omega))
            }
            return h.magnitudeSquared
        }
        let reference = cascade(2 * Double.pi * 1000 / fs)
        correction = MagnitudeFit.minimumPhaseNumerator(
            order: 4, sampleRate: fs, from: 10, to: 0.95 * fs / 2,
            wanted: { f in (1000 / f) / (cascade(2 * Double.pi * f / fs) / reference) })
        // Output power for white input: the mean of |H|² over the band (Parseval).
        var power = 0.0
        let points = 1 << 14
        for i in 0..<points {
            let omega = Double.pi * (Double(i) + 0.5) / Double(points)
            power += cascade(omega) * Polynomial.evaluate(correction, atAngle: omega).magnitudeSquared
        }
        whiteNoiseGain = (power / Double(points)).squareRoot()
    }

    /// Gain in dB at `frequency` (for tests).
    func gain(atFrequency frequency: Double, sampleRate fs: Double) -> Double {
        let omega = 2 * Double.pi * frequency / fs
        var h = Polynomial.evaluate(correction, atAngle: omega)
        for (p, z) in zip(poles, zeros) {
            h = h * (Polynomial.evaluate([1, -z], atAngle: omega) / Polynomial.evaluate([1, -p], atAngle: omega))
        }
        return 10 * log10(h.magnitudeSquared)
    }

    @inline(__always)
    public mutating func tick(_ x: Double) -> Double {
        var v = x
        for i in poles.indices {
            // y = x − z·x[n−1] + p·y[n−1], in transposed form: one state per section.
            let y = v + states[i]
            states[i] = poles[i] * y - zeros[i] * v
            v = y
        }
        let y = correction[0] * v + correction[1] * history[0] + correction[2] * history[1]
            + correction[3] * history[2] + correction[4] * history[3]
        history[3] = history[2]; history[2] = history[1]; history[1] = history[0]; history[0] = v
        return y
    }
}
