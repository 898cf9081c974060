/// Rounds floats to the signed bytes the detector keeps its rings in.
///
/// Half away from zero, so that a value and its negation give exactly opposite bytes (a pair's
/// two keyings must); beyond `-128...127` clamped; NaN to 0, because converting NaN or a value
/// beyond `Int32` traps. Written without a branch on the value (a copied sign, not a comparison,
/// gives the half): the signs of the detector's values are noise on unmarked audio, and a branch
/// per rounding mispredicted half the time.
enum ByteQuantiser {
    @inline(__always)
    static func byte(_ v: Float) -> Int8 {
        let x = v.isNaN ? 0 : Swift.min(Swift.max(v, -128), 127)
        return Int8(x + Float(signOf: x, magnitudeOf: 0.5))
    }

    /// Eight values, each as ``byte(_:)`` rounds it.
    @inline(__always)
    static func bytes(_ v: SIMD8<Float>) -> SIMD8<Int8> {
        SIMD8(byte(v[0]), byte(v[1]), byte(v[2]), byte(v[3]), byte(v[4]), byte(v[5]), byte(v[6]), byte(v[7]))
    }
}
