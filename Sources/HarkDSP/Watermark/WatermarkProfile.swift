import FoundationEssentials
import Glibc

/// Which band a watermark's tones use, chosen for the path the audio takes to the microphone.
/// Embedder and detector must use the same profile (the app knows which it is in: "TV Shake"
/// or "Stadium Shake").
///
/// - ``tv``: 300 Hz – 6 kHz. Small TV speakers give little under 150 Hz, phone microphones are
///   flat to 4–8 kHz, and the living room's noise is as strong up high as the programme.
/// - ``stadium``: 600 Hz – 7.5 kHz. A PA is full-band, while a crowd's voices and the bowl's
///   reverberation crowd the low and middle bands: 8 dB of crowd over the programme buries the
///   mark there, and the tones that get through are the high ones. On the bench's stadium (10 s,
///   catalogue of 100) this band heard 57.5 % of the marks where the TV band heard 38.8 %; on
///   the living room at SNR 0 dB it would cost music hosts (35 → 29 of 48 heard with a
///   catalogue, 16 → 8 decoded), which is why TV keeps its own band (docs/watermark.md).
public enum WatermarkProfile: String, Sendable, CaseIterable, Codable {
    case tv
    case stadium

    /// Lowest and highest grid frequency, Hz.
    public var band: ClosedRange<Double> {
        switch self {
        case .tv: return 300...6000
        case .stadium: return 600...7500
        }
    }

    /// The embedding strength (tone power re its share of the host's masking threshold, dB)
    /// that grades as transparent with PEAQ on the bench's hosts whatever the payload and key:
    /// for TV, median ODG ≥ −0.5 and every host's worst of eight payload-and-key draws ≥ −1.0;
    /// for a stadium's PA feed, ≥ −1.0 and ≥ −1.5 (the crowd covers more), on three draws of
    /// hosts. docs/watermark.md has the grade of every strength.
    public var defaultStrength: Double {
        switch self {
        case .tv: return -2
        case .stadium: return 0
        }
    }

    /// Points drawn on the band before rounding (neighbours that round together merge): 284
    /// grid points for TV, 402 for the stadium; a symbol's 144 candidates need at least 144.
    var gridDraws: Int {
        switch self {
        case .tv: return 285
        case .stadium: return 420
        }
    }

    /// The frequencies tones may take: the band, as dense as the critical bandwidth is wide
    /// (for TV: 70 Hz apart near 1 kHz, 30 Hz near 3 kHz, 10 Hz above 4.5 kHz), on multiples of
    /// ``WatermarkFormat/gridResolution``.
    ///
    /// A tone's level follows its critical band, and its power over the detector's floor grows
    /// with that band's width in bins: a tone at 5 kHz stands 9 dB higher than one at 500 Hz
    /// and costs less of the −20 dB budget, which goes where the host has its power. On the
    /// bench's living room (SNR 10 dB, 6 s) a grid uniform in Hz found 29 % of the marks, this
    /// one 59 %, one uniform on the Bark scale 9 % (docs/watermark.md).
    public var grid: [Double] { self == .tv ? Self.tvGrid : Self.stadiumGrid }

    private static let tvGrid = makeGrid(WatermarkProfile.tv)
    private static let stadiumGrid = makeGrid(WatermarkProfile.stadium)

    private static func makeGrid(_ profile: WatermarkProfile) -> [Double] {
        // Cumulative density on a 1 Hz lattice, cut into equal steps, rounded to the resolution.
        let (lowest, highest) = (profile.band.lowerBound, profile.band.upperBound)
        var cumulative: [Double] = [0]
        var f = lowest
        while f < highest {
            cumulative.append(cumulative[cumulative.count - 1] + WatermarkFormat.criticalBandwidth(f))
            f += 1
        }
        var points: [Double] = []
        let draws = profile.gridDraws
        for i in 0..<draws {
            let target = cumulative[cumulative.count - 1] * Double(i) / Double(draws)
            var lo = 0, hi = cumulative.count - 1
            while lo < hi {
                let m = (lo + hi) / 2
                if cumulative[m] < target { lo = m + 1 } else { hi = m }
            }
            let q = ((lowest + Double(lo)) / WatermarkFormat.gridResolution).rounded() * WatermarkFormat.gridResolution
            if points.last.map({ q > $0 }) ?? true { points.append(q) }
        }
        return points
    }
}
