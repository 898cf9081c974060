import HarkDSP
import FoundationEssentials
import Glibc

/// One instrument playing alone: the hosts that expose a watermark most. A solo line has a few
/// strong partials with nothing between them, and rests where only the last note's decay (or
/// nothing) remains, so a mark has little to hide under.
///
/// - **flute**: sustained notes of 0.3–1.2 s between 523 and 1568 Hz (C5–G6), a strong
///   fundamental and three weaker harmonics, 5 Hz vibrato, a little breath noise, and a breath
///   (0.25–0.5 s of digital silence) every few notes.
/// - **piano**: struck notes between 131 and 880 Hz (C3–A5), ten slightly inharmonic partials
///   that decay faster the higher they are, two notes a second, ringing on under the next.
public struct SoloLineGenerator: SignalGenerator {
    public enum Instrument: String, CaseIterable, Sendable {
        case flute, piano
    }

    private struct Voice {
        var frequencies: [Double]
        var amplitudes: [Double]
        var decays: [Double]      // per-sample multipliers
        var phases: [Double]
        var age = 0               // samples since the note began
        var length: Int           // samples until release (flute) or forever (piano)
    }

    private let instrument: Instrument
    private let rate: Double
    private var scale: Double
    private var rng: SplitMix64
    private var voices: [Voice] = []
    private var untilNext = 0
    private var notesSinceBreath = 0
    private var vibratoPhase = 0.0
    private var breath = 0.0

    /// The pitches the line draws from (a major scale over the instrument's range).
    private static func pitches(_ instrument: Instrument) -> [Double] {
        let steps = [0, 2, 4, 5, 7, 9, 11]
        let (low, octaves) = instrument == .flute ? (523.25, 2) : (130.81, 3)
        var out: [Double] = []
        for o in 0..<octaves { for s in steps { out.append(low * pow(2, Double(o) + Double(s) / 12)) } }
        return out.filter { $0 <= (instrument == .flute ? 1568 : 880) }
    }

    /// - Parameter rms: RMS over a long stretch (measured on 8 s before rendering).
    public init(_ instrument: Instrument, rms: Double, sampleRate: Double, seed: UInt64) {
        self.instrument = instrument
        rate = sampleRate
        rng = SplitMix64(seed: seed)
        scale = 1
        var probe = self
        scale = scaleToRMS(rms, sampleRate: sampleRate) { probe.next() }
    }

    public mutating func render(into out: UnsafeMutableBufferPointer<Float>) {
        for i in out.indices { out[i] = Float(scale * next()) }
    }

    private mutating func startNote() {
        let pitches = Self.pitches(instrument)
        let f0 = pitches[Int(rng.next() % UInt64(pitches.count))]
        switch instrument {
        case .flute:
            let seconds = 0.3 + 0.9 * rng.nextUniform()
            let harmonics = [1.0, 0.3, 0.12, 0.05]
            voices = [Voice(frequencies: harmonics.indices.map { f0 * Double($0 + 1) }, amplitudes: harmonics,
                            decays: harmonics.map { _ in 1 }, phases: harmonics.map { _ in 2 * Double.pi * rng.nextUniform() },
                            length: Int(seconds * rate))]
            notesSinceBreath += 1
            var gap = 0.0
            if notesSinceBreath >= 3 && rng.nextUniform() < 0.4 {
                gap = 0.25 + 0.25 * rng.nextUniform()
                notesSinceBreath = 0
            }
            untilNext = Int((seconds + 0.08 + gap) * rate)
        case .piano:
            let b = 0.0004
            var f: [Double] = [], a: [Double] = [], d: [Double] = []
            for n in 1...10 {
                let fn = f0 * Double(n) * (1 + b * Double(n * n)).squareRoot()
                guard fn < 8000 else { break }
                f.append(fn)
                a.append(1 / pow(Double(n), 1.2))
                d.append(exp(-1 / (rate * 1.5 / pow(Double(n), 0.7))))
            }
            voices.append(Voice(frequencies: f, amplitudes: a, decays: d, phases: f.map { _ in 2 * Double.pi * rng.nextUniform() },
                                length: .max))
            if voices.count > 4 { voices.removeFirst() }
            let durations = [0.25, 0.5, 0.5, 0.75, 1.0]
            untilNext = Int(durations[Int(rng.next() % UInt64(durations.count))] * rate)
        }
    }

    private mutating func next() -> Double {
        if untilNext <= 0 { startNote() }
        untilNext -= 1
        var v = 0.0
        vibratoPhase += 2 * Double.pi * 5 / rate
        if vibratoPhase > 2 * Double.pi { vibratoPhase -= 2 * Double.pi }
        let vibrato = instrument == .flute ? 1 + 0.005 * sin(vibratoPhase) : 1
        for i in voices.indices {
            let age = Double(voices[i].age) / rate
            voices[i].age += 1
            let envelope: Double
            switch instrument {
            case .flute:
                let release = Double(voices[i].length) / rate
                envelope = min(1, age / 0.05) * (age < release ? 1 : max(0, 1 - (age - release) / 0.06))
            case .piano:
                envelope = min(1, age / 0.004)
            }
            guard envelope > 0 else { continue }
            for k in voices[i].frequencies.indices {
                v += envelope * voices[i].amplitudes[k] * sin(voices[i].phases[k])
                voices[i].phases[k] += 2 * Double.pi * voices[i].frequencies[k] * vibrato / rate
                if voices[i].phases[k] > 2 * Double.pi { voices[i].phases[k] -= 2 * Double.pi }
                voices[i].amplitudes[k] *= voices[i].decays[k]
            }
            if instrument == .flute {
                // Breath: white noise through a one-pole low-pass, 30 dB under the tone.
                breath += 0.2 * (rng.nextGaussian() - breath)
                v += envelope * 0.03 * breath
            }
        }
        return v
    }
}

/// Percussive music: a drum kit and a plucked bass at 120 beats per minute. Kick on beats 1 and
/// 3, snare on 2 and 4, closed hi-hat on every eighth, a bass note on each beat, and a bar of
/// rest (the last notes ringing out, then silence) every fourth bar.
public struct DrumKitGenerator: SignalGenerator {
    private let rate: Double
    private var scale: Double
    private var rng: SplitMix64
    private var n = 0
    private var bassFrequency = 55.0
    private var hatState = 0.0
    private var snareState = 0.0

    static let beat = 0.5

    public init(rms: Double, sampleRate: Double, seed: UInt64) {
        rate = sampleRate
        rng = SplitMix64(seed: seed)
        scale = 1
        var probe = self
        scale = scaleToRMS(rms, sampleRate: sampleRate) { probe.next() }
    }

    public mutating func render(into out: UnsafeMutableBufferPointer<Float>) {
        for i in out.indices { out[i] = Float(scale * next()) }
    }

    private mutating func next() -> Double {
        let t = Double(n) / rate
        n += 1
        let bar = Int(t / (4 * Self.beat))
        let resting = bar % 4 == 3
        // In the rest bar the last beat (a snare and a bass note) rings out and nothing starts.
        let beatIndex = resting ? bar * 4 - 1 : Int(t / Self.beat)
        let inBeat = t - Double(beatIndex) * Self.beat
        if !resting && inBeat * rate < 1 {
            let notes = [55.0, 65.41, 73.42, 82.41]
            bassFrequency = notes[Int(rng.next() % UInt64(notes.count))]
        }
        var v = 0.0
        // Bass: three partials, plucked.
        let bassEnvelope = exp(-inBeat / 0.18)
        for h in 1...3 { v += 0.5 * bassEnvelope * sin(2 * Double.pi * bassFrequency * Double(h) * inBeat) / Double(h * h) }
        if beatIndex % 2 == 0 {
            // Kick: a falling sine.
            v += 1.5 * exp(-inBeat / 0.08) * sin(2 * Double.pi * (50 * inBeat + 70 * 0.03 * (1 - exp(-inBeat / 0.03))))
        } else {
            // Snare: a 190 Hz body and band-limited noise.
            snareState += 0.5 * (rng.nextGaussian() - snareState)
            v += exp(-inBeat / 0.05) * (0.5 * sin(2 * Double.pi * 190 * inBeat) + 0.8 * snareState)
        }
        if resting { return v }
        let inEighth = t.truncatingRemainder(dividingBy: Self.beat / 2)
        // Hi-hat: white noise less its low-passed self (a crude high-pass), 30 ms decay.
        let white = rng.nextGaussian()
        hatState += 0.3 * (white - hatState)
        v += 0.35 * exp(-inEighth / 0.03) * (white - hatState)
        return v
    }
}

/// The factor that brings a generator's output to `rms`, measured on its first 8 s.
func scaleToRMS(_ rms: Double, sampleRate: Double, _ next: () -> Double) -> Double {
    var sum = 0.0
    let count = Int(8 * sampleRate)
    for _ in 0..<count { let v = next(); sum += v * v }
    return rms / max((sum / Double(count)).squareRoot(), 1e-12)
}
