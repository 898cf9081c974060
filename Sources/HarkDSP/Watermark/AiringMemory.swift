/// Decides whether a confirmed payload is news: the detector confirms a mark it keeps hearing
/// every 50 ms, and a listener wants each airing once.
///
/// A confirmation continues the airing last reported while the audio it was read from overlaps
/// that of the payload's previous confirmation and the payload has not been absent for
/// `repeatInterval`. Overlap is the test because windows of up to four copies keep confirming a
/// mark for some 7 s after it stops: an absence measured between confirmations alone would miss
/// the same advert aired again a few seconds later. A weak mark confirmed only now and then,
/// from windows that do not overlap, is reported again.
public struct AiringMemory: Sendable {
    /// Absence (seconds) after which a payload is news again however its windows lie; 0 makes
    /// every confirmation news.
    public let repeatInterval: Double
    private var last: [WatermarkPayload: (time: Double, windowStart: Double)] = [:]
    /// Payloads not confirmed for this long are forgotten when a new one arrives, so the memory
    /// stays as small as the set of marks on air.
    static let forgetAfter = 60.0

    public init(repeatInterval: Double) {
        self.repeatInterval = repeatInterval
    }

    /// Records that `payload` was confirmed at `time` from audio beginning at `windowStart`
    /// (both in the same seconds), and returns whether that is news.
    public mutating func isNews(_ payload: WatermarkPayload, time: Double, windowStart: Double) -> Bool {
        let previous = last[payload]
        if previous == nil { last = last.filter { time - $0.value.time < Self.forgetAfter } }
        last[payload] = (time, windowStart)
        guard let previous else { return true }
        return time - previous.time >= repeatInterval || windowStart >= previous.time
    }

    /// Forgets everything: the next confirmation of any payload is news.
    public mutating func reset() {
        last = [:]
    }
}
