import Testing
@testable import HarkDSP

@Suite struct LevelHistogramTests {
    private func meanSquare(_ db: Double) -> Double { Decibels.rms(level: db) * Decibels.rms(level: db) }

    @Test func percentilesAreExactWithinTheRange() {
        var h = LevelHistogram()
        for db in stride(from: -60.0, through: 90.0, by: 1.0) { h.record(meanSquare: meanSquare(db)) }
        #expect(abs(h.exceeded(50)! - 15) < 0.6)
        #expect(abs(h.exceeded(10)! - 75) < 0.6)
        #expect(abs(h.exceeded(90)! - (-45)) < 0.6)
    }

    @Test func aPercentileBeyondTheRangeIsAbsentNotItsEdge() {
        // Levels of 1e38 samples: a top of +30 dB read LA10 = LA50 = LA90 = 30.00.
        var h = LevelHistogram()
        for _ in 0..<40 { h.record(meanSquare: 1e76) }
        for _ in 0..<40 { h.record(meanSquare: .infinity) }
        for _ in 0..<20 { h.record(meanSquare: meanSquare(20)) }
        #expect(h.exceeded(10) == nil && h.exceeded(50) == nil)
        #expect(abs(h.exceeded(90)! - 20) < 0.01)
        // Below the range, as before: nothing to name.
        var quiet = LevelHistogram()
        for _ in 0..<10 { quiet.record(meanSquare: 0) }
        #expect(quiet.exceeded(50) == nil)
    }
}
