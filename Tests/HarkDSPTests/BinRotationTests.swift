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
}
