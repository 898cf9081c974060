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
/// ``forward()``, and read `size/2 + 1` bins (DC to Nyquist) from ``spectrum``, each a
/// `(real, imaginary)` pair in FFTW's own interleaved layout, so nothing is copied.
/// ``inverse()`` goes back from ``spectrum`` to ``input`` and, like FFTW, leaves the result
/// scaled by `size`.
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

    /// How much effort FFTW spends choosing an algorithm.
    public enum Planning: Sendable {
        /// `FFTW_ESTIMATE`: microseconds to plan, deterministic.
        case estimate
        /// `FFTW_MEASURE`: times candidate algorithms first. For 32768 points this took 0.44 s
        /// and then ran 1.9× faster (41 µs vs 77 µs per transform), so it pays off after some
        /// 12 000 transforms, or about 35 minutes of audio in the band analyser.
        case measure
    }

    /// Plans forward and inverse transforms of `size` real samples.
    public init(size: Int, planning: Planning = .estimate) throws(FFTError) {
        guard size >= 2, size % 2 == 0, size <= Int(Int32.max) else { throw .invalidSize(size) }
        self.size = size
        let bins = size / 2 + 1
        guard let t = fftwf_alloc_real(size) else { throw .allocationFailed(size) }
        guard let f = fftwf_alloc_complex(bins) else {
            fftwf_free(t)
            throw .allocationFailed(size)
        }
        let plans = FFTWPlanner.withLock { () -> (fftwf_plan?, fftwf_plan?) in
            let flags = UInt32(planning == .estimate ? FFTW_ESTIMATE : FFTW_MEASURE)
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
        // Measuring scribbles on the buffers, so they are cleared only now.
        t.initialize(repeating: 0, count: size)
        f.initialize(repeating: (0, 0), count: bins)
        timeBuffer = t
        freqBuffer = f
        forwardPlan = fp
        inversePlan = ip
    }

    deinit {
        FFTWPlanner.withLock {
            fftwf_destroy_plan(forwardPlan)
            fftwf_destroy_plan(inversePlan)
        }
        fftwf_free(timeBuffer)
        fftwf_free(freqBuffer)
    }

    /// The `size` real samples the next ``forward()`` transforms, or the output of ``inverse()``.
    public var input: UnsafeMutableBufferPointer<Float> {
        UnsafeMutableBufferPointer(start: timeBuffer, count: size)
    }

    /// The `binCount` complex bins: `.x` real part, `.y` imaginary part.
    public var spectrum: UnsafeMutableBufferPointer<SIMD2<Float>> {
        // fftwf_complex is float[2]: the same size, stride and (weaker) alignment as SIMD2<Float>,
        // and FFTW's allocator aligns to at least 16 bytes.
        UnsafeMutableRawPointer(freqBuffer).withMemoryRebound(to: SIMD2<Float>.self, capacity: binCount) {
            UnsafeMutableBufferPointer(start: $0, count: binCount)
        }
    }

    /// Transforms ``input`` into ``spectrum`` (unnormalised, as FFTW).
    public func forward() {
        fftwf_execute(forwardPlan)
    }

    /// Transforms ``spectrum`` back into ``input``; the result is scaled by `size`. The spectrum
    /// is overwritten.
    public func inverse() {
        fftwf_execute(inversePlan)
    }

    /// Adds `|X[k]|²` of the last forward transform to `sums[k]` for every bin.
    public func accumulatePower(into sums: UnsafeMutableBufferPointer<Double>) {
        precondition(sums.count >= binCount)
        let s = spectrum
        for k in 0..<binCount {
            let v = s[k]
            sums[k] += Double(v.x * v.x + v.y * v.y)
        }
    }
}
