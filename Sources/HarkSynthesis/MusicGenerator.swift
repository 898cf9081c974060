import HarkDSP
import FoundationEssentials
import Glibc

/// Music-like test signal: a chord every two seconds (four notes, eight harmonics each,
/// decaying), an eighth-note melody an octave up, a kick drum on every beat and a hi-hat
/// between beats, at 120 beats per minute. Not music, but it has what matters to a watermark:
/// strong harmonic partials with quiet gaps between them, beats that modulate the level, and a
/// spectrum falling steeply above a few kHz.
public struct MusicGenerator: SignalGenerator {
    private var rng: SplitMix64
    private let rate: Double
    private let scale: Double
    private var n = 0
    private var chord: [Double] = []
    private var chordPhases: [Double] = []
    private var melody = 0.0
    private var melodyPhase = 0.0
    private let beat: Double
    private let roots: [Double]
    private let shape: [Double]

    static let roots = [220.0, 246.9, 196.0, 174.6, 261.6]
    static let steps = [1.0, 1.125, 1.26, 1.33, 1.5, 1.68, 1.89, 2.0]

    /// What makes one piece another song rather than the same one in other bars: its chords'
    /// roots, their shape (ratios to the root) and its tempo.
    public struct Style: Sendable {
        public var roots: [Double]
        public var shape: [Double]
        public var tempo: Double

        /// Today's music: five roots of one scale, major chords, 120 beats per minute.
        public static let standard = Style(roots: MusicGenerator.roots, shape: [1, 1.26, 1.5, 2], tempo: 120)

        /// Another song drawn from `seed`: five roots anywhere from 150 to 320 Hz (off any common
        /// scale), one of four chord shapes, 80 to 150 beats per minute.
        public static func drawn(seed: UInt64) -> Style {
            var r = SplitMix64(seed: seed &+ 77)
            let shapes: [[Double]] = [[1, 1.26, 1.5, 2], [1, 1.19, 1.5, 2], [1, 1.26, 1.5, 1.78], [1, 1.33, 1.5, 2]]
            let roots = (0..<5).map { _ in 150 * pow(320 / 150, r.nextUniform()) }
            let shape = shapes[Int(r.next() % 4)]
            return Style(roots: roots, shape: shape, tempo: 80 + 70 * r.nextUniform())
        }

        public init(roots: [Double], shape: [Double], tempo: Double) {
            (self.roots, self.shape, self.tempo) = (roots, shape, tempo)
        }
    }

    public init(rms: Double, sampleRate: Double, seed: UInt64, style: Style = .standard) {
        rng = SplitMix64(seed: seed)
        rate = sampleRate
        beat = 60 / style.tempo
        roots = style.roots
        shape = style.shape
        var probe = MusicGenerator(unscaledRate: sampleRate, seed: seed, style: style)
        var sum = 0.0
        let count = Int(8 * sampleRate)
        for _ in 0..<count { let v = probe.next(); sum += v * v }
        scale = rms / max((sum / Double(count)).squareRoot(), 1e-12)
    }

    private init(unscaledRate: Double, seed: UInt64, style: Style) {
        rng = SplitMix64(seed: seed)
        rate = unscaledRate
        scale = 1
        beat = 60 / style.tempo
        roots = style.roots
        shape = style.shape
    }

    public mutating func render(into out: UnsafeMutableBufferPointer<Float>) {
        for i in out.indices { out[i] = Float(scale * next()) }
    }

    private mutating func next() -> Double {
        let t = Double(n) / rate
        let barLength = 4 * beat
        let bar = Int(t / barLength)
        let inBar = t - Double(bar) * barLength
        if n == 0 || Int(Double(n - 1) / rate / barLength) != bar {
            let root = roots[rng.next(below: roots.count)]
            chord = shape.map { root * $0 }
            chordPhases = (0..<32).map { _ in 2 * Double.pi * rng.nextUniform() }
        }
        let eighth = beat / 2
        let inEighth = t.truncatingRemainder(dividingBy: eighth)
        if n == 0 || Int(Double(n - 1) / rate / eighth) != Int(t / eighth) {
            melody = chord[0] * 2 * Self.steps[rng.next(below: Self.steps.count)]
        }
        var v = 0.0
        let chordEnvelope = min(1, inBar / 0.02) * exp(-inBar / 1.5)
        for (i, f0) in chord.enumerated() {
            for h in 1...8 where f0 * Double(h) < 9000 {
                v += chordEnvelope * sin(2 * Double.pi * f0 * Double(h) * t + chordPhases[i * 8 + h - 1]) / pow(Double(h), 1.3)
            }
        }
        for h in 1...5 {
            v += 0.6 * exp(-inEighth / 0.3) * sin(2 * Double.pi * melody * Double(h) * inEighth) / pow(Double(h), 1.5)
        }
        let inBeat = t.truncatingRemainder(dividingBy: beat)
        if inBeat < 0.25 {
            v += 2 * exp(-inBeat / 0.06) * sin(2 * Double.pi * (50 * inBeat + 60 * 0.03 * (1 - exp(-inBeat / 0.03))))
        }
        let offBeat = (t - beat / 2).truncatingRemainder(dividingBy: beat)
        if t >= beat / 2 && offBeat < 0.05 {
            v += 0.3 * exp(-offBeat / 0.01) * rng.nextGaussian()
        }
        n += 1
        return v
    }
}

extension SplitMix64 {
    /// Uniform in 0..<n.
    mutating func next(below n: Int) -> Int { Int(next() % UInt64(n)) }
}
