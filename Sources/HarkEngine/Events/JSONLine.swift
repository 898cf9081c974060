import HarkDSP
import FoundationEssentials
import Glibc
import HarkSystem

/// Builds one JSON object as a single line, with keys in the order they are added.
///
/// Hand-built rather than `JSONEncoder` so that field order is stable (clients and humans
/// read these lines), numbers have a fixed precision, and a line never contains a newline.
public struct JSONLine {
    private var text = "{"
    private var empty = true

    public init() {}

    private mutating func key(_ k: String) {
        if !empty { text += "," }
        empty = false
        text += Self.quoted(k) + ":"
    }

    public mutating func add(_ k: String, _ value: String) {
        key(k)
        text += Self.quoted(value)
    }

    public mutating func add(_ k: String, _ value: Int) {
        key(k)
        text += String(value)
    }

    public mutating func add(_ k: String, _ value: Bool) {
        key(k)
        text += value ? "true" : "false"
    }

    /// A number with `decimals` places, or `null` when absent or not finite.
    public mutating func add(_ k: String, _ value: Double?, decimals: Int) {
        key(k)
        text += Self.number(value, decimals: decimals)
    }

    public mutating func add(_ k: String, integers: [Int]) {
        key(k)
        text += "[" + integers.map(String.init).joined(separator: ",") + "]"
    }

    public mutating func add(_ k: String, strings: [String]) {
        key(k)
        text += "[" + strings.map(Self.quoted).joined(separator: ",") + "]"
    }

    /// A nested object of numbers, in the given order.
    public mutating func add(_ k: String, numbers: [(String, Double?)], decimals: Int) {
        key(k)
        text += "{" + numbers.map { Self.quoted($0.0) + ":" + Self.number($0.1, decimals: decimals) }
            .joined(separator: ",") + "}"
    }

    /// The finished line, without a newline.
    public var line: String { text + "}" }

    static func number(_ value: Double?, decimals: Int) -> String {
        guard let v = value, v.isFinite else { return "null" }
        let s = String(cFormat: "%.\(decimals)f", v)
        // "-0.00" is a rounding artefact, not information.
        return s.hasPrefix("-") && Double(s) == 0 ? String(s.dropFirst()) : s
    }

    /// A JSON string literal (RFC 8259): quotes, backslashes and control characters escaped.
    static func quoted(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                out += String(cFormat: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

extension AnalysisEvent {
    /// The event as one JSON line (no newline). Levels carry 0.01 dB, times 1 ms.
    public var jsonLine: String {
        var j = JSONLine()
        switch self {
        case .level(let e):
            let l = e.levels
            j.add("class", "level")
            j.add("file", e.source)
            j.add("t", l.time, decimals: 3)
            j.add("LAF", l.LAF, decimals: 2)
            j.add("LAS", l.LAS, decimals: 2)
            j.add("LCpeak", l.LCpeak, decimals: 2)
            j.add("LAeq", l.LAeq, decimals: 2)
            j.add("LAFmax", l.LAFmax, decimals: 2)
        case .detection(let e):
            let d = e.detection
            j.add("class", "detection")
            j.add("file", e.source)
            j.add("payload", d.payload.hex)
            j.add("t", d.time, decimals: 3)
            j.add("start", d.start, decimals: 3)
            j.addDetectionFields(d)
        case .report(let e):
            j.add("class", "report")
            j.add("file", e.source)
            j.addReportFields(e)
        }
        return j.line
    }
}

extension JSONLine {
    /// A detection's evidence and scores, after its times: the fields `hark detect` and
    /// harkd share. The mark's `confidence` and `score` are null when only the sound was heard;
    /// `sound_reading` (`landmarks` or `learned`), `sound_votes` (landmarks, or the room's
    /// embeddings along the alignment), `sound_evidence` (the learned reading's) and `offset`
    /// (seconds into the creative) appear when the sound was;
    /// `mark` says how the mark was read: `search` (found by itself) or `at-sound` (its
    /// campaign's codeword confirmed where the sound placed the creative). A campaign whose
    /// marks carry airing codes adds `airing` (`fresh` or `stale`), `channel`, `minute` (UTC)
    /// and `code` (what the mark carried), or `slot` (the start of the airing slot its sound's
    /// start fell in, when no fresh mark was heard); a detection by sound alone just after a
    /// stale mark of its campaign is `"airing":"stale"` too.
    public mutating func addDetectionFields(_ d: WatermarkDetection) {
        add("evidence", d.evidence.rawValue)
        add("confidence", d.mark?.confidence, decimals: 6)
        add("score", d.mark?.score, decimals: 2)
        add("copies", d.mark?.copies ?? 0)
        if let mark = d.mark { add("mark", mark.confirmedAtSound ? "at-sound" : "search") }
        if let airing = d.airing {
            add("airing", d.stale ? "stale" : "fresh")
            add("channel", Int(airing.channel))
            add("minute", UTCTime.minute(airing.minute))
            if let code = d.airingCode { add("code", code.hex) }
            if let slot = d.airingSlot { add("slot", UTCTime.iso8601(Date(timeIntervalSince1970: slot.from))) }
        } else if d.stale {
            add("airing", "stale")
        } else if d.airingCoded {
            add("airing", "unknown")
        }
        if let sound = d.sound {
            add("sound_votes", sound.votes)
            if let offset = sound.offset { add("offset", offset, decimals: 3) }
            add("sound_reading", sound.evidence == nil ? "landmarks" : "learned")
            if let evidence = sound.evidence { add("sound_evidence", evidence, decimals: 2) }
        }
    }

    /// The figures of a report, after `class` and whatever names the source: the fields
    /// `hark analyze` and harkd's noise reports share.
    public mutating func addReportFields(_ e: ReportEvent) {
        let m = e.meter
        add("duration", m.duration, decimals: 3)
        for (k, v) in [("LAeq", m.LAeq), ("LCeq", m.LCeq), ("LZeq", m.LZeq), ("LAE", m.LAE),
                       ("LAFmax", m.LAFmax), ("LAFmin", m.LAFmin), ("LASmax", m.LASmax),
                       ("LCpeak", m.LCpeak), ("LA10", m.LA10), ("LA50", m.LA50), ("LA90", m.LA90)] {
            add(k, v, decimals: 2)
        }
        add("bands", numbers: e.bands.map { ($0.label, $0.level) }, decimals: 2)
        add("calibration", e.calibration, decimals: 2)
        add("rate", e.sampleRate)
        add("channels", e.channels)
        add("channel_use", e.channelUse)
        add("format", e.format)
        add("warnings", strings: e.warnings)
    }
}
