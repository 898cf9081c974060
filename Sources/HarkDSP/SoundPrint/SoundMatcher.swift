import Dispatch
import FoundationEssentials
import Synchronization
import Glibc

/// A creative named by its own sound.
public struct SoundMatch: Sendable, Equatable {
    /// Index of the creative in the matcher's references.
    public var reference: Int
    /// Stream seconds (the matcher's ``SoundMatcher/startTime`` plus its input) after which
    /// the match was confirmed.
    public var time: Double
    /// Where the creative was, in its own seconds, at ``time``; nil while another place in it
    /// fits the audio nearly as well (``LandmarkTuning/alignmentRatio``).
    public var offset: Double?
    /// Landmarks of the input that fell on this creative at one alignment within the window.
    public var votes: Int
    /// Stream seconds where the window that was read begins.
    public var windowStart: Double
    /// The learned reading's evidence at the alignment (``EmbeddingMatcher``); nil for landmarks.
    public var score: Double? = nil
}

/// A creative the sound leans to, named or not, and where it would have begun.
public struct SoundLead: Sendable, Equatable {
    /// Index of the creative in the matcher's references.
    public var reference: Int
    /// Stream seconds at which the creative's first frame would have played, by its best
    /// alignment (it may lie before the input began).
    public var creativeStart: Double
    /// Votes at that alignment, shared entries' included.
    public var votes: Int
}

/// Names the creatives of a catalogue in a stream of mono samples by their landmarks: every
/// landmark of the input whose hash a creative holds votes for the alignment
/// (input frame − creative frame) it implies, and a creative is named when one alignment
/// (±1 frame) gathers ``LandmarkTuning/threshold`` votes within the last
/// ``LandmarkTuning/window`` seconds, or its peaks and envelopes say so (``LandmarkTuning``
/// holds every constant of the decision).
///
/// The votes are counted as they arrive and leave the window, so the cost is that of the
/// landmarks looked up, a few hundred a second, not of the catalogue's size. Not thread-safe.
public final class SoundMatcher {
    public let tuning: LandmarkTuning
    public let index: SoundIndex
    private let reader: SoundPrintReader
    private let sampleRate: Double
    private let windowFrames: Int

    private struct Vote { var frame: Int; var key: Int64; var counted: Bool; var countedAll: Bool }
    /// The (alignment, input anchor frame) pairs that have voted, unshared and all.
    private var seen = AnchorVoteSet()
    private var seenAll = AnchorVoteSet()
    private var votes: [Vote] = []
    private var votesHead = 0
    private var counts: VoteCounts
    /// The same, shared entries' votes included: what a creative's audio gathers for each
    /// creative that shares sound with another.
    private var allCounts: VoteCounts
    private var inputCount = 0
    /// The input's peaks within the window, in frame order (from `roomHead`).
    private var roomPeaks: [SpectralPeak] = []
    private var roomHead = 0
    /// The input's envelope rows within the window (from `rowHead`); `rowBase` is the row
    /// number of `roomRows[0]` (row i covers frames 2i and 2i + 1).
    private var roomRows: [[Float]] = []
    private var rowHead = 0
    private var rowBase = 0
    private var envelopeRows = EnvelopeRows()
    private var touched: [Int64] = []
    /// Stream seconds of the first sample read: what its matches' times count from, so that a
    /// matcher started part-way through a stream (after a gap, or taking over from one that read
    /// for ``longestRun``) reports on the stream's clock.
    public let startTime: Double

    public init(index: SoundIndex, sampleRate: Double, tuning: LandmarkTuning = .standard, startTime: Double = 0) throws {
        reader = try SoundPrintReader(sampleRate: sampleRate)
        self.startTime = startTime
        self.sampleRate = sampleRate
        self.index = index
        self.tuning = tuning
        windowFrames = Int((tuning.window / reader.frameSeconds).rounded())
        reviewSamples = max(1, Int((sampleRate * Self.reviewInterval).rounded()))
        counts = VoteCounts(creatives: index.creatives)
        allCounts = counts
        combinedLimit = tuning.combinedThreshold(creatives: index.creatives)
    }

    /// Seconds of input read.
    public var time: Double { Double(inputCount) / sampleRate }

    /// The longest a matcher should read, 100 days: an alignment (input frame − creative
    /// frame) is kept in 32 bits, which 16 ms frames fill after 397 days. harkd listens for
    /// longer than that; its pipeline hands over to a new matcher first.
    public static let longestRun = 100 * 86_400.0

    /// Reads samples; returns the creatives named in them, at every review that names them
    /// (each airing once is the pipeline's ``AiringMemory``).
    public func process(_ samples: UnsafeBufferPointer<Float>) -> [SoundMatch] {
        let reviewDue = (inputCount + samples.count) / reviewSamples > inputCount / reviewSamples
        inputCount += samples.count
        let touchedBefore = touched.count
        var newest = 0
        reader.process(samples, peak: { roomPeaks.append(SpectralPeak(frame: $0.frame, bin: $0.bin, level: 0)) },
                       spectrum: { if let row = envelopeRows.add($0) { roomRows.append(row) } }) { l in
            newest = max(newest, l.frame)
            vote(l)
        }
        if touched.count > touchedBefore { touchedNewest = max(touchedNewest, newest) }
        guard reviewDue, !touched.isEmpty else { return [] }
        newestFrame = touchedNewest
        forget(before: touchedNewest - windowFrames)
        defer { touched.removeAll(keepingCapacity: true) }
        return settle()
    }

    /// How often the candidates are reviewed at most: each review reads every alignment of
    /// every creative that gained votes. harkd hands over 20 ms at a time, and reviewing after
    /// each was an eighth of its CPU with a catalogue of 100; a file's blocks of 4 096 frames
    /// are longer than this at any rate up to 68 kHz, so a file is reviewed after every block,
    /// as it always was.
    static let reviewInterval = 0.06
    private let reviewSamples: Int
    /// The newest anchor frame among the landmarks that voted since the last review.
    private var touchedNewest = 0

    private func key(_ reference: Int32, _ alignment: Int) -> Int64 { VoteCounts.key(reference, alignment) }

    /// A vote counts once per anchor frame of the input: the landmarks of one event (a chord's
    /// partials, a drum) all start at one frame, and an event that happens to match by itself
    /// (the same chord in another song) is one piece of evidence, not twenty.
    private func vote(_ l: Landmark) {
        index.entries(for: l.hash) { reference, frame, shared in
            let k = key(reference, l.frame - Int(frame))
            let id = AnchorVoteSet.vote(creative: reference, creativeFrame: Int(frame), inputFrame: l.frame)
            let counted = !shared && seen.insert(id)
            if counted {
                counts.add(k)
                touched.append(k)
            }
            let countedAll = seenAll.insert(id)
            if countedAll {
                allCounts.add(k)
                noteLead(Int(reference), alignment: l.frame - Int(frame), votes: allCounts.score(k))
            }
            if counted || countedAll { votes.append(Vote(frame: l.frame, key: k, counted: counted, countedAll: countedAll)) }
        }
    }

    private func forget(before frame: Int) {
        while votesHead < votes.count && votes[votesHead].frame < frame {
            let v = votes[votesHead]
            let id = AnchorVoteSet.vote(creative: Int32(truncatingIfNeeded: v.key >> 32),
                                        creativeFrame: v.frame - Int(Int32(truncatingIfNeeded: v.key)), inputFrame: v.frame)
            if v.counted {
                counts.remove(v.key)
                seen.remove(id)
            }
            if v.countedAll {
                allCounts.remove(v.key)
                seenAll.remove(id)
            }
            votesHead += 1
        }
        while roomHead < roomPeaks.count && roomPeaks[roomHead].frame < frame { roomHead += 1 }
        while rowHead < roomRows.count && (rowBase + rowHead) * SoundEnvelope.framesPerRow < frame { rowHead += 1 }
        if rowHead > 4096 && rowHead * 2 > roomRows.count {
            roomRows.removeFirst(rowHead)
            rowBase += rowHead
            rowHead = 0
        }
        if roomHead > 4096 && roomHead * 2 > roomPeaks.count {
            roomPeaks.removeFirst(roomHead)
            roomHead = 0
        }
        if votesHead > 4096 && votesHead * 2 > votes.count {
            votes.removeFirst(votesHead)
            votesHead = 0
        }
    }

    /// Per creative that has had ``candidateVotes`` at one alignment (shared entries included),
    /// the alignment with the most votes seen as they arrived, and those votes: what
    /// ``leads(limit:)`` starts from. Reading every such creative's every alignment twice a
    /// second, as ``bestAlignments(shared:of:)`` does, took 7 % of harkd's analysis thread.
    private var leadAlignments: [Int: (alignment: Int, votes: Int)] = [:]

    private func noteLead(_ r: Int, alignment a: Int, votes: Int) {
        guard votes >= tuning.candidateVotes else { return }
        if let kept = leadAlignments[r], kept.alignment != a, allCounts.score(r, kept.alignment) > votes { return }
        leadAlignments[r] = (a, votes)
    }

    /// The creatives with the most votes at one clear alignment within the window now, named or
    /// not, shared entries' votes included, most first: where the mark may be confirmed
    /// (``WatermarkDetector/confirm(_:creativeStart:)``). Each has ``candidateVotes`` or more,
    /// and ``alignmentRatio`` times the votes of any other alignment of its own.
    public func leads(limit: Int) -> [SoundLead] {
        guard limit > 0, !leadAlignments.isEmpty else { return [] }
        // Each kept alignment's votes now (votes leave the window); the strongest few are then
        // read whole for their best alignment and the runner-up.
        var strongest: [(r: Int, votes: Int)] = []
        for (r, kept) in leadAlignments {
            let votes = allCounts.score(r, kept.alignment)
            if votes < tuning.candidateVotes { leadAlignments[r] = nil } else { strongest.append((r, votes)) }
        }
        strongest.sort { ($0.votes, $1.r) > ($1.votes, $0.r) }
        let best = bestAlignments(shared: true, of: Set(strongest.prefix(2 * limit).map(\.r)))
        return best.filter { $0.value.votes >= tuning.candidateVotes && Double($0.value.votes) >= tuning.alignmentRatio * Double($0.value.runnerUp) }
            .sorted { ($0.value.votes, $1.key) > ($1.value.votes, $0.key) }
            .prefix(limit)
            .map { SoundLead(reference: $0.key, creativeStart: startTime + Double($0.value.alignment) * reader.frameSeconds, votes: $0.value.votes) }
    }

    /// Each creative's best score within the window now (for studies of the margin).
    public func bestScores() -> [Int: Int] { bestAlignments().mapValues(\.votes) }

    /// Each creative's best alignment within the window now, and its votes (with its shared
    /// entries' votes: `shared`); `runnerUp`, the most votes at any alignment more than a frame
    /// from the best.
    func bestAlignments(shared: Bool = false, of creatives: Set<Int>? = nil) -> [Int: (alignment: Int, votes: Int, runnerUp: Int)] {
        var best: [Int: (alignment: Int, votes: Int, runnerUp: Int)] = [:]
        let counts = shared ? allCounts : counts
        // Only the creatives asked for: scoring an alignment costs two lookups, and on noise
        // the window holds thousands of alignments with a vote or two.
        var scored: [(alignment: Int, votes: Int)] = []
        for r in creatives.map(Array.init) ?? counts.creativesWithVotes {
            counts.scores(of: r, into: &scored)
            // Ties go to the earlier alignment, so the answer does not depend on the order the
            // table keeps.
            guard var b = scored.first.map({ (alignment: $0.alignment, votes: $0.votes, runnerUp: 0) }) else { continue }
            for (a, s) in scored.dropFirst() where s > b.votes || (s == b.votes && a < b.alignment) {
                (b.alignment, b.votes) = (a, s)
            }
            for (a, s) in scored where abs(a - b.alignment) > 1 { b.runnerUp = max(b.runnerUp, s) }
            best[r] = b
        }
        return best
    }

    private func score(_ k: Int64) -> Int { counts.score(k) }

    /// Input frames per block over which the evidence's spread is read: 0.512 s.
    static let blockFrames = 32

    /// How far the input's peaks coincide with a creative's at an alignment beyond what they
    /// do at other alignments: the input's peaks in the window that fall on one of the
    /// creative's (±1 frame, ±1 bin) at `alignment`, against the same count at
    /// ``nullShifts`` other alignments (the creative's peaks shifted circularly, so each count
    /// reads as many peaks): (hits − their mean) / their spread, the spread at least the
    /// square root of the mean (a Poisson count's). `trimmed` is the same without the two
    /// blocks of the input (``blockFrames``) that gave the most: a second of sound that two
    /// recordings share (a word a speech synthesiser says the same way twice, a stock sound
    /// effect) is not a creative heard.
    ///
    /// A landmark needs both its peaks to survive the room; this asks it of each peak alone,
    /// and of every peak of the creative, not only those it kept for landmarks.
    public func peakEvidence(reference r: Int, alignment: Int) -> (z: Double, trimmed: Double, hits: Int, chance: Double) {
        let set = index.peakSets[r]
        guard set.frames > 2 * Self.nullShiftSpacing, roomHead < roomPeaks.count else { return (0, 0, 0, 0) }
        let first = roomPeaks[roomHead].frame
        let blocks = (roomPeaks[roomPeaks.count - 1].frame - first) / Self.blockFrames + 1
        func hits(_ shift: Int, into perBlock: inout [Double]) -> Int {
            roomPeaks.withUnsafeBufferPointer { peaks in
                perBlock.withUnsafeMutableBufferPointer { perBlock in
                    set.hits(UnsafeBufferPointer(rebasing: peaks[roomHead...]), shift: shift - alignment, first: first,
                             blockFrames: Self.blockFrames, into: perBlock)
                }
            }
        }
        var aligned = [Double](repeating: 0, count: blocks)
        let h = hits(0, into: &aligned)
        let step = max(Self.nullShiftSpacing, (set.frames - 2 * Self.nullShiftSpacing) / Self.nullShifts)
        var expected = [Double](repeating: 0, count: blocks)
        let null = (0..<Self.nullShifts).map { Double(hits(Self.nullShiftSpacing + $0 * step, into: &expected)) }
        let mean = null.reduce(0, +) / Double(null.count)
        let variance = null.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(null.count - 1)
        let spread = max(1, variance, mean).squareRoot()
        let excess = (0..<blocks).map { aligned[$0] - expected[$0] / Double(Self.nullShifts) }.sorted(by: >)
        let total = excess.reduce(0, +)
        let trimmed = total - excess.prefix(2).reduce(0, +)
        return (total / spread, trimmed / spread, h, mean)
    }

    /// How far the input's band envelopes follow the creative's at an alignment beyond what
    /// they do at other alignments: per band, the correlation over the window of the input's
    /// levels with the creative's (each less its mean over the window: a room's and a speaker's
    /// colouring drop out), averaged over the bands; against the same at the ``nullShifts``
    /// other alignments of ``peakEvidence(reference:alignment:)``: (ρ − their mean) / their
    /// spread; `trimmed` without the two blocks that gave the most, as there.
    public func envelopeEvidence(reference r: Int, alignment: Int) -> (z: Double, trimmed: Double, rho: Double) {
        let envelope = index.envelopes[r]
        let bands = SoundEnvelope.bands, perRow = SoundEnvelope.framesPerRow
        let rows = envelope.rows
        let count = roomRows.count - rowHead
        guard rows * perRow > 2 * Self.nullShiftSpacing, count >= 8 else { return (0, 0, 0) }
        let blocks = ((count - 1) * perRow) / Self.blockFrames + 1
        // The input's levels less their means, and each band's norm: the same at every shift.
        var x = [Float](repeating: 0, count: count * bands)
        var xNorm = [Float](repeating: 0, count: bands)
        for b in 0..<bands {
            var mean: Float = 0
            for t in 0..<count { mean += roomRows[rowHead + t][b] }
            mean /= Float(count)
            for t in 0..<count {
                let v = roomRows[rowHead + t][b] - mean
                x[t * bands + b] = v
                xNorm[b] += v * v
            }
        }
        var y = [Float](repeating: 0, count: count * bands)
        var yMean = [Float](repeating: 0, count: bands), yNorm = yMean, scale = yMean
        let firstFrame = (rowBase + rowHead) * perRow
        // Through spans, without a row's slice or an array made per shift: the review reads this
        // at 25 shifts of every candidate. The sums run in the same order as before.
        func correlation(_ shift: Int, into perBlock: inout [Double]) -> Double {
            let levels = envelope.levels.span, x = x.span, xNorm = xNorm.span
            var y = y.mutableSpan, yMean = yMean.mutableSpan, yNorm = yNorm.mutableSpan, scale = scale.mutableSpan
            var perBlock = perBlock.mutableSpan
            for b in 0..<bands { (yMean[b], yNorm[b]) = (0, 0) }
            for t in 0..<count {
                let frame = firstFrame + t * perRow - alignment + shift
                var j = (frame >= 0 ? frame : frame - (perRow - 1)) / perRow % rows
                if j < 0 { j += rows }
                for b in 0..<bands {
                    let level = Float(levels[j * bands + b]) / SoundEnvelope.stepsPerDB
                    y[t * bands + b] = level
                    yMean[b] += level
                }
            }
            for t in 0..<count {
                for b in 0..<bands {
                    let v = y[t * bands + b] - yMean[b] / Float(count)
                    y[t * bands + b] = v
                    yNorm[b] += v * v
                }
            }
            for b in 0..<bands {
                scale[b] = xNorm[b] > 0 && yNorm[b] > 0 ? 1 / (xNorm[b] * yNorm[b]).squareRoot() / Float(bands) : 0
            }
            var total = 0.0
            for t in 0..<count {
                var c: Float = 0
                for b in 0..<bands { c += x[t * bands + b] * y[t * bands + b] * scale[b] }
                perBlock[(t * perRow) / Self.blockFrames] += Double(c)
                total += Double(c)
            }
            return total
        }
        var aligned = [Double](repeating: 0, count: blocks)
        let rho = correlation(0, into: &aligned)
        let frames = rows * perRow
        let step = max(Self.nullShiftSpacing, (frames - 2 * Self.nullShiftSpacing) / Self.nullShifts)
        var expected = [Double](repeating: 0, count: blocks)
        let null = (0..<Self.nullShifts).map { correlation(Self.nullShiftSpacing + $0 * step, into: &expected) }
        let mean = null.reduce(0, +) / Double(null.count)
        let variance = null.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(null.count - 1)
        let spread = max(0.01, variance.squareRoot())
        let excess = (0..<blocks).map { aligned[$0] - expected[$0] / Double(Self.nullShifts) }.sorted(by: >)
        let total = excess.reduce(0, +)
        let trimmed = total - excess.prefix(2).reduce(0, +)
        return (total / spread, trimmed / spread, rho)
    }

    /// The votes at an alignment (±1) within the window, and the same without the two blocks
    /// that gave the most (as ``peakEvidence(reference:alignment:)``'s `trimmed`).
    public func spreadVotes(reference r: Int, alignment: Int) -> (votes: Int, trimmed: Int) {
        let k = key(Int32(r), alignment)
        var perBlock: [Int: Int] = [:]
        var total = 0
        for i in votesHead..<votes.count where votes[i].counted && abs(votes[i].key - k) <= 1 {
            perBlock[votes[i].frame / Self.blockFrames, default: 0] += 1
            total += 1
        }
        return (total, total - perBlock.values.sorted(by: >).prefix(2).reduce(0, +))
    }

    /// Alignments the peaks' chance coincidence is read at, spread over the creative from
    /// ``nullShiftSpacing`` frames (0.4 s) either side of the candidate's.
    public static let nullShifts = 24
    static let nullShiftSpacing = 25


    /// The most trimmed peak evidence any candidate whose votes were spread enough reached so
    /// far, named or not (for studies of the margin on unmarked audio).
    public private(set) var highestPeakEvidence = -Double.infinity
    /// The same for the peaks' and envelopes' evidence together, spread or not.
    public private(set) var highestCombinedEvidence = -Double.infinity

    /// The last verdict on each creative, the votes it was given for and the input frame it was
    /// read at: the evidence is read again when the votes change, at most every
    /// ``reviewFrames`` at one alignment.
    private var verdicts: [Int: (alignment: Int, votes: Int, frame: Int, heard: Bool)] = [:]
    /// 128 ms: a candidate's evidence is read at 25 alignments each time, the matcher's main
    /// cost on noisy audio, and gains little in a hop.
    static let reviewFrames = 8
    /// Candidates whose evidence is read in one pass, most votes first.
    static let reviewsPerPass = 3
    private var reviewsLeft = 0
    private var newestFrame = 0

    /// ``LandmarkTuning/combinedThreshold(creatives:)`` for this matcher's index.
    public let combinedLimit: Double

    /// The third way to be named: the input's band envelopes follow the creative's, their
    /// correlation (``envelopeEvidence(reference:alignment:)``'s `rho`) reaching
    /// ``LandmarkTuning/followThreshold``, at an alignment with ``LandmarkTuning/followVotes``
    /// votes, ``LandmarkTuning/followUniqueness`` times those at any other alignment, whose
    /// peaks' whole-window evidence reaches ``LandmarkTuning/followPeakEvidence``.
    ///
    /// Nothing is trimmed here: this is what names a creative heard in bursts (speech with
    /// pauses, whose evidence lies in a few blocks of the window); what keeps a burst that two
    /// recordings share from naming anything is the correlation, read over the whole window,
    /// pauses and all. The alignment must stand alone because music that follows a creative's
    /// beat and chords by chance (the bench's generator makes its pieces alike) does so at every
    /// repeat of a bar: such candidates followed at up to 0.68 in unmarked music, with another
    /// alignment nearly as voted. And the peaks must say more than the minimum because a drum
    /// kit is the same kick, snare and hi-hat at the same tempo in every recording of the bench's
    /// drums: unmarked drums followed a drum creative at 0.997, the alignment standing alone by
    /// its bass notes, with 8 votes and peak evidence 4.1–4.4. docs/watermark.md (The creative's
    /// sound) gives what ten hours of unmarked audio reached.
    /// The most any candidate that passes the other three tests followed its creative so far,
    /// named or not (for studies of the margin on unmarked audio).
    public private(set) var highestFollowing = -Double.infinity

    /// What the matcher reads of creative `r` at `alignment` with `votes` there (``SoundEvidence``):
    /// the votes' spread, the peaks' and the envelopes' evidence within the window now.
    public func evidence(reference r: Int, alignment: Int, votes: Int, standsAlone: Bool) -> SoundEvidence {
        evidence(r, alignment: alignment, votes: votes,
                 spread: spreadVotes(reference: r, alignment: alignment).trimmed >= tuning.spreadVotes, standsAlone: standsAlone)
    }

    private func evidence(_ r: Int, alignment: Int, votes: Int, spread: Bool, standsAlone: Bool) -> SoundEvidence {
        let peaks = peakEvidence(reference: r, alignment: alignment)
        let envelopes = envelopeEvidence(reference: r, alignment: alignment)
        return SoundEvidence(votes: votes, spread: spread, peaks: (peaks.z, peaks.trimmed),
                             envelopes: (envelopes.trimmed, envelopes.rho), standsAlone: standsAlone)
    }

    /// Whether a candidate alignment names its creative (docs/watermark.md, The creative's
    /// sound, gives the calibration):
    /// - its votes, spread over more than a second of input, reach ``threshold``; or
    /// - its votes so spread, its peaks' trimmed evidence reaches ``peakThreshold``; or
    /// - its peaks' and its envelopes' trimmed evidence together reach ``combinedLimit``
    ///   (a reading without envelopes, of the first format, has only the first two); or
    /// - its envelopes follow the creative's at an alignment that stands alone
    ///   (``SoundEvidence/Test/following``).
    private func heard(_ r: Int, _ b: (alignment: Int, votes: Int, runnerUp: Int)) -> Bool {
        if let v = verdicts[r], v.alignment == b.alignment,
           v.votes == b.votes || (newestFrame - v.frame < Self.reviewFrames && (v.votes >= tuning.threshold) == (b.votes >= tuning.threshold)) {
            return v.heard
        }
        let spread = spreadVotes(reference: r, alignment: b.alignment).trimmed >= tuning.spreadVotes
        // The votes alone first: they cost nothing more to read.
        var heard = spread && b.votes >= tuning.threshold
        if !heard {
            guard reviewsLeft > 0 else { return verdicts[r]?.alignment == b.alignment && verdicts[r]!.heard }
            reviewsLeft -= 1
            let e = evidence(r, alignment: b.alignment, votes: b.votes, spread: spread,
                             standsAlone: Double(b.votes) >= tuning.followUniqueness * Double(b.runnerUp))
            highestPeakEvidence = max(highestPeakEvidence, spread ? e.peaks.trimmed : -.infinity)
            highestCombinedEvidence = max(highestCombinedEvidence, e.combined)
            if e.corroborated(tuning) { highestFollowing = max(highestFollowing, e.envelopes.rho) }
            heard = !e.tests(tuning, combinedLimit: combinedLimit).isEmpty
        }
        verdicts[r] = (b.alignment, b.votes, newestFrame, heard)
        return heard
    }

    private func settle() -> [SoundMatch] {
        // The creatives with an alignment that has just reached a candidate's votes.
        let candidates = Set(touched.filter { score($0) >= tuning.candidateVotes }.map { Int($0 >> 32) })
        guard !candidates.isEmpty else { return [] }
        // Their best alignment over the whole window, not only at the keys that gained votes
        // now: a tune that repeats itself gathers votes at its repeats too, and the alignment
        // it is really at keeps the most.
        let all = bestAlignments(of: candidates)
        reviewsLeft = Self.reviewsPerPass
        var named: [Int: (alignment: Int, votes: Int, runnerUp: Int)] = [:]
        for (r, b) in all.filter({ $0.value.votes >= tuning.candidateVotes }).sorted(by: { ($0.value.votes, $1.key) > ($1.value.votes, $0.key) })
        where heard(r, b) {
            named[r] = b
        }
        // Against a rival, votes count whole on both sides, the shared entries' included: when
        // only the bed they share is playing, each gathers what the other does; the creative's
        // voice-over on top is what gives it twice the rival's. (Its own entries alone against
        // the rival's whole asked its voice for twice the song's votes: 6 of the bed bench's 64
        // clean windows went unnamed.)
        if named.keys.contains(where: { !index.related[$0].isEmpty }) {
            let rivals = bestAlignments(shared: true, of: Set(named.keys.flatMap { index.related[$0].map(Int.init) }))
            named = named.filter { r, b in
                let whole = allCounts.score(r, b.alignment)
                return index.related[r].allSatisfy { tuning.rivalRatio * (rivals[Int($0)]?.votes ?? 0) <= whole }
            }
        }
        let now = time
        let frameSeconds = reader.frameSeconds
        var matches: [SoundMatch] = []
        for (r, b) in named.sorted(by: { $0.key < $1.key }) {
            let frameNow = now / frameSeconds
            let clear = Double(b.votes) >= tuning.alignmentRatio * Double(b.runnerUp)
            matches.append(SoundMatch(reference: r, time: startTime + now, offset: clear ? (frameNow - Double(b.alignment)) * frameSeconds : nil,
                                      votes: b.votes, windowStart: startTime + max(0, now - tuning.window)))
        }
        return matches
    }
}

/// What one creative of a ``SoundIndex`` shares with the others (a licensed song, a jingle):
/// the result of the index's search for shared sound, which depends on the readings alone and
/// takes most of an index's build, so that a catalogue file can keep it (docs/watermark.md,
/// The campaign catalogue).
public struct SharedSound: Sendable, Equatable {
    /// The creatives it shares sound with, by their place in the index.
    public var related: [Int32]
    /// Its landmarks that another creative holds too, by their place in its reading's
    /// landmarks: not indexed to name it, since they cannot tell the two apart.
    public var landmarks: [Int32]

    public init(related: [Int32], landmarks: [Int32]) {
        self.related = related
        self.landmarks = landmarks
    }
}

/// The landmarks of a catalogue's creatives, sorted by hash for lookup: built once (a plan), read
/// by any number of matchers.
public final class SoundIndex: Sendable {
    /// Creatives indexed.
    public let creatives: Int
    /// Per creative, its band envelopes: the index keeps these and its peaks (``peakSets``), not
    /// the readings.
    let envelopes: [SoundEnvelope]
    /// Entries sorted by hash, 4 bytes each: the landmark's frame in the low 16 bits, its
    /// creative in the next 15, and whether another creative holds it too in the top bit (then
    /// it votes only in the rivalry of creatives that share sound, ``SoundMatcher/rivalRatio``,
    /// never to name one).
    let entries: [UInt32]
    /// Creatives an index holds at most (15 bits), far beyond a catalogue's
    /// (``WatermarkDetector/maxCatalogue`` campaigns).
    public static let maxCreatives = 1 << 15 - 1
    /// Where each hash's entries are.
    private let buckets: HashBuckets
    /// A hash that this many creatives' landmarks hold on average is everywhere (the partials
    /// of a common chord, a steady hum) and tells nothing: it is not indexed. Without this cap
    /// the work of an index and of a lookup grew with the square of such a hash's count: an
    /// index of 1 000 creatives took 297 s to build (tools/bench).
    static func commonHashLimit(entries: Int) -> Int {
        max(32, 8 * entries >> Landmark.hashBits)
    }

    /// A landmark is shared with another creative when that creative holds this many of the
    /// landmarks around it (within a second) at one alignment: the same music bed, jingle or
    /// phrase. Shared landmarks are not indexed: they cannot tell their creatives apart.
    public static let sharedVotes = 8
    static let sharedBlockFrames = 64

    /// - Parameter prints: the creatives; index `i` in a ``SoundMatch`` is `prints[i]`.
    public convenience init(prints: [SoundPrint]) {
        self.init(readings: prints)
    }

    /// - Parameters:
    ///   - readings: the creatives, read one at a time; index `i` in a ``SoundMatch`` is
    ///     creative `i`.
    ///   - sharing: what each creative shares, as ``sharing`` gave it for the same readings in
    ///     the same order (a catalogue file keeps it): the search for shared sound, most of an
    ///     index's build, is then skipped. When it does not fit these readings (a creative's
    ///     landmark it names is not there to share), it is ignored and the search runs
    ///     (``reusedSharing`` tells which).
    ///   - keepSharing: keep what the search found in ``sharing``, for a catalogue to store.
    ///
    /// Built by counting, never by hashing or comparison sorts, in place: a catalogue of 1 000
    /// creatives holds millions of landmarks, each creative's search for the sound it shares
    /// looks up tens of thousands of entries, and harkd's memory while it loads a catalogue is
    /// its memory at its peak (docs/watermark.md, Cost).
    public init(readings: some SoundReadings, sharing: [SharedSound]? = nil, keepSharing: Bool = false) {
        let n = readings.count
        precondition(n <= Self.maxCreatives, "at most \(Self.maxCreatives) creatives")
        creatives = n
        let buckets = 1 << Landmark.hashBits
        // Each hash's landmarks counted in `starts[hash + 1]`; each creative's peaks and envelope.
        var starts = [Int32](repeating: 0, count: buckets + 1)
        var envelopes: [SoundEnvelope] = [], peakSets: [PeakSet] = []
        var total = 0, longest = 0
        for r in 0..<n {
            let reading = readings.reading(r)
            for l in reading.landmarks { starts[Int(l.hash) + 1] += 1 }
            total += reading.landmarks.count
            longest = max(longest, reading.landmarks.last?.frame ?? 0)
            envelopes.append(reading.envelope)
            peakSets.append(PeakSet(reading.peaks))
        }
        // A reading's frames are 16 bits (``SoundPrint/maxDuration``).
        precondition(longest <= 0xffff, "a reading longer than 17 minutes")
        self.envelopes = envelopes
        // Where each hash's entries end, a common hash holding none.
        let limit = Int32(Self.commonHashLimit(entries: total))
        var common = [UInt64](repeating: 0, count: buckets / 64)
        var end: Int32 = 0
        for h in 0..<buckets {
            if starts[h + 1] > limit {
                common[h >> 6] |= 1 << UInt64(h & 63)
            } else {
                end += starts[h + 1]
            }
            starts[h + 1] = end
        }
        let kept = Int(end)
        commonCount = total - kept
        // Filled from each bucket's end backwards, creatives and landmarks taken last first, so
        // that each bucket's entries are in creative and frame order and `starts[hash + 1]` ends
        // where the hash's entries begin; then moved down one place.
        var entries = [UInt32](repeating: 0, count: kept)
        for r in stride(from: n - 1, through: 0, by: -1) {
            for l in readings.landmarks(r).reversed() where common[Int(l.hash) >> 6] & (1 << UInt64(l.hash & 63)) == 0 {
                starts[Int(l.hash) + 1] -= 1
                entries[Int(starts[Int(l.hash) + 1])] = UInt32(l.frame) | UInt32(r) << 16
            }
        }
        for h in 0..<buckets { starts[h] = starts[h + 1] }
        starts[buckets] = end
        // Mark what creatives share, each creative read against the others as a room would be:
        // each independently of the others, so on every core (up to four).
        var found = [SharedSoundSearch.Found](repeating: SharedSoundSearch.Found(), count: n)
        let reused = sharing.flatMap { Self.found(from: $0, readings: readings, entries: entries, starts: starts) }
        if let reused { found = reused }
        reusedSharing = reused != nil
        if reused == nil && n > 1 {
            let workers = min(n, 4, max(1, ProcessInfo.processInfo.activeProcessorCount)), longest = longest
            let table = SharedSoundSearch.Table(entries: entries, starts: starts, peakSets: peakSets)
            // Each worker searches every `workers`-th creative and hands back what it found once,
            // at its end: the lock is taken once a worker.
            let results = Mutex<[(Int, SharedSoundSearch.Found)]>([])
            DispatchQueue.concurrentPerform(iterations: workers) { w in
                let search = SharedSoundSearch(creatives: n, longest: longest)
                let mine = stride(from: w, to: n, by: workers).map { r in
                    (r, search.shared(by: Int32(r), readings.landmarks(r), in: table))
                }
                results.withLock { $0.append(contentsOf: mine) }
            }
            for (r, f) in results.withLock({ $0 }) { found[r] = f }
        }
        var related = [Set<Int32>](repeating: [], count: n)
        for (r, f) in found.enumerated() {
            related[r] = f.related
            for i in f.entries { entries[i] |= 1 << 31 }
        }
        let shared = found.reduce(0) { $0 + $1.entries.count }
        self.peakSets = peakSets
        self.entries = entries
        self.buckets = HashBuckets(starts: starts)
        sharedCount = shared
        self.sharing = keepSharing ? found.map { SharedSound(related: $0.related.sorted(), landmarks: $0.landmarks) } : nil
        // Sharing is mutual: B holds A's bed whenever A holds B's.
        for (a, others) in related.enumerated() { for b in others { related[Int(b)].insert(Int32(a)) } }
        self.related = related
    }

    /// Per creative, its peaks, to confirm a candidate alignment peak by peak.
    let peakSets: [PeakSet]

    /// What each creative shares with the others, when the index was asked to keep it.
    public let sharing: [SharedSound]?
    /// Whether the index took what creatives share from its `sharing` argument instead of
    /// searching for it.
    public let reusedSharing: Bool

    /// What `sharing` says each creative shares, as the search would have found it: each named
    /// landmark's own entry in the table. Nil when it does not fit the readings: another count
    /// of creatives, a related creative out of range or itself, a landmark out of range or not
    /// indexed (its hash common, or held by no entry of its creative at its frame).
    private static func found(from sharing: [SharedSound], readings: some SoundReadings, entries: [UInt32],
                              starts: [Int32]) -> [SharedSoundSearch.Found]? {
        let n = readings.count
        guard sharing.count == n else { return nil }
        var found: [SharedSoundSearch.Found] = []
        found.reserveCapacity(n)
        for (r, s) in sharing.enumerated() {
            guard s.related.allSatisfy({ (0..<Int32(n)).contains($0) && $0 != Int32(r) }) else { return nil }
            var f = SharedSoundSearch.Found(related: Set(s.related), entries: [], landmarks: s.landmarks)
            if !s.landmarks.isEmpty {
                let landmarks = readings.landmarks(r)
                f.entries.reserveCapacity(s.landmarks.count)
                for k in s.landmarks {
                    guard (0..<landmarks.count).contains(Int(k)) else { return nil }
                    let l = landmarks[Int(k)]
                    // Its own entry: the first of its creative at its frame in its bucket, as
                    // the search finds it.
                    let own = UInt32(l.frame) | UInt32(r) << 16
                    guard let i = (Int(starts[Int(l.hash)])..<Int(starts[Int(l.hash) + 1])).first(where: { entries[$0] == own })
                    else { return nil }
                    f.entries.append(i)
                }
            }
            found.append(f)
        }
        return found
    }

    /// Per creative, the creatives it shares sound with (a bed, a jingle, a phrase).
    let related: [Set<Int32>]

    /// Landmarks left out as shared between creatives.
    public let sharedCount: Int
    /// Landmarks left out because their hash is everywhere (``commonHashLimit(entries:)``).
    public let commonCount: Int

    /// Landmarks held.
    public var count: Int { entries.count }

    /// Landmarks held of one creative (its own, less what it shares).
    public func count(of reference: Int) -> Int {
        // Its creative in the top 16 bits with the shared bit clear.
        entries.reduce(0) { $0 + ($1 >> 16 == UInt32(reference) ? 1 : 0) }
    }

    /// Calls `body(reference, frame)` for every landmark with this hash.
    @inline(__always)
    func entries(for hash: UInt32, _ body: (_ reference: Int32, _ frame: Int32, _ shared: Bool) -> Void) {
        for i in buckets.range(of: hash) {
            let e = entries[i]
            body(Int32(e >> 16 & 0x7fff), Int32(e & 0xffff), e >> 31 != 0)
        }
    }
}

/// A creative's peaks, to ask whether it has one at a frame and bin (±1 of each: the same sound
/// read on another frame grid moves a peak by one): each frame's bins, a few bytes a frame.
struct PeakSet: Sendable {
    private let starts: [Int32]
    private let bins: [UInt8]
    /// Frames the creative spans.
    let frames: Int

    init(_ peaks: [SpectralPeak]) {
        frames = (peaks.map(\.frame).max() ?? -1) + 1
        var starts = [Int32](repeating: 0, count: frames + 1)
        for p in peaks { starts[p.frame + 1] += 1 }
        for f in 0..<frames { starts[f + 1] += starts[f] }
        var bins = [UInt8](repeating: 0, count: peaks.count)
        var next = starts
        for p in peaks {
            bins[Int(next[p.frame])] = UInt8(clamping: p.bin)
            next[p.frame] += 1
        }
        self.starts = starts
        self.bins = bins
    }

    /// How many of `peaks` (in frame order) it holds with their frames moved by `shift`,
    /// circularly over the creative; each one held adds 1 to its block of `blockFrames` input
    /// frames from `first`. (``holds(frame:bin:)`` for every peak, without a division for each:
    /// the matcher's review asks this at 25 shifts of every candidate.)
    func hits(_ peaks: UnsafeBufferPointer<SpectralPeak>, shift: Int, first: Int, blockFrames: Int,
              into perBlock: UnsafeMutableBufferPointer<Double>) -> Int {
        guard let p0 = peaks.first, frames > 0 else { return 0 }
        var f = (p0.frame + shift) % frames
        if f < 0 { f += frames }
        var previous = p0.frame
        var n = 0
        starts.withUnsafeBufferPointer { starts in
            bins.withUnsafeBufferPointer { bins in
                for p in peaks {
                    f += p.frame - previous
                    previous = p.frame
                    if f >= frames { f %= frames }
                    if Self.holds(frame: f, bin: p.bin, starts, bins, frames) {
                        n += 1
                        perBlock[(p.frame - first) / blockFrames] += 1
                    }
                }
            }
        }
        return n
    }

    func holds(frame: Int, bin: Int) -> Bool {
        starts.withUnsafeBufferPointer { starts in
            bins.withUnsafeBufferPointer { bins in Self.holds(frame: frame, bin: bin, starts, bins, frames) }
        }
    }

    @inline(__always)
    private static func holds(frame: Int, bin: Int, _ starts: UnsafeBufferPointer<Int32>, _ bins: UnsafeBufferPointer<UInt8>,
                              _ frames: Int) -> Bool {
        // The three frames' bins lie side by side.
        let first = min(max(frame - 1, 0), frames), last = min(max(frame + 2, 0), frames)
        guard first < last else { return false }
        for i in Int(starts[first])..<Int(starts[last]) where abs(Int(bins[i]) &- bin) <= 1 { return true }
        return false
    }
}

