import Glibc

/// Every constant of the landmark reading's decision (``SoundMatcher``), each with why. The
/// thresholds were set on ten hours of unmarked audio with a margin, never on one bench
/// (docs/watermark-research.md, "The creative's sound: the runs", gives them); the rest are chosen.
public struct LandmarkTuning: Sendable, Equatable {
    /// Votes at one alignment (±1 frame), spread over more than a second, that name a creative:
    /// chance alignments on unmarked audio stay far below.
    public var threshold: Int
    /// Seconds of input the votes are counted over: long enough for a faint creative's votes
    /// to gather, short enough that one airing's have left before the next.
    public var window: Double
    /// Votes at one alignment that make a creative a candidate, whose peaks and envelopes are
    /// then read (its lead for the mark's confirmation too).
    public var candidateVotes: Int
    /// Votes that must remain without the two 0.5 s blocks that gave the most: the creative is
    /// heard over more than a second, not in one burst that two recordings may share.
    public var spreadVotes: Int
    /// The trimmed peak evidence that names a candidate whose votes fall short of
    /// ``threshold``, its votes spread.
    public var peakThreshold: Double
    /// The peaks' and the envelopes' trimmed evidence together, (peaks + envelopes) / √2, that
    /// names a candidate whatever its votes, in a catalogue of up to 100 creatives.
    public var combinedThreshold: Double
    /// What that gains for every tenfold of creatives beyond 100: ten hours of unmarked audio
    /// reached 6.2 against 99 creatives and 7.7 against 999; 9.0 for 1 000 keeps 100's margin.
    public var combinedPerDecade: Double
    /// The band envelopes' correlation with the creative's that names it, corroborated by the
    /// three below: unmarked music that follows a creative's beat by chance reached 0.68.
    public var followThreshold: Double
    /// Votes at the alignment the envelopes follow at.
    public var followVotes: Int
    /// The peaks' whole-window evidence there: unmarked drums that followed a drum creative at
    /// 0.997 had 4.1–4.4.
    public var followPeakEvidence: Double
    /// Times the votes at any other alignment of the creative: music that follows by chance
    /// does so at every repeat of a bar.
    public var followUniqueness: Double
    /// Where a creative is, is reported only when its best alignment has this many times the
    /// votes of any other: a song that comes back to its chorus votes at the chorus's other
    /// places too (the campaign is named either way).
    public var alignmentRatio: Double
    /// A creative that shares sound with others (a licensed song) is named only with this many
    /// times the votes of each: what they share votes for all of them alike.
    public var rivalRatio: Int

    public static let standard = LandmarkTuning(
        threshold: 24, window: 6, candidateVotes: 5, spreadVotes: 6, peakThreshold: 8, combinedThreshold: 7.5, combinedPerDecade: 1.5,
        followThreshold: 0.7, followVotes: 8, followPeakEvidence: 6, followUniqueness: 2.5, alignmentRatio: 1.5, rivalRatio: 2)

    /// ``combinedThreshold`` for an index of `creatives`: beyond 1 000 (harkd allows 4 096:
    /// 9.9) it is extrapolated, not measured.
    public func combinedThreshold(creatives: Int) -> Double {
        combinedThreshold + combinedPerDecade * max(0, log10(Double(max(1, creatives)) / 100))
    }
}
