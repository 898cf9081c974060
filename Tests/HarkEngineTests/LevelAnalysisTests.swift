import Foundation
import Testing
@testable import HarkEngine
@testable import HarkSoundFile

@Suite struct LevelAnalysisTests {
    @Test func oneLevelEventPerIntervalThenTheReport() throws {
        let source = ArraySource(tone(1000, level: -20, seconds: 3.5), maxBlock: 1000)
        let out = try events(source, interval: 1)
        #expect(out.count == 5)
        let times = out.compactMap { e -> Double? in if case .level(let l) = e { return l.levels.time } else { return nil } }
        #expect(times == [1, 2, 3, 3.5])
        guard case .report(let r) = out.last else { Issue.record("no report"); return }
        #expect(abs(r.meter.duration - 3.5) < 1e-9)
        #expect(abs(r.meter.LAeq! + 20) < 0.02)
        #expect(r.bands.count == 28 && r.bands.first?.label == "31.5" && r.bands.last?.label == "16000")
        #expect(r.channelUse == "mono" && r.warnings.isEmpty)
    }

    @Test func intervalsMayBeShorterThanAReadBlock() throws {
        let out = try events(ArraySource(tone(500, level: -30, seconds: 1)), interval: 0.1)
        #expect(out.filter { if case .level = $0 { true } else { false } }.count == 10)
    }

    @Test func noIntervalMeansOnlyTheReport() throws {
        let out = try events(ArraySource(tone(500, level: -30, seconds: 1)), interval: nil)
        #expect(out.count == 1)
    }

    @Test func channelsAreAveragedOrSelected() throws {
        // Left: a tone at −20 dB, right: silence. The average is 6 dB down; channel 1 is the tone.
        let left = tone(1000, level: -20, seconds: 2)
        var stereo = [Float](repeating: 0, count: left.count * 2)
        for i in left.indices { stereo[2 * i] = left[i] }
        func laeq(_ channel: Int?) throws -> Double {
            let out = try events(ArraySource(stereo, channels: 2), interval: nil, channel: channel)
            guard case .report(let r) = out.last else { return .nan }
            return r.meter.LAeq ?? -.infinity
        }
        #expect(abs(try laeq(nil) - (-20 - 6.02)) < 0.02)
        #expect(abs(try laeq(1) + 20) < 0.02)
        #expect(try laeq(2) == -.infinity)
        #expect(throws: SoundFileError.channelOutOfRange(path: "memory", channel: 3, channels: 2)) {
            try LevelAnalysis(source: ArraySource(stereo, channels: 2), channel: 3)
        }
    }

    @Test func calibrationShiftsTheReport() throws {
        let out = try events(ArraySource(tone(1000, level: -20, seconds: 2)), interval: nil, calibration: 114)
        guard case .report(let r) = out.last else { Issue.record("no report"); return }
        #expect(abs(r.meter.LAeq! - 94) < 0.02)
        #expect(r.calibration == 114)
        let band = try #require(r.bands.first { $0.label == "1000" }?.level)
        #expect(abs(band - 94) < 0.05)
    }

    @Test func nonFiniteSamplesAreReportedNotMeasured() throws {
        var samples = tone(1000, level: -20, seconds: 2)
        samples[100] = .nan
        samples[2000] = .infinity
        let out = try events(ArraySource(samples), interval: nil)
        guard case .report(let r) = out.last else { Issue.record("no report"); return }
        #expect(r.meter.LAeq.map { abs($0 + 20) < 0.05 } == true)
        #expect(r.warnings == ["memory: 2 samples were not finite numbers (NaN or infinity) and were measured as silence"])
    }

    @Test func aFailingSourceStopsWithItsErrorAndNoReport() throws {
        var seen: [AnalysisEvent] = []
        let analysis = try LevelAnalysis(source: ArraySource(tone(1000, level: -20, seconds: 3), maxBlock: 4800, failAfterFrames: 48_000))
        #expect(throws: ArraySource.Failure.self) { try analysis.run(emit: { seen.append($0) }) }
        #expect(seen.count == 1)   // the first second's level, nothing after the failure
    }

    @Test func sourceWarningsReachTheReport() throws {
        let source = ArraySource(tone(1000, level: -20, seconds: 1))
        source.warnings = ["memory: something odd"]
        let out = try events(source)
        guard case .report(let r) = out.last else { Issue.record("no report"); return }
        #expect(r.warnings == ["memory: something odd"])
    }
}
