import FoundationEssentials
import Glibc

/// A fixed-size histogram of levels for percentile statistics (LA10, LA50, LA90, …).
///
/// Bins are 0.01 dB wide from −200 dB to +100 dB (uncalibrated), so memory is constant (120 KB)
/// however long the measurement, and percentiles are exact to ±0.005 dB. Levels below the
/// range, digital silence included, count in an underflow bin, levels above it in an overflow
/// bin; a percentile that lands in either has no level (`nil`), never the range's edge. (The
/// top was +30 dB: a file of samples at 1e38 read LA10 = LA50 = LA90 = 30.00.) The
/// ``ChannelMixer`` clamps samples at +80 dB, so a level that overflows is a sum of such.
public struct LevelHistogram: Sendable {
    static let lowest = -200.0
    static let highest = 100.0
    static let binWidth = 0.01
    static let binCount = Int((highest - lowest) / binWidth)

    private var bins: [UInt32]
    private var underflow: UInt64 = 0
    private var overflow: UInt64 = 0
    /// Number of levels recorded.
    public private(set) var count: UInt64 = 0

    public init() {
        bins = [UInt32](repeating: 0, count: Self.binCount)
    }

    /// Records one level given as a mean square (reference as in ``Decibels``).
    public mutating func record(meanSquare ms: Double) {
        count += 1
        if ms == .infinity {
            overflow += 1
            return
        }
        guard let db = Decibels.level(meanSquare: ms), db >= Self.lowest else {
            underflow += 1
            return
        }
        let index = Int((db - Self.lowest) / Self.binWidth)
        guard index < Self.binCount else {
            overflow += 1
            return
        }
        bins[index] &+= 1
    }

    /// The level exceeded `percent` % of the time (so `exceeded(10)` is L10), uncalibrated,
    /// or `nil` when nothing was recorded or the answer lies below the range.
    public func exceeded(_ percent: Double) -> Double? {
        guard count > 0 else { return nil }
        // The level L such that a fraction `percent` of the records lie above it.
        let above = Double(count) * percent / 100
        var seen = Double(overflow)
        if seen > above { return nil }
        for index in stride(from: Self.binCount - 1, through: 0, by: -1) {
            seen += Double(bins[index])
            if seen > above {
                return Self.lowest + (Double(index) + 0.5) * Self.binWidth
            }
        }
        return nil
    }

    /// Forgets every record.
    public mutating func reset() {
        for i in bins.indices { bins[i] = 0 }
        underflow = 0
        overflow = 0
        count = 0
    }
}
