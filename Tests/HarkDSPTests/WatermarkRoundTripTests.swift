import Foundation
import Testing
@testable import HarkDSP
import HarkSynthesis

/// Embed → detect in memory. The hosts are synthetic (music-like, noise, silence) so the tests
/// need nothing from outside the project.
@Suite struct WatermarkRoundTripTests {
    static let rate = 48_000.0

    private func host(_ kind: String, seconds: Double, seed: UInt64 = 1) -> [Float] {
        var out = [Float](repeating: 0, count: Int(seconds * Self.rate))
        out.withUnsafeMutableBufferPointer { buffer in
            switch kind {
            case "music": var g = MusicGenerator(rms: 0.1, sampleRate: Self.rate, seed: seed); g.render(into: buffer)
            case "pink": var g = PinkNoiseGenerator(rms: 0.1, sampleRate: Self.rate, seed: seed); g.render(into: buffer)
            default: break
            }
        }
        return out
    }

    /// Host + watermark at `strength` dB re the masking threshold (nil: the profile's default,
    /// the transparent level a campaign is aired at). The detector's tests mark at the default,
    /// except through a room; what the default survives there is the bench's to measure.
    private func mark(_ x: [Float], payload: WatermarkPayload, key: WatermarkKey, strength: Double? = nil,
                      profile: WatermarkProfile = .tv) throws -> [Float] {
        let embedder = try WatermarkEmbedder(format: WatermarkFormat(key: key, profile: profile), payload: payload,
                                             sampleRate: Self.rate, strength: strength)
        var w: [Float] = []
        var i = 0
        while i < x.count {
            let n = min(4000, x.count - i)
            x[i..<(i + n)].withUnsafeBufferPointer { embedder.process($0, into: &w) }
            i += n
        }
        embedder.finish(into: &w)
        #expect(w.count == x.count)
        return zip(x, w).map(+)
    }

    private func detect(_ y: [Float], key: WatermarkKey, block: Int = 1024, catalogue: [WatermarkPayload]? = nil,
                        profile: WatermarkProfile = .tv) throws -> [WatermarkDetection] {
        let detector = try WatermarkDetector(format: WatermarkFormat(key: key, profile: profile), sampleRate: Self.rate,
                                             catalogue: catalogue)
        var found: [WatermarkDetection] = []
        var i = 0
        while i < y.count {
            let n = min(block, y.count - i)
            found += y[i..<(i + n)].withUnsafeBufferPointer { detector.process($0) }
            i += n
        }
        return found
    }

    @Test func musicRoundTripWithinThreeSeconds() throws {
        let payload = WatermarkPayload(0x1A2B3C4D)
        let y = try mark(host("music", seconds: 8), payload: payload, key: .demo)
        let found = try detect(y, key: .demo)
        let first = try #require(found.first)
        #expect(first.payload == payload)
        #expect(first.time <= 3.0)
        #expect(first.mark?.score ?? 0 >= WatermarkDetector.threshold)
        #expect(abs(first.start) < 0.1)    // the copy began at the first sample
        #expect(found.allSatisfy { $0.payload == payload })
    }

    @Test func stadiumProfileRoundTripAndSeparation() throws {
        // The stadium profile's tones (600 Hz - 7.5 kHz) are found by a detector with that
        // profile, and a TV detector with the same key hears nothing, nor the other way round.
        let payload = WatermarkPayload(0x57AD1001)
        let stadium = try mark(host("music", seconds: 8), payload: payload, key: .demo, profile: .stadium)
        let found = try detect(stadium, key: .demo, profile: .stadium)
        let first = try #require(found.first)
        #expect(first.payload == payload)
        #expect(first.time <= 3.0)
        #expect(abs(first.start) < 0.1)
        #expect(try detect(stadium, key: .demo).isEmpty)
        let tv = try mark(host("music", seconds: 8), payload: payload, key: .demo)
        #expect(try detect(tv, key: .demo, profile: .stadium).isEmpty)
    }

    @Test func noiseHostNeedsLongerButDecodes() throws {
        let payload = WatermarkPayload(0xCAFE0001)
        let found = try detect(try mark(host("pink", seconds: 15), payload: payload, key: .demo), key: .demo)
        #expect(found.first?.payload == payload)
    }

    /// Payloads that are not the marked one, as a catalogue's other entries.
    private static let others = (1...99).map { WatermarkPayload(UInt32($0) &* 0x9E37_79B9) }

    @Test func catalogueFindsItsPayload() throws {
        let payload = WatermarkPayload(0x1A2B3C4D)
        let y = try mark(host("music", seconds: 8), payload: payload, key: .demo)
        let found = try detect(y, key: .demo, catalogue: Self.others + [payload])
        let first = try #require(found.first)
        #expect(first.payload == payload)
        #expect(first.time <= 3.0)
        #expect(first.mark?.score ?? 0 >= WatermarkDetector.threshold(payloads: 100))
        #expect(found.allSatisfy { $0.payload == payload })
    }

    @Test func catalogueReportsOnlyItsOwnPayloads() throws {
        // Plainly detectable without a catalogue, but not on the list: nothing is reported.
        let y = try mark(host("music", seconds: 8), payload: WatermarkPayload(0x1A2B3C4D), key: .demo)
        #expect(try detect(y, key: .demo).first?.payload == WatermarkPayload(0x1A2B3C4D))
        #expect(try detect(y, key: .demo, catalogue: Self.others).isEmpty)
    }

    @Test func catalogueHearsAMarkTooWeakForOpenDecoding() throws {
        // A weak mark on a music host, 5 s: under the open threshold of 9.65, over the
        // catalogue's 7.64 (at −12 dB neither hears it, from −8 dB both do).
        let weakStrength = -9.0
        let payload = WatermarkPayload(0xCAFE0002)
        let y = try mark(host("music", seconds: 5, seed: 4), payload: payload, key: .demo, strength: weakStrength)
        #expect(try detect(y, key: .demo).isEmpty)
        #expect(try detect(y, key: .demo, catalogue: Self.others + [payload]).first?.payload == payload)
    }

    @Test func alignmentsAreChosenBlindToTheKeysSides() throws {
        // The false-detection bound counts only the alignments scored, which holds if choosing
        // them never looks at which tone of a pair is side 1. Two formats that differ only in
        // those sides (for a third of the pairs) must choose the same alignments, hop by hop,
        // on marked audio and on noise. Choosing by the best score any codeword could reach,
        // as the detector once did, fails this.
        let marked = try mark(host("music", seconds: 7), payload: WatermarkPayload(0x5EED0001), key: .demo)
        let noise = host("pink", seconds: 7, seed: 9)
        let format = WatermarkFormat(key: .demo)
        let swapped = format.swappingSides { slot, position, pair in (slot + 3 * position + 7 * pair) % 3 == 0 }
        #expect(swapped.frequency[0][0][0] == format.frequency[0][0][0].reversed())
        for y in [marked, noise] {
            let a = try WatermarkDetector(format: format, sampleRate: Self.rate)
            let b = try WatermarkDetector(format: swapped, sampleRate: Self.rate)
            let hop = Int(WatermarkDetector.hopDuration * Self.rate)
            var hops = 0, multiCopy = 0
            for start in stride(from: 0, to: y.count - hop, by: hop) {
                y[start..<(start + hop)].withUnsafeBufferPointer { _ = a.process($0); _ = b.process($0) }
                #expect(a.lastScored == b.lastScored)
                hops += a.lastScored.isEmpty ? 0 : 1
                multiCopy += a.lastScored.contains { $0.coherent } ? 1 : 0
            }
            #expect(hops > 80 && multiCopy > 30)
        }
    }

    @Test func theBoundsCountWhatIsScored() throws {
        // The search's bound counts scoredPerHop readings a hop, the confirmation's
        // readingsPerConfirmation a confirmation: both are what the code that scores appends.
        let place = WatermarkDetector.Alignment(scale: 0, symbols: 6, newestSlot: 0)
        var multi = WatermarkDetector.Alignment(scale: 0, symbols: 12, newestSlot: 0)
        multi.reading = .copies
        var readings: [WatermarkDetector.Alignment] = []
        WatermarkDetector.appendReadings(strongest: place, multi: nil, into: &readings)
        #expect(readings.count == WatermarkDetector.readingsPerPlace - 1)
        readings.removeAll()
        WatermarkDetector.appendReadings(strongest: place, multi: multi, into: &readings)
        #expect(readings.count == WatermarkDetector.readingsPerPlace && WatermarkDetector.scoredPerHop == WatermarkDetector.readingsPerPlace)
        let marked = try mark(host("music", seconds: 7), payload: WatermarkPayload(0x5EED0003), key: .demo)
        let d = try WatermarkDetector(format: WatermarkFormat(key: .demo), sampleRate: Self.rate)
        let hop = Int(WatermarkDetector.hopDuration * Self.rate)
        var most = 0, mostPlaces = 0
        for start in stride(from: 0, to: marked.count - hop, by: hop) {
            marked[start..<(start + hop)].withUnsafeBufferPointer { _ = d.process($0) }
            most = max(most, d.lastScored.count)
            let places = d.confirmationAlignments(creativeStart: 0)
            mostPlaces = max(mostPlaces, places.count)
            #expect(places.count * WatermarkDetector.readingsPerPlace <= WatermarkDetector.readingsPerConfirmation)
        }
        #expect(most == WatermarkDetector.scoredPerHop && mostPlaces == WatermarkDetector.framePhases)
    }

    @Test(arguments: ["flat", "per tone", "per tone and copies"])
    func coherentReadingTurnsWithTheKeysSidesAndNothingElse(reading: String) throws {
        // The flat reading finds a delay, a drift and a gain from the audio before it projects,
        // the per-tone reading each tone's channel, and the combined reading scales it and the
        // copies reading by their norms; all of that must sum both tones of every pair alike,
        // so that turning a pair's coin turns its value's sign and leaves every other value as
        // it was (the bound's premise).
        let marked = try mark(host("pink", seconds: 8, seed: 2), payload: WatermarkPayload(0x5EED0002), key: .demo, strength: -10)
        let noise = host("music", seconds: 8, seed: 9)
        let format = WatermarkFormat(key: .demo)
        let swap = { (slot: Int, position: Int, pair: Int) in (slot + 3 * position + 7 * pair) % 3 == 0 }
        let swapped = format.swappingSides(where: swap)
        for y in [marked, noise] {
            let a = try WatermarkDetector(format: format, sampleRate: Self.rate)
            let b = try WatermarkDetector(format: swapped, sampleRate: Self.rate)
            y.withUnsafeBufferPointer { _ = a.process($0); _ = b.process($0) }
            let combined = try #require(a.lastScored.first {
                if case .perToneAndCopies = $0.reading { true } else { false }
            })
            var scored = combined
            switch reading {
            case "flat": scored.reading = .flat
            case "per tone": scored.reading = .perTone
            case "per tone and copies": break
            default: Issue.record("unknown reading \(reading)")
            }
            let va = a.pairValues(scored), vb = b.pairValues(scored)
            var turned = 0, checked = 0
            for slot in 0..<WatermarkFormat.symbolsPerCopy {
                for position in 0..<WatermarkFormat.bitsPerSymbol {
                    for pair in 0..<WatermarkFormat.pairsPerBit {
                        let i = PairLayout.valueIndex(slot: slot, position: position, pair: pair)
                        let expected = swap(slot, position, pair) ? -va[i] : va[i]
                        #expect(abs(vb[i] - expected) <= 1e-3 * max(1, abs(va[i])), "\(slot) \(position) \(pair)")
                        turned += swap(slot, position, pair) && va[i] != 0 ? 1 : 0
                        checked += va[i] != 0 ? 1 : 0
                    }
                }
            }
            #expect(turned > 100 && checked > 400)
        }
    }

    @Test func theTransparentMarkIsReadCoherentlyOnNoise() throws {
        // At −10 dB, 8 dB under the default, a tone stands some 7 dB under its floor: energies
        // add up to a score of 3-4 per copy, the flat reading (every symbol's bins projected on
        // one delay and gain) to about 9. Within 10 s of a noise host it decodes the payload.
        let payload = WatermarkPayload(0xC0FFEE42)
        let y = try mark(host("pink", seconds: 10, seed: 3), payload: payload, key: .demo, strength: -10)
        #expect(try detect(y, key: .demo).first?.payload == payload)
    }

    @Test func theCoherentReadingFollowsAClockOffset() throws {
        // A capture clock 100 ppm fast: the frames slip 40 µs per symbol against the mark, a
        // quarter turn at 6 kHz per symbol, which the drift search must take out. At −8 dB, 6 dB
        // under the default: the ceiling at the host's own band took the mark on noise under
        // 3 kHz lower, and at −10 dB this host read under the threshold (−9 dB still decodes).
        let payload = WatermarkPayload(0x0DDC10C4)
        let y = try mark(host("pink", seconds: 12, seed: 6), payload: payload, key: .demo, strength: -8)
        let resampler = Resampler(from: Self.rate, to: Self.rate * 1.0001)
        var z: [Float] = []
        y.withUnsafeBufferPointer { resampler.process($0, into: &z) }
        resampler.finish(into: &z)
        #expect(try detect(z, key: .demo).first?.payload == payload)
    }

    @Test func catalogueOnUnmarkedAudioGivesNothing() throws {
        for kind in ["music", "pink", "silence"] {
            #expect(try detect(host(kind, seconds: 12, seed: 5), key: .demo, catalogue: Self.others).isEmpty, "\(kind)")
        }
    }

    @Test func anotherKeyFindsNothing() throws {
        let y = try mark(host("music", seconds: 10), payload: WatermarkPayload(0x12345678), key: WatermarkKey(text: "station A"))
        #expect(try detect(y, key: WatermarkKey(text: "station B")).isEmpty)
        #expect(try detect(y, key: WatermarkKey(text: "station A")).first?.payload == WatermarkPayload(0x12345678))
    }

    @Test func unmarkedAudioAndSilenceGiveNothing() throws {
        for kind in ["music", "pink", "silence"] {
            #expect(try detect(host(kind, seconds: 12, seed: 5), key: .demo).isEmpty, "\(kind)")
        }
    }

    /// What a listener is told of a detector's confirmations: each airing once (the pipeline's
    /// last stage).
    private func news(_ found: [WatermarkDetection]) -> [WatermarkDetection] {
        var memory = AiringMemory(repeatInterval: AiringMemory.standardInterval)
        return found.filter { memory.isNews($0) }
    }

    @Test func oneAiringIsReportedOnceASecondAiringAgain() throws {
        let payload = WatermarkPayload(0x5EC0_4D0A)
        let x = host("music", seconds: 30, seed: 4)
        // The detector confirms the mark at hop after hop; the memory makes that one airing.
        let confirmations = try detect(mark(x, payload: payload, key: .demo), key: .demo)
        #expect(confirmations.count > 100 && confirmations.allSatisfy { $0.payload == payload })
        let continuous = news(confirmations)
        #expect(continuous.count == 1, "\(continuous.map(\.time))")

        // The same advert twice: 0–10 s and 18–28 s, 8 s of unmarked programme between. Windows
        // of four copies still confirm the first airing until about 17 s.
        let rate = Int(Self.rate)
        var y = x
        for range in [0..<(10 * rate), (18 * rate)..<(28 * rate)] {
            let marked = try mark(Array(x[range]), payload: payload, key: .demo)
            y.replaceSubrange(range, with: marked)
        }
        let found = try news(detect(y, key: .demo))
        #expect(found.map(\.payload) == [payload, payload], "\(found.map(\.time))")
        if found.count == 2 {
            #expect(abs(found[0].start) < 0.25)
            // A window that begins in the programme before the advert places the copy's start
            // on the advert's lattice, not necessarily at its first copy.
            let offset = found[1].start - 18, copy = WatermarkFormat.copyDuration
            #expect(abs(offset - (offset / copy).rounded() * copy) < 0.25, "\(found[1].start)")
            #expect(found[1].time > 18 && found[1].time < 21.5)
        }
    }

    @Test func confirmationsFromOverlappingAudioAreOneAiring() {
        let p = WatermarkPayload(1), q = WatermarkPayload(2)
        var memory = AiringMemory(repeatInterval: 6)
        let confirmations: [(WatermarkPayload, Double, Double, Bool)] = [
            (p, 10, 0.4, true),
            (p, 10.05, 0.45, false),
            (q, 10.1, 7.7, true),       // another payload is news
            (p, 15.9, 9.9, false),      // still overlapping
            (p, 19.9, 17.2, true),      // no audio shared with 15.9's: aired again
            (p, 21, 11.4, false),
            (p, 27.5, 18, true),        // absent 6.5 s
        ]
        for (payload, time, windowStart, news) in confirmations {
            let answer = memory.isNews(payload, time: time, windowStart: windowStart)
            #expect(answer == news, "\(payload.hex) at \(time)")
        }
        // Another copy lattice is another airing, even from overlapping windows.
        var lattices = AiringMemory(repeatInterval: 6)
        let onLattices: [(Double, Double, Double, Bool)] = [
            (10, 0.4, 0.1, true),
            (10.05, 0.45, -0.3, false),   // frames four hops off: the same airing
            (16, 9, 18.2, true),          // 1.25 s off the old lattice: aired again
            (16.05, 9.05, 20.8, false),   // a copy later on the new one
        ]
        for (time, windowStart, copyStart, news) in onLattices {
            let answer = lattices.isNews(p, time: time, windowStart: windowStart, copyStart: copyStart)
            #expect(answer == news, "at \(time)")
        }
        memory.reset()
        let afterReset = memory.isNews(p, time: 27.6, windowStart: 18)
        #expect(afterReset)
        // The mark joining an airing heard by its sound alone is news once, within the airing.
        var witnesses = AiringMemory(repeatInterval: 6)
        let joined = [(false, 3.0), (false, 3.5), (true, 4.0), (true, 4.05), (false, 4.5)].map { mark, t in
            witnesses.verdict(p, time: t, windowStart: t - 2, markHeard: mark)
        }
        #expect(joined == [.airing, .repeated, .markJoined, .repeated, .repeated], "\(joined)")
        var everything = AiringMemory(repeatInterval: 0)
        let first = everything.isNews(p, time: 1, windowStart: 0), second = everything.isNews(p, time: 1.05, windowStart: 0)
        #expect(first && second)
    }

    @Test func blockSizesDoNotChangeTheResult() throws {
        let payload = WatermarkPayload(0x0BADF00D)
        let y = try mark(host("music", seconds: 6, seed: 2), payload: payload, key: .demo)
        let a = try detect(y, key: .demo, block: 4096)
        let b = try detect(y, key: .demo, block: 333)
        #expect(a == b)
        #expect(a.first?.payload == payload)
    }

    @Test func survivesBandLimitsRoomDriftAndNoise() throws {
        // A small, lively room close up, a narrow speaker and mic, 500 ppm clock offset, and pink
        // noise 20 dB down: a mild path that a mark 12 dB over the transparent default must always
        // survive. (The default's mark on music is not decoded openly through it: the room's
        // noise is what the transparent mark loses to, docs/watermark.md "What limits it".)
        let payload = WatermarkPayload(0x5EED5EED)
        var y = try mark(host("music", seconds: 12, seed: 3), payload: payload, key: .demo, strength: 10)
        var speaker = BiquadCascade.bandPass(low: 150, high: 12_000, sampleRate: Self.rate)
        y.withUnsafeMutableBufferPointer { speaker.process($0) }
        let room = try FFTConvolver(impulseResponse: RoomImpulseResponse.synthesize(
            rt60: 0.4, distance: 1.0, volume: 54, sampleRate: Self.rate, seed: 1))
        var reverberant: [Float] = []
        y.withUnsafeBufferPointer { room.process($0, into: &reverberant) }
        room.finish(into: &reverberant)
        let power = reverberant.reduce(0.0) { $0 + Double($1 * $1) } / Double(reverberant.count)
        var noise = PinkNoiseGenerator(rms: (power / 100).squareRoot(), sampleRate: Self.rate, seed: 4)
        var n = [Float](repeating: 0, count: reverberant.count)
        n.withUnsafeMutableBufferPointer { noise.render(into: $0) }
        var received = zip(reverberant, n).map(+)
        var mic = BiquadCascade.bandPass(low: 100, high: 8_000, sampleRate: Self.rate)
        received.withUnsafeMutableBufferPointer { mic.process($0) }
        let drift = Resampler(from: 1, to: 1.0005)
        var drifted: [Float] = []
        received.withUnsafeBufferPointer { drift.process($0, into: &drifted) }
        let found = try detect(drifted, key: .demo)
        #expect(found.first?.payload == payload)
        #expect(found.allSatisfy { $0.payload == payload })
    }

    @Test func absurdAndNonFiniteSamplesAreCountedNotTrapped() throws {
        // 1e20 · sin squared overflows single precision; before the clamp this trapped in a
        // float-to-integer conversion. NaN and infinity are read as 0 and counted.
        let detector = try WatermarkDetector(format: WatermarkFormat(key: .demo), sampleRate: Self.rate)
        var x = sine(1000, amplitude: 1e20, rate: Self.rate, count: Int(3 * Self.rate))
        x[100] = .nan
        x[200] = .infinity
        #expect(x.withUnsafeBufferPointer { detector.process($0) }.isEmpty)
        #expect(detector.unusableSamples > Int(2.9 * Self.rate))
        // A marked signal with a few broken samples is still heard.
        var y = try mark(host("music", seconds: 8), payload: WatermarkPayload(0x0BAD0001), key: .demo)
        for i in stride(from: 1000, to: y.count, by: 48_000) { y[i] = i % 2 == 0 ? .nan : -.infinity }
        let clean = try WatermarkDetector(format: WatermarkFormat(key: .demo), sampleRate: Self.rate)
        #expect(y.withUnsafeBufferPointer { clean.process($0) }.first?.payload == WatermarkPayload(0x0BAD0001))
        #expect(clean.unusableSamples == 8)
    }

    @Test func aRateTooLowIsAnErrorNotATrap() {
        // It was a precondition: harkd's analysis thread would have died on it.
        #expect(throws: WatermarkDetectorError.rateTooLow(4_000)) {
            try WatermarkDetector(format: WatermarkFormat(key: .demo), sampleRate: 4_000)
        }
    }

    @Test func detectorStateStaysSmall() throws {
        let detector = try WatermarkDetector(format: WatermarkFormat(key: .demo), sampleRate: Self.rate)
        #expect(detector.stateBytes < 10_000_000)
        // Even when 20 s arrive in one block.
        let noise = host("pink", seconds: 20)
        _ = noise.withUnsafeBufferPointer { detector.process($0) }
        #expect(detector.stateBytes < 8_000_000)
    }

    @Test func framesAreReadAtTheLowestRateTheBandAllows() throws {
        // The band and the floor around its top tone (TV 6.08 kHz, stadium 7.58 kHz) must stay
        // clear of aliases, and frames and hops must remain whole numbers of samples.
        let cases: [(Double, WatermarkProfile, Int)] = [
            (48_000, .tv, 3), (48_000, .stadium, 2), (44_100, .tv, 3), (44_100, .stadium, 1),
            (32_000, .tv, 2), (16_000, .tv, 1), (96_000, .tv, 6), (96_000, .stadium, 5),
        ]
        for (rate, profile, factor) in cases {
            let detector = try WatermarkDetector(format: WatermarkFormat(key: .demo, profile: profile), sampleRate: rate)
            #expect(detector.analysisFactor == factor, "\(rate) Hz, \(profile)")
        }
    }
}
