import Foundation
import Testing
@testable import HarkDSP

@Suite struct MedianNetworkTests {
    @Test func agreesWithSelectionOnEveryLane() {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func unit() -> Double {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return Double(state >> 11) / Double(1 << 53)
        }
        for count in [1, 2, 5, 24, 25, 31] {
            let network = MedianNetwork(count: count)
            var wires = [SIMD16<Float>](repeating: .zero, count: network.wireCount)
            for _ in 0..<50 {
                // Exponential powers rounded to eighths (so with ties), as a floor window holds.
                var windows = (0..<16).map { _ in (0..<count).map { _ in Float((-log(1 - unit()) * 8).rounded()) / 8 } }
                for i in 0..<count { for lane in 0..<16 { wires[network.firstInput + i][lane] = windows[lane][i] } }
                let medians = wires.withUnsafeMutableBufferPointer { network.medians($0.baseAddress!) }
                for lane in 0..<16 {
                    let expected = windows[lane].withUnsafeMutableBufferPointer { ToneEnergyFrame.median($0) }
                    #expect(medians[lane] == expected, "count \(count), lane \(lane)")
                }
            }
        }
    }
}
