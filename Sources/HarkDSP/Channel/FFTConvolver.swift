import HarkFFT

/// Convolves a stream with a fixed impulse response by FFT overlap-add: blocks of the
/// response's length, transforms of twice that (rounded up to a power of two).
public final class FFTConvolver {
    private let fft: RealFFT
    private let block: Int
    private let response: [SIMD2<Float>]
    private var pending: [Float] = []
    private var tail: [Float]
    private var ready: [Float] = []

    public init(impulseResponse h: [Float]) throws {
        var size = 64
        while size < 2 * h.count { size *= 2 }
        fft = try RealFFT(size: size)
        block = size - h.count + 1
        for i in 0..<size { fft.input[i] = i < h.count ? h[i] : 0 }
        fft.forward()
        response = Array(fft.spectrum)
        tail = [Float](repeating: 0, count: size)
    }

    /// Appends to `out` as many convolved samples as there are inputs so far (the output is
    /// aligned with the input: sample n of the output is Σ h[k] x[n−k]).
    public func process(_ input: UnsafeBufferPointer<Float>, into out: inout [Float]) {
        pending.append(contentsOf: input)
        while pending.count >= block { convolveBlock(count: block) }
        out.append(contentsOf: ready)
        ready.removeAll(keepingCapacity: true)
    }

    /// Convolves what is left; the response's own tail beyond the input is dropped so the
    /// output has the input's length.
    public func finish(into out: inout [Float]) {
        if !pending.isEmpty { convolveBlock(count: pending.count) }
        out.append(contentsOf: ready)
        ready.removeAll()
    }

    private func convolveBlock(count: Int) {
        let size = fft.size
        for i in 0..<size { fft.input[i] = i < count ? pending[i] : 0 }
        pending.removeFirst(count)
        fft.forward()
        let s = fft.spectrum
        for k in 0..<fft.binCount {
            let a = s[k], b = response[k]
            s[k] = SIMD2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x)
        }
        fft.inverse()
        let scale = 1 / Float(size)
        for i in 0..<size { tail[i] += fft.input[i] * scale }
        ready.append(contentsOf: tail[0..<count])
        tail.removeFirst(count)
        tail.append(contentsOf: [Float](repeating: 0, count: count))
    }
}
