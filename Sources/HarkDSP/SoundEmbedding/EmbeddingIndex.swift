import Glibc
import HarkBLAS

/// One creative's reading by the sound embedder: an embedding every
/// ``SoundEmbedderModel/grid`` seconds of it, each of ``SoundEmbedderModel/dimensions`` values
/// kept in 8 bits (a unit vector's components × 127, rounded), and the network that made them.
/// 60 s of a creative is 240 embeddings of 64 bytes, 15 kB.
public struct CreativeEmbeddings: Sendable, Equatable {
    public var model: String
    public var dimensions: Int
    public var values: [Int8]

    public var count: Int { dimensions > 0 ? values.count / dimensions : 0 }

    public init(model: String, dimensions: Int, values: [Int8]) {
        precondition(dimensions > 0 && values.count % dimensions == 0, "whole embeddings")
        (self.model, self.dimensions, self.values) = (model, dimensions, values)
    }

    /// The embeddings of a recording of a creative, through `embedder`. A segment
    /// ``quietBelow`` dB or more under the creative's loudest is kept as zeros, which match
    /// nothing: the network reads level out, so near-silence (a fade, a pause) would otherwise
    /// look like every other near-silence, a room's included.
    public init(reading samples: UnsafeBufferPointer<Float>, sampleRate: Double, embedder: SoundEmbedder) {
        let (floats, rms) = EmbeddingStream.embeddings(of: samples, sampleRate: sampleRate, embedder: embedder)
        let dims = embedder.model.dimensions
        let floor = (rms.max() ?? 0) * Float(pow(10, -Self.quietBelow / 20))
        var values = floats.map { Int8(clamping: Int(($0 * 127).rounded())) }
        for (k, r) in rms.enumerated() where r < floor {
            for j in 0..<dims { values[k * dims + j] = 0 }
        }
        self.init(model: embedder.model.digest, dimensions: dims, values: values)
    }

    /// How far under the creative's loudest segment a segment is too quiet to identify it.
    public static let quietBelow = 40.0

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case length(Int, dimensions: Int)
        public var description: String {
            switch self {
            case .length(let n, let d): return "\(n) bytes of embeddings are not whole embeddings of \(d)"
            }
        }
    }

    /// The values as a catalogue keeps them, a byte each.
    public var bytes: [UInt8] { values.map { UInt8(bitPattern: $0) } }

    public init(model: String, dimensions: Int, bytes: [UInt8]) throws(Failure) {
        guard dimensions > 0, bytes.count % dimensions == 0 else { throw .length(bytes.count, dimensions: dimensions) }
        self.init(model: model, dimensions: dimensions, values: bytes.map { Int8(bitPattern: $0) })
    }
}

/// Every creative's embeddings in one matrix, a row per embedding, so that one product scores
/// a room's embedding against all of them (``EmbeddingMatcher``).
public final class EmbeddingIndex: Sendable {
    public let creatives: Int
    public let dimensions: Int
    /// The network the embeddings were made by (``SoundEmbedderModel/digest``).
    public let model: String
    /// rows × dimensions, each row a unit vector again after the 8-bit rounding (a row of
    /// zeros, a quiet segment, stays zeros and scores 0 against everything).
    let matrix: [Float]
    /// Per row, its creative, and the row of the creative's next embedding (-1 after its last).
    let creative: [Int32]
    /// Per creative, its first row and its count of rows.
    let first: [Int]
    let counts: [Int]
    /// Per row, the similarity that ``cohortQuantile`` of other creatives' embeddings stay under
    /// (a cohort of at most ``cohortSize``), and the spread of their similarities: how much the
    /// row resembles audio that is not its creative. A sustained chord or a voice over a quiet
    /// bed resembles a great deal (the network is trained to ignore talkers, so two voices look
    /// alike to it), and its similarities count only by how far they stand above that
    /// (``EmbeddingMatcher``).
    let cohortLevel: [Float]
    let cohortSpread: [Float]

    /// The share of other creatives' audio a row's similarity must stand above to count.
    public static let cohortQuantile = 0.95

    /// Rows of other creatives each row is compared with when the index is built.
    public static let cohortSize = 2048

    public var rows: Int { creative.count }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case otherModel(creative: Int, model: String, expected: String)
        case otherDimensions(creative: Int)
        public var description: String {
            switch self {
            case .otherModel(let c, let m, let e):
                return "creative \(c)'s embeddings were made by sound embedder \(m), not this build's \(e): add it again with its audio"
            case .otherDimensions(let c): return "creative \(c)'s embeddings have another size than the others'"
            }
        }
    }

    /// Each row's ``cohortQuantile`` and spread of similarity to a cohort: the background bank
    /// and rows of other creatives drawn evenly over the index (``cohortSize`` in all); with
    /// neither, 0 and 1 (no correction).
    static func cohort(matrix: [Float], creative: [Int32], dimensions dims: Int, background: [Float]) -> ([Float], [Float]) {
        let rows = creative.count
        var level = [Float](repeating: 0, count: rows), spread = [Float](repeating: 1, count: rows)
        let banked = background.count / dims
        guard rows > 0, banked > 0 || Set(creative).count > 1 else { return (level, spread) }
        let room = max(0, cohortSize - banked)
        let step = max(1, rows / max(1, room))
        let picked = room == 0 ? [] : Array(stride(from: 0, to: rows, by: step).prefix(room))
        var cohort = background
        cohort.reserveCapacity((banked + picked.count) * dims)
        for r in picked { for j in 0..<dims { cohort.append(matrix[r * dims + j]) } }
        // A row of the bank is creative -1: no creative's own.
        let owners = [Int32](repeating: -1, count: banked) + picked.map { creative[$0] }
        let size = owners.count
        // A block of rows at a time: 100 creatives' 11 600 rows against 2 048 in one product
        // held 95 MB, harkd's peak of memory while it loaded a catalogue.
        let block = 256
        var sims = [Float](repeating: 0, count: min(rows, block) * size)
        var others = [Float](repeating: 0, count: size)
        for first in stride(from: 0, to: rows, by: block) {
            let count = min(block, rows - first)
            matrix.withUnsafeBufferPointer { m in
                cohort.withUnsafeBufferPointer { c in
                    sims.withUnsafeMutableBufferPointer { s in
                        MatrixMultiply.multiply(m.baseAddress! + first * dims, c.baseAddress!, into: s.baseAddress!, m: count, n: size,
                                                k: dims, bTransposed: true)
                    }
                }
            }
            // Through raw buffers, and the quantile by selection rather than a sort: this loop
            // read 11 600 rows by 2 048 when harkd loaded 100 creatives, most of its load.
            sims.withUnsafeBufferPointer { s in owners.withUnsafeBufferPointer { o in others.withUnsafeMutableBufferPointer { out in
                for i in 0..<count {
                    let r = first + i, own = creative[r], row = s.baseAddress! + i * size
                    var n = 0, sum = 0.0, square = 0.0
                    for j in 0..<size where o[j] != own {
                        let v = row[j]
                        out[n] = v
                        n += 1
                        sum += Double(v)
                        square += Double(v) * Double(v)
                    }
                    guard n >= 2 else { continue }
                    let m = sum / Double(n)
                    level[r] = Self.select(min(n - 1, Int(cohortQuantile * Double(n))), of: UnsafeMutableBufferPointer(rebasing: out[0..<n]))
                    spread[r] = Float(max((square / Double(n) - m * m).squareRoot(), 0.02))
                }
            } } }
        }
        return (level, spread)
    }

    /// The `k`-th smallest of `values` (0-based), as `values.sorted()[k]` would give it; the
    /// values are reordered. Quickselect with the median of three as pivot.
    static func select(_ k: Int, of values: UnsafeMutableBufferPointer<Float>) -> Float {
        precondition(values.indices.contains(k), "k within the values")
        var lo = 0, hi = values.count - 1
        while lo < hi {
            let mid = lo + (hi - lo) / 2
            // Order lo, mid, hi so that the median of the three sits at mid.
            if values[mid] < values[lo] { values.swapAt(mid, lo) }
            if values[hi] < values[lo] { values.swapAt(hi, lo) }
            if values[hi] < values[mid] { values.swapAt(hi, mid) }
            let pivot = values[mid]
            var i = lo, j = hi
            while i <= j {
                while values[i] < pivot { i += 1 }
                while pivot < values[j] { j -= 1 }
                if i <= j {
                    values.swapAt(i, j)
                    i += 1
                    j -= 1
                }
            }
            // [lo, j] ≤ pivot ≤ [i, hi], and what lies between equals the pivot.
            if k <= j { hi = j } else if k >= i { lo = i } else { return values[k] }
        }
        return values[k]
    }

    /// Creatives without embeddings (nil) take no rows: the learned reading never names them.
    /// `background`: embeddings of audio that is no creative, rows of the same size, read as
    /// part of every row's cohort (the model's own bank by default).
    public init(embeddings: [CreativeEmbeddings?], model: String,
                background: [Float] = SoundEmbedderModel.builtIn.background) throws(Failure) {
        let dims = embeddings.compactMap { $0?.dimensions }.first ?? 1
        var matrix: [Float] = [], creative: [Int32] = [], first: [Int] = [], counts: [Int] = []
        for (c, e) in embeddings.enumerated() {
            first.append(creative.count)
            guard let e else { counts.append(0); continue }
            guard e.model == model else { throw .otherModel(creative: c, model: e.model, expected: model) }
            guard e.dimensions == dims else { throw .otherDimensions(creative: c) }
            counts.append(e.count)
            for r in 0..<e.count {
                var norm: Float = 0
                for j in 0..<dims { let v = Float(e.values[r * dims + j]); norm += v * v }
                let scale = 1 / max(norm.squareRoot(), 1e-6)
                for j in 0..<dims { matrix.append(Float(e.values[r * dims + j]) * scale) }
                creative.append(Int32(c))
            }
        }
        self.creatives = embeddings.count
        self.dimensions = dims
        self.model = model
        self.matrix = matrix
        (cohortLevel, cohortSpread) = Self.cohort(matrix: matrix, creative: creative, dimensions: dims,
                                                  background: background.count % dims == 0 ? background : [])
        self.creative = creative
        self.first = first
        self.counts = counts
    }
}
