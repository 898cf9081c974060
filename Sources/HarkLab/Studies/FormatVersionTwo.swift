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

    /// The format versions the lab marks in: the format on air and this study.
    public static let versions = [WatermarkFormat.onAir, version]

    /// Version 2's format for `key` and `profile`. Its tones are drawn from keyed streams of
    /// their own, so the format on air's plan is untouched.
    public static func format(key: WatermarkKey, profile: WatermarkProfile = .tv) -> WatermarkFormat {
        let grid = profile.grid
        precondition(grid.count >= 2 * WatermarkFormat.pairsPerSymbol, "the grid cannot hold a symbol's tones")
        var stream = KeyedStream(key: key.bytes, label: "v2/tones")
        // The same 72 tones in every slot, in the same order; both sides play a pair's tone,
        // side 1 half a cycle from side 0.
        let fixed = Array(stream.permutation(grid.count).prefix(WatermarkFormat.pairsPerSymbol))
        var phases: KeyedStream?, drawn = -1, next = 0
        return WatermarkFormat(key: key, profile: profile, version: version) { slot, _, _ in
            if slot != drawn { (phases, drawn, next) = (KeyedStream(key: key.bytes, label: "v2/phases/\(slot)"), slot, 0) }
            defer { next += 1 }
            let start = 2 * Double.pi * phases!.nextUnit()
            return ([grid[fixed[next]], grid[fixed[next]]], [start, start + Double.pi])
        }
    }

    /// The study's format that `version` names for a mark, nil for the format on air, which
    /// the embedder draws itself (``versions`` lists what may be asked).
    public static func study(version: Int, key: WatermarkKey, profile: WatermarkProfile) -> WatermarkFormat? {
        precondition(versions.contains(version), "format version \(version) is neither on air nor a study")
        return version == Self.version ? format(key: key, profile: profile) : nil
    }
}
