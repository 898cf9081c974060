import FoundationEssentials
import Glibc
import HarkSpool
import Logging

/// Gives each record its stamp and commits it to the spool before anyone sees it: a report
/// a client or the uplink has read is one the device can deliver again after a crash.
///
/// Runs on the analysis thread (which delivers what its session table answers), so a commit's disk flush
/// delays analysis, never socket handlers; the capture ring absorbs that (the spool's commit
/// latency is in docs/daemon.md). A spool that cannot be written is logged and counted, and
/// the record still goes to clients: harkd keeps measuring.
public final class Recorder: Sendable {
    public enum Kind: String, Sendable {
        case report, detection, shake
    }

    public let unit: String
    public let spool: Spool?
    /// Publishes the spool to a broker (nil: no uplink configured).
    public let uplink: Uplink?
    /// Why the configured spool is not in use, or its last write failed (nil: all is well).
    private let trouble: Locked<String?>
    private let failed = Locked(0)
    private let logger: Logger

    public init(unit: String, spool: Spool?, uplink: Uplink? = nil, trouble: String? = nil, logger: Logger) {
        self.unit = unit
        self.spool = spool
        self.uplink = uplink
        self.trouble = Locked(trouble)
        self.logger = logger
    }

    /// A recorder with no spool (harkd without a `spool` setting, and tests).
    public static func unspooled(unit: String = "test", logger: Logger = Logger(label: "hark")) -> Recorder {
        Recorder(unit: unit, spool: nil, logger: logger)
    }

    public func stamp(start: Date, end: Date) -> RecordStamp {
        RecordStamp(unit: unit, start: start, end: end)
    }

    /// Commits `line` (a record carrying `stamp`) and returns once it is on disk, or once the
    /// failure is logged.
    public func commit(_ kind: Kind, stamp: RecordStamp, line: String) {
        guard let spool else { return }
        let record = Spool.Record(rid: stamp.rid, kind: kind.rawValue,
                                  created: Int64((stamp.end.timeIntervalSince1970 * 1000).rounded()), body: line)
        do {
            try spool.commit(record)
            trouble.withLock { $0 = nil }
        } catch {
            let count = failed.withLock { n -> Int in n += 1; return n }
            trouble.withLock { $0 = "\(error)" }
            // Once, then every 100th: a full disk fails every record.
            if count == 1 || count % 100 == 0 {
                logger.error("\(kind.rawValue) \(stamp.rid) not spooled (\(count) so far): \(error)")
            }
        }
    }

    /// The spool's figures for status messages.
    public var status: Messages.SpoolStatus {
        let problem = trouble.withLock { $0 }
        guard let spool else { return Messages.SpoolStatus(state: problem == nil ? "off" : "error", error: problem) }
        let s = spool.stats
        var status = Messages.SpoolStatus(state: problem == nil ? "ok" : "error", error: problem)
        status.pending = s.pending
        status.oldestPending = s.oldestPending.map { Date(timeIntervalSince1970: Double($0) / 1000) }
        status.delivered = s.delivered
        status.lastDelivery = s.lastDelivery.map { Date(timeIntervalSince1970: Double($0) / 1000) }
        status.dropped = s.droppedUndelivered
        status.failed = failed.withLock { $0 }
        if let u = uplink?.status {
            status.uplink = u.state
            status.uplinkDetail = u.detail
        }
        return status
    }
}
