import FoundationEssentials
import Glibc
import HarkFFT

/// Power spectra over time for a picture: a fixed number of columns however long the audio,
/// each the average of the Hann-windowed 2048-point spectra of the audio it spans (blocks
/// back to back, so an hour costs one pass of FFTs and the memory stays columns × 1025 values).
public final class Spectrogram {
    public static let frameLength = 2048
    public let sampleRate: Double
    public let columns: Int
    /// `power[column][bin]`, mean power of each bin (full-scale sine ≈ (N/4)² in its bin).
    public private(set) var power: [[Float]]
    private var counts: [Int]
    private let framesPerColumn: Double
    private let fft: RealFFT
    private let window: [Float]
    private var pending: [Float] = []
    private var consumed = 0

    /// - Parameters:
    ///   - totalFrames: the audio's length in samples (the columns are spread over it).
    public init(sampleRate: Double, columns: Int, totalFrames: Int) throws {
        self.sampleRate = sampleRate
        self.columns = max(1, columns)
        framesPerColumn = max(1, Double(totalFrames) / Double(max(1, columns)))
        fft = try RealFFT(size: Self.frameLength)
        window = (0..<Self.frameLength).map { Float(0.5 - 0.5 * cos(2 * Double.pi * (Double($0) + 0.5) / Double(Self.frameLength))) }
        power = [[Float]](repeating: [Float](repeating: 0, count: Self.frameLength / 2 + 1), count: self.columns)
        counts = [Int](repeating: 0, count: self.columns)
    }

    /// Frequency of bin `k`, Hz.
    public func frequency(ofBin k: Int) -> Double { Double(k) * sampleRate / Double(Self.frameLength) }

    /// Adds mono samples.
    public func process(_ samples: UnsafeBufferPointer<Float>) {
        pending.append(contentsOf: samples)
        var start = 0
        while pending.count - start >= Self.frameLength {
            let input = fft.input
            for i in 0..<Self.frameLength { input[i] = pending[start + i] * window[i] }
            fft.forward()
            let column = min(columns - 1, Int(Double(consumed + Self.frameLength / 2) / framesPerColumn))
            let spectrum = fft.spectrum
            power[column].withUnsafeMutableBufferPointer { p in
                for k in 0..<p.count {
                    let v = spectrum[k]
                    p[k] += v.x * v.x + v.y * v.y
                }
            }
            counts[column] += 1
            start += Self.frameLength
            consumed += Self.frameLength
        }
        pending.removeFirst(start)
    }

    /// Turns the sums into means; a column no block fell in (audio shorter than its columns)
    /// takes the nearest one before it, or after it at the start.
    public func finish() {
        for c in 0..<columns where counts[c] > 0 {
            let n = Float(counts[c])
            for k in power[c].indices { power[c][k] /= n }
        }
        guard let first = counts.firstIndex(where: { $0 > 0 }) else { return }
        for c in 0..<first { power[c] = power[first] }
        for c in first..<columns where counts[c] == 0 { power[c] = power[c - 1] }
    }
}
