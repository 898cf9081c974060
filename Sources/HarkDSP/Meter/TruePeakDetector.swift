import FoundationEssentials
import Glibc

/// Finds the largest absolute value of the band-limited signal that a block of samples
/// represents, including the crests that fall between samples.
///
/// A one-cycle 8 kHz burst at 44.1 kHz crests up to 1 dB above its largest sample, so IEC
/// 61672-1's peak level cannot be read from the samples alone. Each sample interval is
/// interpolated at 4× with a 16-tap Kaiser-windowed sinc per phase, and a parabola through the
/// highest grid point and its neighbours refines the crest (error below 0.01 dB for sines up
/// to 0.38·fs).
///
/// Only intervals that could raise the peak are interpolated: those with a sample at least
/// half (−6 dB) of the peak found so far. For a sine of frequency f, one of the two samples
/// around its crest is at least cos(π f/fs) of it, which is ≥ ½ for every f ≤ fs/3 (16 kHz at
/// 48 kHz), so no such crest is missed; above fs/3 the C weighting has already taken ≥ 8.5 dB
/// off. This keeps the cost at a few per cent of samples for noise-like signals.
///
/// Interpolating needs 8 samples of look-ahead, so a block's last intervals are reported with
/// the next block; ``flush(floor:)`` releases them at the end of a stream.
struct TruePeakDetector {
    static let oversampling = 4
    static let halfLength = 8                 // taps on each side of an interval
    static let tapsPerPhase = 2 * halfLength  // 16
    static let candidateRatio: Float = 0.5
    /// Samples kept from the previous block: the taps before an interval, plus one more so a
    /// crest just before a sample can be refined from the preceding interval's grid point.
    static let kept = tapsPerPhase

    /// Taps for the fractional positions 1/4, 1/2, 3/4, each over samples m−7 … m+8.
    private let phases: (SIMD16<Float>, SIMD16<Float>, SIMD16<Float>)
    private var history: [Float]

    init() {
        let beta = 7.0
        let half = Double(Self.halfLength)
        var p: [SIMD16<Float>] = []
        for phase in 1..<Self.oversampling {
            let t = Double(phase) / Double(Self.oversampling)
            var taps = [Double](repeating: 0, count: Self.tapsPerPhase)
            for j in 0..<Self.tapsPerPhase {
                let d = Double(j - (Self.halfLength - 1)) - t    // distance from the point, in samples
                let sinc = d == 0 ? 1 : sin(Double.pi * d) / (Double.pi * d)
                let r = d / half
                let window = abs(r) >= 1 ? 0 : besselI0(beta * (1 - r * r).squareRoot()) / besselI0(beta)
                taps[j] = sinc * window
            }
            // Unity gain at DC for every phase, so a constant reads as itself.
            let dc = taps.reduce(0, +)
            var v = SIMD16<Float>()
            for j in 0..<Self.tapsPerPhase { v[j] = Float(taps[j] / dc) }
            p.append(v)
        }
        phases = (p[0], p[1], p[2])
        history = [Float](repeating: 0, count: Self.kept)
    }

    /// Scans `block` and returns the largest true-peak magnitude among the intervals it
    /// completes, or `floor` if none beats it. `floor` is a peak already known for the
    /// current period: intervals that cannot beat it are skipped.
    mutating func scan(_ block: UnsafeBufferPointer<Float>, floor: Float) -> Float {
        history.append(contentsOf: block)
        defer { history.removeFirst(block.count) }
        var peak = floor
        let (p1, p2, p3) = phases
        history.withUnsafeBufferPointer { h in
            let base = UnsafeRawPointer(h.baseAddress!)
            let lead = Self.halfLength - 1
            // Interval (m, m+1) uses h[m−7 … m+8]; the first kept sample is only for refining.
            var m = Self.halfLength
            let end = h.count - Self.halfLength
            while m < end {
                let x0 = abs(h[m]), x1 = abs(h[m + 1])
                let edge = max(x0, x1)
                if edge > peak { peak = edge }
                if edge >= peak * Self.candidateRatio {
                    let w = base.loadUnaligned(fromByteOffset: (m - lead) * 4, as: SIMD16<Float>.self)
                    let g1 = abs((p1 * w).sum()), g2 = abs((p2 * w).sum()), g3 = abs((p3 * w).sum())
                    var crest: Float
                    if g1 >= x0 && g1 >= g2 && g1 >= g3 && g1 >= x1 {
                        crest = Self.parabola(x0, g1, g2)
                    } else if g2 >= x0 && g2 >= g3 && g2 >= x1 {
                        crest = Self.parabola(g1, g2, g3)
                    } else if g3 >= x0 && g3 >= x1 {
                        crest = Self.parabola(g2, g3, x1)
                    } else if x0 >= x1 {
                        // The crest is at or just before sample m: refine with the point a quarter
                        // sample earlier, i.e. the 3/4 point of the previous interval.
                        let wPrev = base.loadUnaligned(fromByteOffset: (m - 1 - lead) * 4, as: SIMD16<Float>.self)
                        crest = Self.parabola(abs((p3 * wPrev).sum()), x0, g1)
                    } else {
                        // At or just after sample m+1: the next interval refines it.
                        crest = x1
                    }
                    if crest > peak { peak = crest }
                }
                m += 1
            }
        }
        return peak
    }

    /// Vertex of the parabola through three equally spaced magnitudes, if the middle one is
    /// a local crest; otherwise the middle value (the crest lies in another interval).
    @inline(__always)
    static func parabola(_ l: Float, _ c: Float, _ r: Float) -> Float {
        let curvature = l - 2 * c + r
        guard c >= l, c >= r, curvature < 0 else { return c }
        return max(c, c - (r - l) * (r - l) / (8 * curvature))
    }

    /// Releases the last intervals by running silence through the look-ahead.
    mutating func flush(floor: Float) -> Float {
        let zeros = [Float](repeating: 0, count: Self.halfLength + 1)
        return zeros.withUnsafeBufferPointer { scan($0, floor: floor) }
    }
}
