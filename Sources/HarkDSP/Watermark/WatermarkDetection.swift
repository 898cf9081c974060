import FoundationEssentials
import Glibc

/// A campaign heard: a verified watermark (its payload passed the CRC and its score cleared the
/// threshold), the campaign's own sound named from a catalogue, or both.
public struct WatermarkDetection: Sendable, Equatable {
    /// What was heard (docs/watermark.md, Evidence, says what each proves).
    public enum Evidence: String, Sendable, Equatable {
        /// The watermark alone.
        case mark
        /// The creative's own sound alone: the campaign's payload comes from the catalogue.
        case sound
        /// Both, for the same campaign within ``AnalysisPipeline/fusionWindow``.
        case markAndSound = "mark+sound"
    }

    public var payload: WatermarkPayload
    public var evidence = Evidence.mark
    /// Landmarks of the input that fell on the creative at one alignment (the sound reading's
    /// score; nil when the sound was not heard).
    public var soundVotes: Int?
    /// The learned reading's evidence when it named the creative (``EmbeddingMatcher``; then
    /// ``soundVotes`` counts the room's embeddings along its alignment); nil when landmarks did.
    public var soundEvidence: Double?
    /// Where the creative was, in its own seconds, at ``time`` (nil when the sound was not
    /// heard, or did not tell which of the creative's repeats it was).
    public var creativeOffset: Double?
    /// Seconds of input after which the detection was confirmed.
    public var time: Double
    /// Estimated start of the payload copy that completed it, in seconds of input.
    public var start: Double
    /// Standardised score: chip-weighted sum over √(sum of squares). Unmarked audio exceeds z
    /// with probability at most 3.18 P(η ≥ z), η standard normal, per candidate, whatever the
    /// audio (``WatermarkDetector/tailBound(_:)``, docs/watermark.md).
    public var score: Double
    /// 1 − (bound on the probability that an hour of unmarked audio produces a score this
    /// high), clamped to [0, 1].
    public var confidence: Double
    /// Whole copies of the payload within the symbols combined (1 when one copy sufficed; 14
    /// symbols count as 2).
    public var copies: Int
    /// Clock ratio the detector assumed (1 + drift).
    public var clockScale: Double
    /// Seconds of input where the audio the detector combined begins (the window ends at
    /// ``time``): the mark was heard somewhere in between, not necessarily all along.
    public var windowStart: Double
    /// Whether the mark was read where the campaign's sound placed it, one codeword at the
    /// alignments that place allows (``WatermarkDetector/confirm(_:creativeStart:)``), rather
    /// than found by the blind search. Its ``confidence`` is that reading's own bound.
    public var confirmedAtSound = false
    /// Found beside a catalogue by the blind search, at its own threshold: a payload the
    /// catalogue does not hold (``WatermarkDetector/decodesUnlisted``).
    public var unlisted = false
    /// For a campaign whose marks carry airing codes (``AiringCode``): the airing the code
    /// names, its channel and UTC minute. ``payload`` is then the campaign's own payload and
    /// ``airingCode`` what the mark carried.
    public var airing: Airing?
    public var airingCode: WatermarkPayload?
    /// Whether that airing is older than the freshness window (``AiringSchedule/window``): a
    /// recording played back. A stale detection never answers a shake.
    public var stale = false
    /// Whether the campaign's marks carry airing codes: then only a fresh airing heard by its
    /// mark tells it from a recording, and its sound alone does not answer a shake.
    public var airingCoded = false
    /// For such a campaign heard without its fresh mark: the slot of a broadcaster's log that
    /// its creative's start, as its sound places it, fell in (``AiringSlot``). ``airing`` then
    /// names the slot's channel and the minute the creative started, and the airing is fresh
    /// by the log rather than by a code.
    public var airingSlot: AiringSlot?


    public init(payload: WatermarkPayload, time: Double, start: Double, score: Double, confidence: Double,
                copies: Int, clockScale: Double, windowStart: Double? = nil) {
        (self.payload, self.time, self.start, self.score) = (payload, time, start, score)
        (self.confidence, self.copies, self.clockScale) = (confidence, copies, clockScale)
        self.windowStart = windowStart ?? start
    }
}

extension WatermarkDetection {
    /// The creative named by its sound: no mark score (0) and no mark confidence (0).
    public init(sound match: SoundMatch, payload: WatermarkPayload) {
        self.init(payload: payload, time: match.time, start: match.time - (match.offset ?? 0), score: 0, confidence: 0,
                  copies: 0, clockScale: 1, windowStart: match.windowStart)
        evidence = .sound
        soundVotes = match.votes
        soundEvidence = match.score
        creativeOffset = match.offset
    }

    /// Whether the mark was heard (its score and confidence mean something).
    public var markHeard: Bool { evidence != .sound }
}
