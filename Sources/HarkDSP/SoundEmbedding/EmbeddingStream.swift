/// Embeds a stream of mono samples at any rate: resampled to the model's rate, and every
/// ``SoundEmbedderModel/grid`` seconds the last segment (about a second) through the network.
/// Also what `hark catalogue add` reads a creative with, so that a creative's embeddings and a
/// room's are made the same way: embedding `k` covers the model-rate samples from
/// `k × gridSamples` to `k × gridSamples + segmentSamples`. Not thread-safe.
public final class EmbeddingStream {
    public let embedder: SoundEmbedder
    private let resampler: Resampler?
    private var pending: [Float] = []
    private var resampled: [Float] = []
    /// Model-rate samples dropped from the front of `pending` so far.
    private var dropped = 0
    /// The model-rate sample where the next segment starts.
    private var nextStart = 0
    private var vector: [Float]

    public init(sampleRate: Double, embedder: SoundEmbedder) {
        self.embedder = embedder
        let rate = embedder.model.rate
        resampler = sampleRate == rate ? nil : Resampler(from: sampleRate, to: rate)
        vector = [Float](repeating: 0, count: embedder.model.dimensions)
    }

    /// Embeddings made so far.
    public private(set) var count = 0

    /// Reads samples; hands each new embedding (``SoundEmbedderModel/dimensions`` values, valid
    /// during the call) with its index and its segment's RMS (at the model's rate) to `each`.
    public func process(_ samples: UnsafeBufferPointer<Float>, _ each: (Int, UnsafeBufferPointer<Float>, Float) -> Void) {
        if let resampler {
            resampled.removeAll(keepingCapacity: true)
            resampler.process(samples, into: &resampled)
            pending.append(contentsOf: resampled)
        } else {
            pending.append(contentsOf: samples)
        }
        let model = embedder.model
        let segment = model.segmentSamples, grid = model.gridSamples
        while nextStart + segment <= dropped + pending.count {
            let from = nextStart - dropped
            var energy: Float = 0
            pending.withUnsafeBufferPointer { p in
                for i in from..<(from + segment) { energy += p[i] * p[i] }
                vector.withUnsafeMutableBufferPointer { v in
                    embedder.embed(UnsafeBufferPointer(rebasing: p[from..<(from + segment)]), into: v)
                }
            }
            let rms = (energy / Float(segment)).squareRoot()
            vector.withUnsafeBufferPointer { each(count, $0, rms) }
            count += 1
            nextStart += grid
        }
        // Keep what the next segments still need.
        let keep = nextStart - dropped
        if keep > 4 * segment {
            pending.removeFirst(keep)
            dropped += keep
        }
    }

    /// Seconds of the creative (or of the input) at the end of embedding `k`.
    public func endSeconds(of k: Int) -> Double {
        let model = embedder.model
        return Double(k * model.gridSamples + model.segmentSamples) / model.rate
    }

    /// The embeddings of a whole recording, `count × dimensions` values, and each segment's RMS.
    public static func embeddings(of samples: UnsafeBufferPointer<Float>, sampleRate: Double,
                                  embedder: SoundEmbedder) -> (values: [Float], rms: [Float]) {
        let stream = EmbeddingStream(sampleRate: sampleRate, embedder: embedder)
        var out: [Float] = [], rms: [Float] = []
        // In blocks, as a file is read: the resampler's buffers stay small.
        var at = 0
        while at < samples.count {
            let n = min(65_536, samples.count - at)
            stream.process(UnsafeBufferPointer(rebasing: samples[at..<(at + n)])) { _, v, r in
                out.append(contentsOf: v)
                rms.append(r)
            }
            at += n
        }
        return (out, rms)
    }
}
