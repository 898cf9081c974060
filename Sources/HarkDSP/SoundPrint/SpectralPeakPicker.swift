import FoundationEssentials
import Glibc
import HarkFFT

/// A point of a spectrogram that stands above its neighbourhood: the raw material of a
/// landmark (``LandmarkPairer``).
public struct SpectralPeak: Sendable, Equatable {
    /// Analysis frame (``SpectralPeakPicker/hopDuration`` apart) since the picker started.
    public var frame: Int
    /// Frequency bin on the 15.625 Hz grid (``SpectralPeakPicker/binWidth``).
    public var bin: Int
    /// Its level, dB (arbitrary reference; only differences matter).
    public var level: Float
    /// dB over its neighbourhood's mean: how well it would stand out of added noise.
    public var prominence: Float = 0

    public init(frame: Int, bin: Int, level: Float, prominence: Float = 0) {
        (self.frame, self.bin, self.level, self.prominence) = (frame, bin, level, prominence)
    }
}

/// Finds spectral peaks in a stream of mono samples at any rate from 8 kHz, the way landmark
/// fingerprinters do (Wang 2003): a Hann-windowed spectrum every 16 ms over 64 ms, and a point is
/// a peak when it is the loudest of its neighbourhood (±``neighbourFrames`` frames,
/// ±``neighbourBins`` bins) and stands ``prominence`` dB over the neighbourhood's mean.
///
/// The frame lasts 64 ms at every rate, so its bins are 15.625 Hz apart whatever the rate (to
/// within the rounding of the frame to whole samples, under 0.1 % at 44.1 kHz): a creative read
/// at 48 kHz and a room captured at 44.1 kHz share one grid. Only 300 Hz to 4 kHz is read: a
/// small speaker gives little below, a phone microphone and a room's absorption little above,
/// and talkers' babble is no weaker there than in between.
///
/// Peaks come out ``neighbourFrames`` frames late (80 ms), in frame order, lowest bin first.
/// Not thread-safe.
public final class SpectralPeakPicker {
    public static let frameDuration = 0.064
    public static let hopDuration = 0.016
    public static let binWidth = 1 / frameDuration
    /// The bins read: 300 Hz to 4 kHz.
    public static let lowestBin = 19
    public static let highestBin = 255
    static let binCount = highestBin - lowestBin + 1
    /// A peak is the loudest point within ±80 ms and ±78 Hz. Wider neighbourhoods thin the
    /// peaks (fewer landmarks to store, fewer to survive the room); narrower ones let noise's
    /// own ripples through.
    public static let neighbourFrames = 5
    public static let neighbourBins = 5
    /// A peak stands this far over its neighbourhood's mean level.
    /// (3 dB: a local maximum of so wide a neighbourhood almost always stands this high; the
    /// test drops the flat tops of digital silence and of steady tones.)
    public static let prominence: Float = 3

    public let sampleRate: Double
    private let fft: RealFFT
    private let window: [Float]
    private let hop: Int
    private var pending: [Float] = []
    /// Log spectra of the last 2·neighbourFrames+1 frames, ring-ordered by frame: frame slot
    /// `f`'s bins at `f · binCount`. Flat, and read through pointers: this runs for every frame
    /// of every room, and nested arrays cost a uniqueness check a bin.
    private var levels: [Float]
    /// Per frame of the ring, the running maximum across ±neighbourBins and the running mean.
    private var bandMax: [Float]
    private var bandSum: [Float]
    private var framesDone = 0
    private var ringSize: Int { 2 * Self.neighbourFrames + 1 }

    public init(sampleRate: Double) throws {
        guard sampleRate >= 8_000, sampleRate.isFinite else { throw SoundPrintError.rateTooLow(sampleRate) }
        self.sampleRate = sampleRate
        let length = Int((Self.frameDuration * sampleRate / 2).rounded()) * 2
        fft = try RealFFT(size: length)
        window = (0..<length).map { Float(0.5 - 0.5 * cos(2 * Double.pi * (Double($0) + 0.5) / Double(length))) }
        hop = Int((Self.hopDuration * sampleRate).rounded())
        levels = [Float](repeating: -200, count: Self.binCount * (2 * Self.neighbourFrames + 1))
        bandMax = levels
        bandSum = [Float](repeating: 0, count: levels.count)
    }

    /// Seconds between frames at this rate (the hop rounded to whole samples).
    public var frameSeconds: Double { Double(hop) / sampleRate }

    /// Reads samples; calls `spectrum` with each frame's levels (dB, bins from ``lowestBin``,
    /// in frame order, as soon as the frame is read; the view lasts for the call) and `found` for
    /// each peak that is settled.
    public func process(_ samples: UnsafeBufferPointer<Float>, spectrum: (UnsafeBufferPointer<Float>) -> Void = { _ in },
                        found: (SpectralPeak) -> Void) {
        pending.append(contentsOf: samples)
        var start = 0
        let n = fft.size
        while pending.count - start >= n {
            analyse(frameAt: start)
            let slot = (framesDone - 1) % ringSize
            levels.withUnsafeBufferPointer { spectrum(UnsafeBufferPointer(rebasing: $0[slot * Self.binCount..<(slot + 1) * Self.binCount])) }
            start += hop
            pick(found: found)
        }
        pending.removeFirst(start)
    }

    private func analyse(frameAt start: Int) {
        let input = fft.input
        pending.withUnsafeBufferPointer { p in
            for i in 0..<fft.size { input[i] = p[start + i] * window[i] }
        }
        fft.forward()
        let spectrum = fft.spectrum
        let slot = framesDone % ringSize, count = Self.binCount
        // A floor 150 dB under a full-scale sine keeps digital silence finite.
        let floor = Float(fft.size * fft.size) * 1e-15
        levels.withUnsafeMutableBufferPointer { levels in bandMax.withUnsafeMutableBufferPointer { bandMax in
            bandSum.withUnsafeMutableBufferPointer { bandSum in
                let row = UnsafeMutableBufferPointer(rebasing: levels[slot * count..<(slot + 1) * count])
                for b in 0..<count {
                    let k = Self.lowestBin + b
                    let v = k < spectrum.count ? spectrum[k] : .zero
                    row[b] = 10 * log10(v.x * v.x + v.y * v.y + floor)
                }
                // Running max and mean across frequency, so the neighbourhood test costs a pass of
                // the ring.
                let w = Self.neighbourBins
                for b in 0..<count {
                    let lo = max(0, b - w), hi = min(count - 1, b + w)
                    var m: Float = -.infinity, s: Float = 0
                    for j in lo...hi { m = max(m, row[j]); s += row[j] }
                    bandMax[slot * count + b] = m
                    bandSum[slot * count + b] = s / Float(hi - lo + 1)
                }
            }
        } }
        framesDone += 1
    }

    /// Tests the frame in the middle of the ring, now that the frames after it are in.
    private func pick(found: (SpectralPeak) -> Void) {
        guard framesDone >= ringSize else { return }
        let centreFrame = framesDone - 1 - Self.neighbourFrames
        let centre = centreFrame % ringSize, count = Self.binCount, ring = ringSize
        levels.withUnsafeBufferPointer { levels in bandMax.withUnsafeBufferPointer { bandMax in
            bandSum.withUnsafeBufferPointer { bandSum in
                let row = UnsafeBufferPointer(rebasing: levels[centre * count..<(centre + 1) * count])
                for b in 0..<count {
                    let v = row[b]
                    guard v >= bandMax[centre * count + b] else { continue }
                    var isPeak = true
                    var mean: Float = 0
                    for f in 0..<ring {
                        let m = bandMax[f * count + b]
                        if m > v || (f != centre && m == v) { isPeak = false; break }
                        mean += bandSum[f * count + b]
                    }
                    let prominence = v - mean / Float(ring)
                    guard isPeak, prominence >= Self.prominence else { continue }
                    // Ties within the frame: the lowest bin wins.
                    if b > 0, row[b - 1] == v { continue }
                    found(SpectralPeak(frame: centreFrame, bin: Self.lowestBin + b, level: v, prominence: prominence))
                }
            }
        } }
    }
}

/// Why a sound reading cannot be made or read.
public enum SoundPrintError: Error, Equatable, CustomStringConvertible {
    case rateTooLow(Double)
    case damaged(String)
    case tooLong(seconds: Double)

    public var description: String {
        switch self {
        case .rateTooLow(let r): return "audio at \(r) Hz: the sound reading needs 8 kHz or more"
        case .damaged(let why): return "sound reading damaged: \(why)"
        case .tooLong(let s): return "a creative of \(Int(s)) s: a sound reading covers at most \(Int(SoundPrint.maxDuration)) s"
        }
    }
}
