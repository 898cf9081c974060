import Foundation
import Testing
@testable import HarkDSP
import HarkSynthesis

@Suite struct ThirdOctaveBandsTests {
    private func analyse(_ signal: [Float], rate: Double, block: Int = 1000) throws -> (ThirdOctaveBands, [Double?]) {
        let bands = try ThirdOctaveBands(sampleRate: rate)
        var i = 0
        while i < signal.count {
            let n = min(block, signal.count - i)
            signal[i..<(i + n)].withUnsafeBufferPointer { bands.process($0) }
            i += n
        }
        bands.finish()
        return (bands, bands.levels())
    }

    private func level(of signal: [Float]) -> Double {
        Decibels.level(meanSquare: signal.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(signal.count))!
    }

    /// A tone with 0.3 s raised-cosine fades: an abrupt start (or a short fade) would itself
    /// spread energy over neighbouring bands.
    private func fadedTone(_ f: Double, level: Double, rate: Double, seconds: Double) -> [Float] {
        var tone = sine(f, amplitude: Decibels.sineAmplitude(level: level), rate: rate, count: Int(seconds * rate))
        let fade = Int(0.3 * rate)
        for i in 0..<fade {
            let g = Float(0.5 - 0.5 * cos(Double.pi * Double(i) / Double(fade)))
            tone[i] *= g
            tone[tone.count - 1 - i] *= g
        }
        return tone
    }

    @Test(arguments: [44_100.0, 48_000.0])
    func toneLandsInItsBandAtItsLevel(rate: Double) throws {
        for (label, f) in [("63", 63.1), ("1000", 1000.0), ("8000", 7943.0)] {
            let tone = fadedTone(f, level: -20, rate: rate, seconds: 4)
            let (analyser, levels) = try analyse(tone, rate: rate)
            let index = try #require(analyser.bands.firstIndex { $0.label == label })
            #expect(abs(try #require(levels[index]) - level(of: tone)) < 0.02, "\(label) band")
            // Two bands away, the Hann window's leakage is far down.
            if let far = levels[index + 2] { #expect(far < -80, "leak two bands above \(label): \(far)") }
            if let far = levels[index - 2] { #expect(far < -80, "leak two bands below \(label): \(far)") }
        }
    }

    @Test func bandsSplitAMixtureOfTones() throws {
        let rate = 48_000.0
        let parts: [(label: String, f: Double, level: Double)] = [
            ("100", 100, -30), ("315", 316.2, -25), ("1000", 1000, -20), ("3150", 3162, -35), ("10000", 10_000, -40),
        ]
        var mix = [Float](repeating: 0, count: Int(4 * rate))
        var expected: [Double] = []
        for p in parts {
            let tone = fadedTone(p.f, level: p.level, rate: rate, seconds: 4)
            expected.append(level(of: tone))
            for (i, v) in tone.enumerated() { mix[i] += v }
        }
        let (analyser, levels) = try analyse(mix, rate: rate, block: 777)
        for (p, e) in zip(parts, expected) {
            let index = try #require(analyser.bands.firstIndex { $0.label == p.label })
            #expect(abs(try #require(levels[index]) - e) < 0.02, "\(p.label) band")
        }
        // The bands hold all of the mixture's energy.
        let inBands = levels.compactMap { $0 }.reduce(0.0) { $0 + pow(10, $1 / 10) }
        #expect(abs(10 * log10(inBands) - level(of: mix)) < 0.01)
    }

    @Test func spectrumHoldsExactlyTheSignalEnergy() throws {
        // Whatever the signal and block sizes, the overlapped Hann frames count every sample's
        // energy exactly once (Parseval), including a partial last frame.
        var rng = SplitMix64(seed: 5)
        let noise = (0..<100_003).map { _ in Float(rng.nextGaussian() * 0.2) }
        let (analyser, _) = try analyse(noise, rate: 48_000, block: 1234)
        let direct = noise.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(noise.count)
        #expect(abs(analyser.totalMeanSquare() / direct - 1) < 1e-5)
    }

    @Test func pinkNoiseIsFlatPerThirdOctave() throws {
        let rate = 48_000.0
        var gen = PinkNoiseGenerator(rms: 0.1, sampleRate: rate, seed: 11)
        var noise = [Float](repeating: 0, count: Int(20 * rate))
        noise.withUnsafeMutableBufferPointer { gen.render(into: $0) }
        let (analyser, levels) = try analyse(noise, rate: rate, block: 4096)
        let values = levels.compactMap { $0 }
        #expect(values.count == analyser.bands.count)
        let mean = values.reduce(0, +) / Double(values.count)
        // Equal energy per 1/3 octave; 20 s of noise in the 31.5 Hz band (7 Hz wide) is about
        // 140 degrees of freedom, so allow ±1 dB there and above.
        for (band, level) in zip(analyser.bands, values) {
            #expect(abs(level - mean) < 1.0, "\(band.label) Hz: \(level - mean) dB from the mean")
        }
    }

    @Test func lowRatesOmitBandsAboveNyquist() throws {
        let bands = try ThirdOctaveBands(sampleRate: 8_000)
        #expect(bands.bands.last?.label == "3150")
        #expect(bands.bands.allSatisfy { $0.upper < 4_000 })
    }

    @Test func shortSignalStillCounted() throws {
        // 0.1 s, far shorter than one FFT frame (0.68 s at 48 kHz).
        let tone = sine(1000, amplitude: Decibels.sineAmplitude(level: -30), rate: 48_000, count: 4_800)
        let (analyser, levels) = try analyse(tone, rate: 48_000)
        let index = try #require(analyser.bands.firstIndex { $0.label == "1000" })
        #expect(abs(try #require(levels[index]) + 30) < 0.3)
    }

    @Test func nothingMeasuredHasNoLevels() throws {
        let bands = try ThirdOctaveBands(sampleRate: 48_000)
        bands.finish()
        #expect(bands.levels().allSatisfy { $0 == nil })
    }
}
