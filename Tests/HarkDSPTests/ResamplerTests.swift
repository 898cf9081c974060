import Foundation
import Testing
@testable import HarkDSP

@Suite struct ResamplerTests {
    /// Gain (dB) of a tone at `f` Hz through a resampler from `from` to `to` Hz, read at the
    /// output at `f` (or, above the output's Nyquist, at the alias it would fold to).
    static func gain(_ f: Double, from: Double, to: Double) -> Double {
        let n = Int(from)                      // one second
        let x = (0..<n).map { Float(sin(2 * Double.pi * f * Double($0) / from)) }
        let r = Resampler(from: from, to: to)
        var y: [Float] = []
        x.withUnsafeBufferPointer { r.process($0, into: &y) }
        r.finish(into: &y)
        // The alias frequency if f is beyond Nyquist.
        var g = f.truncatingRemainder(dividingBy: to)
        if g > to / 2 { g = to - g }
        return toneLevel(y, at: g, rate: to)
    }

    @Test(arguments: [(48_000.0, 44_100.0), (44_100.0, 48_000.0), (48_000.0, 48_004.8)])
    func passBandIsAsDocumented(from: Double, to: Double) {
        let low = min(from, to)
        for fraction in [0.05, 0.1, 0.2, 0.3, 0.35] {
            let g = Self.gain(fraction * low, from: from, to: to)
            #expect(abs(g) < 0.001, "\(fraction) × \(low) Hz: \(g) dB")
        }
        let edge = Self.gain(0.4 * low, from: from, to: to)
        #expect(edge < -0.1 && edge > -0.3, "0.4 × \(low) Hz: \(edge) dB")
        let beyond = Self.gain(0.45 * low, from: from, to: to)
        #expect(beyond < -3.5 && beyond > -4.5, "0.45 × \(low) Hz: \(beyond) dB")
    }

    @Test func aliasesAreAsDocumented() {
        // 48 → 44.1 kHz: 22.93 kHz folds to 21.17 kHz, 31 dB down.
        let alias = Self.gain(0.52 * 44_100, from: 48_000, to: 44_100)
        #expect(alias < -30 && alias > -33, "\(alias) dB")
    }
}
