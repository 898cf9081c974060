import Foundation
import Testing
@testable import HarkDSP

@Suite struct LevelMeterTests {
    @Test func fullScaleSineReadsZeroAndPeaksAtThree() throws {
        let r = steadyLevel(1000, amplitude: 1, rate: 48_000)
        #expect(abs(try #require(r.LAeq)) < 0.01)
        #expect(abs(try #require(r.LZeq)) < 0.01)
        #expect(abs(try #require(r.LCpeak) - 3.0103) < 0.02)
    }

    @Test(arguments: [44_100.0, 48_000.0])
    func cAndZAgreeWithAAtOneKilohertz(rate: Double) throws {
        let r = steadyLevel(1000, amplitude: 0.1, rate: rate)
        let a = try #require(r.LAeq)
        #expect(abs(try #require(r.LCeq) - a) <= 0.1)
        #expect(abs(try #require(r.LZeq) - a) <= 0.1)
        #expect(abs(a - 20 * log10(0.1)) < 0.01)
    }

    /// The weighting measured end to end, with tones through the meter (the filter-design test
    /// checks the same from the transfer function).
    @Test(arguments: [44_100.0, 48_000.0])
    func weightingMeasuredWithTones(rate: Double) throws {
        for row in weightingTable where row.exact <= 16_000 && [0, 3, 10, 20, 25, 30, 32].contains(weightingTable.firstIndex { $0.exact == row.exact }!) {
            // Long enough for ≥ 20 cycles and for the 20 Hz poles to settle.
            let measure = max(1, 20 / row.exact)
            let r = steadyLevel(row.exact, amplitude: 0.5, rate: rate, settle: 1.0, measure: measure)
            let z = try #require(r.LZeq)
            #expect(abs(try #require(r.LAeq) - z - row.aGoal) <= 0.1, "A at \(row.nominal) Hz")
            #expect(abs(try #require(r.LCeq) - z - row.cGoal) <= 0.1, "C at \(row.nominal) Hz")
        }
    }

    @Test(arguments: [44_100.0, 48_000.0], [0.2, 0.002, 0.00025])
    func toneBurstResponse(rate: Double, burst: Double) throws {
        let amplitude = 0.5
        let steady = try #require(steadyLevel(4000, amplitude: amplitude, rate: rate, measure: 2).LAeq)
        let meter = LevelMeter(sampleRate: rate)
        let n = Int((burst * rate).rounded())
        feed(meter, silence(Int(0.5 * rate)))
        feed(meter, sine(4000, amplitude: amplitude, rate: rate, count: n))
        feed(meter, silence(Int(3 * rate)))
        let r = meter.report()
        let fmax = try #require(r.LAFmax) - steady
        let smax = try #require(r.LASmax) - steady
        let e = try #require(r.LAE) - steady
        #expect(abs(fmax - burstGoalF(burst)) <= 0.2, "LAFmax−LA \(fmax) vs \(burstGoalF(burst))")
        #expect(abs(smax - burstGoalS(burst)) <= 0.2, "LASmax−LA \(smax) vs \(burstGoalS(burst))")
        #expect(abs(e - burstGoalE(burst)) <= 0.2, "LAE−LA \(e) vs \(burstGoalE(burst))")
    }

    @Test(arguments: [TimeWeighting.fast, .slow])
    func decayRateAfterToneStops(weighting: TimeWeighting) throws {
        let rate = 48_000.0
        let meter = LevelMeter(sampleRate: rate)
        feed(meter, sine(1000, amplitude: 0.5, rate: rate, count: Int(5 * rate)))
        let (t1, t2) = weighting == .fast ? (0.1, 0.6) : (0.5, 3.5)
        feed(meter, silence(Int(t1 * rate)))
        let l1 = try #require(weighting == .fast ? meter.LAF : meter.LAS)
        feed(meter, silence(Int((t2 - t1) * rate)))
        let l2 = try #require(weighting == .fast ? meter.LAF : meter.LAS)
        let slope = (l1 - l2) / (t2 - t1)
        let theory = 10 * log10(M_E) / weighting.timeConstant     // 34.7 and 4.34 dB/s
        #expect(abs(slope - theory) / theory < 0.01, "\(weighting): \(slope) dB/s")
    }

    /// LCpeak − LC for single cycles and half cycles (IEC 61672-1 table for C-weighted peaks).
    @Test(arguments: [44_100.0, 48_000.0])
    func cPeakOfShortBursts(rate: Double) throws {
        let cases: [(f: Double, from: Double, to: Double, goal: Double)] = [
            (31.5, 0, 1, 2.5), (500, 0, 1, 3.5), (8000, 0, 1, 3.4),
            (500, 0, 0.5, 2.4), (500, 0.5, 1, 2.4),
        ]
        for c in cases {
            let lc = try #require(steadyLevel(c.f, amplitude: 0.5, rate: rate, settle: 1, measure: 2).LCeq)
            let meter = LevelMeter(sampleRate: rate)
            feed(meter, silence(Int(0.3 * rate)))
            let period = rate / c.f
            let start = Int((c.from * period).rounded()), end = Int((c.to * period).rounded())
            let cycle = sine(c.f, amplitude: 0.5, rate: rate, count: end)
            feed(meter, silence(start) + Array(cycle[start..<end]))
            feed(meter, silence(Int(0.5 * rate)))
            meter.finish()
            let peak = try #require(meter.report().LCpeak)
            #expect(abs(peak - lc - c.goal) <= 0.3, "\(c.f) Hz \(c.from)–\(c.to): \(peak - lc) vs \(c.goal)")
        }
    }

    @Test func levelsAreIndependentOfBlockSize() throws {
        let rate = 48_000.0
        var rng = SplitMix64(seed: 7)
        let noise = (0..<Int(rate * 2)).map { _ in Float(rng.nextGaussian() * 0.1) }
        var reports: [MeterReport] = []
        for block in [1, 17, 480, 4096, noise.count] {
            let meter = LevelMeter(sampleRate: rate)
            feed(meter, noise, block: block)
            meter.finish()
            reports.append(meter.report())
        }
        for r in reports.dropFirst() {
            #expect(abs(r.LAeq! - reports[0].LAeq!) < 1e-9)
            #expect(abs(r.LAFmax! - reports[0].LAFmax!) < 1e-9)
            #expect(abs(r.LAFmin! - reports[0].LAFmin!) < 1e-9)
            #expect(abs(r.LCpeak! - reports[0].LCpeak!) < 1e-4)
            #expect(r.LA50 == reports[0].LA50)
        }
    }

    @Test func percentilesOfTwoLevels() throws {
        // 3 s at −20 dB then 7 s at −40 dB: L10 is the loud level, L50 and L90 the quiet one.
        let rate = 16_000.0
        let meter = LevelMeter(sampleRate: rate)
        feed(meter, sine(1000, amplitude: Decibels.sineAmplitude(level: -20), rate: rate, count: Int(3 * rate)))
        feed(meter, sine(1000, amplitude: Decibels.sineAmplitude(level: -40), rate: rate, count: Int(7 * rate)))
        let r = meter.report()
        #expect(abs(try #require(r.LA10) + 20) < 0.05)
        #expect(abs(try #require(r.LA50) + 40) < 0.05)
        #expect(abs(try #require(r.LA90) + 40) < 0.05)
        #expect(abs(try #require(r.LAFmin) + 40) < 0.05)
        #expect(abs(try #require(r.LAFmax) + 20) < 0.05)
        // Energy average of 3 s at −20 and 7 s at −40, not the mean of the dB values.
        let expected = 10 * log10((3 * pow(10, -2.0) + 7 * pow(10, -4.0)) / 10)
        #expect(abs(try #require(r.LAeq) - expected) < 0.02)
    }

    @Test func silenceHasNoLevel() {
        let meter = LevelMeter(sampleRate: 48_000)
        feed(meter, silence(48_000))
        meter.finish()
        let r = meter.report()
        #expect(r.LAeq == nil && r.LCpeak == nil && r.LAFmax == nil && r.LA50 == nil)
        #expect(r.duration == 1)
    }

    @Test func calibrationShiftsEveryLevel() throws {
        let rate = 48_000.0
        let tone = sine(1000, amplitude: 0.3, rate: rate, count: 48_000)
        let plain = LevelMeter(sampleRate: rate)
        let calibrated = LevelMeter(sampleRate: rate, calibration: 93.5)
        feed(plain, tone)
        feed(calibrated, tone)
        let p = plain.report(), c = calibrated.report()
        #expect(abs(c.LAeq! - p.LAeq! - 93.5) < 1e-9)
        #expect(abs(c.LCpeak! - p.LCpeak! - 93.5) < 1e-9)
        #expect(abs(c.LA90! - p.LA90! - 93.5) < 1e-9)
        #expect(abs(c.LAE! - p.LAE! - 93.5) < 1e-9)
    }

    @Test func intervalsPartitionTheMeasurement() throws {
        let rate = 48_000.0
        let meter = LevelMeter(sampleRate: rate)
        var energy = 0.0
        for second in 0..<4 {
            let amplitude = 0.05 * Double(second + 1)
            feed(meter, sine(500, amplitude: amplitude, rate: rate, count: Int(rate)))
            let i = meter.takeInterval()
            #expect(i.duration == 1)
            #expect(abs(i.time - Double(second + 1)) < 1e-12)
            energy += pow(10, try #require(i.LAeq) / 10)
        }
        // Energy-averaging the intervals gives the whole measurement's LAeq.
        #expect(abs(10 * log10(energy / 4) - meter.report().LAeq!) < 1e-6)
    }

    @Test func restartKeepsAveragersRunning() throws {
        let rate = 48_000.0
        let meter = LevelMeter(sampleRate: rate)
        feed(meter, sine(1000, amplitude: 0.5, rate: rate, count: Int(rate)))
        let before = try #require(meter.LAS)
        meter.restartMeasurement()
        #expect(meter.LAS == before)
        #expect(meter.report().duration == 0)
        #expect(meter.report().LAeq == nil)
    }
}
