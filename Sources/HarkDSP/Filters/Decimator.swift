import FoundationEssentials
import Glibc

/// Lowers a stream's sample rate by a whole factor: a linear-phase low-pass (Kaiser-windowed
/// sinc), evaluated only at the samples kept.
///
/// Built for analysis that needs a band well under the input's Nyquist frequency: the watermark
/// detector reads tones up to 6 or 7.6 kHz from 48 kHz input, and transforming a third or half
/// as many samples per frame saves it more than this filter costs. The filter is flat within
/// 0.001 dB up to `passband` and holds everything that would fold back below `passband` at least
/// `attenuation` dB down (`DecimatorTests`); what lies between `passband` and the new Nyquist
/// frequency is not used. Output sample `m` is the filtered input at input sample `factor · m`,
/// delayed by the filter's `(taps − 1) / 2` samples (``delay``), so that nothing waits for later
/// input.
public struct Decimator {
    public let factor: Int
    /// The filter, reversed: `reversedTaps[j]` multiplies input sample `n − (taps − 1) + j`.
    private let reversedTaps: [Float]
    /// The last `taps − 1` input samples, then those not yet consumed.
    private var history: [Float]
    /// Index in `history` of the newest input sample the next output reaches.
    private var next: Int

    /// - Parameters:
    ///   - factor: input samples per output sample (≥ 1; 1 passes the input through).
    ///   - passband: the highest frequency that must come through, as a fraction of the input rate.
    ///   - attenuation: the least attenuation, dB, of what would alias below `passband`.
    public init(factor: Int, passband: Double, attenuation: Double = 90) {
        precondition(factor >= 1)
        self.factor = factor
        guard factor > 1 else {
            reversedTaps = [1]
            history = []
            next = 0
            return
        }
        // Aliases of the band come from above 1/factor − passband; the transition runs from the
        // passband's edge to there, centred on the new Nyquist frequency.
        let stop = 1 / Double(factor) - passband
        precondition(stop > passband, "a factor of \(factor) leaves no room above a passband of \(passband)")
        let transition = 2 * Double.pi * (stop - passband)
        let beta = attenuation > 50 ? 0.1102 * (attenuation - 8.7) : 0.5842 * pow(attenuation - 21, 0.4) + 0.07886 * (attenuation - 21)
        var count = Int(((attenuation - 7.95) / (2.285 * transition)).rounded(.up)) + 1
        if count % 2 == 0 { count += 1 }
        let cutoff = (passband + stop) / 2
        let centre = Double(count - 1) / 2
        var taps = (0..<count).map { j -> Double in
            let d = Double(j) - centre
            let x = 2 * cutoff * d
            let sinc = x == 0 ? 1 : sin(Double.pi * x) / (Double.pi * x)
            let r = d / centre
            return 2 * cutoff * sinc * besselI0(beta * max(0, 1 - r * r).squareRoot()) / besselI0(beta)
        }
        let dc = taps.reduce(0, +)
        taps = taps.map { $0 / dc }
        reversedTaps = taps.reversed().map(Float.init)
        history = [Float](repeating: 0, count: count - 1)
        next = count - 1
    }

    /// The filter's length.
    public var taps: Int { reversedTaps.count }
    /// How many input samples the output lags the input by.
    public var delay: Int { (reversedTaps.count - 1) / 2 }
    /// Bytes held.
    public var stateBytes: Int { (reversedTaps.count + history.capacity) * 4 }

    /// Filters a block; appends the outputs it completes to `out`.
    public mutating func process(_ input: UnsafeBufferPointer<Float>, into out: inout [Float]) {
        guard factor > 1 else { out.append(contentsOf: input); return }
        history.append(contentsOf: input)
        let n = reversedTaps.count, vectors = n / 8
        reversedTaps.withUnsafeBufferPointer { h in
            history.withUnsafeBufferPointer { x in
                let hp = UnsafeRawPointer(h.baseAddress!)
                while next < x.count {
                    let start = x.baseAddress! + (next - (n - 1))
                    let xp = UnsafeRawPointer(start)
                    var acc = SIMD8<Float>.zero
                    for v in 0..<vectors {
                        acc += hp.loadUnaligned(fromByteOffset: v * 32, as: SIMD8<Float>.self)
                            * xp.loadUnaligned(fromByteOffset: v * 32, as: SIMD8<Float>.self)
                    }
                    var sum = acc.sum()
                    for j in (vectors * 8)..<n { sum += h[j] * start[j] }
                    out.append(sum)
                    next += factor
                }
            }
        }
        // Keep the last taps − 1 samples the next output reaches back into.
        let drop = min(next - (n - 1), history.count)
        if drop > 0 {
            history.removeFirst(drop)
            next -= drop
        }
    }
}
