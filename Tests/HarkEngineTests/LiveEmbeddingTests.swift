import Foundation
import HarkDSP
import Testing
@testable import HarkEngine
import HarkSynthesis

/// The embedder as a live stage: every frame out at a constant delay, the mark in it.
@Suite struct LiveEmbeddingTests {
    static let rate = 48_000.0

    private func stereoMusic(seconds: Double) -> [Float] {
        var mono = [Float](repeating: 0, count: Int(seconds * Self.rate))
        var g = MusicGenerator(rms: 0.1, sampleRate: Self.rate, seed: 2)
        mono.withUnsafeMutableBufferPointer { g.render(into: $0) }
        return mono.flatMap { [$0, $0] }
    }

    @Test func everyFrameComesOutAtOneDelayMarked() throws {
        let host = stereoMusic(seconds: 8)
        let payload = WatermarkPayload(0xC0FFEE42)
        let e = try LiveEmbedding(options: EmbedOptions(payload: payload, key: .demo), sampleRate: Self.rate, channels: 2)
        #expect(e.latencyFrames == 2560 && abs(e.latency - 0.0533) < 1e-3)
        var out: [Float] = []
        var i = 0
        // Blocks of 10 ms, then of odd sizes: as many frames out as in, whatever the block.
        for n in [960, 960, 14, 2, 4096, 1000] + [Int](repeating: 960, count: host.count / 960) {
            guard i < host.count else { break }
            let take = min(n, host.count - i)
            let before = out.count
            host[i..<(i + take)].withUnsafeBufferPointer { e.process($0, into: &out) }
            #expect(out.count - before == take, "block at frame \(i / 2)")
            i += take
        }
        e.finish(into: &out)
        #expect(out.count == host.count + 2 * e.latencyFrames)
        // Out is in, delayed by the latency, plus a mark far under it; the first frames silence.
        let L = 2 * e.latencyFrames
        #expect(out[0..<L].allSatisfy { $0 == 0 })
        var hostEnergy = 0.0, differenceEnergy = 0.0
        for k in 0..<host.count {
            hostEnergy += Double(host[k] * host[k])
            differenceEnergy += Double((out[k + L] - host[k]) * (out[k + L] - host[k]))
        }
        let markReHost = 10 * log10(differenceEnergy / hostEnergy)
        #expect(markReHost < -15 && markReHost > -40, "\(markReHost)")
        // And it is the payload's mark.
        let detector = try WatermarkDetector(format: WatermarkFormat(key: .demo), sampleRate: Self.rate)
        let left = stride(from: L, to: out.count, by: 2).map { out[$0] }
        let found = left.withUnsafeBufferPointer { detector.process($0) }
        #expect(found.contains { $0.payload == payload })
    }

    @Test func theAmbientSoundMasksTooButIsNotPlayed() throws {
        let rate = Self.rate
        var host = [Float](repeating: 0, count: Int(6 * rate))
        host.withUnsafeMutableBufferPointer { var g = MusicGenerator(rms: 0.1, sampleRate: rate, seed: 4); g.render(into: $0) }
        var crowd = [Float](repeating: 0, count: host.count)
        crowd.withUnsafeMutableBufferPointer { var g = PinkNoiseGenerator(rms: 0.2, sampleRate: rate, seed: 6); g.render(into: $0) }
        func markReHost(ambient: Bool) throws -> Double {
            let e = try LiveEmbedding(options: EmbedOptions(payload: WatermarkPayload(1), key: .demo, profile: .stadium), sampleRate: rate, channels: 1)
            var out: [Float] = []
            for start in stride(from: 0, to: host.count, by: 480) {
                host[start..<(start + 480)].withUnsafeBufferPointer { h in
                    crowd[start..<(start + 480)].withUnsafeBufferPointer { c in e.process(h, ambient: ambient ? c : nil, into: &out) }
                }
            }
            e.finish(into: &out)
            let L = e.latencyFrames
            var d = 0.0, p = 0.0
            for k in host.indices { d += Double((out[k + L] - host[k]) * (out[k + L] - host[k])); p += Double(host[k] * host[k]) }
            return 10 * log10(d / p)
        }
        let alone = try markReHost(ambient: false), masked = try markReHost(ambient: true)
        // The crowd is not in the output: what differs from the programme is the mark alone,
        // louder for the crowd's masking, and still well under the crowd itself.
        #expect(masked > alone + 10 && masked < 0, "\(alone) → \(masked) dB re the programme")
    }
}
