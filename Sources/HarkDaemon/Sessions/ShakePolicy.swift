import HarkDSP

/// What may answer a shake: the daemon's rule, not the detector's. A detection pays out only
/// when it proves a fresh airing: not stale, and for a campaign whose marks carry airing codes,
/// its fresh mark heard (its sound alone is as much a recording as an airing).
enum ShakePolicy {
    static func answers(_ d: WatermarkDetection) -> Bool {
        !d.stale && (!d.airingCoded || (d.airing != nil && d.markHeard))
    }
}
