import FoundationEssentials
import Glibc

/// A minimal double-precision complex number: enough for filter design (evaluating
/// transfer functions and finding polynomial roots), not a general numerics type.
struct Complex: Equatable {
    var re: Double
    var im: Double

    init(_ re: Double, _ im: Double = 0) {
        self.re = re
        self.im = im
    }

    /// e^(iθ)
    static func unit(_ theta: Double) -> Complex { Complex(cos(theta), sin(theta)) }

    var magnitudeSquared: Double { re * re + im * im }
    var magnitude: Double { magnitudeSquared.squareRoot() }
    var conjugate: Complex { Complex(re, -im) }

    static func + (a: Complex, b: Complex) -> Complex { Complex(a.re + b.re, a.im + b.im) }
    static func - (a: Complex, b: Complex) -> Complex { Complex(a.re - b.re, a.im - b.im) }
    static func * (a: Complex, b: Complex) -> Complex {
        Complex(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re)
    }
    static func * (a: Double, b: Complex) -> Complex { Complex(a * b.re, a * b.im) }
    static func / (a: Complex, b: Complex) -> Complex {
        let d = b.magnitudeSquared
        return Complex((a.re * b.re + a.im * b.im) / d, (a.im * b.re - a.re * b.im) / d)
    }
}
