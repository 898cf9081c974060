import HarkDSP

/// What may answer a shake: harkd's rule (and the bench's, which counts what it would pay),
/// not the detector's. A detection pays out only when it proves a fresh airing: not stale, and
/// for a campaign whose marks carry airing codes, its fresh mark heard, or its sound heard
/// starting within one of the campaign's airing slots (its sound alone, at any other time, is
/// as much a recording as an airing).
public enum ShakePolicy {
    public static func answers(_ d: WatermarkDetection) -> Bool {
        !d.stale && (!d.airingCoded || (d.airing != nil && (d.markHeard || d.airingSlot != nil)))
    }
}
