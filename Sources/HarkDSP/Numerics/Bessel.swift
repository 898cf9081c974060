import FoundationEssentials

/// The modified Bessel function of the first kind, order 0, by its power series to double
/// precision: the Kaiser window of the windowed-sinc filters (``Resampler``, `TruePeakDetector`,
/// ``Decimator``) is I₀(β√(1 − r²)) / I₀(β).
func besselI0(_ x: Double) -> Double {
    var sum = 1.0, term = 1.0, k = 1.0
    while term > 1e-16 * sum {
        term *= (x / (2 * k)) * (x / (2 * k))
        sum += term
        k += 1
    }
    return sum
}
