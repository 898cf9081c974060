import FoundationEssentials
import Glibc
import HarkFFT

/// One-third-octave band levels (31.5 Hz – 16 kHz) of a stream, from FFT power spectra.
///
/// Bands follow IEC 61260-1's base-10 system: mid-band frequencies `1000·10^(n/10)` Hz with
/// edges a twentieth of a decade either side; labels are the nominal values ("31.5", "1000").
/// Bands above 0.5·fs are left out.
///
/// Method: periodic Hann windows with 75 % overlap (their squares sum to exactly 1.5 at every
/// sample), the stream padded with silence at both ends so every sample is covered by four
/// windows, power summed per FFT bin, and each bin shared between the bands its width overlaps.
/// The band energies therefore add up to the signal's energy exactly (Parseval), not just on
/// average. The FFT length is the power of two giving bins ≤ 1.5 Hz wide (32768 at 48 kHz), so
/// even the 31.5 Hz band (7.3 Hz wide) spans five bins; a steady tone leaks into a neighbouring
/// band only within two bins (±3 Hz) of an edge. These are FFT-synthesised bands, not the
/// filter bank of IEC 61260 (whose filters' skirts overlap differently).
public final class ThirdOctaveBands {
    /// A band's nominal label and its exact edges in Hz.
    public struct Band: Sendable, Equatable {
        public let label: String
        public let center: Double
        public let lower: Double
        public let upper: Double
    }

    /// Band numbers −15 … 12 relative to 1 kHz: 31.5 Hz … 16 kHz.
    static let nominalLabels = ["31.5", "40", "50", "63", "80", "100", "125", "160", "200", "250",
                                "315", "400", "500", "630", "800", "1000", "1250", "1600", "2000",
                                "2500", "3150", "4000", "5000", "6300", "8000", "10000", "12500", "16000"]

    public let sampleRate: Double
    /// Bands this sample rate can measure, lowest first.
    public let bands: [Band]

    private let fft: RealFFT
    private let hop: Int
    private let window: [Float]
    /// The last `fft.size` input samples (a ring), and how many new ones since the last frame.
    private var ring: [Float]
    private var ringPosition = 0
    private var sinceFrame = 0
    private var samples = 0
    private var power: [Double]
    /// For each band, the bins it takes power from and the share of each.
    private let binShares: [[(bin: Int, share: Double)]]

    /// - Parameter planning: `.measure` pays 0.4 s up front to run 1.9× faster; worth it
    ///   for recordings longer than about half an hour.
    /// - Throws: ``FFTError`` if FFTW cannot plan the transform.
    public init(sampleRate: Double, planning: RealFFT.Planning = .estimate) throws {
        self.sampleRate = sampleRate
        var size = 1024
        while sampleRate / Double(size) > 1.5 { size *= 2 }
        fft = try RealFFT(size: size, planning: planning)
        hop = size / 4
        window = (0..<size).map { Float(pow(sin(Double.pi * Double($0) / Double(size)), 2)) }
        ring = [Float](repeating: 0, count: size)
        power = [Double](repeating: 0, count: size / 2 + 1)
        let binWidth = sampleRate / Double(size)
        var bands: [Band] = []
        var shares: [[(Int, Double)]] = []
        for (i, label) in Self.nominalLabels.enumerated() {
            let center = 1000 * pow(10, Double(i - 15) / 10)
            let lower = center * pow(10, -0.05), upper = center * pow(10, 0.05)
            guard upper < sampleRate / 2 else { break }
            bands.append(Band(label: label, center: center, lower: lower, upper: upper))
            // Bin k covers [(k − ½)Δf, (k + ½)Δf).
            var list: [(Int, Double)] = []
            let first = Int((lower / binWidth - 0.5).rounded(.down)), last = Int((upper / binWidth + 0.5).rounded(.up))
            for k in max(first, 1)...min(last, size / 2) {
                let lo = (Double(k) - 0.5) * binWidth, hi = (Double(k) + 0.5) * binWidth
                let overlap = min(hi, upper) - max(lo, lower)
                if overlap > 0 { list.append((k, overlap / binWidth)) }
            }
            shares.append(list)
        }
        self.bands = bands
        binShares = shares
    }

    /// Feeds a block of mono samples.
    public func process(_ block: UnsafeBufferPointer<Float>) {
        var i = 0
        let size = fft.size
        while i < block.count {
            let n = min(block.count - i, hop - sinceFrame, size - ringPosition)
            ring.withUnsafeMutableBufferPointer { r in
                _ = UnsafeMutableBufferPointer(rebasing: r[ringPosition..<(ringPosition + n)])
                    .update(fromContentsOf: UnsafeBufferPointer(rebasing: block[i..<(i + n)]))
            }
            ringPosition = (ringPosition + n) % size
            sinceFrame += n
            i += n
            if sinceFrame == hop { frame() }
        }
        samples += block.count
    }

    /// Transforms the last `size` samples (oldest first) and adds their power per bin.
    private func frame() {
        sinceFrame = 0
        let size = fft.size
        let input = fft.input
        let tail = size - ringPosition
        ring.withUnsafeBufferPointer { r in
            window.withUnsafeBufferPointer { w in
                for j in 0..<tail { input[j] = r[ringPosition + j] * w[j] }
                for j in 0..<ringPosition { input[tail + j] = r[j] * w[tail + j] }
            }
        }
        fft.forward()
        power.withUnsafeMutableBufferPointer { fft.accumulatePower(into: $0) }
    }

    /// Runs silence through the overlap so the last samples are fully counted. Call once, at
    /// the end of the stream, before ``levels(calibration:)``.
    public func finish() {
        let zeros = [Float](repeating: 0, count: hop)
        // After the last hop boundary, three more frames cover the final samples completely.
        let pending = sinceFrame
        let saved = samples
        if pending > 0 {
            zeros[0..<(hop - pending)].withUnsafeBufferPointer { process($0) }
        }
        for _ in 0..<3 { zeros.withUnsafeBufferPointer { process($0) } }
        samples = saved
    }

    /// Mean square over every FFT bin, DC to Nyquist: equals the signal's own mean square.
    func totalMeanSquare() -> Double {
        guard samples > 0 else { return 0 }
        var sum = power[0] + power[power.count - 1]
        for k in 1..<(power.count - 1) { sum += 2 * power[k] }
        return sum / (Double(fft.size) * 1.5 * Double(samples))
    }

    /// Band levels (dB, see ``Decibels``) in the order of ``bands``; `nil` for a band with no
    /// energy or when nothing was measured.
    public func levels(calibration: Double = 0) -> [Double?] {
        guard samples > 0 else { return bands.map { _ in nil } }
        // Σ over frames of the two-sided |X_k|² equals N · 1.5 · Σ x²; one-sided bins count twice.
        let scale = 2 / (Double(fft.size) * 1.5 * Double(samples))
        return binShares.map { list in
            let energy = list.reduce(0.0) { $0 + power[$1.bin] * $1.share }
            return Decibels.level(meanSquare: energy * scale, calibration: calibration)
        }
    }
}
