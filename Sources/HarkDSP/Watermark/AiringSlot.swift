/// When a campaign's creative airs on one channel, as a broadcaster's as-run or planned log
/// says: the creative starts at some moment between ``from`` and ``until`` (UTC seconds since
/// 1970; equal for an as-run log's exact start). It lets the campaign's sound prove a fresh
/// airing where its mark is too faint to be heard: the creative's start, heard in the room
/// (the capture's UTC time less its offset in the creative), falls within the slot, give or
/// take ``tolerance`` (docs/protocol.md, "Airing slots").
public struct AiringSlot: Sendable, Hashable {
    public var channel: UInt16
    public var from: Double
    public var until: Double
    /// Seconds either side of the slot that still count: the channel's broadcast delay (a
    /// satellite's few seconds, a stream's tens) and the device's clock error.
    public var tolerance: Double

    /// What a channel without a tolerance of its own gets: a streamed channel's delay, some
    /// 30 to 60 s behind the playout, and a clock kept by NTP.
    public static let defaultTolerance = 60.0
    /// The most a channel may be given: past this a recording replayed a little later would
    /// pass for the airing, and an airing code's window (5 minutes) already covers a clock
    /// that far off.
    public static let maxTolerance = 300.0

    public init(channel: UInt16, from: Double, until: Double, tolerance: Double = AiringSlot.defaultTolerance) {
        precondition(until >= from && tolerance >= 0, "a slot ends after it starts")
        (self.channel, self.from, self.until, self.tolerance) = (channel, from, until, tolerance)
    }

    /// Whether a creative that started at `start` (UTC seconds) started in this slot.
    public func holds(creativeStart start: Double) -> Bool {
        from - tolerance <= start && start <= until + tolerance
    }
}

extension Array where Element == AiringSlot {
    /// The slot that holds a creative started at `start` (UTC seconds), the nearest by its
    /// start when several do. A linear look: it runs once per detection, not per sample.
    public func slot(holding start: Double) -> AiringSlot? {
        self.filter { $0.holds(creativeStart: start) }.min { abs($0.from - start) < abs($1.from - start) }
    }
}
