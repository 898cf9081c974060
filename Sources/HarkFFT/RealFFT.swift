import CFFTW

/// Errors raised by the FFT wrapper.
public enum FFTError: Error, Equatable, CustomStringConvertible {
    /// The requested transform size is not an even number ≥ 2.
    case invalidSize(Int)
    /// FFTW could not allocate its aligned buffers.
    case allocationFailed(Int)
    /// FFTW returned no plan for this size.
    case planFailed(Int)

    public var description: String {
        switch self {
        case .invalidSize(let n): return "FFT size \(n) is not an even number ≥ 2"
        case .allocationFailed(let n): return "FFTW could not allocate buffers for size \(n)"
        case .planFailed(let n): return "FFTW could not plan a transform of size \(n)"
        }
    }
}

/// A single-precision real-to-complex FFT of one fixed size, and its inverse.
///
/// Follows FFTW's plan/execute split: the plans and their aligned buffers are made once in
/// `init` and reused by every call. Fill ``input`` with `size` real samples, call
/// ``forward()``, and read `size/2 + 1` complex bins from ``real`` and ``imaginary``
/// (split, so callers can run vector loops over each). ``inverse()`` goes back and, like
/// FFTW, leaves the result scaled by `size`.
///
/// One instance must not be used from two threads at once; separate instances may run
/// concurrently.
public final class RealFFT {
    /// Number of real samples per transform.
    public let size: Int
    /// Number of complex bins, `size/2 + 1` (DC to Nyquist).
    public var binCount: Int { size / 2 + 1 }

    private let timeBuffer: UnsafeMutablePointer<Float>
    private let freqBuffer: UnsafeMutablePointer<fftwf_complex>
    private let forwardPlan: fftwf_plan
    private let inversePlan: fftwf_plan
    /// Split real/imag views of the last spectrum, filled by `forward()`.
    private let re: UnsafeMutableBufferPointer<Float>
    private let im: UnsafeMutableBufferPointer<Float>

    /// Plans forward and inverse transforms of `size` real samples.
    ///
    /// Planning uses `FFTW_ESTIMATE`: it takes microseconds, is deterministic and does not
    /// touch the buffers, at the cost of the few per cent a measured plan could gain.
    public init(size: Int) throws(FFTError) {
        guard size >= 2, size % 2 == 0 else { throw .invalidSize(size) }
        self.size = size
        let bins = size / 2 + 1
        guard let t = fftwf_alloc_real(size) else { throw .allocationFailed(size) }
        guard let f = fftwf_alloc_complex(bins) else {
            fftwf_free(t)
            throw .allocationFailed(size)
        }
        t.initialize(repeating: 0, count: size)
        f.initialize(repeating: (0, 0), count: bins)
        let plans = FFTWPlanner.withLock { () -> (fftwf_plan?, fftwf_plan?) in
            let flags = UInt32(FFTW_ESTIMATE)
            return (fftwf_plan_dft_r2c_1d(Int32(size), t, f, flags),
                    fftwf_plan_dft_c2r_1d(Int32(size), f, t, flags | UInt32(FFTW_DESTROY_INPUT)))
        }
        guard let fp = plans.0, let ip = plans.1 else {
            FFTWPlanner.withLock {
                if let p = plans.0 { fftwf_destroy_plan(p) }
                if let p = plans.1 { fftwf_destroy_plan(p) }
            }
            fftwf_free(t)
            fftwf_free(f)
            throw .planFailed(size)
        }
        timeBuffer = t
        freqBuffer = f
        forwardPlan = fp
        inversePlan = ip
        re = .allocate(capacity: bins)
        im = .allocate(capacity: bins)
        re.initialize(repeating: 0)
        im.initialize(repeating: 0)
    }

    deinit {
        FFTWPlanner.withLock {
            fftwf_destroy_plan(forwardPlan)
            fftwf_destroy_plan(inversePlan)
        }
        fftwf_free(timeBuffer)
        fftwf_free(freqBuffer)
        re.deallocate()
        im.deallocate()
    }

    /// The `size` real samples the next ``forward()`` transforms, or the output of ``inverse()``.
    public var input: UnsafeMutableBufferPointer<Float> {
        UnsafeMutableBufferPointer(start: timeBuffer, count: size)
    }

    /// Real parts of the spectrum, `binCount` values.
    public var real: UnsafeMutableBufferPointer<Float> { re }
    /// Imaginary parts of the spectrum, `binCount` values.
    public var imaginary: UnsafeMutableBufferPointer<Float> { im }

    /// Transforms ``input`` into ``real`` / ``imaginary`` (unnormalised, as FFTW).
    public func forward() {
        fftwf_execute(forwardPlan)
        let bins = binCount
        freqBuffer.withMemoryRebound(to: Float.self, capacity: 2 * bins) { p in
            for k in 0..<bins {
                re[k] = p[2 * k]
                im[k] = p[2 * k + 1]
            }
        }
    }

    /// Transforms ``real`` / ``imaginary`` back into ``input``; the result is scaled by `size`.
    public func inverse() {
        let bins = binCount
        freqBuffer.withMemoryRebound(to: Float.self, capacity: 2 * bins) { p in
            for k in 0..<bins {
                p[2 * k] = re[k]
                p[2 * k + 1] = im[k]
            }
        }
        fftwf_execute(inversePlan)
    }

    /// Writes `|X[k]|²` of the last forward transform into `out` (at least `binCount` values).
    public func powerSpectrum(into out: UnsafeMutableBufferPointer<Float>) {
        precondition(out.count >= binCount)
        for k in 0..<binCount {
            out[k] = re[k] * re[k] + im[k] * im[k]
        }
    }
}
