import Glibc
import HarkBLAS

/// Every constant of the learned reading's decision, each with why (docs/calibration.md gives
/// the runs that set them).
public struct EmbeddingTuning: Sendable, Equatable {
    /// CUSUM's drift, in standard deviations of a room embedding's similarities to every
    /// reference: an alignment gains evidence only from embeddings that stand out by more than
    /// this, so chance similarities (mean 0) drain what it holds at about this much a step.
    public var drift: Double
    /// The evidence (summed standard deviations less the drift) at one alignment that names a
    /// creative of a catalogue of up to 1 000: the highest level that ten hours of unmarked
    /// audio would reach once in 1 000 hours, with a margin, over the catalogues calibrated.
    /// What sets it is which creatives a catalogue holds more than how many: one with a solo
    /// line that any flute resembles raises it for 100 as much as for 1 000
    /// (``threshold(creatives:)`` for larger ones). The highest run is the real-audio bench's
    /// whole catalogue, its own creatives beside its decoys (60.91).
    public var threshold: Double
    /// What the threshold gains for every tenfold of creatives beyond 1 000, extrapolated: one
    /// draw of the catalogue calibrated at 100 and 1 000 creatives rose this much.
    public var thresholdPerDecade: Double
    /// A creative named must hold this much more evidence than any other creative: creatives
    /// that share a music bed or a voice gain evidence together, and the one on air leads.
    public var rivalMargin: Double
    /// Evidence that makes a creative a lead for the mark's confirmation at its place: the
    /// confirmation has a false-detection bound of its own, so a lead need not be a match.
    public var leadThreshold: Double

    public init(drift: Double, threshold: Double, thresholdPerDecade: Double, rivalMargin: Double, leadThreshold: Double) {
        (self.drift, self.threshold, self.rivalMargin, self.leadThreshold) = (drift, threshold, rivalMargin, leadThreshold)
        self.thresholdPerDecade = thresholdPerDecade
    }

    public static let standard = EmbeddingTuning(drift: 2, threshold: 61, thresholdPerDecade: 30.5, rivalMargin: 2, leadThreshold: 4)

    /// ``threshold`` for an index of `creatives`: measured for 100 and 1 000, beyond 1 000
    /// (harkd allows 4 096: 79.7) extrapolated by the logarithm of the size.
    public func threshold(creatives: Int) -> Double {
        threshold + thresholdPerDecade * max(0, log10(Double(max(1, creatives)) / 1_000))
    }
}

/// Names the creatives of an ``EmbeddingIndex`` in a stream of mono samples by their learned
/// reading. Every ``SoundEmbedderModel/grid`` seconds the room's embedding is scored against
/// every reference of every creative (one matrix product), each similarity standardised by the
/// mean and spread of that embedding's similarities to all of them, and evidence accumulates
/// along each alignment (room step − reference step, which a room does not change) as a
/// one-sided CUSUM: `S ← max(0, S + z − drift)`. A creative is named as soon as one of its
/// alignments holds ``EmbeddingTuning/threshold`` and it leads every other creative by
/// ``EmbeddingTuning/rivalMargin``: a sequential test, so a loud clean creative is named in
/// its first second and a faint one when enough of it has been heard. Not thread-safe.
public final class EmbeddingMatcher {
    public let index: EmbeddingIndex
    public let tuning: EmbeddingTuning
    /// ``EmbeddingTuning/threshold(creatives:)`` for this index.
    public let threshold: Double
    private let stream: EmbeddingStream
    private let sampleRate: Double
    private var inputCount = 0
    private var similarity: [Float]
    /// Evidence per row (the alignment that reaches that reference now) and the steps it has
    /// been accumulating; the next step's, built from them shifted by one reference.
    private var evidence: [Float]
    private var steps: [Int32]
    private var nextEvidence: [Float]
    private var nextSteps: [Int32]
    private var bestRows: [Int]
    private var bestEvidence: [Float]

    /// Stream seconds of the first sample read: what its matches' and leads' times count from
    /// (as ``SoundMatcher/startTime``).
    public let startTime: Double

    public init(index: EmbeddingIndex, sampleRate: Double, embedder: SoundEmbedder, tuning: EmbeddingTuning = .standard,
                startTime: Double = 0) {
        self.index = index
        self.startTime = startTime
        self.tuning = tuning
        threshold = tuning.threshold(creatives: index.creatives)
        self.sampleRate = sampleRate
        stream = EmbeddingStream(sampleRate: sampleRate, embedder: embedder)
        similarity = [Float](repeating: 0, count: index.rows)
        evidence = similarity
        nextEvidence = similarity
        steps = [Int32](repeating: 0, count: index.rows)
        nextSteps = steps
        bestRows = [Int](repeating: -1, count: index.creatives)
        bestEvidence = [Float](repeating: 0, count: index.creatives)
    }

    /// Seconds of input read.
    public var time: Double { Double(inputCount) / sampleRate }
    /// The most evidence any alignment of any creative has held (for the calibration on
    /// unmarked audio).
    public private(set) var highestEvidence: Double = 0
    /// The most evidence any alignment holds after the latest step.
    public private(set) var recentEvidence: Double = 0
    /// The creative that holds it (−1 before the first step).
    public private(set) var recentLeader = -1

    /// Reads samples; returns the creative named at each step whose evidence names one (each
    /// airing once is the pipeline's ``AiringMemory``).
    public func process(_ samples: UnsafeBufferPointer<Float>) -> [SoundMatch] {
        var found: [SoundMatch] = []
        let before = inputCount
        inputCount += samples.count
        guard index.rows > 0 else { return [] }
        stream.process(samples) { k, q, _ in
            step(q)
            // The input time at this embedding's end, in the caller's samples.
            let end = min(Double(inputCount), max(Double(before), stream.endSeconds(of: k) * sampleRate)) / sampleRate
            if let m = decide(time: end) { found.append(m) }
        }
        return found
    }

    private func step(_ q: UnsafeBufferPointer<Float>) {
        let rows = index.rows, dims = index.dimensions
        index.matrix.withUnsafeBufferPointer { m in
            similarity.withUnsafeMutableBufferPointer { s in
                MatrixMultiply.multiply(m.baseAddress!, q.baseAddress!, into: s.baseAddress!, m: rows, n: 1, k: dims)
            }
        }
        // Each similarity by how far it stands above what its reference scores against other
        // creatives' audio, in that audio's spreads.
        index.cohortLevel.withUnsafeBufferPointer { level in
            index.cohortSpread.withUnsafeBufferPointer { spread in
                for r in 0..<rows { similarity[r] = (similarity[r] - level[r]) / spread[r] }
            }
        }
        let drift = Float(tuning.drift)
        for c in 0..<index.creatives {
            let first = index.first[c], n = index.counts[c]
            var best = -1, most: Float = 0
            for j in 0..<n {
                let r = first + j
                let z = similarity[r]
                // The alignment reaching reference j now reached j − 1 one step ago.
                let before = j > 0 ? evidence[r - 1] : 0
                let e = max(0, before + z - drift)
                nextEvidence[r] = e
                nextSteps[r] = e > 0 ? (j > 0 ? steps[r - 1] : 0) + 1 : 0
                if e > most { (best, most) = (r, e) }
            }
            bestRows[c] = best
            bestEvidence[c] = most
        }
        swap(&evidence, &nextEvidence)
        swap(&steps, &nextSteps)
    }

    private func decide(time: Double) -> SoundMatch? {
        var top = -1, runnerUp: Float = 0
        for c in 0..<index.creatives {
            if top < 0 || bestEvidence[c] > bestEvidence[top] {
                if top >= 0 { runnerUp = max(runnerUp, bestEvidence[top]) }
                top = c
            } else {
                runnerUp = max(runnerUp, bestEvidence[c])
            }
        }
        guard top >= 0 else { return nil }
        let most = Double(bestEvidence[top])
        highestEvidence = max(highestEvidence, most)
        (recentEvidence, recentLeader) = (most, top)
        guard most >= threshold, most - Double(runnerUp) >= tuning.rivalMargin else { return nil }
        let row = bestRows[top], j = row - index.first[top]
        let offset = stream.endSeconds(of: j)
        let span = Double(steps[row] - 1) * stream.embedder.model.grid + Double(stream.embedder.model.segmentSamples) / stream.embedder.model.rate
        return SoundMatch(reference: top, time: startTime + time, offset: offset, votes: Int(steps[row]),
                          windowStart: startTime + max(0, time - span), score: most)
    }

    /// The creatives with the most evidence now (``EmbeddingTuning/leadThreshold`` or more),
    /// most first, with where each would have begun: where the mark is confirmed.
    public func leads(limit: Int) -> [SoundLead] {
        guard limit > 0 else { return [] }
        let model = stream.embedder.model
        let now = stream.count - 1
        return (0..<index.creatives)
            .filter { bestRows[$0] >= 0 && Double(bestEvidence[$0]) >= tuning.leadThreshold }
            .sorted { (bestEvidence[$0], $1) > (bestEvidence[$1], $0) }
            .prefix(limit)
            .map { c in
                let j = bestRows[c] - index.first[c]
                // The room's step `now` read the creative's step j: their starts are j steps apart.
                let start = Double((now - j) * model.gridSamples) / model.rate
                return SoundLead(reference: c, creativeStart: startTime + start, votes: Int(steps[bestRows[c]]))
            }
    }
}
