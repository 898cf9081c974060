import Foundation
import Testing
@testable import HarkDSP
@testable import HarkEngine
@testable import HarkSoundFile

@Suite struct EmbeddingTests {
    /// 8 s of the music-like signal as 32-bit float, so the watermark can be recovered exactly
    /// as marked − host.
    private func musicHost(_ path: String) throws -> [Float] {
        var music = MusicGenerator(rms: 0.1, sampleRate: 48_000, seed: 5)
        var samples = [Float](repeating: 0, count: 8 * 48_000)
        samples.withUnsafeMutableBufferPointer { music.render(into: $0) }
        let writer = try SoundFileWriter(path: path, sampleRate: 48_000, channels: 1, format: .init(container: .wav, encoding: .f32))
        try samples.withUnsafeBufferPointer { try writer.write($0) }
        try writer.finish()
        return samples
    }

    private func read(_ path: String) throws -> [Float] {
        var blocks = MonoBlockReader(try SoundFileReader(path: path))
        var out: [Float] = []
        while case let b = try blocks.next(), !b.isEmpty { out += b }
        return out
    }

    private func bandLevels(_ x: [Float]) throws -> [Double?] {
        let bands = try ThirdOctaveBands(sampleRate: 48_000)
        x.withUnsafeBufferPointer { bands.process($0) }
        bands.finish()
        return bands.levels()
    }

    @Test func reachesTheStrengthWhileEveryBandKeepsItsMargin() throws {
        let dir = NSTemporaryDirectory() + "hark-embed-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let host = try musicHost(dir + "/host.wav")
        let result = try Embedding.embed(input: dir + "/host.wav", output: dir + "/marked.wav",
                                         options: EmbedOptions(payload: WatermarkPayload(0x1A2B_3C4D), key: .demo))
        // Measured here, independently of what the embedder reports: the watermark is the
        // difference between the output and the host.
        let marked = try read(dir + "/marked.wav")
        #expect(marked.count == host.count)
        let mark = zip(marked, host).map { $0 - $1 }
        let power = { (x: [Float]) in x.reduce(0.0) { $0 + Double($1) * Double($1) } }
        let overall = 10 * log10(power(mark) / power(host))
        // This host has little above 4 kHz, where the tones are densest: one gain for the whole
        // watermark would stop at the 5 kHz band's margin, well short of −20 dB.
        #expect(abs(overall - -20) < 0.1, "overall \(overall) dB")
        #expect(abs(result.ratio - overall) < 0.1)
        let hostBands = try bandLevels(host), markBands = try bandLevels(mark)
        let markTotal = 10 * log10(markBands.reduce(0.0) { $0 + ($1.map { pow(10, $0 / 10) } ?? 0) })
        var closest = -Double.infinity
        for (h, m) in zip(hostBands, markBands) {
            guard let m, m - markTotal >= Embedding.negligibleBand else { continue }
            let h = try #require(h)
            closest = max(closest, m - h)
        }
        #expect(closest <= Embedding.bandMargin + 0.1, "closest band \(closest) dB")
        #expect(closest > Embedding.bandMargin - 1, "no band reached its margin (\(closest) dB): this host should limit one")
        // And the mark is still there.
        let detector = try WatermarkDetector(format: WatermarkFormat(key: .demo), sampleRate: 48_000)
        let found = marked.withUnsafeBufferPointer { detector.process($0) }
        #expect(found.first?.payload == WatermarkPayload(0x1A2B_3C4D))
    }
}
