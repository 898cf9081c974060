/// The creatives' readings a ``SoundIndex`` is built from, handed over one at a time: the index
/// reads each creative three times (its whole reading once, then its landmarks twice) and holds
/// none of them, so that a catalogue need never be decoded whole (a landmark takes 5 bytes
/// encoded and 16 decoded; 100 creatives' readings, about 18 MB decoded).
public protocol SoundReadings: Sendable {
    /// Creatives.
    var count: Int { get }
    /// Creative `i`'s whole reading.
    func reading(_ i: Int) -> SoundPrint
    /// Creative `i`'s landmarks alone, in frame and hash order.
    func landmarks(_ i: Int) -> [Landmark]
}

extension Array: SoundReadings where Element == SoundPrint {
    public func reading(_ i: Int) -> SoundPrint { self[i] }
    public func landmarks(_ i: Int) -> [Landmark] { self[i].landmarks }
}
