import HarkDSP
import FoundationEssentials
import Glibc

/// The Stadium Shake cue's music: a short phrase made to be heard as part of the show and to
/// carry a mark loud enough to cross a roaring crowd.
///
/// Nine struck notes of a major pentatonic scale (C5 to A6), one every 0.4 s (a note per
/// symbol of the mark), each a bell: partials at 1, 2, 3, 4.2, 5.4 and 6.8 times its pitch,
/// the higher ones decaying faster, an 8 ms raised-cosine attack, ringing on under the next
/// note. Under them a held major chord two octaves down swells in, and a brushed shimmer (pink
/// noise above 2.5 kHz, 15 dB under) gives the mark's upper band something to sit under. The
/// phrase rises and falls as the seed draws it; the last 0.4 s fade out with a raised cosine, and
/// nothing starts or stops with a step.
public struct CueGenerator: SignalGenerator {
    /// Seconds of notes and of the fade after them.
    public static let noteSeconds = 0.4
    public static let notes = 9
    public static let releaseSeconds = 0.4
    public static var duration: Double { Double(notes) * noteSeconds + releaseSeconds }

    private static let partials: [(ratio: Double, gain: Double, decay: Double)] = [
        (1, 1, 1.2), (2, 0.55, 0.9), (3, 0.35, 0.6), (4.2, 0.25, 0.45), (5.4, 0.18, 0.3), (6.8, 0.12, 0.22),
    ]

    private let rate: Double
    private let pitches: [Double]
    private let chord: [Double]
    private var scale: Double
    private var n = 0
    private var pink: PinkingFilter
    private var highpass = (x: 0.0, y: 0.0)
    private var rng: SplitMix64

    /// - Parameter rms: RMS of the whole cue (its fade included).
    public init(rms: Double, sampleRate: Double, seed: UInt64) {
        rate = sampleRate
        var draw = SplitMix64(seed: seed)
        // C major pentatonic from C5 to A6.
        let scaleNotes = [0, 2, 4, 7, 9, 12, 14, 16, 19, 21].map { 523.25 * pow(2, Double($0) / 12) }
        // A phrase that climbs, turns and comes home: steps of one or two scale notes.
        var index = Int(draw.next() % 3), phrase: [Double] = []
        for k in 0..<Self.notes {
            phrase.append(scaleNotes[index])
            let rising = k < Self.notes / 2 + Int(draw.next() % 2)
            let step = 1 + Int(draw.next() % 2)
            index = max(0, min(scaleNotes.count - 1, index + (rising ? step : -step)))
        }
        phrase[Self.notes - 1] = scaleNotes[0]
        pitches = phrase
        chord = [130.81, 164.81, 196.0, 261.63]
        pink = PinkingFilter(sampleRate: sampleRate)
        rng = SplitMix64(seed: seed &+ 17)
        scale = 1
        var probe = self
        let total = Int(Self.duration * sampleRate)
        var sum = 0.0
        for _ in 0..<total { let v = probe.next(); sum += v * v }
        scale = sum > 0 ? rms / (sum / Double(total)).squareRoot() : 0
    }

    public mutating func render(into out: UnsafeMutableBufferPointer<Float>) {
        for i in out.indices { out[i] = Float(scale * next()) }
    }

    private mutating func next() -> Double {
        let t = Double(n) / rate
        n += 1
        let end = Self.duration
        guard t < end else { return 0 }
        var v = 0.0
        for (k, f) in pitches.enumerated() {
            let age = t - Double(k) * Self.noteSeconds
            guard age >= 0 else { break }
            let attack = age < 0.008 ? 0.5 - 0.5 * cos(Double.pi * age / 0.008) : 1
            for p in Self.partials where f * p.ratio < 0.45 * rate {
                v += attack * p.gain * exp(-age / p.decay) * sin(2 * Double.pi * f * p.ratio * age)
            }
        }
        // The chord swells in over the first second and holds.
        let swell = min(1, t / 1.0)
        for f in chord { v += 0.12 * swell * swell * sin(2 * Double.pi * f * t) }
        // Shimmer: pink noise, high-passed at 2.5 kHz (one pole), under the notes.
        let white = Double(Int64(bitPattern: rng.next()) >> 11) * 0x1.0p-52
        let p = pink.tick(white)
        let a = exp(-2 * Double.pi * 2_500 / rate)
        let y = a * (highpass.y + p - highpass.x)
        highpass = (p, y)
        v += 0.6 * swell * y
        // The fade after the last note.
        let fadeStart = end - Self.releaseSeconds
        if t > fadeStart { v *= 0.5 + 0.5 * cos(Double.pi * (t - fadeStart) / Self.releaseSeconds) }
        return v
    }
}
