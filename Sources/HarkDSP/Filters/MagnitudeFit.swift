import FoundationEssentials
import Glibc

/// Fits a minimum-phase FIR numerator to a wanted magnitude response.
///
/// Used at design time to correct what a simple pole placement gets wrong near Nyquist (the
/// weighting filters' 12.2 kHz section, the pinking filter's top octaves).
enum MagnitudeFit {
    /// Coefficients `b[0…order]` such that `|B(e^(iω))|² ≈ wanted(f)` over `from…to` Hz.
    ///
    /// `|B|² = c0 + 2 Σ ck cos(kω)` is linear in the `c`, so the fit is a least-squares problem;
    /// each equation is divided by the wanted value, making the error relative (≈ dB), and
    /// multiplied by `weight(f)`. The cosine polynomial is then spectrally factored: its roots
    /// come in pairs (r, 1/r), and the ones inside the unit circle give the minimum-phase `B`.
    static func minimumPhaseNumerator(order: Int, sampleRate fs: Double, from: Double, to: Double,
                                      points: Int = 800, weight: (Double) -> Double = { _ in 1 },
                                      wanted: (Double) -> Double) -> [Double] {
        var rows: [[Double]] = []
        var rhs: [Double] = []
        rows.reserveCapacity(points)
        for i in 0..<points {
            let f = from * pow(to / from, Double(i) / Double(points - 1))
            let omega = 2 * Double.pi * f / fs
            let need = wanted(f)
            let w = weight(f) / need
            var row = [w]
            for k in 1...order { row.append(2 * cos(Double(k) * omega) * w) }
            rows.append(row)
            rhs.append(need * w)
        }
        let c = leastSquares(rows: rows, rhs: rhs)
        let laurent = Array(c.reversed()) + Array(c.dropFirst())   // c_n … c0 … c_n
        let inside = Polynomial.roots(highestFirst: laurent).filter { $0.magnitude < 1 }
        var b = Polynomial.fromRoots(inside)
        b += [Double](repeating: 0, count: max(0, order + 1 - b.count))
        // The monic factor has the right shape; scale it to the fitted DC value.
        let dcWanted = laurent.reduce(0, +).squareRoot()
        let dcHave = abs(b.reduce(0, +))
        let g = dcHave > 0 ? dcWanted / dcHave : 1
        return b.map { $0 * g }
    }
}
