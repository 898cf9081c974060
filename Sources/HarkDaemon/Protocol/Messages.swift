import FoundationEssentials
import Glibc
import HarkDSP
import HarkEngine
import HarkSystem

/// The lines harkd sends, each one JSON object tagged with its `"class"` (docs/protocol.md).
public enum Messages {
    /// The protocol version in the banner; bumped on incompatible changes only.
    public static let protocolVersion = 1

    public static func version(id: String? = nil) -> String {
        var j = JSONLine()
        j.add("class", "version")
        if let id { j.add("id", id) }
        j.add("release", Hark.version)
        j.add("proto", protocolVersion)
        return j.line
    }

    /// What went wrong, for programs: stable across releases, while `message` is English for
    /// people and may change.
    public enum ErrorCode: String, Sendable, CaseIterable {
        case tooDeep = "too-deep"
        case notJSON = "not-json"
        case notAnObject = "not-an-object"
        case badID = "bad-id"
        case noCommand = "no-command"
        case unknownCommand = "unknown-command"
        case badArgument = "bad-argument"
        case lineTooLong = "line-too-long"
        case tooManySessions = "too-many-sessions"
        case shuttingDown = "shutting-down"
        case noAudio = "no-audio"
        case tooManyClients = "too-many-clients"
        case tooManyValues = "too-many-values"
    }

    public static func error(_ code: ErrorCode, _ message: String, id: String? = nil, device: String? = nil) -> String {
        var j = JSONLine()
        j.add("class", "error")
        if let id { j.add("id", id) }
        j.add("code", code.rawValue)
        j.add("message", message)
        if let device { j.add("device", device) }
        return j.line
    }

    public struct Status: Sendable, Equatable {
        public var state: String
        public var device: String
        public var rate: Int?
        public var mode: String
        public var uptime: Double
        public var overruns: Int
        public var dropped: Int
        public var clients: Int
        /// The most clients served at once, and connections refused for it since start.
        public var maxClients = 0
        public var clientsRefused = 0
        /// Bytes of output all clients hold unsent (at most 64 MiB, ``OutputBudget``).
        public var outputHeld = 0
        public var sessions: Int
        public var detail: String?
        public var spool = SpoolStatus(state: "off")
        /// The campaign catalogue (nil: none configured).
        public var catalogue: CatalogueStatus?
    }

    /// The campaign catalogue's part of a status message.
    public struct CatalogueStatus: Sendable, Equatable {
        public var path: String
        /// Campaigns read from it, and of those on air today (listened for).
        public var campaigns: Int
        public var onAir: Int
        /// Why the last read failed (the campaigns read before are still listened for).
        public var error: String?
    }

    /// The spool's part of a status message.
    public struct SpoolStatus: Sendable, Equatable {
        /// `off` (no spool configured), `ok`, or `error` (with ``error``).
        public var state: String
        public var error: String?
        public var pending = 0
        /// When the oldest undelivered record was made.
        public var oldestPending: Date?
        public var delivered = 0
        public var lastDelivery: Date?
        /// Undelivered records dropped past the spool's bound, ever.
        public var dropped = 0
        /// Records that could not be committed since harkd started.
        public var failed = 0
        /// The uplink: `off`, `connecting`, `connected`, `disconnected`, `refused` or `error`.
        public var uplink = "off"
        public var uplinkDetail: String?

        public init(state: String, error: String? = nil) {
            self.state = state
            self.error = error
        }
    }

    public static func status(_ s: Status, id: String? = nil, now: Date = Date()) -> String {
        var j = JSONLine()
        j.add("class", "status")
        if let id { j.add("id", id) }
        j.add("state", s.state)
        j.add("device", s.device)
        j.add("rate", s.rate.map(Double.init), decimals: 0)
        j.add("mode", s.mode)
        j.add("uptime", s.uptime, decimals: 1)
        j.add("overruns", s.overruns)
        j.add("dropped", s.dropped)
        j.add("clients", s.clients)
        j.add("maxClients", s.maxClients)
        j.add("clientsRefused", s.clientsRefused)
        j.add("outputHeld", s.outputHeld)
        j.add("sessions", s.sessions)
        if let d = s.detail { j.add("detail", d) }
        j.add("spool", s.spool.state)
        if s.spool.state != "off" {
            j.add("spoolPending", s.spool.pending)
            j.add("spoolOldestAge", s.spool.oldestPending.map { max(0, now.timeIntervalSince($0)) }, decimals: 1)
            j.add("spoolDelivered", s.spool.delivered)
            j.add("spoolDropped", s.spool.dropped)
            j.add("spoolFailed", s.spool.failed)
        }
        if let e = s.spool.error { j.add("spoolError", e) }
        j.add("uplink", s.spool.uplink)
        if let d = s.spool.uplinkDetail { j.add("uplinkDetail", d) }
        if let d = s.spool.lastDelivery { j.add("lastDelivery", UTCTime.iso8601(d)) }
        if let c = s.catalogue {
            j.add("catalogue", c.path)
            j.add("campaigns", c.campaigns)
            j.add("campaignsOnAir", c.onAir)
            if let e = c.error { j.add("catalogueError", e) }
        }
        return j.line
    }

    /// A shake answered by `d`: its payload, and its evidence and scores as in `detection`.
    public static func shakeDetected(id: String?, detection d: WatermarkDetection, after: Double, stamp: RecordStamp? = nil) -> String {
        var j = JSONLine()
        j.add("class", "shake")
        if let id { j.add("id", id) }
        j.add(stamp: stamp)
        j.add("result", "detected")
        j.add("payload", d.payload.hex)
        j.add("after", after, decimals: 3)
        j.addDetectionFields(d)
        return j.line
    }

    /// No mark heard in `after` seconds; `warnings` say what audio was missing, if any.
    public static func shakeNone(id: String?, after: Double, warnings: [String] = [], stamp: RecordStamp? = nil) -> String {
        var j = JSONLine()
        j.add("class", "shake")
        if let id { j.add("id", id) }
        j.add(stamp: stamp)
        j.add("result", "none")
        j.add("after", after, decimals: 3)
        j.add("warnings", strings: warnings)
        return j.line
    }

    /// A noise session's live level: `LAFmax` is the highest LAF since the session began (what a
    /// meter's peak-hold shows; `peak` is the same, the name this line had first); `LCpeak` is
    /// the C-weighted peak of the last tenth of a second.
    public static func sessionLevel(id: String?, t: Double, levels: IntervalLevels, peak: Double?) -> String {
        var j = JSONLine()
        j.add("class", "level")
        if let id { j.add("id", id) }
        j.add("t", t, decimals: 3)
        j.add("LAF", levels.LAF, decimals: 2)
        j.add("LCpeak", levels.LCpeak, decimals: 2)
        j.add("LAFmax", peak, decimals: 2)
        j.add("peak", peak, decimals: 2)
        return j.line
    }

    /// A watcher's level line (continuous meter).
    public static func level(t: Double, levels: IntervalLevels) -> String {
        var j = JSONLine()
        j.add("class", "level")
        j.add("t", t, decimals: 3)
        j.add("LAF", levels.LAF, decimals: 2)
        j.add("LAS", levels.LAS, decimals: 2)
        j.add("LCpeak", levels.LCpeak, decimals: 2)
        j.add("LAeq", levels.LAeq, decimals: 2)
        j.add("LAFmax", levels.LAFmax, decimals: 2)
        return j.line
    }

    /// A noise report: a session's (with its `id`) or a continuous one (with its end time `t`).
    public static func report(id: String?, t: Double?, device: String, report: ReportEvent, stamp: RecordStamp? = nil) -> String {
        var j = JSONLine()
        j.add("class", "report")
        if let id { j.add("id", id) }
        j.add(stamp: stamp)
        if let t { j.add("t", t, decimals: 3) }
        j.add("device", device)
        j.addReportFields(report)
        return j.line
    }

    public static func detection(_ d: WatermarkDetection, t: Double, start: Double, stamp: RecordStamp? = nil) -> String {
        var j = JSONLine()
        j.add("class", "detection")
        j.add(stamp: stamp)
        j.add("payload", d.payload.hex)
        j.add("t", t, decimals: 3)
        j.add("start", start, decimals: 3)
        j.addDetectionFields(d)
        return j.line
    }
}
