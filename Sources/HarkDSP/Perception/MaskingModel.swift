import FoundationEssentials
import Glibc
import HarkFFT

/// How much sound a host hides, frame by frame: for each partition of the spectrum (a quarter
/// of a critical band wide), the power that noise or tones added within one critical band
/// around it may have and stay inaudible. The watermark embedder caps every tone by it.
///
/// The model follows the classic perceptual coders and PEAQ's ear model (docs/watermark.md,
/// "Perceptual model", has the constants, their sources and what each choice measured):
///
/// 1. **Frames**: a Hann window of about 43 ms (2048 samples at 48 kHz), every quarter frame
///    (about 11 ms).
/// 2. **Partitions**: bins grouped into partitions of at least 0.25 Bark (Zwicker's critical-band
///    rate, `z = 13 atan(0.76 f/kHz) + 3.5 atan((f/7.5 kHz)²)`).
/// 3. **Spreading** across partitions with PEAQ's slopes (after Terhardt): 27 dB per Bark
///    downwards, and upwards `24 + 230 Hz / f − 0.2 L` dB per Bark for a masker at `f` Hz and
///    `L` dB SPL, so a loud masker reaches further up than a quiet one. Summed over
///    quarter-Bark partitions, the spread energy is close to the host's energy in one critical
///    band around the partition.
/// 4. **Tonality** from predictability, as in MPEG-1 psychoacoustic model 2: each bin's
///    magnitude and phase are predicted from the two frames before; the energy-weighted
///    unpredictability `c` is spread like the energy and mapped to `α = −0.299 − 0.43 ln c`,
///    clipped to 0…1 (1: a steady tone; 0: noise).
/// 5. **Offset** after Johnston (1988): the threshold lies `α (14.5 + z) + (1 − α) 5.5` dB under
///    the spread energy, but never more than ``tonalOffsetCap`` (21 dB). A tonal host therefore
///    hides 20–21 dB less than a noisy one above 1 kHz.
/// 6. **Threshold in quiet** (Terhardt), at a stated playback level: a full-scale sine plays at
///    ``fullScaleSPL`` (92 dB SPL). Where the masked threshold falls under it, the host masks
///    nothing there and the threshold is 0: in digital silence, or a pause the host cannot
///    cover, nothing may sound at all.
/// 7. **A ceiling at the host's own band** below ``ownBandCeilingTop`` (3 kHz): there the
///    threshold is at most the host's own, unspread energy within ±0.5 Bark, less
///    ``ownBandCeiling`` (12 dB). Spreading lends a band the host leaves thin the masking of a
///    loud neighbour; a mark filling it changes that band's envelope, which PEAQ hears.
/// 8. **Level discrimination**, when asked for (``LevelDiscrimination``; the embedder asks for
///    it when it follows a crowd's masking): the louder a band, the finer the ear tells a
///    change of its level, so a loud band's threshold is lowered by how much finer.
///
/// Time is left to ``TemporalMasking``: the frame sees 43 ms at once, so its threshold is the
/// simultaneous masking of the frame's host, and the short-time envelope decides how much of
/// it each moment may use (forward masking decaying with 10 ms, no pre-masking).
///
/// Powers are mean squares of the sample values (a sine of amplitude `a` has power `a²/2`).
/// One instance analyses one stream; it keeps the two previous frames for tonality.
public final class MaskingModel {
    /// The sound pressure level at which a full-scale sine plays (dB SPL).
    public static let fullScaleSPL = 92.0
    /// The most the threshold lies under a tonal masker, dB. Johnston's `14.5 + z` reaches 33 dB
    /// at 6 kHz, far more than MPEG-1's psychoacoustic model 1 (its tonal masking index,
    /// `−1.525 − 0.275 z − 4.5` dB, is 11 dB there); PEAQ graded the cap's cost on the bench's
    /// tonal hosts at the TV default (solo flute −0.47 → −0.59, solo piano −0.28 → −0.46,
    /// music −0.29 → −0.43, no other host moved), and it lifted open decoding of tonal music
    /// within 3 s from 40 to 48 of 48 (docs/watermark.md, "Transparency").
    public static let tonalOffsetCap = 21.0
    /// How far under the host's own energy within ±``ownBandHalfWidth`` Bark a partition's
    /// threshold lies at most, dB (below ``ownBandCeilingTop``). Measured on the transparency
    /// and robustness benches (docs/watermark.md, Transparency, "The ceiling at the host's own
    /// band"): below 3 kHz it buys PEAQ grades at less cost to detection than a lower strength
    /// would (TV −2 dB with it grades as −3.5 dB without, and hears what −3 to −2.5 dB did); above
    /// 3 kHz the mark that speech's formants lend is what a room hears, so it stops there.
    public static let ownBandCeiling = 12.0
    /// The ceiling applies to partitions centred under this frequency (Hz), by default.
    public static let ownBandCeilingTop = 3000.0
    /// Half the width of the host's own band, in Bark.
    public static let ownBandHalfWidth = 0.5
    /// The narrowest partition, in Bark.
    public static let partitionWidth = 0.25
    /// Frame length in seconds (rounded to a power of two in samples) and hops per frame.
    static let frameSeconds = 0.0427
    static let hopsPerFrame = 4

    /// How a loud band's threshold is lowered for the ear's finer level discrimination there.
    ///
    /// PEAQ (ITU-R BS.1387) models the chance that a listener notices a rise of `e` dB in the
    /// excitation of a band at level `L` as `1 − 2^−(e/s(L))^6`, with a slope `s(L)` that falls
    /// from 0.94 dB at 40 dB to 0.47 dB at 70 dB and 0.32 dB at 80 dB: in a band 30 dB louder,
    /// the same share of the threshold is some 700 times likelier to be noticed. The threshold
    /// above gives every band the same share, so a mark at it is heard in the loudest bands
    /// first. Where a band's level `L` (its spread energy at ``fullScaleSPL``, weighted by
    /// PEAQ's outer and middle ear) exceeds ``reference``, its threshold is multiplied by
    /// `(s(L) / s(reference))^exponent`; quieter bands keep theirs, so a threshold is only ever
    /// lowered. Exponent 1 would even out the chance of detection band by band; under a crowd
    /// the loud bands are the crowd's speech, which also covers the mark at the microphone, so
    /// the mark gives up little there, and a larger exponent measured better (``crowd``).
    public struct LevelDiscrimination: Sendable, Equatable {
        /// dB (as PEAQ's excitation levels) above which a band's threshold is lowered.
        public let reference: Double
        /// How far past PEAQ's own slope ratio (1) the threshold is lowered.
        public let exponent: Double
        /// PEAQ's slope at ``reference``, kept: ``factor(atLevel:)`` runs per band and frame.
        private let referenceSlope: Double

        public init(reference: Double, exponent: Double) {
            (self.reference, self.exponent) = (reference, exponent)
            referenceSlope = Self.slope(atLevel: reference)
        }

        /// The setting for a mark that follows a crowd's masking: −6 dB at 60 dB, −14 dB at 70.
        /// The steepest exponent tried heard the most through the stadium at the same PEAQ
        /// grade as heard (docs/watermark.md, "The crowd as a masker", has the exponents
        /// measured).
        public static let crowd = LevelDiscrimination(reference: 50, exponent: 6)

        /// PEAQ's slope of detection probability at excitation level `level` dB (BS.1387, the
        /// basic version's probability of detection), dB.
        public static func slope(atLevel level: Double) -> Double {
            let l = max(level, 1)
            return 5.95072 * pow(6.39468 / l, 1.71332) + 9.01033e-11 * pow(l, 4) + 5.05622e-6 * pow(l, 3)
                - 0.00102438 * l * l + 0.0550197 * l - 0.198719
        }

        /// PEAQ's outer and middle ear weighting at `f` Hz, dB.
        public static func earWeighting(_ f: Double) -> Double {
            let k = max(f, 20) / 1000
            return -0.6 * 3.64 * pow(k, -0.8) + 6.5 * exp(-0.6 * (k - 3.3) * (k - 3.3)) - 1e-3 * pow(k, 3.6)
        }

        /// PEAQ's slope is fitted up to about here, where it is smallest (0.18 dB); its
        /// polynomial climbs again beyond, which no ear does.
        static let finestLevel = 98.7

        /// The factor for a band at `level` dB: 1 up to ``reference``, then below 1, falling
        /// with the level.
        public func factor(atLevel level: Double) -> Double {
            guard level > reference else { return 1 }
            let slope = Self.slope(atLevel: min(level, Self.finestLevel))
            return min(1, pow(slope / referenceSlope, exponent))
        }
    }

    public let sampleRate: Double
    /// Lowers loud bands' thresholds (nil: the classic model).
    public let levelDiscrimination: LevelDiscrimination?
    /// Samples per analysis frame (the FFT size).
    public let frameLength: Int
    /// Samples between frames.
    public let hop: Int
    /// Number of partitions.
    public var partitionCount: Int { partitionBins.count }
    /// Critical-band rate at each partition's centre (Bark).
    public let partitionBark: [Double]
    /// Frequency at each partition's centre (Hz).
    public let partitionFrequency: [Double]

    private let partitionBins: [Range<Int>]
    private let fft: RealFFT
    private let window: [Float]
    private let powerScale: Double
    /// Downward spreading weights, row-major [masker][maskee], linear power.
    private let lowerWeights: [Double]
    private let quiet: [Double]
    /// For each partition under the ceiling's top, the partitions whose energy is its own band.
    private let ownBand: [Range<Int>?]
    private let ownBandFactor = pow(10, -ownBandCeiling / 10)
    /// Per partition, PEAQ's ear weighting in dB plus the level of a power of 1 at ``fullScaleSPL``.
    private let levelOffset: [Double]

    // State.
    // Per-frame state in buffers the model owns: arrays in a class pay an exclusivity check on
    // every element access, which took a third of the embedder's time.
    private let magnitude1: UnsafeMutableBufferPointer<Float>, magnitude2: UnsafeMutableBufferPointer<Float>
    private let phase1: UnsafeMutableBufferPointer<SIMD2<Float>>, phase2: UnsafeMutableBufferPointer<SIMD2<Float>>
    private var framesSeen = 0
    private let energy: UnsafeMutableBufferPointer<Double>
    private let spreadEnergy: UnsafeMutableBufferPointer<Double>
    private let spreadUnpredictability: UnsafeMutableBufferPointer<Double>
    private let weightedUnpredictability: UnsafeMutableBufferPointer<Double>
    /// The thresholds of the last frame analysed, one per partition.
    public private(set) var threshold: [Double]
    /// The tonality of the last frame analysed, one per partition (0 noise … 1 tone).
    public private(set) var tonality: [Double]

    /// A model for a stream at `sampleRate`. `ownBandCeilingTop` moves the top of the ceiling
    /// at the host's own band (0 turns it off: the classic model, which the tests compare it with).
    /// `levelDiscrimination` lowers loud bands' thresholds (``LevelDiscrimination``).
    public init(sampleRate: Double, ownBandCeilingTop: Double = MaskingModel.ownBandCeilingTop,
                levelDiscrimination: LevelDiscrimination? = nil) throws {
        self.sampleRate = sampleRate
        self.levelDiscrimination = levelDiscrimination
        var n = 256
        while Double(n) < Self.frameSeconds * sampleRate * 0.75 { n *= 2 }
        frameLength = n
        hop = n / Self.hopsPerFrame
        fft = try RealFFT(size: n)
        window = (0..<n).map { Float(0.5 - 0.5 * cos(2 * Double.pi * (Double($0) + 0.5) / Double(n))) }
        let windowEnergy = window.reduce(0.0) { $0 + Double($1 * $1) }
        powerScale = 2 / (Double(n) * windowEnergy)

        let binWidth = sampleRate / Double(n)
        var bins: [Range<Int>] = []
        var start = 1
        while start < n / 2 {
            var end = start + 1
            while end < n / 2, Self.bark(Double(end) * binWidth) - Self.bark(Double(start) * binWidth) < Self.partitionWidth { end += 1 }
            bins.append(start..<end)
            start = end
        }
        partitionBins = bins
        partitionFrequency = bins.map { binWidth * Double($0.lowerBound + $0.upperBound - 1) / 2 }
        partitionBark = partitionFrequency.map(Self.bark)
        let count = bins.count
        var lower = [Double](repeating: 0, count: count * count)
        for j in 0..<count {
            for i in 0...j { lower[j * count + i] = exp(-Self.lowerSlope * Self.decibel * (partitionBark[j] - partitionBark[i])) }
        }
        lowerWeights = lower
        quiet = partitionFrequency.map(Self.quietThreshold)
        levelOffset = partitionFrequency.map { Self.fullScaleSPL - 10 * log10(0.5) + LevelDiscrimination.earWeighting($0) }
        let barks = partitionBark, centres = partitionFrequency
        ownBand = (0..<count).map { i in
            guard centres[i] < ownBandCeilingTop else { return nil }
            // Bark rises with the index, so the band is one run of partitions around i.
            let lo = barks.firstIndex { $0 >= barks[i] - Self.ownBandHalfWidth } ?? i
            let hi = barks.lastIndex { $0 <= barks[i] + Self.ownBandHalfWidth } ?? i
            return lo..<(hi + 1)
        }
        let bins1 = n / 2 + 1
        func buffer<T>(_ count: Int, _ value: T) -> UnsafeMutableBufferPointer<T> {
            let b = UnsafeMutableBufferPointer<T>.allocate(capacity: count)
            b.initialize(repeating: value)
            return b
        }
        magnitude1 = buffer(bins1, 0)
        magnitude2 = buffer(bins1, 0)
        phase1 = buffer(bins1, SIMD2(1, 0))
        phase2 = buffer(bins1, SIMD2(1, 0))
        energy = buffer(count, 0)
        spreadEnergy = buffer(count, 0)
        spreadUnpredictability = buffer(count, 0)
        weightedUnpredictability = buffer(count, 0)
        threshold = [Double](repeating: 0, count: count)
        tonality = threshold
    }

    deinit {
        for b in [magnitude1, magnitude2] { b.deallocate() }
        for b in [phase1, phase2] { b.deallocate() }
        for b in [energy, spreadEnergy, spreadUnpredictability, weightedUnpredictability] { b.deallocate() }
    }

    /// Zwicker's critical-band rate of `f` Hz, in Bark.
    public static func bark(_ f: Double) -> Double {
        13 * atan(0.00076 * f) + 3.5 * atan(pow(f / 7500, 2))
    }

    /// Spreading below a masker, dB per Bark (PEAQ's, after Terhardt).
    static let lowerSlope = 27.0
    /// ln(10) / 10: dB to natural-log power.
    static let decibel = log(10.0) / 10

    /// Terhardt's threshold in quiet at `f` Hz, as a power in sample units at ``fullScaleSPL``.
    public static func quietThreshold(_ f: Double) -> Double {
        let k = max(f, 20) / 1000
        let spl = 3.64 * pow(k, -0.8) - 6.5 * exp(-0.6 * (k - 3.3) * (k - 3.3)) + 1e-3 * pow(k, 4)
        return 0.5 * pow(10, (min(spl, 120) - fullScaleSPL) / 10)
    }

    /// The partition holding frequency `f` (the nearest one outside the analysed range).
    public func partition(of f: Double) -> Int {
        let bin = Int((f * Double(frameLength) / sampleRate).rounded())
        if bin < partitionBins[0].lowerBound { return 0 }
        var lo = 0, hi = partitionBins.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if partitionBins[mid].lowerBound <= bin { lo = mid } else { hi = mid - 1 }
        }
        return lo
    }

    /// Analyses the next frame: `frameLength` host samples centred on the frame's time (the
    /// model applies the window). Updates ``threshold`` and ``tonality``.
    public func analyse(_ frame: UnsafeBufferPointer<Float>) {
        precondition(frame.count == frameLength)
        let input = fft.input
        for i in 0..<frameLength {
            // A non-finite sample would poison the frame and, through the prediction, the next two.
            let x = frame[i]
            input[i] = x.isFinite ? x * window[i] : 0
        }
        fft.forward()
        let spectrum = fft.spectrum
        for p in energy.indices { energy[p] = 0; weightedUnpredictability[p] = 0 }
        for (p, range) in partitionBins.enumerated() {
            var e = 0.0, c = 0.0
            for k in range {
                let v = spectrum[k]
                let power = Double(v.x * v.x + v.y * v.y)
                let r = power.squareRoot()
                // Unit phasors instead of angles: the predicted phase 2φ₁ − φ₂ is u₁² · conj(u₂).
                let ux = r > 0 ? Double(v.x) / r : 1, uy = r > 0 ? Double(v.y) / r : 0
                var unpredictability = 1.0
                if framesSeen >= 2 {
                    let rp = 2 * Double(magnitude1[k]) - Double(magnitude2[k])
                    let ax = Double(phase1[k].x), ay = Double(phase1[k].y)
                    let bx = Double(phase2[k].x), by = Double(phase2[k].y)
                    let sx = ax * ax - ay * ay, sy = 2 * ax * ay
                    let px = sx * bx + sy * by, py = sy * bx - sx * by
                    let dx = Double(v.x) - rp * px, dy = Double(v.y) - rp * py
                    let denominator = r + abs(rp)
                    unpredictability = denominator > 0 ? min(1, (dx * dx + dy * dy).squareRoot() / denominator) : 1
                } else {
                    // No history yet: take the host as tonal, the case that hides least.
                    unpredictability = 0
                }
                magnitude2[k] = magnitude1[k]; magnitude1[k] = Float(r)
                phase2[k] = phase1[k]; phase1[k] = SIMD2(Float(ux), Float(uy))
                e += power
                c += power * unpredictability
            }
            energy[p] = e * powerScale
            weightedUnpredictability[p] = c * powerScale
        }
        framesSeen += 1
        let count = energy.count
        for i in 0..<count { spreadEnergy[i] = 0; spreadUnpredictability[i] = 0 }
        lowerWeights.withUnsafeBufferPointer { lower in
            for j in 0..<count where energy[j] > 0 {
                let e = energy[j], c = weightedUnpredictability[j]
                // Downwards: a fixed slope.
                for i in 0...j {
                    let w = lower[j * count + i]
                    spreadEnergy[i] += w * e
                    spreadUnpredictability[i] += w * c
                }
                // Upwards: the louder the masker, the further it reaches.
                let level = Self.fullScaleSPL + 10 * log10(e / 0.5)
                let slope = min(0, -24 - 230 / partitionFrequency[j] + 0.2 * level)
                let perBark = slope * Self.decibel
                for i in (j + 1)..<count {
                    let w = exp(perBark * (partitionBark[i] - partitionBark[j]))
                    if w < 1e-7 { break }
                    spreadEnergy[i] += w * e
                    spreadUnpredictability[i] += w * c
                }
            }
        }
        for i in 0..<count {
            let spread = spreadEnergy[i]
            let c = spread > 0 ? spreadUnpredictability[i] / spread : 1
            let alpha = c > 0 ? min(1, max(0, -0.299 - 0.43 * log(c))) : 1
            tonality[i] = alpha
            let offset = min(Self.tonalOffsetCap, alpha * (14.5 + partitionBark[i]) + (1 - alpha) * 5.5)
            let masked = spread * pow(10, -offset / 10)
            var t = masked > quiet[i] ? masked : 0
            if let band = ownBand[i] {
                var own = 0.0
                for k in band { own += energy[k] }
                t = min(t, own * ownBandFactor)
            }
            if let levelDiscrimination, t > 0 {
                t *= levelDiscrimination.factor(atLevel: levelOffset[i] + 10 * log10(spread))
            }
            threshold[i] = t
        }
    }
}
