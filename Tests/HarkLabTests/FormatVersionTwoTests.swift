import Foundation
import Testing
@testable import HarkDSP
import HarkFFT
import HarkLab
import HarkSynthesis

/// Format version 2, the lab's study beside the format on air (measured, not kept): one keyed set of 72 tones in every
/// symbol, each coded bit a turn of π in its tones' phase. Version 1 stays pinned
/// (`WatermarkGoldenTests`); these check that version 2 is what it says.
@Suite struct FormatVersionTwoTests {
    static let rate = 48_000.0
    let v2 = FormatVersionTwo.format(key: .demo)

    @Test func everySlotSoundsTheSameSeventyTwoTones() {
        let perSlot = (0..<WatermarkFormat.symbolsPerCopy).map { slot in
            Set(v2.frequency[slot].flatMap { $0.flatMap { $0 } })
        }
        #expect(perSlot[0].count == WatermarkFormat.pairsPerSymbol)
        #expect(perSlot.allSatisfy { $0 == perSlot[0] })
        #expect(perSlot[0].isSubset(of: Set(v2.grid)))
        for slot in v2.frequency.indices {
            for position in v2.frequency[slot].indices {
                for pair in v2.frequency[slot][position].indices {
                    let f = v2.frequency[slot][position][pair], p = v2.phase[slot][position][pair]
                    #expect(f[0] == f[1])
                    #expect(abs(p[1] - p[0] - Double.pi) < 1e-12)
                }
            }
        }
        // The coded bits sit where version 1 puts them; only the tones differ.
        let v1 = WatermarkFormat(key: .demo)
        #expect(v2.placement.map { [$0.slot, $0.position] } == v1.placement.map { [$0.slot, $0.position] })
        #expect(Set(v1.frequency[0].flatMap { $0.flatMap { $0 } }) != perSlot[0])
        // Another key draws another set.
        let other = FormatVersionTwo.format(key: WatermarkKey(text: "station A"))
        #expect(Set(other.frequency[0].flatMap { $0.flatMap { $0 } }) != perSlot[0])
    }

    /// The mark of `payload` alone, on pink noise, one copy and a symbol.
    private func mark(_ payload: WatermarkPayload, host: [Float]) throws -> [Float] {
        let embedder = try WatermarkEmbedder(format: v2, payload: payload, sampleRate: Self.rate,
                                             strength: -2.5, copyOffset: 0)
        var w: [Float] = []
        host.withUnsafeBufferPointer { embedder.process($0, into: &w) }
        embedder.finish(into: &w)
        return w
    }

    /// The spectrum of the steady middle of symbol `k` (its ramps left out), through a Hann
    /// window so that the neighbouring tones, 10 Hz away, stay out of each other's bins; padded
    /// to 0.4 s, so every grid point sits on a bin.
    private func spectrum(_ x: [Float], symbol k: Int) throws -> [SIMD2<Float>] {
        let symbol = Int(WatermarkFormat.symbolDuration * Self.rate)
        let margin = Int(0.03 * Self.rate)
        let fft = try RealFFT(size: symbol)
        let range = (k * symbol + margin)..<((k + 1) * symbol - margin)
        for i in 0..<symbol { fft.input[i] = 0 }
        for (i, n) in range.enumerated() {
            fft.input[i] = x[n] * Float(0.5 - 0.5 * cos(2 * Double.pi * (Double(i) + 0.5) / Double(range.count)))
        }
        fft.forward()
        return Array(fft.spectrum)
    }

    private func bin(_ f: Double) -> Int { Int((f * WatermarkFormat.symbolDuration).rounded()) }

    /// Two payloads on the same host: each tone has the same level under both (the host sets
    /// it) and the same phase where their coded bits agree, the opposite where they differ; a
    /// grid point outside the set holds nothing.
    @Test func aCodedBitTurnsItsTonesByHalfACycle() throws {
        var g = PinkNoiseGenerator(rms: 0.1, sampleRate: Self.rate, seed: 3)
        var host = [Float](repeating: 0, count: Int(2.8 * Self.rate))
        host.withUnsafeMutableBufferPointer { g.render(into: $0) }
        let a = WatermarkPayload(0x1A2B_3C4D), b = WatermarkPayload(0x0F0F_5A5A)
        let wa = try mark(a, host: host), wb = try mark(b, host: host)
        let bitsA = v2.symbolBits(for: a), bitsB = v2.symbolBits(for: b)
        var agree = 0, differ = 0
        for slot in 0..<WatermarkFormat.symbolsPerCopy {
            let sa = try spectrum(wa, symbol: slot), sb = try spectrum(wb, symbol: slot)
            var toneLevel: [Double] = []
            for position in 0..<WatermarkFormat.bitsPerSymbol {
                for pair in 0..<WatermarkFormat.pairsPerBit {
                    let f = v2.frequency[slot][position][pair][0]
                    let pa = SIMD2<Double>(sa[bin(f)]), pb = SIMD2<Double>(sb[bin(f)])
                    let la = (pa * pa).sum().squareRoot(), lb = (pb * pb).sum().squareRoot()
                    #expect(abs(la - lb) < 0.25 * la, "slot \(slot), \(f) Hz: \(la) against \(lb)")
                    let cosine = (pa * pb).sum() / (la * lb)
                    if bitsA[slot][position] == bitsB[slot][position] {
                        #expect(cosine > 0.9, "slot \(slot), \(f) Hz: bits agree, cosine \(cosine)")
                        agree += 1
                    } else {
                        #expect(cosine < -0.9, "slot \(slot), \(f) Hz: bits differ, cosine \(cosine)")
                        differ += 1
                    }
                    toneLevel.append(la)
                }
            }
            let tones = Set(v2.frequency[slot].flatMap { $0.flatMap { $0 } })
            let typical = toneLevel.sorted()[toneLevel.count / 2]
            for f in v2.grid where !tones.contains(f) && !tones.contains(f - 10) && !tones.contains(f + 10) {
                let p = SIMD2<Double>(sa[bin(f)])
                #expect((p * p).sum().squareRoot() < 0.2 * typical, "slot \(slot): \(f) Hz holds mark")
            }
        }
        #expect(agree > 100 && differ > 100)
    }

    @Test func theDetectorSaysItCannotReadVersionTwo() {
        #expect(throws: WatermarkDetectorError.unreadableVersion(2)) {
            _ = try WatermarkDetector(format: v2, sampleRate: Self.rate)
        }
        #expect(WatermarkDetectorError.unreadableVersion(2).description
                == "the watermark detector reads format version 1; version 2 is a study and has no detector")
    }
}
