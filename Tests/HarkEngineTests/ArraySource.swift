import Foundation
@testable import HarkEngine

/// An ``AudioSource`` that plays interleaved samples from memory, in blocks no larger than
/// `maxBlock` (so tests can exercise odd block boundaries), optionally failing partway.
final class ArraySource: AudioSource {
    let name: String
    let sampleRate: Int
    let channels: Int
    let formatDescription = "memory"
    var warnings: [String] = []
    private let samples: [Float]
    private var position = 0
    private let maxBlock: Int
    private let failAfterFrames: Int?

    struct Failure: Error {}

    init(_ samples: [Float], sampleRate: Int = 48_000, channels: Int = 1, name: String = "memory",
         maxBlock: Int = .max, failAfterFrames: Int? = nil) {
        self.samples = samples
        self.sampleRate = sampleRate
        self.channels = channels
        self.name = name
        self.maxBlock = maxBlock
        self.failAfterFrames = failAfterFrames
    }

    var expectedFrames: Int64? { Int64(samples.count / channels) }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        if let f = failAfterFrames, position / channels >= f { throw Failure() }
        let frames = min(buffer.count / channels, (samples.count - position) / channels, maxBlock)
        for i in 0..<(frames * channels) { buffer[i] = samples[position + i] }
        position += frames * channels
        return frames
    }
}

func tone(_ f: Double, level: Double, seconds: Double, rate: Int = 48_000) -> [Float] {
    let a = pow(10, level / 20)
    return (0..<Int(seconds * Double(rate))).map { Float(a * sin(2 * Double.pi * f * Double($0) / Double(rate))) }
}

/// Runs an analysis and collects its events: `source` measured by ``LevelAnalysis`` with its defaults but for what is given.
func events(_ source: AudioSource, interval: Double? = 1, calibration: Double = 0, channel: Int? = nil) throws -> [AnalysisEvent] {
    var settings = LevelAnalysis.settings(for: source)
    (settings.levelInterval, settings.calibration) = (interval, calibration)
    var out: [AnalysisEvent] = []
    try LevelAnalysis(source: source, settings: settings, channel: channel).run(emit: { out.append($0) })
    return out
}
