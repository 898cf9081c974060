import Foundation
import Testing
@testable import HarkEngine

@Suite struct BandLevelPlanTests {
    /// Overall watermark-to-host ratio (dB) the plan gives, from the measuring pass's band levels.
    private func ratio(_ plan: BandLevelPlan, bands: [(host: Double?, mark: Double?)], overall: Double) -> Double {
        let marks = bands.map { $0.mark.map { pow(10, $0 / 10) } ?? 0 }
        let total = marks.reduce(0, +)
        let after = zip(marks, plan.bandGains).reduce(0.0) { $0 + $1.0 * pow(10, $1.1 / 10) }
        return overall + 10 * log10(after / total)
    }

    @Test func withRoomEverywhereEveryBandGetsTheSameGain() {
        // Watermark 30 dB under the host in every band at the reference; −20 dB asks for +10 dB.
        let bands: [(host: Double?, mark: Double?)] = [(-20, -50), (-25, -55), (-30, -60)]
        let plan = BandLevelPlan(bands: bands, overallRatio: -30, strength: -20, margin: -3, maximumGain: 14, emphasis: 0)
        for g in plan.bandGains { #expect(abs(g - 10) < 1e-6) }
        #expect(abs(plan.commonGain - 10) < 1e-6)
    }

    @Test func aThinBandIsHeldAtItsMarginAndTheOthersMakeUpTheStrength() {
        // The top band's host is thin: at the reference the watermark is only 5 dB under it there.
        let bands: [(host: Double?, mark: Double?)] = [(-20, -50), (-25, -55), (-50, -55)]
        let overall = 10 * log10(pow(10, -5.0) + pow(10, -5.5) + pow(10, -5.5)) - 10 * log10(pow(10, -2.0) + pow(10, -2.5) + pow(10, -5.0))
        let plan = BandLevelPlan(bands: bands, overallRatio: overall, strength: -20, margin: -3, maximumGain: 14, emphasis: 0)
        // The thin band may rise by 2 dB only (to 3 dB under its host) ...
        #expect(abs(plan.bandGains[2] - 2) < 1e-6)
        // ... while the others rise further than a single common gain could go, and together
        // they reach the strength.
        #expect(plan.bandGains[0] > 2.5 && plan.bandGains[0] == plan.bandGains[1])
        #expect(abs(ratio(plan, bands: bands, overall: overall) - (-20)) < 1e-6)
        for (b, g) in zip(bands, plan.bandGains) { #expect(b.mark! + g - b.host! <= -3 + 1e-9) }
    }

    @Test func aBandTheHostLeavesEmptyGetsNoWatermark() {
        let bands: [(host: Double?, mark: Double?)] = [(-20, -50), (nil, -70)]
        let plan = BandLevelPlan(bands: bands, overallRatio: -30, strength: -20, margin: -3, maximumGain: 14, emphasis: 0)
        #expect(plan.bandGains[1] == -.infinity)
        #expect(plan.bandGains[0] > 9.9)
    }

    @Test func whenEveryBandIsLimitedTheStrengthIsNotForced() {
        // Every band is already 4 dB under its host: only 1 dB more is allowed anywhere, so the
        // plan stops short of −20 dB rather than break a margin.
        let bands: [(host: Double?, mark: Double?)] = [(-20, -24), (-30, -34)]
        let plan = BandLevelPlan(bands: bands, overallRatio: -30, strength: -20, margin: -3, maximumGain: 14, emphasis: 0)
        for g in plan.bandGains { #expect(abs(g - 1) < 1e-6) }
        #expect(ratio(plan, bands: bands, overall: -30) < -20)
    }

    @Test func theToneCapBoundsEveryBand() {
        let bands: [(host: Double?, mark: Double?)] = [(-20, -80)]
        let plan = BandLevelPlan(bands: bands, overallRatio: -60, strength: -20, margin: -3, maximumGain: 14, emphasis: 0)
        #expect(plan.bandGains == [14])
    }

    @Test func thinBandsGetRelativelyLouderTones() {
        // Hosts 20 dB apart, margins far away: the thinner band's tones stand 10 dB higher re
        // its host, and the two together still make the strength exactly.
        let bands: [(host: Double?, mark: Double?)] = [(-20, -50), (-40, -70)]
        let overall = 10 * log10(pow(10, -5.0) + pow(10, -7.0)) - 10 * log10(pow(10, -2.0) + pow(10, -4.0))
        let plan = BandLevelPlan(bands: bands, overallRatio: overall, strength: -20, margin: -3, maximumGain: 30, emphasis: 0.5)
        #expect(abs((plan.bandGains[1] - plan.bandGains[0]) - 10) < 1e-6)
        #expect(abs(ratio(plan, bands: bands, overall: overall) - (-20)) < 1e-6)
        // The emphasis never breaks a margin: a thin band that would pass it stops there.
        let tight: [(host: Double?, mark: Double?)] = [(-20, -50), (-40, -50)]
        let held = BandLevelPlan(bands: tight, overallRatio: -30, strength: -20, margin: -3, maximumGain: 30, emphasis: 0.5)
        #expect(abs(held.bandGains[1] - 7) < 1e-6)
    }
}
