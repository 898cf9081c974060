import FoundationEssentials
import Glibc

/// A fixed-size histogram of levels for percentile statistics (LA10, LA50, LA90, …).
///
/// Bins are 0.01 dB wide from −200 dB to +30 dB (uncalibrated), so memory is constant (92 KB)
/// however long the measurement, and percentiles are exact to ±0.005 dB. Levels below the
/// range, digital silence included, count in an underflow bin; a percentile that lands there
/// has no level (`nil`).
public struct LevelHistogram: Sendable {
    static let lowest = -200.0
    static let highest = 30.0
    static let binWidth = 0.01
    static let binCount = Int((highest - lowest) / binWidth)

    private var bins: [UInt32]
    private var underflow: UInt64 = 0
    /// Number of levels recorded.
    public private(set) var count: UInt64 = 0

    public init() {
        bins = [UInt32](repeating: 0, count: Self.binCount)
    }

    /// Records one level given as a mean square (reference as in ``Decibels``).
    public mutating func record(meanSquare ms: Double) {
        count += 1
        guard let db = Decibels.level(meanSquare: ms), db >= Self.lowest else {
            underflow += 1
            return
        }
        let index = min(Self.binCount - 1, Int((db - Self.lowest) / Self.binWidth))
        bins[index] &+= 1
    }

    /// The level exceeded `percent` % of the time (so `exceeded(10)` is L10), uncalibrated,
    /// or `nil` when nothing was recorded or the answer lies below the range.
    public func exceeded(_ percent: Double) -> Double? {
        guard count > 0 else { return nil }
        // The level L such that a fraction `percent` of the records lie above it.
        let above = Double(count) * percent / 100
        var seen = 0.0
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
        count = 0
    }
}
