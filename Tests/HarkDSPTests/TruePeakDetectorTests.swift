import Foundation
import Testing
@testable import HarkDSP

/// The peak of the middle of `tone`: an abruptly started or stopped tone really does overshoot
/// between samples near its ends (Gibbs), so the edges are scanned but not counted.
private func steadyPeak(_ tone: [Float]) -> Float {
    var detector = TruePeakDetector()
    let half = tone.count / 2
    _ = tone[..<half].withUnsafeBufferPointer { detector.scan($0, floor: 0) }
    return tone[half..<(tone.count - 20)].withUnsafeBufferPointer { detector.scan($0, floor: 0) }
}

@Suite struct TruePeakDetectorTests {
    /// Sines of known amplitude at many frequencies and phases: the detected peak must be the
    /// amplitude, not the largest sample.
    @Test(arguments: [44_100.0, 48_000.0])
    func findsTheCrestBetweenSamples(rate: Double) {
        var worst = 0.0
        for f in stride(from: 100.0, through: 0.34 * rate, by: 701) {
            for phase in stride(from: 0.0, to: 1.0, by: 0.13) {
                let p = steadyPeak(sine(f, amplitude: 0.5, rate: rate, count: 600, phase: phase))
                worst = max(worst, abs(20 * log10(Double(p) / 0.5)))
            }
        }
        #expect(worst < 0.02, "worst error \(worst) dB")
    }

    @Test func samplePeakAloneMissesQuarterRateCrest() {
        // fs/4 sine at 45°: every sample is at 0.707 of the crest (−3 dB). Guards the test above.
        let tone = sine(12_000, amplitude: 1, rate: 48_000, count: 256, phase: Double.pi / 4)
        let samplePeak = tone.map { abs($0) }.max()!
        #expect(abs(20 * log10(Double(samplePeak)) + 3.01) < 0.01)
        #expect(abs(20 * log10(Double(steadyPeak(tone)))) < 0.01)
    }

    @Test func splitBlocksGiveTheSamePeak() {
        let tone = sine(9_123, amplitude: 0.8, rate: 48_000, count: 5000, phase: 0.3)
        var whole = TruePeakDetector()
        let a = whole.flush(floor: tone.withUnsafeBufferPointer { whole.scan($0, floor: 0) })
        var split = TruePeakDetector()
        var b: Float = 0
        for start in stride(from: 0, to: tone.count, by: 37) {
            b = tone[start..<min(start + 37, tone.count)].withUnsafeBufferPointer { split.scan($0, floor: b) }
        }
        b = split.flush(floor: b)
        #expect(a == b)
    }
}
