import Foundation
@testable import HarkDSP

/// `count` samples of `amplitude · sin(2π f t + phase)`.
func sine(_ f: Double, amplitude: Double = 1, rate: Double, count: Int, phase: Double = 0) -> [Float] {
    (0..<count).map { Float(amplitude * sin(2 * Double.pi * f * Double($0) / rate + phase)) }
}

func silence(_ count: Int) -> [Float] { [Float](repeating: 0, count: count) }

/// Feeds `samples` to `meter` in blocks of `block`.
func feed(_ meter: LevelMeter, _ samples: [Float], block: Int = 1024) {
    var i = 0
    while i < samples.count {
        let n = min(block, samples.count - i)
        samples[i..<(i + n)].withUnsafeBufferPointer { meter.process($0) }
        i += n
    }
}

/// The A level of a steady tone: settle for `settle` seconds, then measure `measure` seconds.
func steadyLevel(_ f: Double, amplitude: Double, rate: Double, settle: Double = 0.5,
                 measure: Double = 1) -> MeterReport {
    let meter = LevelMeter(sampleRate: rate)
    // Whole cycles in the measured part, so partial cycles do not bias the mean square.
    let cycles = max(1, (measure * f).rounded())
    let measured = Int((cycles * rate / f).rounded())
    let settleCount = Int(settle * rate)
    let signal = sine(f, amplitude: amplitude, rate: rate, count: settleCount + measured)
    feed(meter, Array(signal[0..<settleCount]))
    meter.restartMeasurement()
    feed(meter, Array(signal[settleCount...]))
    return meter.report()
}

/// Level (dB re a full-scale sine) at `f` Hz of `y` sampled at `rate`, read over its middle half
/// through a Hann window, away from a filter's start-up at either end.
func toneLevel(_ y: [Float], at f: Double, rate: Double) -> Double {
    let start = y.count / 4, count = y.count / 2
    var re = 0.0, im = 0.0, w = 0.0
    for i in 0..<count {
        let win = 0.5 - 0.5 * cos(2 * Double.pi * (Double(i) + 0.5) / Double(count))
        let ph = 2 * Double.pi * f * Double(start + i) / rate
        re += win * Double(y[start + i]) * cos(ph)
        im += win * Double(y[start + i]) * sin(ph)
        w += win
    }
    return 20 * log10(2 * (re * re + im * im).squareRoot() / w)
}
