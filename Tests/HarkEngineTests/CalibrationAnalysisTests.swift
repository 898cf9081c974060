import Foundation
import Testing
@testable import HarkEngine

@Suite struct CalibrationAnalysisTests {
    @Test func calibratorToneGivesTheOffset() throws {
        let r = try CalibrationAnalysis.measure(source: ArraySource(tone(1000, level: -26.5, seconds: 5)), reference: 94)
        #expect(abs(r.offset - 120.5) < 0.02)
        #expect(abs(r.measured + 26.5) < 0.02)
        #expect(r.spread < 0.02)
        #expect(abs(r.duration - 4) < 1e-9)
    }

    @Test func backgroundNoiseOutsideTheBandDoesNotBiasIt() throws {
        // A 94 dB calibrator in a room: low-frequency rumble 20 dB below the tone.
        let t = tone(1000, level: -20, seconds: 5)
        let rumble = tone(63, level: -40, seconds: 5)
        let r = try CalibrationAnalysis.measure(source: ArraySource(zip(t, rumble).map(+)), reference: 94)
        #expect(abs(r.offset - 114) < 0.02)
    }

    @Test func refusesWhatIsNotACalibrator() {
        var rng = SystemRandomNumberGenerator()
        let noise = (0..<(48_000 * 4)).map { _ in Float.random(in: -0.1...0.1, using: &rng) }
        #expect { try CalibrationAnalysis.measure(source: ArraySource(noise), reference: 94) } throws: {
            if case .notATone = $0 as? CalibrationError { return true } else { return false }
        }
    }

    @Test func refusesAnUnsteadyTone() {
        // The calibrator slipping: 2 s at one level, 2 s 3 dB lower.
        let samples = tone(1000, level: -20, seconds: 2.5) + tone(1000, level: -23, seconds: 2.5)
        #expect { try CalibrationAnalysis.measure(source: ArraySource(samples), reference: 94) } throws: {
            if case .unsteady = $0 as? CalibrationError { return true } else { return false }
        }
    }

    @Test func refusesARecordingTooShort() {
        #expect(throws: CalibrationError.tooShort(path: "memory", seconds: 2)) {
            try CalibrationAnalysis.measure(source: ArraySource(tone(1000, level: -20, seconds: 2)), reference: 94)
        }
    }
}
