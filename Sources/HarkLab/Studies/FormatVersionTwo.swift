import HarkDSP

/// Format version 2, a study measured and not kept (docs/watermark-research.md, "Directions at
/// the transparent level"): the copy, symbols, code and placement of the format on air, but 72
/// tones at fixed keyed frequencies sound in every symbol and a coded bit turns a tone's phase
/// by π instead of choosing one of two frequencies, so that a room's channel at each tone is
/// estimated from every symbol rather than a quarter of them. Its reading is quadratic in the
/// keyed phases, and the threshold its false-detection bound needs takes the gain back. No
/// detector reads it; it stays in the lab so that the study can be rerun
/// (tools/studies/watermark-format-study, `hark-lab bench transparency --format-version 2`).
public enum FormatVersionTwo {
    public static let version = 2

    /// Version 2's format for `key` and `profile`. Its tones are drawn from keyed streams of
    /// their own, so the format on air's plan is untouched.
    public static func format(key: WatermarkKey, profile: WatermarkProfile = .tv) -> WatermarkFormat {
        let grid = profile.grid
        precondition(grid.count >= 2 * WatermarkFormat.pairsPerSymbol, "the grid cannot hold a symbol's tones")
        var stream = KeyedStream(key: key.bytes, label: "v2/tones")
        let fixed = Array(stream.permutation(grid.count).prefix(WatermarkFormat.pairsPerSymbol))
        var frequency: [[[[Double]]]] = [], phase: [[[[Double]]]] = []
        for slot in 0..<WatermarkFormat.symbolsPerCopy {
            var phases = KeyedStream(key: key.bytes, label: "v2/phases/\(slot)")
            var f: [[[Double]]] = [], p: [[[Double]]] = []
            var next = 0
            for _ in 0..<WatermarkFormat.bitsPerSymbol {
                var fb: [[Double]] = [], pb: [[Double]] = []
                for _ in 0..<WatermarkFormat.pairsPerBit {
                    // Both sides play the same tone; side 1 half a cycle from side 0.
                    fb.append([grid[fixed[next]], grid[fixed[next]]])
                    let start = 2 * Double.pi * phases.nextUnit()
                    pb.append([start, start + Double.pi])
                    next += 1
                }
                f.append(fb)
                p.append(pb)
            }
            frequency.append(f)
            phase.append(p)
        }
        return WatermarkFormat(key: key, profile: profile, version: version,
                               tones: WatermarkFormat.Tones(frequency: frequency, phase: phase))
    }

    /// The format a study's version number names: the format on air for 1, this study's for 2,
    /// nil for any other.
    public static func format(version: Int, key: WatermarkKey, profile: WatermarkProfile) -> WatermarkFormat? {
        switch version {
        case WatermarkFormat.onAir: return WatermarkFormat(key: key, profile: profile)
        case Self.version: return format(key: key, profile: profile)
        default: return nil
        }
    }
}
