import HarkDSP
import FoundationEssentials
import Glibc

/// A source of synthetic mono samples, rendered block by block so that hours of signal take
/// constant memory. Every generator is deterministic: the same parameters (and seed) give the
/// same samples whatever the block sizes.
public protocol SignalGenerator {
    /// Fills `out` with the next samples.
    mutating func render(into out: UnsafeMutableBufferPointer<Float>)
}

/// A steady sine.
public struct SineGenerator: SignalGenerator {
    private let step: Double
    private let amplitude: Double
    private var phase: Double

    /// - Parameters:
    ///   - amplitude: peak value (1 is full scale).
    ///   - phase: starting phase in radians.
    public init(frequency: Double, amplitude: Double, sampleRate: Double, phase: Double = 0) {
        step = 2 * Double.pi * frequency / sampleRate
        self.amplitude = amplitude
        self.phase = phase
    }

    public mutating func render(into out: UnsafeMutableBufferPointer<Float>) {
        for i in out.indices {
            out[i] = Float(amplitude * sin(phase))
            phase += step
            // Wrapping keeps the phase small, so hours of tone stay as pure as the first second.
            if phase > 2 * Double.pi { phase -= 2 * Double.pi }
        }
    }
}

/// A logarithmic (exponential) sine sweep from `from` to `to` Hz over `duration` seconds; it
/// holds the final frequency if asked for more samples.
public struct SweepGenerator: SignalGenerator {
    private let f1: Double
    private let rate: Double
    private let k: Double          // ln(f2/f1) / T
    private let duration: Double
    private let amplitude: Double
    private var n = 0

    public init(from f1: Double, to f2: Double, duration: Double, amplitude: Double, sampleRate: Double) {
        self.f1 = f1
        rate = sampleRate
        k = log(f2 / f1) / duration
        self.duration = duration
        self.amplitude = amplitude
    }

    public mutating func render(into out: UnsafeMutableBufferPointer<Float>) {
        let endPhase = 2 * Double.pi * f1 * (exp(k * duration) - 1) / k
        let endFrequency = f1 * exp(k * duration)
        for i in out.indices {
            let t = Double(n) / rate
            // φ(t) = 2π f1 (e^(kt) − 1) / k: the instantaneous frequency f1·e^(kt) rises
            // by the same ratio every second.
            let phase = t <= duration
                ? 2 * Double.pi * f1 * (exp(k * t) - 1) / k
                : endPhase + 2 * Double.pi * endFrequency * (t - duration)
            out[i] = Float(amplitude * sin(phase))
            n += 1
        }
    }
}

/// Gaussian white noise.
public struct WhiteNoiseGenerator: SignalGenerator {
    private var random: SplitMix64
    private let rms: Double

    public init(rms: Double, seed: UInt64) {
        random = SplitMix64(seed: seed)
        self.rms = rms
    }

    public mutating func render(into out: UnsafeMutableBufferPointer<Float>) {
        for i in out.indices { out[i] = Float(rms * random.nextGaussian()) }
    }
}

/// Pink noise (power falling 3 dB per octave), from white noise through ``PinkingFilter``.
public struct PinkNoiseGenerator: SignalGenerator {
    private var random: SplitMix64
    private var filter: PinkingFilter
    private let scale: Double

    public init(rms: Double, sampleRate: Double, seed: UInt64) {
        random = SplitMix64(seed: seed)
        filter = PinkingFilter(sampleRate: sampleRate)
        scale = rms / filter.whiteNoiseGain
    }

    public mutating func render(into out: UnsafeMutableBufferPointer<Float>) {
        for i in out.indices { out[i] = Float(scale * filter.tick(random.nextGaussian())) }
    }
}

/// Tone bursts: `burst` seconds of a sine starting at a rising zero crossing, repeated every
/// `period` seconds, silence in between (the IEC 61672-1 toneburst test signal).
public struct ToneBurstGenerator: SignalGenerator {
    private let step: Double
    private let amplitude: Double
    private let burstSamples: Int
    private let periodSamples: Int
    private var n = 0

    public init(frequency: Double, amplitude: Double, burst: Double, period: Double, sampleRate: Double) {
        step = 2 * Double.pi * frequency / sampleRate
        self.amplitude = amplitude
        burstSamples = max(1, Int((burst * sampleRate).rounded()))
        periodSamples = max(burstSamples, Int((period * sampleRate).rounded()))
    }

    public mutating func render(into out: UnsafeMutableBufferPointer<Float>) {
        for i in out.indices {
            let k = n % periodSamples
            out[i] = k < burstSamples ? Float(amplitude * sin(step * Double(k))) : 0
            n += 1
        }
    }
}

/// Digital silence.
public struct SilenceGenerator: SignalGenerator {
    public init() {}
    public mutating func render(into out: UnsafeMutableBufferPointer<Float>) {
        out.update(repeating: 0)
    }
}
