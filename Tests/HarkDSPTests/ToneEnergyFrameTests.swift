import Foundation
import Testing
@testable import HarkDSP

@Suite struct ToneEnergyFrameTests {
    /// The pair differences read every bin's energy from one table computed per bin; they must
    /// equal what each probe computes on its own from the power and the interpolated floor,
    /// byte for byte, including probes with no bin and bins whose floor is zero.
    @Test func pairDifferencesEqualEachProbesOwnReading() {
        let binWidth = 2.5, bins = 9_601
        var tones = ToneEnergyFrame(binWidth: binWidth, lowestFrequency: 300, highestFrequency: 6_000)
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        func unit() -> Double {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return Double(state >> 11) / Double(1 << 53)
        }
        // Complex Gaussian noise, strong tones on some bins, and a stretch of digital silence
        // (floor 0) with one bin sounding in it.
        var spectrum = (0..<bins).map { _ in
            SIMD2(Float((-2 * log(1 - unit())).squareRoot() * cos(2 * .pi * unit())),
                  Float((-2 * log(1 - unit())).squareRoot() * sin(2 * .pi * unit())))
        }
        for k in stride(from: 150, to: 2_400, by: 37) { spectrum[k] *= 12 }
        for k in 1_000..<1_200 { spectrum[k] = .zero }
        spectrum[1_100] = SIMD2(3, 0)
        var pairs: [(ToneEnergyFrame.Probe, ToneEnergyFrame.Probe)] = []
        for _ in 0..<1_003 {
            pairs.append((tones.probe(at: 290 + unit() * 5_800, spectrumBins: bins),
                          tones.probe(at: 290 + unit() * 5_800, spectrumBins: bins)))
        }
        pairs.append((tones.probe(at: 1_100 * binWidth, spectrumBins: bins), tones.probe(at: 1_050 * binWidth, spectrumBins: bins)))
        pairs.append((tones.probe(at: 10, spectrumBins: bins), tones.probe(at: 4_000, spectrumBins: bins)))
        #expect(pairs.last!.0.bin == -1)
        spectrum.withUnsafeMutableBufferPointer { tones.load($0) }
        let unit = ToneEnergyFrame.cap / 127
        var out = [Int8](repeating: 0, count: pairs.count)
        var sums = [Float](repeating: 0, count: pairs.count)
        pairs.withUnsafeBufferPointer { p in
            out.withUnsafeMutableBufferPointer { o in
                sums.withUnsafeMutableBufferPointer { tones.pairDifferences(p, unit: unit, into: o.baseAddress!, sums: $0.baseAddress!) }
            }
        }
        func energy(_ p: ToneEnergyFrame.Probe) -> Float {
            guard p.bin >= 0 else { return 0 }
            let e = tones.power[Int(p.bin)]
            let f = tones.blockFloor.withUnsafeBufferPointer { ToneEnergyFrame.floor(p, blocks: $0.baseAddress!) }
            if f <= 0 { return e > 0 ? ToneEnergyFrame.cap : 0 }
            return min(e / f, ToneEnergyFrame.cap)
        }
        var capped = 0
        for (i, p) in pairs.enumerated() {
            let one = energy(p.1), zero = energy(p.0)
            #expect(out[i] == ByteQuantiserTests.reference((one - zero) / unit), "pair \(i)")
            #expect(sums[i] == one + zero, "pair \(i)")
            if one == ToneEnergyFrame.cap || zero == ToneEnergyFrame.cap { capped += 1 }
        }
        // The case is not vacuous: some tones hit the cap, and the silent stretch reads cap for
        // its sounding bin against zero for the silent one.
        #expect(capped > 10)
        #expect(out[pairs.count - 2] == -127)
    }
}
