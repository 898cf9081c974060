import Foundation
import Testing
@testable import HarkDSP

@Suite struct DecimatorTests {
    /// The watermark detector's TV case: 48 kHz down to 16 kHz, everything to 6077.5 Hz kept.
    static let rate = 48_000.0
    static let passband = 6_077.5 / 48_000

    static func tone(_ f: Double, seconds: Double = 1) -> [Float] {
        sine(f, rate: rate, count: Int(rate * seconds))
    }

    static func decimate(_ x: [Float], factor: Int = 3, blocks: Int = 4096) -> (Decimator, [Float]) {
        var d = Decimator(factor: factor, passband: passband)
        var y: [Float] = []
        x.withUnsafeBufferPointer { all in
            var i = 0
            while i < all.count {
                let n = min(blocks, all.count - i)
                d.process(UnsafeBufferPointer(rebasing: all[i..<(i + n)]), into: &y)
                i += n
            }
        }
        return (d, y)
    }

    @Test func passbandIsFlat() {
        for f in [100.0, 1_000, 3_000, 5_000, 6_000, 6_077.5] {
            let (_, y) = Self.decimate(Self.tone(f))
            let g = toneLevel(y, at: f, rate: Self.rate / 3)
            #expect(abs(g) < 0.001, "\(f) Hz: \(g) dB")
        }
    }

    @Test func whatWouldFoldIntoThePassbandIsGone() {
        // Above 16 − 6.0775 kHz everything folds below 6.0775 kHz at 16 kHz.
        for f in [9_923.0, 10_000, 12_000, 15_000, 17_000, 20_000, 23_000] {
            let (_, y) = Self.decimate(Self.tone(f))
            var alias = f.truncatingRemainder(dividingBy: 16_000)
            if alias > 8_000 { alias = 16_000 - alias }
            let g = toneLevel(y, at: alias, rate: Self.rate / 3)
            #expect(g < -89, "\(f) Hz → \(alias) Hz: \(g) dB")
        }
    }

    @Test func outputIsTheInputDelayedByHalfTheFilter() throws {
        let x = Self.tone(1_234.5)
        let (d, y) = Self.decimate(x)
        #expect(d.taps % 2 == 1 && d.delay == (d.taps - 1) / 2)
        #expect(y.count == (x.count + 2) / 3)
        for m in stride(from: 100, to: y.count, by: 97) {
            let n = 3 * m - d.delay
            #expect(abs(y[m] - x[n]) < 1e-4, "output \(m) against input \(n)")
        }
    }

    @Test func blockSizesDoNotMatter() {
        let x = Self.tone(2_000, seconds: 0.2).enumerated().map { $0.element * Float(1 + $0.offset % 7) / 7 }
        let whole = Self.decimate(x, blocks: x.count).1
        for blocks in [1, 2, 5, 64, 1_000] {
            #expect(Self.decimate(x, blocks: blocks).1 == whole, "blocks of \(blocks)")
        }
        let byTwo = Self.decimate(x, factor: 2, blocks: 1).1
        #expect(byTwo == Self.decimate(x, factor: 2, blocks: 333).1)
    }

    @Test func factorOnePassesTheInput() {
        let x = Self.tone(440, seconds: 0.01)
        #expect(Self.decimate(x, factor: 1, blocks: 7).1 == x)
    }
}
