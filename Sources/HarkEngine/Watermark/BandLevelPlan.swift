import Foundation

/// How loud `hark embed` makes the watermark, band by band.
///
/// One gain for the whole watermark would let the band where the host is thinnest set the level
/// everywhere: since the tones concentrate above 4 kHz, a host with little treble reached the
/// band margin at 5 kHz and was marked at −24 dB overall instead of −20 dB. Instead every
/// 1/3-octave band gets the common gain or the most its own margin allows, whichever is lower,
/// and the common gain is raised until the whole watermark reaches the requested strength
/// (water-filling), so the budget a thin band cannot use goes to the others.
struct BandLevelPlan: Equatable {
    /// Gain (dB, re the measuring pass) for each band, in the order given.
    var bandGains: [Double]
    /// The gain of every band that its margin does not limit.
    var commonGain: Double

    /// - Parameters:
    ///   - bands: per 1/3-octave band, the host's and the watermark's level (dB) in the measuring
    ///     pass; nil where a signal has no energy. A band the host leaves empty gets no watermark.
    ///   - overallRatio: watermark power re host power over the whole file in the measuring pass, dB.
    ///   - strength: the watermark-to-host ratio to reach, dB.
    ///   - margin: how close (dB, negative) the watermark may come to the host in any band.
    ///   - maximumGain: the most any band may be raised (the per-tone cap).
    init(bands: [(host: Double?, mark: Double?)], overallRatio: Double, strength: Double, margin: Double, maximumGain: Double) {
        let marks = bands.map { $0.mark.map { pow(10, $0 / 10) } ?? 0 }
        let total = marks.reduce(0, +)
        let limits = bands.map { band -> Double in
            guard let mark = band.mark else { return maximumGain }
            guard let host = band.host else { return -.infinity }
            return min(maximumGain, margin - (mark - host))
        }
        func gains(_ common: Double) -> [Double] { limits.map { min(common, $0) } }
        /// Overall ratio (dB) with `common` as the common gain.
        func ratio(_ common: Double) -> Double {
            guard total > 0 else { return -.infinity }
            let power = zip(marks, gains(common)).reduce(0.0) { $0 + $1.0 * pow(10, $1.1 / 10) }
            return overallRatio + 10 * log10(power / total)
        }
        // The ratio rises with the common gain until every band is at its limit: bisect.
        var lo = -120.0, hi = maximumGain
        if ratio(hi) <= strength {
            lo = hi
        } else {
            for _ in 0..<60 {
                let mid = (lo + hi) / 2
                if ratio(mid) < strength { lo = mid } else { hi = mid }
            }
        }
        commonGain = lo
        bandGains = gains(lo)
    }
}
