import Foundation
@testable import HarkCapture
import HarkCaptureTesting

func ramp(_ count: Int) -> [Int16] { (0..<count).map { Int16(truncatingIfNeeded: ($0 * 37) % 60_000 - 30_000) } }

func settings(raw path: String, format: SampleFormat = .s16, channels: Int = 1, period: Int = 480) -> CaptureSettings {
    var s = CaptureSettings()
    s.configuration = fileConfiguration(raw: path, channels: channels)
    s.format = format
    s.channels = channels
    s.periodFrames = period
    s.bufferFrames = period * 8
    return s
}

/// Reads exactly `frames` frames from a started source (the file plugin never signals the end
/// of its file, so tests stop by count). `gaps` collects the breaks reported on the way, with
/// the sample count before each.
func collect(_ source: CaptureSource, frames: Int, timeout: Double = 5, gaps: UnsafeMutablePointer<[(Int, CaptureGap)]>? = nil) -> [Float] {
    var out: [Float] = []
    var buffer = [Float](repeating: 0, count: 4096)
    var channels = 1
    let deadline = Date(timeIntervalSinceNow: timeout)
    while out.count < frames * channels && Date() < deadline {
        let (n, c, gap) = buffer.withUnsafeMutableBufferPointer { source.read(into: $0, timeout: 0.1) }
        if let gap { gaps?.pointee.append((out.count, gap)) }
        channels = c
        out += buffer[0..<(n * c)]
    }
    return Array(out.prefix(frames * channels))
}

