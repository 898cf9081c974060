import Foundation
import Testing
@testable import HarkDSP

@Suite struct BinRotationTests {
    /// The tables are built by repeated multiplication; every bin the detector reads (up to
    /// 24 kHz at 48 kHz, 4 096 bins) must still turn as e^(−iωτ) does, to float precision.
    @Test func turnsEveryBinAsTheExponentialDoes() {
        let binWidth = 48_000.0 / 8_192
        var rotation = BinRotation(bins: 4_097, binWidth: binWidth)
        for delay in [0.0, 1.3e-4, -2.07e-3, 0.0371, 1.25] {
            rotation.set(delay: delay)
            var worst: Float = 0
            for k in 0...4_096 {
                let angle = -2 * Double.pi * binWidth * Double(k) * delay
                let z = rotation(k)
                worst = max(worst, abs(z.x - Float(cos(angle))), abs(z.y - Float(sin(angle))))
            }
            #expect(worst < 2e-6, "delay \(delay): off by \(worst)")
        }
    }

    /// Advancing a table by another delay's, as the symbol reading does once per symbol, must
    /// stay on e^(−iω(τ₀ + nτ)) after as many steps as a window has symbols.
    @Test func advancingAddsTheDelays() {
        let binWidth = 2.5
        var rotation = BinRotation(bins: 2_600, binWidth: binWidth)
        var step = BinRotation(bins: 2_600, binWidth: binWidth)
        let start = -3.1e-5, drift = 2.7e-6
        rotation.set(delay: start)
        step.set(delay: drift)
        for n in 1...24 {
            rotation.advance(by: step)
            var worst: Float = 0
            for k in stride(from: 0, to: 2_600, by: 7) {
                let angle = -2 * Double.pi * binWidth * Double(k) * (start + Double(n) * drift)
                let z = rotation(k)
                worst = max(worst, abs(z.x - Float(cos(angle))), abs(z.y - Float(sin(angle))))
            }
            #expect(worst < 2e-6, "after \(n) steps: off by \(worst)")
        }
    }
}

@Suite struct ByteQuantiserTests {
    /// The rule the rings were written with before the quantiser existed (a branch per value).
    static func reference(_ v: Float) -> Int8 {
        let x = v.isNaN ? 0 : max(-200, min(200, v))
        return Int8(clamping: Int32(x + (x < 0 ? -0.5 : 0.5)))
    }

    @Test func roundsHalfAwayFromZeroClampsAndZeroesNaN() {
        var values: [Float] = [0, -0.0, 0.49999997, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 126.5, 127, 127.49, 127.5, 128,
                               -127.5, -128, -128.49, -128.5, -129, 1e30, -1e30, .infinity, -.infinity, .nan,
                               .leastNonzeroMagnitude, -.leastNonzeroMagnitude]
        var state: UInt32 = 12345
        for _ in 0..<20_000 {
            state = state &* 1_664_525 &+ 1_013_904_223
            values.append((Float(state >> 8) / Float(1 << 24) - 0.5) * 300)
        }
        for v in values {
            #expect(ByteQuantiser.byte(v) == Self.reference(v), "\(v)")
            #expect(ByteQuantiser.byte(-v) == (v.isNaN ? 0 : Self.reference(-v)), "\(-v)")
        }
        for start in stride(from: 0, to: values.count - 8, by: 8) {
            let q = ByteQuantiser.bytes(SIMD8(values[start..<(start + 8)]))
            for l in 0..<8 { #expect(q[l] == Self.reference(values[start + l])) }
        }
    }
}
