/// What a ``SoundMatcher`` reads of a creative at one alignment, and the tests that name the
/// creative there (docs/watermark.md, The creative's sound, gives their calibration). The
/// matcher decides with it; a bench reads the same tests where it knows the creative is.
public struct SoundEvidence: Sendable {
    /// The ways a candidate is named.
    public enum Test: String, Sendable {
        /// Its votes, spread over more than a second, reach the matcher's threshold.
        case votes
        /// Its votes so spread, its peaks' trimmed evidence reaches ``SoundMatcher/peakThreshold``.
        case peaks
        /// Its peaks' and envelopes' trimmed evidence together reach the matcher's
        /// ``SoundMatcher/combinedLimit``.
        case together
        /// Its envelopes follow the creative's (``SoundMatcher/followThreshold``), corroborated.
        case following
    }

    /// Votes at the alignment and its neighbours.
    public var votes: Int
    /// Whether ``SoundMatcher/spreadThreshold`` of them remain without the two blocks that gave the most.
    public var spread: Bool
    /// ``SoundMatcher/peakEvidence(reference:alignment:)``: over the whole window, and trimmed.
    public var peaks: (z: Double, trimmed: Double)
    /// ``SoundMatcher/envelopeEvidence(reference:alignment:)``: trimmed, and the correlation.
    public var envelopes: (trimmed: Double, rho: Double)
    /// Whether the alignment has ``SoundMatcher/followUniqueness`` times the votes of any other
    /// of its creative's.
    public var standsAlone: Bool

    /// The peaks' and the envelopes' trimmed evidence together.
    public var combined: Double { (peaks.trimmed + envelopes.trimmed) / 2.0.squareRoot() }

    /// Whether the envelopes' correlation may name the creative: enough votes, standing alone,
    /// and peaks that say more than a candidate's minimum.
    public var corroborated: Bool {
        votes >= SoundMatcher.followVotes && peaks.z >= SoundMatcher.followPeakEvidence && standsAlone
    }

    /// The tests passed, for a matcher of `threshold` votes and `combinedLimit`.
    public func tests(threshold: Int, combinedLimit: Double) -> [Test] {
        var passed: [Test] = []
        if spread && votes >= threshold { passed.append(.votes) }
        if spread && peaks.trimmed >= SoundMatcher.peakThreshold { passed.append(.peaks) }
        if combined >= combinedLimit { passed.append(.together) }
        if corroborated && envelopes.rho >= SoundMatcher.followThreshold { passed.append(.following) }
        return passed
    }
}
