@testable import HarkDSP
import HarkSynthesis

/// Signals the DSP tests listen to, from the project's generators.
enum TestAudio {
    static func render<G: SignalGenerator>(_ g: G, seconds: Double, rate: Double) -> [Float] {
        var g = g
        var x = [Float](repeating: 0, count: Int(seconds * rate))
        x.withUnsafeMutableBufferPointer { g.render(into: $0) }
        return x
    }

    /// A song in a style drawn from its seed.
    static func song(_ seed: UInt64, seconds: Double = 30, rms: Double = 0.1, rate: Double) -> [Float] {
        render(MusicGenerator(rms: rms, sampleRate: rate, seed: seed, style: .drawn(seed: seed)), seconds: seconds, rate: rate)
    }
}
