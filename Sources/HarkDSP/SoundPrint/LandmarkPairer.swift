/// A pair of spectral peaks (Wang 2003): the anchor's bin, the target's offset from it in bin
/// and frame, hashed into 20 bits, and the anchor's frame.
public struct Landmark: Sendable, Equatable {
    /// anchor bin (8 bits) · bin offset + 32 (6 bits) · frame offset (6 bits).
    public var hash: UInt32
    public var frame: Int

    public static let hashBits = 20

    public init(hash: UInt32, frame: Int) {
        (self.hash, self.frame) = (hash, frame)
    }

    public init(anchor: SpectralPeak, target: SpectralPeak) {
        let df = target.bin - anchor.bin, dt = target.frame - anchor.frame
        hash = UInt32(anchor.bin & 0xff) << 12 | UInt32((df + 32) & 0x3f) << 6 | UInt32(dt & 0x3f)
        frame = anchor.frame
    }
}

/// Pairs each peak with every earlier peak within its target zone (1 to ``maxFrames`` frames
/// before it, within ±``maxBins`` bins). Every pair in the zone, rather than the few nearest:
/// then a pair of the creative is formed in the room whenever both its peaks survive there,
/// whatever other peaks the noise adds around them.
public struct LandmarkPairer {
    /// 0.77 s and ±484 Hz.
    public static let maxFrames = 48
    public static let maxBins = 31
    private var recent: [SpectralPeak] = []

    public init() {}

    /// Takes the next peak (in frame order) and calls `found` for each landmark it closes.
    public mutating func add(_ peak: SpectralPeak, found: (Landmark) -> Void) {
        let oldest = peak.frame - Self.maxFrames
        if let first = recent.first, first.frame < oldest {
            recent.removeAll { $0.frame < oldest }
        }
        for anchor in recent where anchor.frame < peak.frame && abs(peak.bin - anchor.bin) <= Self.maxBins {
            found(Landmark(anchor: anchor, target: peak))
        }
        recent.append(peak)
    }
}
