import Foundation
import HarkSimulation
import HarkSoundFile
import HarkTesting
import Testing

/// The acoustic path alone: what it adds is what it was asked to add.
@Suite struct AcousticPathTests {
    let dir = TemporaryDirectory()
    static let rate = 16_000

    private func write(_ samples: [Float], to name: String) throws -> String {
        let path = dir.file(name)
        let writer = try SoundFileWriter(path: path, sampleRate: Self.rate, channels: 1, format: try OutputFormat.forPath(path, encoding: .f32))
        try samples.withUnsafeBufferPointer { try writer.write($0) }
        try writer.finish()
        return path
    }

    private func read(_ path: String) throws -> [Float] {
        let reader = try SoundFileReader(path: path)
        var all: [Float] = [], block = [Float](repeating: 0, count: 4096)
        while true {
            let n = try block.withUnsafeMutableBufferPointer { try reader.read(into: $0) }
            if n == 0 { break }
            all += block[0..<n]
        }
        return all
    }

    private func power(_ x: some Collection<Float>) -> Double { x.reduce(0) { $0 + Double($1) * Double($1) } / Double(x.count) }

    /// Noise joins at the SNR asked for, re the programme as received, and leaves the
    /// programme itself unchanged beneath it.
    @Test func noiseJoinsAtTheAskedSNR() throws {
        let tone = (0..<(4 * Self.rate)).map { Float(0.3 * sin(2 * Double.pi * 440 * Double($0) / Double(Self.rate))) }
        let input = try write(tone, to: "tone.wav")
        for snr in [10.0, 0.0] {
            var path = AcousticPath()
            path.noise = .white
            path.snr = snr
            let output = dir.file("noisy-\(Int(snr)).wav")
            _ = try Simulation.run(input: input, output: output, path: path)
            let heard = try read(output)
            #expect(heard.count == tone.count)
            let noise = zip(heard, tone).map { $0 - $1 }
            let measured = 10 * log10(power(tone) / power(noise))
            #expect(abs(measured - snr) < 0.3, "asked \(snr) dB, measured \(measured) dB")
        }
    }

    /// A path with no stage returns the programme as it came; its description says so.
    @Test func anEmptyPathChangesNothing() throws {
        let ramp = (0..<Self.rate).map { Float($0 % 200) / 400 - 0.25 }
        let input = try write(ramp, to: "ramp.wav")
        let path = AcousticPath()
        #expect(path.stages == "unchanged")
        let output = dir.file("same.wav")
        _ = try Simulation.run(input: input, output: output, path: path)
        let heard = try read(output)
        #expect(heard.count == ramp.count)
        #expect(zip(heard, ramp).allSatisfy { abs($0 - $1) < 1e-6 })
    }
}
