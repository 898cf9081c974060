import Foundation
import Testing
@testable import HarkDSP
import HarkSynthesis

/// The mark read where the campaign's sound places its creative
/// (``WatermarkDetector/confirm(_:creativeStart:)``): what it hears, what it refuses, and the
/// premises of its false-detection bound.
@Suite struct MarkConfirmationTests {
    static let rate = 48_000.0

    private func host(_ kind: String, seconds: Double, seed: UInt64) -> [Float] {
        var out = [Float](repeating: 0, count: Int(seconds * Self.rate))
        out.withUnsafeMutableBufferPointer { buffer in
            switch kind {
            case "music": var g = MusicGenerator(rms: 0.1, sampleRate: Self.rate, seed: seed); g.render(into: buffer)
            default: var g = PinkNoiseGenerator(rms: 0.1, sampleRate: Self.rate, seed: seed); g.render(into: buffer)
            }
        }
        return out
    }

    private func mark(_ x: [Float], payload: WatermarkPayload, strength: Double?, key: WatermarkKey = .demo) throws -> [Float] {
        let embedder = try WatermarkEmbedder(format: WatermarkFormat(key: key), payload: payload, sampleRate: Self.rate, strength: strength)
        var w: [Float] = []
        x.withUnsafeBufferPointer { embedder.process($0, into: &w) }
        embedder.finish(into: &w)
        return zip(x, w).map(+)
    }

    /// `lead` seconds of another sound, then the creative: the creative starts at `lead`.
    private func aired(_ creative: [Float], after lead: Double, seed: UInt64) -> [Float] {
        host("pink", seconds: lead, seed: seed).map { $0 * 0.3 } + creative
    }

    private func detector(_ y: [Float], key: WatermarkKey = .demo, catalogue: [WatermarkPayload]? = nil) throws -> (WatermarkDetector, [WatermarkDetection]) {
        let d = try WatermarkDetector(format: WatermarkFormat(key: key), sampleRate: Self.rate, catalogue: catalogue)
        var found: [WatermarkDetection] = []
        var i = 0
        while i < y.count {
            let n = min(4096, y.count - i)
            found += y[i..<(i + n)].withUnsafeBufferPointer { d.process($0) }
            i += n
        }
        return (d, found)
    }

    static let others = (1...99).map { WatermarkPayload(0xD0_0000 + UInt32($0)) }

    @Test func aMarkTooFaintForTheSearchIsConfirmedWhereTheSoundPlacesIt() throws {
        // A faint mark (8 dB under the aired default) on music, 1.3 s into the capture: the
        // catalogue's search (a catalogue of 100, threshold 7.64) reaches 7.37 at most in 7 s and
        // reports nothing; the same reading, asked for one codeword at the creative's place,
        // needs 6.95 and confirms it. A wrong place (three symbols off: other slots) and another
        // campaign give nothing.
        let payload = WatermarkPayload(0xC0DE0007)
        let lead = 1.3
        let y = aired(try mark(host("music", seconds: 5.7, seed: 12), payload: payload, strength: -10), after: lead, seed: 3)
        let (d, searched) = try detector(y, catalogue: Self.others + [payload])
        #expect(searched.isEmpty && d.highestDecodedScore < d.threshold, "\(searched)")
        let right = try #require(d.confirmationScore(payload, creativeStart: lead))
        #expect(right.score >= WatermarkDetector.confirmationThreshold, "\(right.score)")
        let confirmed = try #require(d.confirm(payload, creativeStart: lead))
        #expect(confirmed.payload == payload && confirmed.mark?.confirmedAtSound == true && confirmed.mark?.confidence ?? 0 > 0.999_999)
        #expect(abs(confirmed.start.truncatingRemainder(dividingBy: WatermarkFormat.copyDuration) - lead) < 0.06, "\(confirmed.start)")
        #expect(try #require(d.confirmationScore(payload, creativeStart: lead + 1.2)).score < 4)
        #expect(try #require(d.confirmationScore(WatermarkPayload(0x5A17_93E1), creativeStart: lead)).score < 4)
    }

    @Test func aNeighbouringCampaignIsRefusedWhenTheAiredOneOutscoresIt() throws {
        // Numbered campaigns' payloads differ in a few bits, and their codewords share many
        // coded bits: the aired mark confirms its neighbour too, over the threshold. A
        // confirmation must outscore every campaign the detector knows of (its catalogue, or
        // the sound's campaigns given as rivals).
        let payload = WatermarkPayload(0xC0DE0007), neighbour = WatermarkPayload(0xC0DE0008)
        let y = try mark(host("music", seconds: 8, seed: 19), payload: payload, strength: nil)
        let (d, _) = try detector(y)
        let near = try #require(d.confirmationScore(neighbour, creativeStart: 0)).score
        #expect(near >= WatermarkDetector.confirmationThreshold, "\(near)")
        #expect(d.confirm(neighbour, creativeStart: 0) != nil)
        d.confirmationRivals = [neighbour, payload]
        #expect(d.confirm(neighbour, creativeStart: 0) == nil)
        #expect(d.confirm(payload, creativeStart: 0)?.payload == payload)
        let (c, _) = try detector(y, catalogue: Self.others + [payload])
        #expect(c.confirm(neighbour, creativeStart: 0) == nil)
    }

    @Test func aCreativeHeardForLessThanACopyIsNotScored() throws {
        let payload = WatermarkPayload(0xC0DE0009)
        let y = aired(try mark(host("music", seconds: 2, seed: 12), payload: payload, strength: nil), after: 1, seed: 4)
        let (d, _) = try detector(y)
        #expect(d.confirmationScore(payload, creativeStart: 1) == nil)
        #expect(d.confirmationScore(payload, creativeStart: 0.5) != nil)
    }

    @Test func aDetectorAnswersThreeConfirmationsAHalfSecondAndNoMore() throws {
        // The bound counts confirmations per hour; the detector, not its caller, holds the count.
        let payload = WatermarkPayload(0xC0DE000A)
        let y = try mark(host("music", seconds: 8, seed: 13), payload: payload, strength: nil)
        let d = try WatermarkDetector(format: WatermarkFormat(key: .demo), sampleRate: Self.rate)
        y[0..<(7 * 48_000)].withUnsafeBufferPointer { _ = d.process($0) }
        let answered = (0..<5).map { _ in d.confirm(payload, creativeStart: 0) != nil }
        #expect(answered == [true, true, true, false, false])
        y[(7 * 48_000)...].withUnsafeBufferPointer { _ = d.process($0) }
        #expect(d.confirm(payload, creativeStart: 0) != nil)
        #expect(d.confirm(payload, creativeStart: .nan) == nil)
    }

    @Test func confirmationsChooseTheirAlignmentBlindToTheKeysSides() throws {
        // The bound's premise: which alignment a confirmation scores may depend on the audio and
        // on the sound's place, never on which tone of a pair the key calls side 1. Two formats
        // that differ only in those sides (a third of the pairs) must choose alike.
        let marked = try mark(host("music", seconds: 9, seed: 14), payload: WatermarkPayload(0xC0DE000B), strength: -6)
        let noise = host("pink", seconds: 9, seed: 15)
        let format = WatermarkFormat(key: .demo)
        let swapped = format.swappingSides { slot, position, pair in (slot + 3 * position + 7 * pair) % 3 == 0 }
        for y in [marked, noise] {
            let a = try WatermarkDetector(format: format, sampleRate: Self.rate)
            let b = try WatermarkDetector(format: swapped, sampleRate: Self.rate)
            var chosen = 0
            for start in stride(from: 0, to: y.count - 24_000, by: 24_000) {
                y[start..<(start + 24_000)].withUnsafeBufferPointer { _ = a.process($0); _ = b.process($0) }
                for creativeStart in [0.0, 0.37, 1.91] {
                    let ca = a.confirmationAlignments(creativeStart: creativeStart)
                    let cb = b.confirmationAlignments(creativeStart: creativeStart)
                    #expect(ca.count == cb.count)
                    for (x, y) in zip(ca, cb) { #expect(x.0 == y.0 && x.1 == y.1 && x.newest == y.newest) }
                    chosen += ca.count
                }
            }
            #expect(chosen > 30)
        }
    }

    @Test func onUnmarkedAudioScoresStayWithinTheBound() throws {
        // On audio without this key's mark, each reading is a Rademacher sum: P(score ≥ z) ≤
        // 3.18 P(η ≥ z), and a confirmation takes the best of eight readings. 2 000 campaigns
        // confirmed at 20 places in music and noise: at z = 3 the bound allows 8 × 3.18 ×
        // 0.00135 = 3.4 %. A reading that let the host's own energy into the score (a pair
        // value not turned by its coin) would exceed it by far.
        var rng = SystemRandomNumberGenerator()
        var over = 0, scored = 0, highest = -Double.infinity
        for (kind, seed) in [("music", UInt64(16)), ("pink", 17)] {
            let (d, _) = try detector(host(kind, seconds: 9, seed: seed))
            for place in 0..<20 {
                for _ in 0..<50 {
                    let p = WatermarkPayload(UInt32.random(in: 0...UInt32.max, using: &rng))
                    guard let s = d.confirmationScore(p, creativeStart: 0.19 * Double(place)) else { continue }
                    scored += 1
                    over += s.score >= 3 ? 1 : 0
                    highest = max(highest, s.score)
                }
            }
        }
        #expect(scored == 2_000)
        #expect(Double(over) <= 0.034 * Double(scored), "\(over) of \(scored) at 3 or more")
        #expect(highest < WatermarkDetector.confirmationThreshold)
        // And the threshold is the bound solved for 10⁻⁶ an hour over every reading answered.
        let t = WatermarkDetector.confirmationThreshold
        let perHour = WatermarkDetector.confirmationsPerHour * 8
        #expect(abs(perHour * WatermarkDetector.tailBound(t) - 1e-6) < 1e-8)
        #expect(t < WatermarkDetector.threshold(payloads: 100))
    }

    @Test func anotherKeysMarkIsNotConfirmed() throws {
        let payload = WatermarkPayload(0xC0DE000C)
        let y = try mark(host("music", seconds: 8, seed: 18), payload: payload, strength: nil, key: WatermarkKey(text: "another"))
        let (d, _) = try detector(y)
        #expect(d.confirm(payload, creativeStart: 0) == nil)
        #expect(d.highestConfirmationScore < 4)
    }
}
