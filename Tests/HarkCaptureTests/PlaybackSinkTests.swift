import Foundation
import Testing
@testable import HarkCapture

/// Playback through ALSA's `file` plugin (the samples land in a file), with underruns and a
/// lost device injected at the PCM seam, as capture's faults are: the plugin never has them.
@Suite struct PlaybackSinkTests {
    /// A real playback PCM whose chosen writes fail with chosen codes.
    final class FaultyOutput: PCMOutput {
        let real: PCMOutput
        var faults: [Int: Int32]
        var writes = 0
        var recoveries: [Int32] = []
        init(_ real: PCMOutput, faults: [Int: Int32]) { (self.real, self.faults) = (real, faults) }
        var negotiated: NegotiatedFormat { real.negotiated }
        func writeInterleaved(from buffer: UnsafeRawPointer, frames: Int) -> Int {
            writes += 1
            if let code = faults[writes] { return Int(code) }
            return real.writeInterleaved(from: buffer, frames: frames)
        }
        func recover(_ code: Int32) -> Int32 {
            recoveries.append(code)
            return code == -ENODEV ? code : real.recover(code)
        }
        func drain() { real.drain() }
        func close() { real.close() }
    }

    private func device(writingTo path: String) throws -> PlaybackDevice {
        var s = CaptureSettings()
        s.configuration = """
            pcm.out { type file; slave { pcm { type null } }; file "\(path)"; format "raw" }
            pcm.default { type plug; slave { pcm "out"; format S16_LE; rate 48000; channels 1 } }
            """
        s.periodFrames = 480
        s.bufferFrames = 1440
        return try PlaybackDevice(settings: s)
    }

    @Test func everySampleReachesTheDeviceThroughUnderruns() throws {
        let path = NSTemporaryDirectory() + "hark-playback-\(UUID().uuidString).raw"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let output = FaultyOutput(try device(writingTo: path), faults: [2: -EPIPE, 5: -EPIPE])
        let sink = PlaybackSink(output: output)
        let ramp = (0..<4_800).map { Float(($0 * 37) % 20_000 - 10_000) / 32_768 }
        for block in stride(from: 0, to: ramp.count, by: 480) {
            try ramp[block..<(block + 480)].withUnsafeBufferPointer { try sink.write($0) }
        }
        output.drain()
        output.close()
        #expect(sink.underruns == 2 && output.recoveries == [-EPIPE, -EPIPE] && sink.writtenFrames == 4_800)
        let written = try Data(contentsOf: URL(fileURLWithPath: path)).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        #expect(written == ramp.map { Int16(($0 * 32_768).rounded()) })
    }

    @Test func aLostDeviceIsAnErrorNamingIt() throws {
        let path = NSTemporaryDirectory() + "hark-playback-\(UUID().uuidString).raw"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let sink = PlaybackSink(output: FaultyOutput(try device(writingTo: path), faults: [1: -ENODEV]))
        let block = [Float](repeating: 0, count: 480)
        #expect(throws: ALSAError.write(code: -ENODEV, message: "No such device")) { try block.withUnsafeBufferPointer { try sink.write($0) } }
        var s = CaptureSettings()
        s.device = "nothing-here"
        s.configuration = "pcm.default { type null }"
        #expect(throws: ALSAError.self) { _ = try PlaybackDevice(settings: s) }
        do { _ = try PlaybackDevice(settings: s) } catch { #expect("\(error)".hasPrefix("cannot open playback device 'nothing-here'"), "\(error)") }
    }
}
