import HarkDSP
import FoundationEssentials
import Glibc

/// Babble: several simulated talkers at once. Each talker is speech-shaped noise (its density
/// falling 3 dB per octave to 500 Hz and 9 dB per octave above: in 1/3-octave bands flat to
/// 500 Hz, then 6 dB per octave down, close to the long-term spectrum of natural speech)
/// switched on and off in syllables of 120–300 ms, grouped in phrases of 0.8–2.5 s with pauses
/// between. With many talkers and a pink-noise bed it stands in for a stadium crowd. The
/// watermark bench uses espeak-ng voices instead (HarkEngine's `BenchHosts`), which are brighter: 6–18 dB
/// more in the mark's band at the same SNR.
public struct BabbleNoiseGenerator: SignalGenerator {
    private struct Talker {
        var envelope = 0.0
        var target = 0.0
        var untilChange = 0
        var phraseLeft = 0
        var lowpass = 0.0
        var pinkish = PinkingFilter(sampleRate: 48_000)
    }

    private var rng: SplitMix64
    private var talkers: [Talker]
    private let sampleRate: Double
    private let bed: Double
    private var bedFilter: PinkingFilter
    private let alpha: Double
    private let smoothing: Double
    private let scale: Double

    /// - Parameters:
    ///   - talkers: number of simultaneous voices (6 for babble, 30 for a crowd).
    ///   - bed: pink-noise bed level re the voices (0 for none).
    public init(talkers count: Int, rms: Double, sampleRate: Double, seed: UInt64, bed: Double = 0) {
        // Each voice: pink (−3 dB/oct) through a 500 Hz one-pole (−6 dB/oct above) ≈ speech;
        // on about 60 % of the time. Scale measured once: see `measureRMS`.
        self.init(talkers: count, sampleRate: sampleRate, seed: seed, bed: bed,
                  scale: rms / Self.measureRMS(talkers: count, sampleRate: sampleRate, bed: bed))
    }

    private init(talkers count: Int, sampleRate: Double, seed: UInt64, bed: Double, scale: Double) {
        rng = SplitMix64(seed: seed)
        self.sampleRate = sampleRate
        talkers = (0..<count).map { _ in
            var t = Talker()
            t.pinkish = PinkingFilter(sampleRate: sampleRate)
            return t
        }
        self.bed = bed
        bedFilter = PinkingFilter(sampleRate: sampleRate)
        alpha = exp(-2 * Double.pi * 500 / sampleRate)      // one-pole low-pass at 500 Hz on top of pink
        smoothing = exp(-1 / (0.015 * sampleRate))           // 15 ms syllable edges
        self.scale = scale
    }

    public mutating func render(into out: UnsafeMutableBufferPointer<Float>) {
        for i in out.indices { out[i] = Float(scale * next()) }
    }

    private mutating func next() -> Double {
        var sum = 0.0
        for k in talkers.indices {
            if talkers[k].untilChange <= 0 {
                var t = talkers[k]
                Self.schedule(&t, &rng, sampleRate)
                talkers[k] = t
            }
            talkers[k].untilChange -= 1
            talkers[k].envelope = smoothing * talkers[k].envelope + (1 - smoothing) * talkers[k].target
            let white = rng.nextGaussian()
            let pink = talkers[k].pinkish.tick(white)
            talkers[k].lowpass = alpha * talkers[k].lowpass + (1 - alpha) * pink * 6
            sum += talkers[k].envelope * talkers[k].lowpass
        }
        if bed > 0 { sum += bed * bedFilter.tick(rng.nextGaussian()) }
        return sum
    }

    /// Next state of a talker: syllables (120–300 ms, loudness ±6 dB) separated by 30–100 ms
    /// gaps while a phrase lasts (0.8–2.5 s), then a 0.3–1.2 s pause.
    private static func schedule(_ t: inout Talker, _ rng: inout SplitMix64, _ fs: Double) {
        if t.target > 0 {
            t.target = 0
            if t.phraseLeft <= 0 {
                t.untilChange = Int((0.3 + 0.9 * rng.nextUniform()) * fs)
                t.phraseLeft = Int((0.8 + 1.7 * rng.nextUniform()) * fs)
            } else {
                t.untilChange = Int((0.03 + 0.07 * rng.nextUniform()) * fs)
            }
        } else {
            t.target = pow(10, (rng.nextUniform() * 12 - 6) / 20)
            t.untilChange = Int((0.12 + 0.18 * rng.nextUniform()) * fs)
            if t.phraseLeft <= 0 { t.phraseLeft = Int((0.8 + 1.7 * rng.nextUniform()) * fs) }
        }
        t.phraseLeft -= t.untilChange
    }

    private static func measureRMS(talkers: Int, sampleRate: Double, bed: Double) -> Double {
        var probe = BabbleNoiseGenerator(talkers: talkers, sampleRate: sampleRate, seed: 0x5EED, bed: bed, scale: 1)
        var sum = 0.0
        let n = Int(sampleRate * 4)
        for _ in 0..<n { let v = probe.next(); sum += v * v }
        return max((sum / Double(n)).squareRoot(), 1e-12)
    }
}
