import FoundationEssentials
import Glibc

/// e^(−iωτ) for every spectrum bin at one delay τ, from some 110 sines instead of one per bin:
/// bin 64a + b turns by `coarse[a] · fine[b]`. The coherent readings turn hundreds of tones by
/// several delays every hop, and libm's sines had become a third of the detector's time.
struct BinRotation {
    private var coarse: [SIMD2<Double>]
    private var fine = [SIMD2<Double>](repeating: .zero, count: 64)
    private let binWidth: Double

    /// - Parameter bins: one more than the highest bin that will be asked for.
    init(bins: Int, binWidth: Double) {
        coarse = [SIMD2<Double>](repeating: .zero, count: bins / 64 + 1)
        self.binWidth = binWidth
    }

    /// Sets the delay, seconds.
    mutating func set(delay: Double) {
        let w = -2 * Double.pi * binWidth * delay
        // Each table by repeated multiplication from one sine and cosine: in double precision
        // the rounding after 64 products is some 1e-14, far under the float the result becomes,
        // and the readings set several delays every hop.
        Self.fillPowers(&fine, of: SIMD2(cos(w), sin(w)))
        Self.fillPowers(&coarse, of: SIMD2(cos(64 * w), sin(64 * w)))
    }

    /// Adds `other`'s delay to this one's: the tables multiplied entry by entry, with no sine
    /// (a double's rounding after a few dozen steps is far under the float the result becomes).
    mutating func advance(by other: BinRotation) {
        precondition(other.coarse.count == coarse.count && other.binWidth == binWidth)
        Self.multiply(&fine, by: other.fine)
        Self.multiply(&coarse, by: other.coarse)
    }

    private static func multiply(_ table: inout [SIMD2<Double>], by factors: [SIMD2<Double>]) {
        table.withUnsafeMutableBufferPointer { t in
            factors.withUnsafeBufferPointer { f in
                for i in 0..<t.count {
                    let a = t[i], b = f[i]
                    t[i] = SIMD2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x)
                }
            }
        }
    }

    private static func fillPowers(_ table: inout [SIMD2<Double>], of z: SIMD2<Double>) {
        var p = SIMD2<Double>(1, 0)
        for i in table.indices {
            table[i] = p
            p = SIMD2(p.x * z.x - p.y * z.y, p.x * z.y + p.y * z.x)
        }
    }

    /// e^(−iωτ) for spectrum bin `k` at the delay last set.
    @inline(__always)
    func callAsFunction(_ k: Int) -> SIMD2<Float> {
        let a = coarse[k >> 6], b = fine[k & 63]
        return SIMD2(Float(a.x * b.x - a.y * b.y), Float(a.x * b.y + a.y * b.x))
    }
}

/// The scan both coherent readings find a delay with: terms and phasors side by side (real and
/// imaginary parts apart, `terms` a multiple of 8, the padding zero), each phasor turning by its
/// step after every step of the scan.
enum PhasorScan {
    /// The step (0 ..< `count`) at which Re Σ term · phasor is largest. The phasors are left
    /// turned `count` steps on.
    static func bestStep(terms n: Int, count: Int,
                         termRe: UnsafePointer<Float>, termIm: UnsafePointer<Float>,
                         phasorRe: UnsafeMutablePointer<Float>, phasorIm: UnsafeMutablePointer<Float>,
                         stepRe: UnsafePointer<Float>, stepIm: UnsafePointer<Float>) -> Int {
        precondition(n % 8 == 0)
        var best = 0, bestAgreement = -Float.infinity
        for m in 0..<count {
            var sum = SIMD8<Float>.zero
            for o in stride(from: 0, to: n, by: 8) {
                let tr = UnsafeRawPointer(termRe + o).loadUnaligned(as: SIMD8<Float>.self)
                let ti = UnsafeRawPointer(termIm + o).loadUnaligned(as: SIMD8<Float>.self)
                let pr = UnsafeRawPointer(phasorRe + o).loadUnaligned(as: SIMD8<Float>.self)
                let pi = UnsafeRawPointer(phasorIm + o).loadUnaligned(as: SIMD8<Float>.self)
                let qr = UnsafeRawPointer(stepRe + o).loadUnaligned(as: SIMD8<Float>.self)
                let qi = UnsafeRawPointer(stepIm + o).loadUnaligned(as: SIMD8<Float>.self)
                sum += tr * pr - ti * pi
                UnsafeMutableRawPointer(phasorRe + o).storeBytes(of: pr * qr - pi * qi, as: SIMD8<Float>.self)
                UnsafeMutableRawPointer(phasorIm + o).storeBytes(of: pr * qi + pi * qr, as: SIMD8<Float>.self)
            }
            let agreement = sum.sum()
            if agreement > bestAgreement { bestAgreement = agreement; best = m }
        }
        return best
    }
}
