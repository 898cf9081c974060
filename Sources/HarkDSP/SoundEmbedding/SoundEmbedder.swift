import Glibc
import HarkBLAS
import HarkFFT

/// Turns one segment of audio at the model's rate (``SoundEmbedderModel/segmentSamples``, about
/// a second at 8 kHz) into a unit vector of ``SoundEmbedderModel/dimensions``: the log-mel
/// spectrogram with its mean taken out, then the network. Every product is OpenBLAS's sgemm;
/// a convolution is the patches of its input laid out as a matrix (im2col) times its weights.
/// Not thread-safe: one owner, as every stage of the pipeline.
public final class SoundEmbedder {
    public let model: SoundEmbedderModel
    private let fft: RealFFT
    private var power: [Float]
    private var logMel: [Float]
    /// Activations in and out of a layer, (channels × height × width) or a vector; the patches.
    private var a: [Float]
    private var b: [Float]
    private var patches: [Float]
    /// Per convolution, for each element of its patches, the input element it copies (-1:
    /// padding): the layout is fixed by the shapes, so it is worked out once.
    private let gathers: [[Int32]]

    public init(model: SoundEmbedderModel = .builtIn) throws {
        self.model = model
        fft = try RealFFT(size: model.fftSize)
        power = [Float](repeating: 0, count: model.frames * (model.fftSize / 2 + 1))
        logMel = [Float](repeating: 0, count: model.frames * model.mels)
        var largest = model.mels * model.frames, largestPatches = 1
        var channels = 1, height = model.mels, width = model.frames
        var gathers: [[Int32]] = []
        for layer in model.layers {
            if layer.kind == .conv, let k = layer.kernel, let s = layer.stride, let p = layer.pad {
                let oh = (height + 2 * p - k) / s + 1, ow = (width + 2 * p - k) / s + 1
                largestPatches = max(largestPatches, channels * k * k * oh * ow)
                gathers.append(Self.gather(channels: channels, height: height, width: width, kernel: k, stride: s, pad: p,
                                           outHeight: oh, outWidth: ow))
                (channels, height, width) = (layer.out, oh, ow)
                largest = max(largest, channels * height * width)
            } else {
                gathers.append([])
                largest = max(largest, layer.out)
            }
        }
        self.gathers = gathers
        a = [Float](repeating: 0, count: largest)
        b = a
        patches = [Float](repeating: 0, count: largestPatches)
    }

    /// The embedding of `segment` (``SoundEmbedderModel/segmentSamples`` samples), written to
    /// `out` (``SoundEmbedderModel/dimensions`` values).
    public func embed(_ segment: UnsafeBufferPointer<Float>, into out: UnsafeMutableBufferPointer<Float>) {
        precondition(segment.count == model.segmentSamples && out.count == model.dimensions)
        frontEnd(segment)
        var channels = 1, height = model.mels, width = model.frames
        for (i, layer) in model.layers.enumerated() {
            switch layer.kind {
            case .conv:
                let k = layer.kernel!, s = layer.stride!, p = layer.pad!
                let oh = (height + 2 * p - k) / s + 1, ow = (width + 2 * p - k) / s + 1
                layOutPatches(gathers[i])
                let n = oh * ow
                model.weights[i].withUnsafeBufferPointer { w in
                    patches.withUnsafeBufferPointer { x in
                        b.withUnsafeMutableBufferPointer { y in
                            MatrixMultiply.multiply(w.baseAddress!, x.baseAddress!, into: y.baseAddress!, m: layer.out, n: n, k: channels * k * k)
                        }
                    }
                }
                addBias(i, count: layer.out, each: n, relu: layer.relu)
                (channels, height, width) = (layer.out, oh, ow)
            case .dense:
                model.weights[i].withUnsafeBufferPointer { w in
                    a.withUnsafeBufferPointer { x in
                        b.withUnsafeMutableBufferPointer { y in
                            MatrixMultiply.multiply(x.baseAddress!, w.baseAddress!, into: y.baseAddress!, m: 1, n: layer.out, k: layer.in,
                                                    bTransposed: true)
                        }
                    }
                }
                addBias(i, count: layer.out, each: 1, relu: layer.relu)
            }
            swap(&a, &b)
        }
        var norm: Float = 0
        for j in 0..<model.dimensions { norm += a[j] * a[j] }
        let scale = 1 / max(norm.squareRoot(), 1e-12)
        for j in 0..<model.dimensions { out[j] = a[j] * scale }
    }

    /// The log-mel spectrogram of a segment, its mean removed, into `a` as mels × frames.
    private func frontEnd(_ segment: UnsafeBufferPointer<Float>) {
        let bins = model.fftSize / 2 + 1, size = model.fftSize, hop = model.hop, frames = model.frames, mels = model.mels
        // numpy's rfft / (n / 2), squared: a full-scale sine's bin reads about 0.25.
        let norm = 1 / Float(size / 2)
        let input = fft.input, spectrum = fft.spectrum
        model.window.withUnsafeBufferPointer { window in
            power.withUnsafeMutableBufferPointer { power in
                for f in 0..<frames {
                    let from = f * hop
                    for j in 0..<size { input[j] = segment[from + j] * window[j] }
                    fft.forward()
                    for j in 0..<bins {
                        let re = spectrum[j].x * norm, im = spectrum[j].y * norm
                        power[f * bins + j] = re * re + im * im
                    }
                }
            }
        }
        power.withUnsafeBufferPointer { p in
            model.mel.withUnsafeBufferPointer { m in
                logMel.withUnsafeMutableBufferPointer { y in
                    MatrixMultiply.multiply(p.baseAddress!, m.baseAddress!, into: y.baseAddress!, m: frames, n: mels, k: bins)
                }
            }
        }
        let floor = model.floor
        logMel.withUnsafeMutableBufferPointer { y in
            a.withUnsafeMutableBufferPointer { out in
                var mean: Float = 0
                for j in 0..<y.count {
                    y[j] = logf(y[j] + floor)
                    mean += y[j]
                }
                mean /= Float(y.count)
                for f in 0..<frames {
                    for m in 0..<mels { out[m * frames + f] = y[f * mels + m] - mean }
                }
            }
        }
    }

    /// im2col: one row per (input channel, kernel row, kernel column), one column per output
    /// place, zero outside the input; which input element each one is.
    static func gather(channels: Int, height: Int, width: Int, kernel k: Int, stride s: Int, pad p: Int,
                       outHeight oh: Int, outWidth ow: Int) -> [Int32] {
        var out = [Int32](repeating: -1, count: channels * k * k * oh * ow)
        var row = 0
        for c in 0..<channels {
            for ky in 0..<k {
                for kx in 0..<k {
                    for oy in 0..<oh {
                        let iy = oy * s - p + ky
                        for ox in 0..<ow {
                            let ix = ox * s - p + kx
                            if iy >= 0 && iy < height && ix >= 0 && ix < width {
                                out[row * oh * ow + oy * ow + ox] = Int32((c * height + iy) * width + ix)
                            }
                        }
                    }
                    row += 1
                }
            }
        }
        return out
    }

    private func layOutPatches(_ gather: [Int32]) {
        a.withUnsafeBufferPointer { x in
            patches.withUnsafeMutableBufferPointer { col in
                gather.withUnsafeBufferPointer { g in
                    for i in 0..<g.count {
                        let from = Int(g[i])
                        col[i] = from >= 0 ? x[from] : 0
                    }
                }
            }
        }
    }

    private func addBias(_ layer: Int, count: Int, each: Int, relu: Bool) {
        model.biases[layer].withUnsafeBufferPointer { bias in
            b.withUnsafeMutableBufferPointer { y in
                for o in 0..<count {
                    let add = bias[o]
                    for j in (o * each)..<((o + 1) * each) {
                        let v = y[j] + add
                        y[j] = relu ? max(v, 0) : v
                    }
                }
            }
        }
    }
}
