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

/// Readings kept in their bytes (``SoundPrint/bytes``) and decoded when the index asks.
public struct EncodedSoundReadings: SoundReadings {
    private let encoded: [[UInt8]]

    /// Checks each reading whole, decoding it once; throws the first that is damaged, with its
    /// position.
    public init(_ encoded: [[UInt8]]) throws(EncodedSoundReadingsError) {
        for (i, bytes) in encoded.enumerated() {
            do { _ = try SoundPrint(bytes: bytes) } catch { throw EncodedSoundReadingsError(index: i, reason: "\(error)") }
        }
        self.encoded = encoded
    }

    public var count: Int { encoded.count }

    // Checked when made, so decoding cannot fail here.
    public func reading(_ i: Int) -> SoundPrint {
        (try? SoundPrint(bytes: encoded[i])) ?? SoundPrint(landmarks: [], duration: 0)
    }

    public func landmarks(_ i: Int) -> [Landmark] {
        SoundPrint.landmarks(inBytes: encoded[i])
    }
}

/// A reading of ``EncodedSoundReadings`` that cannot be decoded: which, and why.
public struct EncodedSoundReadingsError: Error, Equatable {
    public var index: Int
    public var reason: String
}
