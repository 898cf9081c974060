/// Decides whether a confirmed payload is news: the detector confirms a mark it keeps hearing
/// every 50 ms, and a listener wants each airing once.
///
/// A confirmation continues the airing last reported while the audio it was read from overlaps
/// that of the payload's previous confirmation and the payload has not been absent for
/// `repeatInterval`. Overlap is the test because windows of up to four copies keep confirming a
/// mark for some 7 s after it stops: an absence measured between confirmations alone would miss
/// the same advert aired again a few seconds later. A weak mark confirmed only now and then,
/// from windows that do not overlap, is reported again.
///
/// A confirmation on another copy lattice (its copy's start more than ``latticeTolerance`` off
/// the previous confirmation's, modulo a copy) is another airing too: the coherent reading
/// confirms a loud mark from windows that hold only a few of its symbols, so an advert aired
/// again 8 s after it stopped could be confirmed without a break from windows straddling both,
/// and an airing that starts anew lies on its own lattice (unless it happens to fall within
/// the tolerance of the old one, 3 times in 8).
public struct AiringMemory: Sendable {
    /// Absence (seconds) after which a payload is news again however its windows lie; 0 makes
    /// every confirmation news.
    public let repeatInterval: Double
    private var last: [WatermarkPayload: (time: Double, windowStart: Double, copyStart: Double?)] = [:]
    /// Within one airing the copy's start read from different alignments wanders by ±0.2 s (a
    /// loud mark still decodes from frames half a symbol off its symbols, and the start is read
    /// from the frames), and by a few milliseconds a minute with the clocks' offset.
    public static let latticeTolerance = 0.45
    /// Payloads not confirmed for this long are forgotten when a new one arrives, so the memory
    /// stays as small as the set of marks on air.
    static let forgetAfter = 60.0

    public init(repeatInterval: Double) {
        self.repeatInterval = repeatInterval
    }

    /// Records that `payload` was confirmed at `time` from audio beginning at `windowStart`,
    /// the copy it was read from starting at `copyStart` (all in the same seconds), and returns
    /// whether that is news.
    public mutating func isNews(_ payload: WatermarkPayload, time: Double, windowStart: Double, copyStart: Double? = nil) -> Bool {
        let previous = last[payload]
        if previous == nil { last = last.filter { time - $0.value.time < Self.forgetAfter } }
        last[payload] = (time, windowStart, copyStart)
        guard let previous else { return true }
        if time - previous.time >= repeatInterval || windowStart >= previous.time { return true }
        guard let a = copyStart, let b = previous.copyStart else { return false }
        let copy = WatermarkFormat.copyDuration
        let offset = (a - b) - ((a - b) / copy).rounded() * copy
        return abs(offset) > Self.latticeTolerance
    }

    /// Forgets everything: the next confirmation of any payload is news.
    public mutating func reset() {
        last = [:]
    }
}
