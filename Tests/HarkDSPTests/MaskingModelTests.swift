import Foundation
import Testing
@testable import HarkDSP
import HarkSynthesis

/// The perceptual model on its own: known masking cases from the literature, and the threshold
/// in quiet.
@Suite struct MaskingModelTests {
    static let rate = 48_000.0

    /// Runs `x` through a fresh model frame by frame (frames centred every hop) and returns
    /// the model after the frame centred nearest `time`. `ceilingTop` 0 gives the classic
    /// model, without the ceiling at the host's own band.
    private func model(after x: [Float], at time: Double, ceilingTop: Double = MaskingModel.ownBandCeilingTop,
                       levelDiscrimination: MaskingModel.LevelDiscrimination? = nil) throws -> MaskingModel {
        let m = try MaskingModel(sampleRate: Self.rate, ownBandCeilingTop: ceilingTop, levelDiscrimination: levelDiscrimination)
        let last = Int(time * Self.rate) / m.hop
        var frame = [Float](repeating: 0, count: m.frameLength)
        for k in 0...last {
            let start = k * m.hop - m.frameLength / 2
            for i in 0..<m.frameLength {
                let n = start + i
                frame[i] = n >= 0 && n < x.count ? x[n] : 0
            }
            frame.withUnsafeBufferPointer { m.analyse($0) }
        }
        return m
    }

    /// Band-limited noise: white noise through a 4th-order Butterworth band-pass.
    private func bandNoise(_ band: ClosedRange<Double>, rms: Double, seconds: Double) -> [Float] {
        var g = WhiteNoiseGenerator(rms: 1, seed: 3)
        var x = [Float](repeating: 0, count: Int(seconds * Self.rate))
        x.withUnsafeMutableBufferPointer { g.render(into: $0) }
        var filter = BiquadCascade.bandPass(low: band.lowerBound, high: band.upperBound, order: 4, sampleRate: Self.rate)
        x.withUnsafeMutableBufferPointer { filter.process($0) }
        let power = x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(x.count)
        let scale = Float(rms / power.squareRoot())
        return x.map { $0 * scale }
    }

    private func dB(_ x: Double) -> Double { 10 * log10(x) }

    @Test func noiseMasksAToneJustUnderItsLevelAndAToneMasksNoiseFarUnderIt() throws {
        // The masking asymmetry (Zwicker & Fastl; Johnston 1988): noise a critical band wide at
        // 1 kHz masks a tone about 4–6 dB under the noise's level; a 1 kHz tone masks noise only
        // some 20–25 dB under its own (14.5 + z with z = 8.5 Bark: 23 dB). The classic model,
        // without the ceiling at the host's own band, which overrules the noise case (below).
        let power = 0.005        // −23 dB re full scale
        let tone = sine(1000, amplitude: (2 * power).squareRoot(), rate: Self.rate, count: Int(Self.rate))
        let noise = bandNoise(920...1080, rms: power.squareRoot(), seconds: 1)
        let toneModel = try model(after: tone, at: 0.5, ceilingTop: 0)
        let noiseModel = try model(after: noise, at: 0.5, ceilingTop: 0)
        let p = toneModel.partition(of: 1000)
        #expect(toneModel.tonality[p] > 0.9, "tonality of a steady tone \(toneModel.tonality[p])")
        #expect(noiseModel.tonality[p] < 0.2, "tonality of noise \(noiseModel.tonality[p])")
        let underTone = dB(power / toneModel.threshold[p]), underNoise = dB(power / noiseModel.threshold[p])
        #expect((20...26).contains(underTone), "threshold \(underTone) dB under the tone")
        // The model is more cautious than listeners with noise (about 14 dB under it here):
        // noise never looks perfectly unpredictable (α ≈ 0.1), and quarter-Bark partitions
        // gather a little less than a whole critical band. The asymmetry is what matters.
        #expect((3...16).contains(underNoise), "threshold \(underNoise) dB under the noise")
        #expect(underTone - underNoise > 8, "a tone masks \(underTone - underNoise) dB less than noise")

        // With the ceiling, a 1 kHz host masks nothing closer than 12 dB under its own band's
        // energy, noise included; the tone's threshold, further under already, stays.
        let cappedNoise = try model(after: noise, at: 0.5), cappedTone = try model(after: tone, at: 0.5)
        let underCappedNoise = dB(power / cappedNoise.threshold[p])
        #expect(underCappedNoise >= max(underNoise, MaskingModel.ownBandCeiling - 0.5), "threshold \(underCappedNoise) dB under the noise")
        #expect(abs(dB(power / cappedTone.threshold[p]) - underTone) < 0.01)
    }

    @Test func aHighToneMasksNoMoreThanTheCapUnderItself() throws {
        // Johnston's offset at 5 kHz (z = 18.6 Bark) would put the threshold 33 dB under the
        // tone; the cap holds it at 21 dB (spreading adds a little to the tone's own energy).
        let power = 0.005
        let m = try model(after: sine(5000, amplitude: (2 * power).squareRoot(), rate: Self.rate, count: Int(Self.rate)), at: 0.5)
        let p = m.partition(of: 5000)
        #expect(m.tonality[p] > 0.9, "tonality of a steady tone \(m.tonality[p])")
        let under = dB(power / m.threshold[p])
        #expect(abs(under - MaskingModel.tonalOffsetCap) < 2.5, "threshold \(under) dB under a 5 kHz tone")
    }

    @Test func maskingSpreadsFurtherUpThanDownAndFurtherWhenLoud() throws {
        // PEAQ's slopes: 27 dB per Bark below a masker; above it 24 + 230/f − 0.2 L dB per
        // Bark, shallower for a loud masker. The classic model: below 3 kHz the ceiling at the
        // host's own band holds a pure tone's neighbours under its leakage (tests below).
        func thresholds(power: Double) throws -> (below: Double, above: Double) {
            let m = try model(after: sine(1000, amplitude: (2 * power).squareRoot(), rate: Self.rate, count: Int(Self.rate)), at: 0.5, ceilingTop: 0)
            let centre = MaskingModel.bark(1000)
            let below = m.partitionBark.firstIndex { $0 >= centre - 2 }!
            let above = m.partitionBark.firstIndex { $0 >= centre + 2 }!
            let p = m.partition(of: 1000)
            return (dB(m.threshold[p] / m.threshold[below]), dB(m.threshold[p] / m.threshold[above]))
        }
        // A tone at 88.5 dB SPL (upwards 6.5 dB per Bark) and one at 72 dB SPL (9.8 dB per Bark).
        let loud = try thresholds(power: 0.045), quiet = try thresholds(power: 0.005)
        #expect(loud.below > 45, "\(loud.below) dB down two Bark below")
        #expect(loud.above < loud.below - 20, "\(loud.above) dB down two Bark above")
        #expect(quiet.above > loud.above + 4, "a quieter masker reaches less far up: \(quiet.above) vs \(loud.above) dB")
    }

    /// A loud tone at `loud` Hz with a quiet one 40 dB under it at `quiet` Hz, above it within
    /// the loud tone's upward spreading: the threshold where the quiet tone sits, and the
    /// quiet tone's power.
    private func lentThreshold(loud: Double, quiet: Double) throws -> (threshold: Double, quietPower: Double, loudMargin: Double) {
        let loudPower = 0.045, quietPower = loudPower * 1e-4
        let n = Int(Self.rate)
        let a = sine(loud, amplitude: (2 * loudPower).squareRoot(), rate: Self.rate, count: n)
        let b = sine(quiet, amplitude: (2 * quietPower).squareRoot(), rate: Self.rate, count: n)
        let m = try model(after: zip(a, b).map { $0 + $1 }, at: 0.5)
        return (m.threshold[m.partition(of: quiet)], quietPower, dB(loudPower / m.threshold[m.partition(of: loud)]))
    }

    @Test func belowThreeKilohertzALentBandStaysUnderTheHostsOwnEnergyThere() throws {
        // A 1 kHz tone at 88.5 dB SPL spreads 6.5 dB per Bark upwards: 1.7 Bark up, at 1.4 kHz,
        // spreading and the tonal offset alone would let a mark sound as loud as the 1.4 kHz
        // tone that is all the host has there (measured: 0.3 dB over it). The ceiling holds it
        // 12 dB under that tone.
        let lent = try lentThreshold(loud: 1000, quiet: 1400)
        let under = dB(lent.quietPower / lent.threshold)
        #expect(under >= MaskingModel.ownBandCeiling - 0.5, "threshold \(under) dB under the host's own band")
        #expect(under <= MaskingModel.ownBandCeiling + 3, "threshold \(under) dB under the host's own band: the ceiling, not more")
        // The loud tone's own partition keeps the tonal offset: 21 dB lies deeper than the ceiling.
        #expect(abs(lent.loudMargin - MaskingModel.tonalOffsetCap) < 2.5, "threshold \(lent.loudMargin) dB under the loud tone")
    }

    @Test func aboveThreeKilohertzSpreadingStillLendsAThinBandItsMasking() throws {
        // The same pair an octave and more up (3.5 and 4.2 kHz, 1.2 Bark apart): the ceiling stops
        // at 3 kHz, so the 4.2 kHz partition keeps what the loud tone lends it, well over the
        // quiet tone there.
        let lent = try lentThreshold(loud: 3500, quiet: 4200)
        let over = dB(lent.threshold / lent.quietPower)
        #expect(over > 5, "threshold \(over) dB over the quiet tone")
    }

    @Test func thresholdInQuietIsTerhardtsAtTheStatedLevel() {
        // 3.4 dB SPL at 1 kHz, about −4.9 dB SPL at 3.3 kHz; full scale plays at 92 dB SPL.
        #expect(abs(dB(MaskingModel.quietThreshold(1000) / 0.5) + 92 - 3.37) < 0.05)
        #expect(abs(dB(MaskingModel.quietThreshold(3300) / 0.5) + 92 - -4.9) < 0.2)
        #expect(MaskingModel.quietThreshold(100) > MaskingModel.quietThreshold(1000) * 50)
    }

    @Test func digitalSilenceAndInaudibleHostsMaskNothing() throws {
        let silent = try model(after: silence(Int(Self.rate)), at: 0.5)
        #expect(silent.threshold.allSatisfy { $0 == 0 })
        // Noise at −100 dB re full scale plays at −8 dB SPL: under the threshold in quiet.
        let inaudible = try model(after: bandNoise(300...6000, rms: 1e-5, seconds: 1), at: 0.5)
        #expect(inaudible.threshold.allSatisfy { $0 == 0 })
    }

    @Test func levelDiscriminationFollowsPEAQsSlope() {
        // BS.1387's slope of detection probability: finer the louder the band.
        let slope = MaskingModel.LevelDiscrimination.slope
        #expect(abs(slope(40) - 0.944) < 0.005 && abs(slope(70) - 0.468) < 0.005 && abs(slope(80) - 0.318) < 0.005,
                "slopes \(slope(40)) \(slope(70)) \(slope(80))")
        // PEAQ's outer and middle ear: the ear canal's resonance near 3.3 kHz.
        let ear = MaskingModel.LevelDiscrimination.earWeighting
        #expect(ear(3300) > 4 && ear(1000) < -1 && ear(3300) > ear(7000))
        let d = MaskingModel.LevelDiscrimination(reference: 50, exponent: 3)
        #expect(d.factor(atLevel: 30) == 1 && d.factor(atLevel: 50) == 1)
        // At 70 dB: (0.468 / 0.800)³ = 0.20, 7 dB lower; the crowd's sixth power, 14 dB.
        #expect(abs(10 * log10(d.factor(atLevel: 70)) + 7.0) < 0.2, "\(10 * log10(d.factor(atLevel: 70))) dB at 70 dB")
        #expect(abs(10 * log10(MaskingModel.LevelDiscrimination.crowd.factor(atLevel: 70)) + 14.0) < 0.4)
        #expect(d.factor(atLevel: 80) < d.factor(atLevel: 70))
        // Past PEAQ's fitted range the factor stays at its smallest rather than climb back.
        #expect(d.factor(atLevel: 98.7) < d.factor(atLevel: 90) && d.factor(atLevel: 130) == d.factor(atLevel: 98.7))
    }

    @Test func levelDiscriminationLowersOnlyLoudBandsThresholds() throws {
        // Noise over the stadium band: at −10 dB re full scale its critical bands play at
        // 70–80 dB and their thresholds come down; at −60 dB they play under the reference and
        // keep the classic model's.
        let d = MaskingModel.LevelDiscrimination.crowd
        for (rms, lowered) in [(0.3, true), (0.001, false)] {
            let noise = bandNoise(600...7500, rms: rms, seconds: 1)
            let classic = try model(after: noise, at: 0.5), weighted = try model(after: noise, at: 0.5, levelDiscrimination: d)
            for f in [1000.0, 3000, 6000] {
                let p = classic.partition(of: f)
                #expect(classic.threshold[p] > 0)
                let change = dB(weighted.threshold[p] / classic.threshold[p])
                if lowered {
                    #expect(change < -3, "\(change) dB at \(f) Hz, rms \(rms)")
                } else {
                    #expect(change == 0, "\(change) dB at \(f) Hz, rms \(rms)")
                }
            }
        }
    }

    @Test func barkScaleIsZwickers() {
        #expect(abs(MaskingModel.bark(1000) - 8.51) < 0.02)
        #expect(abs(MaskingModel.bark(4000) - 17.26) < 0.05)
    }

    @Test func temporalMaskingDecaysAfterAnOnsetAndMasksNothingBeforeIt() {
        // 100 ms of silence, then a 1 kHz tone: the blocks before the onset are masked by
        // nothing (no pre-masking: PEAQ heard the 5 ms it used to lend before drum hits), and
        // after the tone stops the masker falls by e^(−t / 10 ms).
        var t = TemporalMasking(sampleRate: Self.rate, band: 240...7200)
        let onset = 4800, stop = 14_400
        let x: [Float] = (0..<24_000).map { n in
            n >= onset && n < stop ? Float(0.5 * sin(2 * Double.pi * 1000 * Double(n) / Self.rate)) : 0
        }
        x.withUnsafeBufferPointer { t.append($0) }
        let b = t.blockLength
        let maskers = (0..<t.blocksDone).map { t.masker($0) }
        let before = onset / b - 1, during = (onset + stop) / 2 / b
        #expect(maskers[before] == 0, "a block before the onset is masked by \(maskers[before])")
        #expect(maskers[during] > 0.1)
        // 20 ms after the stop (past the filter's ringing): the held tail, 2 time constants down.
        let after = (stop + 960) / b, last = stop / b - 1
        let drop = 10 * log10(maskers[after] / maskers[last])
        let expected = -10 * log10(exp(1.0)) * Double((after - last) * b) / Self.rate / TemporalMasking.forwardTau
        #expect(abs(drop - expected) < 0.5, "fell \(drop) dB, forward masking says \(expected)")
        #expect(TemporalMasking.gain(masker: maskers[after], frameEnergy: maskers[during]) < 0.4)
    }
}
