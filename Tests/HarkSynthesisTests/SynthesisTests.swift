import Foundation
import Testing
@testable import HarkDSP
@testable import HarkSynthesis

@Suite struct SynthesisTests {
    private func render<G: SignalGenerator>(_ g: inout G, _ count: Int, block: Int = 1000) -> [Float] {
        var out = [Float](repeating: 0, count: count)
        out.withUnsafeMutableBufferPointer { buffer in
            var i = 0
            while i < count {
                let n = min(block, count - i)
                g.render(into: UnsafeMutableBufferPointer(rebasing: buffer[i..<(i + n)]))
                i += n
            }
        }
        return out
    }

    @Test(arguments: [8_000.0, 16_000, 44_100, 48_000, 96_000, 192_000])
    func pinkingFilterSlopesMinusThreeDecibelsPerOctave(rate: Double) {
        let filter = PinkingFilter(sampleRate: rate)
        let reference = filter.gain(atFrequency: 1000, sampleRate: rate)
        let tolerance = 0.06
        var f = 20.0
        while f < 0.9 * rate / 2 {
            let expected = -10 * log10(f / 1000)
            #expect(abs(filter.gain(atFrequency: f, sampleRate: rate) - reference - expected) < tolerance,
                    "\(f) Hz at \(rate)")
            f *= 1.26
        }
    }

    @Test func soloLinesAndDrumsHaveTheirRMSAndRepeatWhateverTheBlocks() {
        let rate = 48_000.0, count = Int(16 * rate)
        func rms(_ x: [Float]) -> Double { (x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(x.count)).squareRoot() }
        for instrument in SoloLineGenerator.Instrument.allCases {
            var a = SoloLineGenerator(instrument, rms: 0.1, sampleRate: rate, seed: 3)
            var b = SoloLineGenerator(instrument, rms: 0.1, sampleRate: rate, seed: 3)
            let x = render(&a, count, block: 4096), y = render(&b, count, block: 333)
            #expect(x == y, "\(instrument)")
            #expect(abs(20 * log10(rms(x) / 0.1)) < 1.5, "\(instrument): \(rms(x))")
        }
        var a = DrumKitGenerator(rms: 0.1, sampleRate: rate, seed: 3), b = DrumKitGenerator(rms: 0.1, sampleRate: rate, seed: 3)
        let x = render(&a, count, block: 4096), y = render(&b, count, block: 333)
        #expect(x == y)
        #expect(abs(20 * log10(rms(x) / 0.1)) < 1.5, "drums: \(rms(x))")
        // Every fourth bar rests: the last second of the rest bar (6.5–7.5 s) holds only the decay,
        // at least 40 dB under the playing.
        #expect(rms(Array(x[Int(7.0 * rate)..<Int(7.9 * rate)])) < 0.001)
        // The flute breathes: some stretches of 0.2 s are digital silence.
        var flute = SoloLineGenerator(.flute, rms: 0.1, sampleRate: rate, seed: 3)
        let f = render(&flute, count)
        let silent = stride(from: 0, to: count - 9600, by: 4800).filter { i in f[i..<(i + 9600)].allSatisfy { $0 == 0 } }
        #expect(!silent.isEmpty)
    }

    /// The cue: its length, its level, its phrase drawn from the seed, silence at both ends.
    @Test func theCueIsAPhraseFromSilenceToSilence() {
        let rate = 48_000.0
        func cue(_ seed: UInt64) -> [Float] {
            var x = [Float](repeating: 0, count: Int(CueGenerator.duration * rate) + 480)
            x.withUnsafeMutableBufferPointer { var g = CueGenerator(rms: 0.1, sampleRate: rate, seed: seed); g.render(into: $0) }
            return x
        }
        let a = cue(1), b = cue(2)
        #expect(CueGenerator.duration == 4.0)
        let body = a.prefix(Int(CueGenerator.duration * rate))
        let rms = (body.reduce(0.0) { $0 + Double($1 * $1) } / Double(body.count)).squareRoot()
        #expect(abs(rms - 0.1) < 0.001)
        #expect(a.suffix(480).allSatisfy { $0 == 0 } && abs(a[Int(CueGenerator.duration * rate) - 1]) < 1e-3)
        #expect(a == cue(1) && a != b)
        // It rises from silence and fades back to it: no step at either end.
        let peak = a.map(abs).max()!
        #expect(abs(a[0]) < 0.01 * peak && a[1..<48].allSatisfy { abs($0) < 0.25 * peak })
    }

    @Test func noiseIsReproducibleFromItsSeedWhateverTheBlocks() {
        var a = PinkNoiseGenerator(rms: 0.1, sampleRate: 48_000, seed: 42)
        var b = PinkNoiseGenerator(rms: 0.1, sampleRate: 48_000, seed: 42)
        var c = PinkNoiseGenerator(rms: 0.1, sampleRate: 48_000, seed: 43)
        let x = render(&a, 10_000, block: 999), y = render(&b, 10_000, block: 64), z = render(&c, 10_000)
        #expect(x == y)
        #expect(x != z)
    }

    @Test func noiseHasTheRequestedRMS() {
        for pink in [false, true] {
            let count = 48_000 * 10
            let samples: [Float]
            if pink {
                var g = PinkNoiseGenerator(rms: 0.05, sampleRate: 48_000, seed: 9)
                samples = render(&g, count)
            } else {
                var g = WhiteNoiseGenerator(rms: 0.05, seed: 9)
                samples = render(&g, count)
            }
            let rms = (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(count)).squareRoot()
            #expect(abs(20 * log10(rms / 0.05)) < 0.2, pink ? "pink" : "white")
        }
    }

    @Test func sweepCoversItsRangeLogarithmically() {
        // Zero crossings per second at 1/4 and 3/4 of a 2 s sweep from 100 Hz to 6400 Hz:
        // the frequency there is 100·64^(0.25) ≈ 283 Hz and 100·64^(0.75) ≈ 2263 Hz.
        let rate = 48_000.0
        var g = SweepGenerator(from: 100, to: 6400, duration: 2, amplitude: 0.5, sampleRate: rate)
        let s = render(&g, Int(2 * rate))
        func frequency(around t: Double) -> Double {
            let start = Int((t - 0.01) * rate), end = Int((t + 0.01) * rate)
            var crossings = 0
            for i in start..<end where (s[i] < 0) != (s[i + 1] < 0) { crossings += 1 }
            return Double(crossings) / 2 / 0.02
        }
        #expect(abs(frequency(around: 0.5) / 283 - 1) < 0.05)
        #expect(abs(frequency(around: 1.5) / 2263 - 1) < 0.03)
    }

    @Test func burstsStartOnAZeroCrossingAndRepeat() {
        var g = ToneBurstGenerator(frequency: 4000, amplitude: 1, burst: 0.002, period: 0.01, sampleRate: 48_000)
        let s = render(&g, 960)
        #expect(s[0] == 0)
        #expect(s[1] > 0)
        #expect(s[96..<480].allSatisfy { $0 == 0 })      // 2 ms on, 8 ms off
        #expect(s[480] == 0 && s[481] > 0)
        #expect(s[0..<96].map { abs($0) }.max()! > 0.99)
    }

    @Test func longSineStaysPure() {
        // After an hour at 48 kHz the wrapped phase must not have drifted: compare against the
        // exact phase computed from the sample index.
        var g = SineGenerator(frequency: 1000, amplitude: 1, sampleRate: 48_000)
        var block = [Float](repeating: 0, count: 48_000)
        for _ in 0..<3600 { block.withUnsafeMutableBufferPointer { g.render(into: $0) } }
        block.withUnsafeMutableBufferPointer { g.render(into: $0) }
        for i in 0..<48 {
            let exact = Float(sin(2 * Double.pi * 1000 * Double(i) / 48_000))
            #expect(abs(block[i] - exact) < 1e-5)
        }
    }
}
