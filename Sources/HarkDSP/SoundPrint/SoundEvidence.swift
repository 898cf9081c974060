/// What a ``SoundMatcher`` reads of a creative at one alignment, and the tests that name the
/// creative there (docs/watermark.md, The creative's sound, gives their calibration). The
/// matcher decides with it; a bench reads the same tests where it knows the creative is.
public struct SoundEvidence: Sendable {
    /// The ways a candidate is named.
    public enum Test: String, Sendable {
        /// Its votes, spread over more than a second, reach the matcher's threshold.
        case votes
        /// Its votes so spread, its peaks' trimmed evidence reaches ``LandmarkTuning/peakThreshold``.
        case peaks
        /// Its peaks' and envelopes' trimmed evidence together reach the matcher's
        /// ``SoundMatcher/combinedLimit``.
        case together
        /// Its envelopes follow the creative's (``LandmarkTuning/followThreshold``), corroborated.
        case following
    }

    /// Votes at the alignment and its neighbours.
    public var votes: Int
    /// Whether ``LandmarkTuning/spreadVotes`` of them remain without the two blocks that gave the most.
    public var spread: Bool
    /// ``SoundMatcher/peakEvidence(reference:alignment:)``: over the whole window, and trimmed.
    public var peaks: (z: Double, trimmed: Double)
    /// ``SoundMatcher/envelopeEvidence(reference:alignment:)``: trimmed, and the correlation.
    public var envelopes: (trimmed: Double, rho: Double)
    /// Whether the alignment has ``LandmarkTuning/followUniqueness`` times the votes of any other
    /// of its creative's.
    public var standsAlone: Bool

    /// The peaks' and the envelopes' trimmed evidence together.
    public var combined: Double { (peaks.trimmed + envelopes.trimmed) / 2.0.squareRoot() }

    /// Whether the envelopes' correlation may name the creative: enough votes, standing alone,
    /// and peaks that say more than a candidate's minimum.
    public func corroborated(_ tuning: LandmarkTuning) -> Bool {
        votes >= tuning.followVotes && peaks.z >= tuning.followPeakEvidence && standsAlone
    }

    /// The tests passed, for a matcher of `tuning` whose index sets `combinedLimit`.
    public func tests(_ tuning: LandmarkTuning, combinedLimit: Double) -> [Test] {
        var passed: [Test] = []
        if spread && votes >= tuning.threshold { passed.append(.votes) }
        if spread && peaks.trimmed >= tuning.peakThreshold { passed.append(.peaks) }
        if combined >= combinedLimit { passed.append(.together) }
        if corroborated(tuning) && envelopes.rho >= tuning.followThreshold { passed.append(.following) }
        return passed
    }
}
