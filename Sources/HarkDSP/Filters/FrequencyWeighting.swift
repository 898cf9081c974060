import FoundationEssentials
import Glibc

/// The frequency weightings of IEC 61672-1.
///
/// - `a`, `c`: the standard's analog design goals, realised digitally by
///   ``sections(sampleRate:)``.
/// - `z`: flat ("zero"). Realised as a first-order 0.5 Hz high-pass so that a DC offset in a
///   recording (common with cheap converters) does not count as sound; the deviation from flat
///   is below 0.011 dB from 10 Hz up.
public enum FrequencyWeighting: String, Sendable, CaseIterable, Codable {
    case a = "A"
    case c = "C"
    case z = "Z"

    // Pole frequencies of IEC 61672-1 Annex E, unrounded (the standard prints 20.60, 107.7,
    // 737.9 and 12194 Hz).
    static let f1 = 20.598997057568145
    static let f2 = 107.65264864304628
    static let f3 = 737.8622307362899
    static let f4 = 12194.21714799801
    static let a1000 = -1.9997
    static let c1000 = -0.0619

    /// The design goal of the weighting at `f` Hz, in dB, normalised to 0 dB at 1 kHz.
    public func designGoal(atFrequency f: Double) -> Double {
        let f2sq = f * f
        let p1 = f2sq + Self.f1 * Self.f1
        let p4 = f2sq + Self.f4 * Self.f4
        switch self {
        case .z:
            return 0
        case .c:
            return 20 * log10(Self.f4 * Self.f4 * f2sq / (p1 * p4)) - Self.c1000
        case .a:
            let p2 = (f2sq + Self.f2 * Self.f2).squareRoot()
            let p3 = (f2sq + Self.f3 * Self.f3).squareRoot()
            return 20 * log10(Self.f4 * Self.f4 * f2sq * f2sq / (p1 * p2 * p3 * p4)) - Self.a1000
        }
    }

    /// The digital filter that realises this weighting at `sampleRate`, as a cascade of sections
    /// with exactly 0 dB at 1 kHz.
    ///
    /// A plain bilinear transform of the analog filter errs −6 dB at 16 kHz at 48 kHz, because
    /// it squeezes the 12.2 kHz poles towards Nyquist. Instead:
    /// 1. the low-frequency poles (20.6, 107.7, 737.9 Hz), far below Nyquist, go through the
    ///    bilinear transform, which is exact there and keeps the zeros at DC exact;
    /// 2. the double pole at 12.2 kHz is mapped by matched-z (`p = e^(−2π f4 / fs)`);
    /// 3. a 4th-order numerator for that section is fitted (``MagnitudeFit``) over
    ///    10 Hz – 0.95·Nyquist to whatever the analog goal still needs, in its minimum-phase
    ///    form so that peaks behave like the analog filter's.
    /// The result stays within 0.02 dB of the goal from 10 Hz to 16 kHz at 44.1 and 48 kHz
    /// and within 0.06 dB at every rate from 8 to 192 kHz (see the tests).
    public func sections(sampleRate fs: Double) -> [FilterSection] {
        switch self {
        case .z:
            return Self.normalised([Self.bilinearHighPass(0.5, sampleRate: fs)], sampleRate: fs)
        case .c:
            let low = [Self.bilinearHighPassPair(Self.f1, Self.f1, sampleRate: fs)]
            return Self.normalised(low + [Self.matchedHighSection(for: self, after: low, sampleRate: fs)],
                                   sampleRate: fs)
        case .a:
            let low = [Self.bilinearHighPassPair(Self.f1, Self.f1, sampleRate: fs),
                       Self.bilinearHighPassPair(Self.f2, Self.f3, sampleRate: fs)]
            return Self.normalised(low + [Self.matchedHighSection(for: self, after: low, sampleRate: fs)],
                                   sampleRate: fs)
        }
    }

    /// Two first-order analog high-passes `s/(s+ωa) · s/(s+ωb)` through the bilinear transform.
    static func bilinearHighPassPair(_ fa: Double, _ fb: Double, sampleRate fs: Double) -> FilterSection {
        let k = 2 * fs
        let wa = 2 * Double.pi * fa, wb = 2 * Double.pi * fb
        let ra = (k - wa) / (k + wa), rb = (k - wb) / (k + wb)
        let g = k * k / ((k + wa) * (k + wb))
        return FilterSection(b0: g, b1: -2 * g, b2: g, a1: -(ra + rb), a2: ra * rb)
    }

    /// One first-order analog high-pass `s/(s+ω)` through the bilinear transform.
    static func bilinearHighPass(_ fc: Double, sampleRate fs: Double) -> FilterSection {
        let k = 2 * fs
        let w = 2 * Double.pi * fc
        return FilterSection(b0: k / (k + w), b1: -k / (k + w), a1: -(k - w) / (k + w))
    }

    /// The 12.2 kHz section: matched-z double pole and a fitted minimum-phase 4th-order numerator.
    static func matchedHighSection(for weighting: FrequencyWeighting, after low: [FilterSection],
                                   sampleRate fs: Double) -> FilterSection {
        let p = exp(-2 * Double.pi * f4 / fs)
        let a1 = -2 * p, a2 = p * p
        let poles = FilterSection(b0: 1, a1: a1, a2: a2)
        let b = MagnitudeFit.minimumPhaseNumerator(
            order: 4, sampleRate: fs, from: 10, to: 0.95 * fs / 2,
            // Above 20 kHz the filter only has to stay sane, not exact.
            weight: { $0 <= 20_000 ? 1 : 0.1 },
            wanted: { f in
                let omega = 2 * Double.pi * f / fs
                var h = poles.response(atAngle: omega)
                for s in low { h = h * s.response(atAngle: omega) }
                return pow(10, weighting.designGoal(atFrequency: f) / 10) / h.magnitudeSquared
            })
        return FilterSection(b0: b[0], b1: b[1], b2: b[2], b3: b[3], b4: b[4], a1: a1, a2: a2)
    }

    /// Scales the last section so the cascade reads exactly 0 dB at 1 kHz.
    static func normalised(_ sections: [FilterSection], sampleRate fs: Double) -> [FilterSection] {
        let gain = cascadeGain(sections, frequency: 1000, sampleRate: fs)
        var out = sections
        out[out.count - 1] = out[out.count - 1].scaled(by: pow(10, -gain / 20))
        return out
    }
}
