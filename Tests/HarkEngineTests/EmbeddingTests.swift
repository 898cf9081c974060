import Foundation
import Testing
@testable import HarkDSP
@testable import HarkEngine
import HarkSynthesis
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

    /// With the crowd as a masker the mark follows what the audience hears: louder under a
    /// loud crowd, added to the programme alone, and still the payload's.
    @Test func theCrowdAsAMaskerLiftsTheMarkUnderIt() throws {
        let dir = NSTemporaryDirectory() + "hark-embed-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let host = try musicHost(dir + "/host.wav")
        var crowd = [Float](repeating: 0, count: host.count)
        crowd.withUnsafeMutableBufferPointer { var g = PinkNoiseGenerator(rms: 0.25, sampleRate: 48_000, seed: 9); g.render(into: $0) }
        let writer = try SoundFileWriter(path: dir + "/crowd.wav", sampleRate: 48_000, channels: 1, format: .init(container: .wav, encoding: .f32))
        try crowd.withUnsafeBufferPointer { try writer.write($0) }
        try writer.finish()
        let power = { (x: [Float]) in x.reduce(0.0) { $0 + Double($1) * Double($1) } }
        func markReHost(_ ambient: EmbedOptions.Ambient?) throws -> Double {
            _ = try Embedding.embed(input: dir + "/host.wav", output: dir + "/marked.wav",
                                    options: EmbedOptions(payload: WatermarkPayload(0x57AD_1001), key: .demo, profile: .stadium, ambient: ambient))
            let marked = try read(dir + "/marked.wav")
            return 10 * log10(power(zip(marked, host).map { $0 - $1 }) / power(host))
        }
        // Under a crowd the mark holds loud bands lower, at the profile's default strength or the
        // one given.
        let format = WatermarkFormat(key: .demo, profile: .stadium)
        var options = EmbedOptions(payload: WatermarkPayload(1), key: .demo, profile: .stadium,
                                   ambient: EmbedOptions.Ambient(path: dir + "/crowd.wav", gain: -6))
        #expect(options.hearsAmbient)
        #expect(try options.embedder(format: format, sampleRate: 48_000).strength == WatermarkProfile.stadium.defaultStrength)
        #expect(try options.embedder(format: format, sampleRate: 48_000).levelDiscrimination == .crowd)
        options.strength = 1
        #expect(try options.embedder(format: format, sampleRate: 48_000).strength == 1)
        #expect(try options.embedder(format: format, sampleRate: 48_000).levelDiscrimination == .crowd)
        options.ambient = nil
        options.hearsAmbient = false
        #expect(try options.embedder(format: format, sampleRate: 48_000).levelDiscrimination == nil)
        let alone = try markReHost(nil)
        let withCrowd = try markReHost(EmbedOptions.Ambient(path: dir + "/crowd.wav", gain: -6))
        let louder = try markReHost(EmbedOptions.Ambient(path: dir + "/crowd.wav", gain: 0))
        // Lifted less than the crowd's level alone would say: the louder the crowd, the more of
        // the band is loud and held lower (−27.6 → −20.0 → −18.3 dB when written).
        #expect(withCrowd > alone + 5 && louder > withCrowd + 1, "\(alone) → \(withCrowd) → \(louder) dB re host")
        let marked = try read(dir + "/marked.wav")
        let detector = try WatermarkDetector(format: WatermarkFormat(key: .demo, profile: .stadium), sampleRate: 48_000)
        #expect(marked.withUnsafeBufferPointer { detector.process($0) }.contains { $0.payload == WatermarkPayload(0x57AD_1001) })
        // A recording at another rate is refused by name.
        let other = try SoundFileWriter(path: dir + "/crowd44.wav", sampleRate: 44_100, channels: 1, format: .init(container: .wav, encoding: .f32))
        try crowd.withUnsafeBufferPointer { try other.write($0) }
        try other.finish()
        #expect(throws: EmbedError.ambientRate(path: dir + "/crowd44.wav", rate: 44_100, expected: 48_000)) {
            _ = try markReHost(EmbedOptions.Ambient(path: dir + "/crowd44.wav", gain: 0))
        }
    }

    @Test func writesTheEmbeddersMarkAtTheRequestedStrength() throws {
        let dir = NSTemporaryDirectory() + "hark-embed-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let host = try musicHost(dir + "/host.wav")
        let power = { (x: [Float]) in x.reduce(0.0) { $0 + Double($1) * Double($1) } }
        // Measured here, independently of what the embedder reports: the watermark is the
        // difference between the output and the host.
        func embedded(strength: Double?) throws -> (mark: [Float], marked: [Float], result: EmbedResult) {
            let result = try Embedding.embed(input: dir + "/host.wav", output: dir + "/marked.wav",
                                             options: EmbedOptions(payload: WatermarkPayload(0x1A2B_3C4D), key: .demo, strength: strength))
            let marked = try read(dir + "/marked.wav")
            #expect(marked.count == host.count)
            return (zip(marked, host).map { $0 - $1 }, marked, result)
        }
        let quiet = try embedded(strength: nil), loud = try embedded(strength: WatermarkProfile.tv.defaultStrength + 20)
        let quietRatio = 10 * log10(power(quiet.mark) / power(host)), loudRatio = 10 * log10(power(loud.mark) / power(host))
        #expect(abs(quiet.result.ratio - quietRatio) < 0.1 && abs(loud.result.ratio - loudRatio) < 0.1)
        // 20 dB of strength is 20 dB of watermark (nothing clips on this host).
        #expect(quiet.result.limitedSamples == 0 && loud.result.limitedSamples == 0)
        #expect(abs(loudRatio - quietRatio - 20) < 0.05, "\(quietRatio) → \(loudRatio) dB")
        // The transparent default lies far under this tonal host, in every 1/3-octave band.
        #expect(quietRatio < -20, "default strength: \(quietRatio) dB re host")
        let hostBands = try bandLevels(host), markBands = try bandLevels(quiet.mark)
        for (h, m) in zip(hostBands, markBands) {
            guard let m, let h else { continue }
            #expect(m - h < -10, "a band \(m - h) dB re host")
        }
        // The loud mark is found within one copy and a bit.
        let detector = try WatermarkDetector(format: WatermarkFormat(key: .demo), sampleRate: 48_000)
        let found = loud.marked.withUnsafeBufferPointer { detector.process($0) }
        #expect(found.first?.payload == WatermarkPayload(0x1A2B_3C4D))
        #expect((found.first?.time ?? 99) < 3)
    }
}
