import FoundationEssentials
import Glibc

/// Real polynomials in z⁻¹ as used by digital filters: `c[0] + c[1] z⁻¹ + c[2] z⁻² + …`.
enum Polynomial {
    /// Evaluates `Σ c[k] z^(-k)` at `z = e^(iω)`.
    static func evaluate(_ c: [Double], atAngle omega: Double) -> Complex {
        var sum = Complex(0)
        for (k, ck) in c.enumerated() { sum = sum + ck * Complex.unit(-Double(k) * omega) }
        return sum
    }

    /// Multiplies two coefficient lists (convolution).
    static func multiply(_ a: [Double], _ b: [Double]) -> [Double] {
        var out = [Double](repeating: 0, count: a.count + b.count - 1)
        for i in a.indices { for j in b.indices { out[i + j] += a[i] * b[j] } }
        return out
    }

    /// All complex roots of `c[0] xⁿ + c[1] xⁿ⁻¹ + … + c[n]` (highest power first), by the
    /// Aberth–Ehrlich iteration followed by Newton polishing.
    ///
    /// Used only at design time on polynomials of degree ≤ 8 with well separated roots.
    static func roots(highestFirst c: [Double]) -> [Complex] {
        let n = c.count - 1
        guard n >= 1 else { return [] }
        let lead = c[0]
        let a = c.map { $0 / lead }
        // Starting points on a circle of the Cauchy bound's radius, off the real axis so that
        // conjugate pairs separate.
        let radius = 1 + (a.dropFirst().map { abs($0) }.max() ?? 0)
        var z = (0..<n).map { k in
            (radius * 0.5) * Complex.unit(2 * Double.pi * Double(k) / Double(n) + 0.4)
        }
        func value(_ x: Complex) -> (p: Complex, dp: Complex) {
            var p = Complex(a[0])
            var dp = Complex(0)
            for k in 1...n {
                dp = dp * x + p
                p = p * x + Complex(a[k])
            }
            return (p, dp)
        }
        for _ in 0..<500 {
            var moved = 0.0
            for i in 0..<n {
                let (p, dp) = value(z[i])
                if p.magnitudeSquared == 0 { continue }
                let ratio = p / dp
                var sum = Complex(0)
                for j in 0..<n where j != i { sum = sum + Complex(1) / (z[i] - z[j]) }
                let step = ratio / (Complex(1) - ratio * sum)
                z[i] = z[i] - step
                moved = max(moved, step.magnitude)
            }
            if moved < 1e-15 { break }
        }
        for i in 0..<n {
            for _ in 0..<3 {
                let (p, dp) = value(z[i])
                if dp.magnitudeSquared > 0 { z[i] = z[i] - p / dp }
            }
        }
        return z
    }

    /// The real coefficients (highest power first, monic) of `Π (x − rᵢ)`. Conjugate pairs
    /// among the roots make the result real; residual imaginary parts are dropped.
    static func fromRoots(_ roots: [Complex]) -> [Double] {
        var c = [Complex(1)]
        for r in roots {
            var next = [Complex](repeating: Complex(0), count: c.count + 1)
            for (i, ci) in c.enumerated() {
                next[i] = next[i] + ci
                next[i + 1] = next[i + 1] - ci * r
            }
            c = next
        }
        return c.map { $0.re }
    }
}
