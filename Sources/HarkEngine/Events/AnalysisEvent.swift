import FoundationEssentials
import HarkDSP
import HarkSystem

/// What an analysis produces, in the order it produces it. Every event is tagged with its class
/// when written out (see docs/protocol.md for the JSON form).
public enum AnalysisEvent: Sendable, Equatable {
    /// Levels over one interval of the recording.
    case level(LevelEvent)
    /// The figures of a whole recording.
    case report(ReportEvent)
    /// A verified watermark.
    case detection(DetectionEvent)
}

/// A watermark found in a source (`"class":"detection"`).
public struct DetectionEvent: Sendable, Equatable {
    public var source: String
    public var detection: WatermarkDetection

    public init(source: String, detection: WatermarkDetection) {
        self.source = source
        self.detection = detection
    }

    private static func place(_ d: WatermarkDetection) -> String {
        d.sound?.offset.map { String(cFormat: "%.2f s into the creative, ", $0) } ?? ""
    }

    /// What the sound's reading read: landmarks, or the learned reading's evidence.
    public static func reading(_ d: WatermarkDetection) -> String {
        if let e = d.sound?.evidence { return String(cFormat: "learned, evidence %.1f over %d embeddings", e, d.sound?.votes ?? 0) }
        return "\(d.sound?.votes ?? 0) landmarks"
    }

    /// A stale airing in words (when it aired against the recording's time), or the slot that made it fresh.
    private static func airingNote(_ d: WatermarkDetection) -> String {
        if let slot = d.airingSlot {
            return "; fresh: started within its airing slot on channel \(slot.channel) at " + UTCTime.iso8601(Date(timeIntervalSince1970: slot.from))
        }
        guard d.stale else { return "" }
        return "; stale: a recording of an earlier airing" + (d.airing.map { " (aired " + UTCTime.minute($0.minute) + ")" } ?? "")
    }

    /// One line for people.
    public static func summary(_ source: String, _ d: WatermarkDetection) -> String {
        switch d.evidence {
        case .mark:
            return String(cFormat: "%@: payload %@ at %.2f s (copy from %.2f s), score %.1f", source, d.payload.hex, d.time, d.start, d.mark?.score ?? 0)
                + airingNote(d)
        case .sound:
            return String(cFormat: "%@: payload %@ at %.2f s by its sound (%@%@); no mark heard",
                          source, d.payload.hex, d.time, place(d), reading(d)) + airingNote(d)
        case .markAndSound:
            return String(cFormat: "%@: payload %@ at %.2f s by mark and sound (score %.1f%@; %@%@)",
                          source, d.payload.hex, d.time, d.mark?.score ?? 0, d.mark?.confirmedAtSound == true ? " where the sound placed it" : "",
                          place(d), reading(d)) + airingNote(d)
        }
    }
}

/// Levels over one interval (`"class":"level"`).
public struct LevelEvent: Sendable, Equatable {
    /// The source the levels come from.
    public var source: String
    public var levels: IntervalLevels

    public init(source: String, levels: IntervalLevels) {
        self.source = source
        self.levels = levels
    }
}

/// The report for one recording (`"class":"report"`).
public struct ReportEvent: Sendable, Equatable {
    public var source: String
    public var meter: MeterReport
    /// 1/3-octave band Leq (Z-weighted), lowest band first: (nominal label, level).
    public var bands: [(label: String, level: Double?)]
    /// The calibration offset that was applied (0 means uncalibrated dB re full scale).
    public var calibration: Double
    public var sampleRate: Int
    public var channels: Int
    /// How channels were combined: "average" or "channel N" (1-based).
    public var channelUse: String
    public var format: String
    /// Problems that did not stop the analysis (truncated file, replaced samples, …).
    public var warnings: [String]

    public init(source: String, meter: MeterReport, bands: [(label: String, level: Double?)], calibration: Double,
                sampleRate: Int, channels: Int, channelUse: String, format: String, warnings: [String]) {
        self.source = source
        self.meter = meter
        self.bands = bands
        self.calibration = calibration
        self.sampleRate = sampleRate
        self.channels = channels
        self.channelUse = channelUse
        self.format = format
        self.warnings = warnings
    }

    public static func == (a: ReportEvent, b: ReportEvent) -> Bool {
        a.source == b.source && a.meter == b.meter && a.calibration == b.calibration
            && a.bands.map(\.label) == b.bands.map(\.label) && a.bands.map(\.level) == b.bands.map(\.level)
            && a.sampleRate == b.sampleRate && a.channels == b.channels && a.channelUse == b.channelUse
            && a.format == b.format && a.warnings == b.warnings
    }
}
