import FoundationEssentials
import Glibc
import HarkEngine
import HarkSystem

/// What makes a record (a noise report, a detection, a shake result) traceable once it has
/// left the device: the unit that made it, an id no other record of any unit or run shares,
/// and the wall-clock span it covers.
public struct RecordStamp: Sendable, Equatable {
    public var unit: String
    /// A random UUID: unique across restarts and units without any state to keep.
    public var rid: String
    public var start: Date
    public var end: Date

    public init(unit: String, rid: String = UUID().uuidString.lowercased(), start: Date, end: Date) {
        (self.unit, self.rid, self.start, self.end) = (unit, rid, start, end)
    }
}

extension JSONLine {
    /// The stamp's fields: `unit`, `rid`, `utcStart`, `utcEnd` (docs/protocol.md).
    mutating func add(stamp: RecordStamp?) {
        guard let stamp else { return }
        add("unit", stamp.unit)
        add("rid", stamp.rid)
        add("utcStart", UTCTime.iso8601(stamp.start))
        add("utcEnd", UTCTime.iso8601(stamp.end))
    }
}
