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

    /// What the watermark's reading found: nil when only the sound was heard.
    public struct Mark: Sendable, Equatable {
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
        /// Whether the mark was read where the campaign's sound placed it, one codeword at the
        /// alignments that place allows (``WatermarkDetector/confirm(_:creativeStart:)``), rather
        /// than found by the blind search. Its ``confidence`` is that reading's own bound.
        public var confirmedAtSound = false
        /// Found beside a catalogue by the blind search, at its own threshold: a payload the
        /// catalogue does not hold (``WatermarkDetector/decodesUnlisted``).
        public var unlisted = false

        public init(score: Double, confidence: Double, copies: Int, clockScale: Double) {
            (self.score, self.confidence, self.copies, self.clockScale) = (score, confidence, copies, clockScale)
        }
    }

    /// What a reading of the creative's own sound found: nil when only the mark was heard.
    public struct Sound: Sendable, Equatable {
        /// By landmarks, the input's landmarks that fell on the creative at one alignment; by
        /// the learned reading, the room's embeddings along the alignment that named it.
        public var votes: Int
        /// The learned reading's evidence (``EmbeddingMatcher``); nil when landmarks named it.
        public var evidence: Double?
        /// Where the creative was, in its own seconds, at the detection's time (nil when its
        /// sound did not tell which of the creative's repeats it was).
        public var offset: Double?

        public init(votes: Int, evidence: Double? = nil, offset: Double? = nil) {
            (self.votes, self.evidence, self.offset) = (votes, evidence, offset)
        }
    }

    public var payload: WatermarkPayload
    public var mark: Mark?
    public var sound: Sound?
    /// Seconds of input after which the detection was confirmed.
    public var time: Double
    /// Estimated start of the payload copy that completed it (with the sound alone, of the
    /// creative), in seconds of input.
    public var start: Double
    /// Seconds of input where the audio the readings combined begins (the window ends at
    /// ``time``): what was heard lay somewhere in between, not necessarily all along.
    public var windowStart: Double
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

    /// What heard it: a witness heard it when its reading is there.
    public var evidence: Evidence {
        switch (mark != nil, sound != nil) {
        case (true, true): return .markAndSound
        case (false, true): return .sound
        default: return .mark
        }
    }

    /// Whether the mark was heard.
    public var markHeard: Bool { mark != nil }

    /// A campaign heard by its mark, its sound, or both (one at least).
    public init(payload: WatermarkPayload, time: Double, start: Double, mark: Mark? = nil, sound: Sound? = nil, windowStart: Double? = nil) {
        precondition(mark != nil || sound != nil, "a detection is heard by a witness")
        (self.payload, self.time, self.start, self.mark, self.sound) = (payload, time, start, mark, sound)
        self.windowStart = windowStart ?? start
    }
}

extension WatermarkDetection {
    /// The creative named by its sound alone.
    public init(sound match: SoundMatch, payload: WatermarkPayload) {
        self.init(payload: payload, time: match.time, start: match.time - (match.offset ?? 0),
                  sound: Sound(votes: match.votes, evidence: match.score, offset: match.offset), windowStart: match.windowStart)
    }
}
