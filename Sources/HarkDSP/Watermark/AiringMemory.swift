/// Decides whether a confirmed payload is news: the detector confirms a mark it keeps hearing
/// every 50 ms, the sound's readings name a creative at every review, and a listener wants each
/// airing once. The one place repeats are judged: the analysers report every confirmation, and
/// each consumer keeps a memory of its own (a file's pipeline, its last stage; in harkd, the
/// record and each watcher, so that one who joins mid-airing hears it at the next confirmation).
/// A campaign is one airing whatever heard it: its sound, then its mark, is one airing, not two
/// (the mark's joining it is news of its own, ``Verdict/markJoined``).
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
    /// What a listener to a file or a stream is given by default.
    public static let standardInterval = 6.0
    private var last: [WatermarkPayload: (time: Double, windowStart: Double, copyStart: Double?, markHeard: Bool)] = [:]
    /// Within one airing the copy's start read from different alignments wanders by ±0.2 s (a
    /// loud mark still decodes from frames half a symbol off its symbols, and the start is read
    /// from the frames), and by a few milliseconds a minute with the clocks' offset.
    public static let latticeTolerance = 0.45
    /// Payloads not confirmed for this long are forgotten when a new one arrives, so the memory
    /// stays as small as the set of marks on air.
    static let forgetAfter = 60.0

    /// What a confirmation is to a listener who has been told of the ones before it.
    public enum Verdict: Sendable, Equatable {
        /// The airing already reported, heard again.
        case repeated
        /// A new airing.
        case airing
        /// The airing already reported, by its sound alone until now, and now by its mark: a
        /// listener learns that the campaign is proven (a shake that needs the mark can be
        /// answered), so it is news too, within the same airing.
        case markJoined
    }

    public init(repeatInterval: Double) {
        self.repeatInterval = repeatInterval
    }

    /// Records that `payload` was confirmed at `time` from audio beginning at `windowStart`,
    /// the copy it was read from starting at `copyStart` (all in the same seconds), with or
    /// without its mark, and says what that is.
    public mutating func verdict(_ payload: WatermarkPayload, time: Double, windowStart: Double, copyStart: Double? = nil,
                                 markHeard: Bool = false) -> Verdict {
        guard let previous = last[payload] else {
            last = last.filter { time - $0.value.time < Self.forgetAfter }
            last[payload] = (time, windowStart, copyStart, markHeard)
            return .airing
        }
        if Self.isAnotherAiring(previous: (previous.time, previous.copyStart), time: time, windowStart: windowStart, copyStart: copyStart,
                                repeatInterval: repeatInterval) {
            last[payload] = (time, windowStart, copyStart, markHeard)
            return .airing
        }
        last[payload] = (time, windowStart, copyStart, previous.markHeard || markHeard)
        return markHeard && !previous.markHeard ? .markJoined : .repeated
    }

    private static func isAnotherAiring(previous: (time: Double, copyStart: Double?), time: Double, windowStart: Double,
                                        copyStart: Double?, repeatInterval: Double) -> Bool {
        if time - previous.time >= repeatInterval || windowStart >= previous.time { return true }
        guard let a = copyStart, let b = previous.copyStart else { return false }
        let copy = WatermarkFormat.copyDuration
        let offset = (a - b) - ((a - b) / copy).rounded() * copy
        return abs(offset) > Self.latticeTolerance
    }

    /// Whether `payload` confirmed so is news (``verdict(_:time:windowStart:copyStart:markHeard:)``
    /// is not ``Verdict/repeated``).
    public mutating func isNews(_ payload: WatermarkPayload, time: Double, windowStart: Double, copyStart: Double? = nil,
                                markHeard: Bool = false) -> Bool {
        verdict(payload, time: time, windowStart: windowStart, copyStart: copyStart, markHeard: markHeard) != .repeated
    }

    /// Records a detection (keyed by the airing code it was heard by, else its payload: each
    /// code names an airing of its own) and says what it is.
    public mutating func verdict(_ d: WatermarkDetection) -> Verdict {
        verdict(d.airingCode ?? d.payload, time: d.time, windowStart: d.windowStart, copyStart: d.start, markHeard: d.markHeard)
    }

    /// Whether a detection is news: a new airing, or the mark joining an airing heard by its
    /// sound alone.
    public mutating func isNews(_ d: WatermarkDetection) -> Bool { verdict(d) != .repeated }

    /// Forgets everything: the next confirmation of any payload is news.
    public mutating func reset() {
        last = [:]
    }
}
