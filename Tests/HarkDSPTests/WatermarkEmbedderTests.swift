import Foundation
import Testing
@testable import HarkDSP
import HarkSynthesis

/// The embedder against its perceptual model: every tone under its share of the host's masking
/// threshold, nothing where the host cannot cover it, and the strength in dB.
@Suite struct WatermarkEmbedderTests {
    static let rate = 48_000.0

    /// The watermark alone (not added to the host), fed in uneven blocks.
    private func mark(_ host: [Float], strength: Double, format: WatermarkFormat = WatermarkFormat(key: .demo),
                      temporalParts: Int = TemporalBand.partCount)
        throws -> (mark: [Float], embedder: WatermarkEmbedder) {
        let embedder = try WatermarkEmbedder(format: format, payload: WatermarkPayload(0x1A2B_3C4D), sampleRate: Self.rate,
                                             strength: strength, copyOffset: 0, temporalParts: temporalParts)
        var w: [Float] = []
        var i = 0
        while i < host.count {
            let n = min(3001, host.count - i)
            host[i..<(i + n)].withUnsafeBufferPointer { embedder.process($0, into: &w) }
            i += n
        }
        embedder.finish(into: &w)
        #expect(w.count == host.count)
        return (w, embedder)
    }

    private func pink(seconds: Double, rms: Double = 0.1, seed: UInt64 = 1) -> [Float] {
        var g = PinkNoiseGenerator(rms: rms, sampleRate: Self.rate, seed: seed)
        var x = [Float](repeating: 0, count: Int(seconds * Self.rate))
        x.withUnsafeMutableBufferPointer { g.render(into: $0) }
        return x
    }

    private func music(seconds: Double) -> [Float] {
        var g = MusicGenerator(rms: 0.1, sampleRate: Self.rate, seed: 2)
        var x = [Float](repeating: 0, count: Int(seconds * Self.rate))
        x.withUnsafeMutableBufferPointer { g.render(into: $0) }
        return x
    }

    /// The host's threshold per frame (frames centred every hop), from a model of its own.
    private func thresholds(_ host: [Float]) throws -> (model: MaskingModel, perFrame: [[Double]]) {
        let model = try MaskingModel(sampleRate: Self.rate)
        var frame = [Float](repeating: 0, count: model.frameLength)
        var out: [[Double]] = []
        for k in 0...(host.count / model.hop) {
            let start = k * model.hop - model.frameLength / 2
            for i in 0..<model.frameLength {
                let n = start + i
                frame[i] = n >= 0 && n < host.count ? host[n] : 0
            }
            frame.withUnsafeBufferPointer { model.analyse($0) }
            out.append(model.threshold)
        }
        return (model, out)
    }

    /// The power of the tone at `f` in `x[range]`, from a Hann-windowed projection.
    private func tonePower(_ x: [Float], _ range: Range<Int>, _ f: Double) -> Double {
        var re = 0.0, im = 0.0, weights = 0.0
        for (i, n) in range.enumerated() {
            let w = 0.5 - 0.5 * cos(2 * Double.pi * (Double(i) + 0.5) / Double(range.count))
            let phase = 2 * Double.pi * f * Double(n) / Self.rate
            re += w * Double(x[n]) * cos(phase)
            im -= w * Double(x[n]) * sin(phase)
            weights += w
        }
        let amplitude = 2 * (re * re + im * im).squareRoot() / weights
        return amplitude * amplitude / 2
    }

    @Test(arguments: ["pink", "music"])
    func everyToneStaysUnderItsShareOfTheThreshold(host kind: String) throws {
        // Each tone, measured in the middle 0.32 s of its symbol, against the mean over those
        // frames of its partition's threshold times its share, from a separate model of the host.
        let host = kind == "pink" ? pink(seconds: 6) : music(seconds: 6)
        let (w, embedder) = try mark(host, strength: 0)
        let (model, perFrame) = try thresholds(host)
        var ratios: [Double] = []
        for symbol in 1..<14 {
            let start = Int((Double(symbol) * WatermarkFormat.symbolDuration + 0.04) * Self.rate)
            let range = start..<(start + Int(0.32 * Self.rate))
            let frames = (range.lowerBound / model.hop + 1)...(range.upperBound / model.hop)
            let tones = embedder.tones(slot: symbol % WatermarkFormat.symbolsPerCopy)
            // Tones with a neighbour within 25 Hz cannot be told apart in 0.32 s (the
            // projection's leakage), so only the others are measured: half of them or more.
            for tone in tones where !tones.contains(where: { $0.frequency != tone.frequency && abs($0.frequency - tone.frequency) < 25 }) {
                let cap = frames.reduce(0.0) { $0 + perFrame[$1][tone.partition] } / Double(frames.count) * tone.share
                let measured = tonePower(w, range, tone.frequency)
                guard cap > 0 else {
                    #expect(measured < 1e-12, "a tone at \(tone.frequency) Hz sounds where the threshold is 0")
                    continue
                }
                ratios.append(10 * log10(measured / cap))
            }
        }
        let worst = ratios.max() ?? 0
        #expect(ratios.count > 13 * 30)
        #expect(worst < 1.0, "a tone lies \(worst) dB over its share of the threshold")
        // And the cap is what sets the tones, not something far under it.
        let median = ratios.sorted()[ratios.count / 2]
        #expect(median > -6, "median tone \(median) dB re its cap")
    }

    @Test func silenceAndPausesTheHostCannotCoverGetNoMark() throws {
        // Noise, 1 s of digital silence, noise, silence. Once the last frame touching the noise
        // has passed (half a 43 ms frame and a hop) the mark is exactly zero, and it returns no
        // earlier than 4 ms before the noise does (no pre-masking: only the gain's interpolation
        // from the centre of the block before the onset's).
        let on = pink(seconds: 1.2), off = silence(Int(1.0 * Self.rate))
        let host = on + off + pink(seconds: 1.2, seed: 2) + silence(Int(0.8 * Self.rate))
        let w = try mark(host, strength: 0).mark
        let quiet1 = Int(1.24 * Self.rate)..<Int((2.2 - 0.004) * Self.rate)
        let quiet2 = Int(3.44 * Self.rate)..<host.count
        #expect(w[quiet1].allSatisfy { $0 == 0 } && w[quiet2].allSatisfy { $0 == 0 })
        // The noise itself is marked.
        #expect(w[Int(0.5 * Self.rate)..<Int(1.0 * Self.rate)].contains { $0 != 0 })
        // A host under the threshold in quiet (noise at −100 dB re full scale) gets no mark at all.
        #expect(try mark(pink(seconds: 4, rms: 1e-5), strength: 0).mark.allSatisfy { $0 == 0 })
    }

    @Test func eachPartOfTheBandFollowsItsOwnEnvelope() throws {
        // 30 ms bursts of 300–900 Hz noise (a kick) every 250 ms over a steady 3–6 kHz band (a
        // cymbal). In the 43 ms frames that hold a burst the low tones may sound; before the
        // burst starts nothing covers them. With an envelope of its own the low part stays
        // silent until the burst; with one envelope for the whole band the steady high band
        // let the low tones sound ahead of every burst (what PEAQ heard on drums and bass).
        var low = BiquadCascade.bandPass(low: 300, high: 900, order: 4, sampleRate: Self.rate)
        var high = BiquadCascade.bandPass(low: 3000, high: 6000, order: 4, sampleRate: Self.rate)
        var host = pink(seconds: 3, rms: 0.3)
        host.withUnsafeMutableBufferPointer { high.process($0) }
        var bursts = pink(seconds: 3, rms: 1, seed: 7)
        bursts.withUnsafeMutableBufferPointer { low.process($0) }
        let period = Int(0.25 * Self.rate), burst = Int(0.03 * Self.rate)
        for i in host.indices where i % period < burst { host[i] += bursts[i] }

        func lowBand(_ parts: Int) throws -> (during: Double, before: Double) {
            var w = try mark(host, strength: 0, temporalParts: parts).mark
            var probe = BiquadCascade.bandPass(low: 450, high: 750, order: 4, sampleRate: Self.rate)
            w.withUnsafeMutableBufferPointer { probe.process($0) }
            var during = 0.0, before = 0.0
            // From 20 ms to 5 ms before a burst (the gain's interpolation may lead it by 4 ms).
            let from = period - Int(0.02 * Self.rate), to = period - Int(0.005 * Self.rate)
            for i in Int(0.5 * Self.rate)..<Int(2.5 * Self.rate) {
                let phase = i % period, p = Double(w[i]) * Double(w[i])
                if phase < burst { during += p / Double(burst) }
                else if phase >= from && phase < to { before += p / Double(to - from) }
            }
            return (during, before)
        }
        let own = try lowBand(TemporalBand.partCount), shared = try lowBand(1)
        let ownLead = 10 * log10(own.before / own.during), sharedLead = 10 * log10(shared.before / shared.during)
        #expect(ownLead < -30, "low tones before a burst: \(ownLead) dB re during it")
        #expect(ownLead < sharedLead - 10, "one envelope for the band: \(sharedLead) dB (the contrast this test rests on)")
    }

    @Test func partsOfTheBandAreEqualOnTheBarkScaleAndCoverIt() {
        let parts = TemporalBand.parts(of: 300...6000, count: 6, sampleRate: Self.rate)
        #expect(parts.count == 6 && parts.first!.tones.lowerBound == 300 && parts.last!.tones.upperBound == 6000)
        let widths = parts.map { MaskingModel.bark($0.tones.upperBound) - MaskingModel.bark($0.tones.lowerBound) }
        #expect(widths.allSatisfy { abs($0 - widths[0]) < 0.01 })
        for (a, b) in zip(parts, parts.dropFirst()) { #expect(a.tones.upperBound == b.tones.lowerBound) }
        #expect(parts.allSatisfy { $0.filter.lowerBound == 0.8 * $0.tones.lowerBound })
    }

    @Test func strengthIsDecibelsOfPower() throws {
        let host = music(seconds: 4)
        let power = { (x: [Float]) in x.reduce(0.0) { $0 + Double($1) * Double($1) } }
        let low = power(try mark(host, strength: -10).mark), high = power(try mark(host, strength: -4).mark)
        #expect(abs(10 * log10(high / low) - 6) < 0.01)
        // The profile's default is its transparent strength.
        let defaulted = try WatermarkEmbedder(format: WatermarkFormat(key: .demo, profile: .stadium),
                                              payload: WatermarkPayload(1), sampleRate: Self.rate)
        #expect(defaulted.strength == WatermarkProfile.stadium.defaultStrength)
    }

    @Test func nonFiniteHostSamplesDoNotPoisonTheMark() throws {
        var host = pink(seconds: 4)
        host[Int(1.0 * Self.rate)] = .nan
        host[Int(2.0 * Self.rate)] = .infinity
        let w = try mark(host, strength: 0).mark
        #expect(w.allSatisfy { $0.isFinite })
        #expect(w[Int(3.0 * Self.rate)..<Int(3.5 * Self.rate)].contains { $0 != 0 })
    }
}
