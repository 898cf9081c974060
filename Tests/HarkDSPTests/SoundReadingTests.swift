import Foundation
import Testing
@testable import HarkDSP
import HarkSynthesis

/// The reading of a creative's own sound alone: landmarks, the catalogue's index with what
/// creatives share left out, and the matcher through a room, noise and clock drift.
@Suite struct SoundReadingTests {
    static let rate = 16_000.0

    private func render<G: SignalGenerator>(_ g: G, seconds: Double) -> [Float] {
        TestAudio.render(g, seconds: seconds, rate: Self.rate)
    }

    private func song(_ seed: UInt64, seconds: Double = 30, rms: Double = 0.1) -> [Float] {
        TestAudio.song(seed, seconds: seconds, rms: rms, rate: Self.rate)
    }

    private func line(_ instrument: SoloLineGenerator.Instrument, _ seed: UInt64, seconds: Double = 30) -> [Float] {
        render(SoloLineGenerator(instrument, rms: 0.1, sampleRate: Self.rate, seed: seed), seconds: seconds)
    }

    private func reading(_ x: [Float]) throws -> SoundPrint {
        try x.withUnsafeBufferPointer { try SoundPrint.read($0, sampleRate: Self.rate) }
    }

    /// The room of the bench's living room (RT60 0.5 s at 2.7 m in 54 m³) and pink noise at
    /// `snr` dB under the programme as received.
    private func throughRoom(_ x: [Float], snr: Double, seed: UInt64) throws -> [Float] {
        let h = RoomImpulseResponse.synthesize(rt60: 0.5, distance: 2.7, volume: 54, sampleRate: Self.rate, seed: seed)
        let room = try FFTConvolver(impulseResponse: h)
        var y: [Float] = []
        x.withUnsafeBufferPointer { room.process($0, into: &y) }
        room.finish(into: &y)
        y = Array(y.prefix(x.count))
        let noise = render(PinkNoiseGenerator(rms: 1, sampleRate: Self.rate, seed: seed &+ 1), seconds: Double(y.count) / Self.rate)
        let scale = Float(rms(y) / rms(noise) * pow(10, -snr / 20))
        return zip(y, noise).map { $0 + scale * $1 }
    }

    private func rms(_ x: [Float]) -> Double { (x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, x.count))).squareRoot() }

    private func listen(_ index: SoundIndex, _ y: ArraySlice<Float>, rate: Double = rate, threshold: Int = LandmarkTuning.standard.threshold,
                        block: Int = 1024) throws -> [SoundMatch] {
        var tuning = LandmarkTuning.standard
        tuning.threshold = threshold
        let m = try SoundMatcher(index: index, sampleRate: rate, tuning: tuning)
        var out: [SoundMatch] = []
        var i = y.startIndex
        while i < y.endIndex {
            let n = min(block, y.endIndex - i)
            out += y[i..<(i + n)].withUnsafeBufferPointer { m.process($0) }
            i += n
        }
        return out
    }

    @Test func aLandmarkHashesItsPeaksIntoTwentyBits() {
        let a = SpectralPeak(frame: 10, bin: 200, level: 0), b = SpectralPeak(frame: 14, bin: 190, level: 0)
        let l = Landmark(anchor: a, target: b)
        #expect(l.frame == 10)
        #expect(l.hash == UInt32(200) << 12 | UInt32(-10 + 32) << 6 | 4)
        #expect(l.hash < 1 << Landmark.hashBits)
    }

    @Test func aReadingIsCompactAndSurvivesItsBytes() throws {
        let print = try reading(song(1))
        // ≤ 64 kB for 30 s is the catalogue's budget.
        #expect(print.bytes.count < 64_000 && print.landmarks.count > 30 * 50)
        #expect(try SoundPrint(bytes: print.bytes) == print)
        var bytes = print.bytes
        bytes[0] = UInt8(ascii: "X")
        #expect(throws: SoundPrintError.damaged("not a sound reading")) { try SoundPrint(bytes: bytes) }
        // 30 s of band envelopes, 16 bands every 32 ms.
        #expect(abs(print.envelope.rows - 30 * 1000 / 32) <= 4 && print.envelope.levels.max() == 255)
        // A reading of the first format (no envelope) is still read, as catalogues made then hold it.
        var first = Array(print.bytes.dropLast(4 + print.envelope.levels.count))
        first[3] = UInt8(ascii: "1")
        let old = try SoundPrint(bytes: first)
        #expect(old.landmarks == print.landmarks && old.peaks == print.peaks && old.envelope.rows == 0)
        // A reading cut inside its envelope is refused, not read short.
        #expect(throws: SoundPrintError.self) { try SoundPrint(bytes: Array(print.bytes.dropLast(7))) }
    }

    /// A jingle: a solo line over a song of its own.
    private func jingle(_ seed: UInt64, _ instrument: SoloLineGenerator.Instrument) -> [Float] {
        zip(song(seed, rms: 0.05), line(instrument, seed &+ 1)).map(+)
    }

    private func noise(_ seed: UInt64) -> [Float] {
        render(PinkNoiseGenerator(rms: 0.1, sampleRate: Self.rate, seed: seed), seconds: 30)
    }

    /// (Pink noise 15 dB under the programme, 15 s: what the room reads at 10 dB and under, and
    /// how soon, is the bench's to measure, docs/watermark.md.)
    @Test func namesTheCreativeAndWhereItIsThroughARoomAndNoise() throws {
        let creatives = [song(1), jingle(2, .flute), song(3), noise(4)]
        let index = SoundIndex(prints: try creatives.map(reading))
        for (k, creative) in creatives.enumerated() {
            let y = try throughRoom(creative, snr: 15, seed: UInt64(k))
            let start = Int(11.5 * Self.rate)
            let found = try listen(index, y[start..<(start + Int(15 * Self.rate))])
            #expect(found.first?.reference == k, "creative \(k): \(found)")
            #expect(found.allSatisfy { $0.reference == k }, "creative \(k): \(found)")
            // Where the creative was when it was named, to within 0.1 s (the room delays what it
            // carries: 8 ms of flight and the build-up of its reverberation move the peaks later
            // by up to four frames), or a place where it sounds the same.
            if let m = found.first, let offset = m.offset {
                let expected = 11.5 + m.time
                #expect(abs(offset - expected) < 0.1 || soundsTheSame(creative, at: offset, as: expected), "creative \(k): \(found)")
            }
            // A song's chords come back, so where it is may stay open (nil) when it is named; the
            // jingle's line and the noise do not repeat, and their place is told at once.
            if k == 1 || k == 3 { #expect(found.first?.offset != nil, "creative \(k): \(found)") }
        }
    }

    /// harkd hands the matcher 20 ms at a time and it reviews its candidates every 60 ms at
    /// most; a file goes in longer blocks, each reviewed. Both name the same creative at the
    /// same place, within a review interval and a block of each other.
    @Test func shortBlocksNameTheCreativeAsLongOnesDo() throws {
        let creatives = [song(1), jingle(2, .flute), song(3), noise(4)]
        let index = SoundIndex(prints: try creatives.map(reading))
        for k in [1, 3] {
            let y = try throughRoom(creatives[k], snr: 15, seed: UInt64(k))
            let window = y[Int(11.5 * Self.rate)..<Int(26.5 * Self.rate)]
            let long = try listen(index, window)
            let short = try listen(index, window, block: 320)
            let (a, b) = (try #require(long.first), try #require(short.first))
            #expect(a.reference == k && b.reference == k)
            #expect(abs(a.time - b.time) <= SoundMatcher.reviewInterval + 1024 / Self.rate, "\(long) \(short)")
            #expect(a.offset != nil && b.offset != nil && abs(a.offset! - b.offset!) < 0.1, "\(long) \(short)")
        }
    }

    @Test func aCreativeLeadsWithWhereItBeganBeforeItIsNamed() throws {
        // Through the room at SNR 0 dB a creative that began 2.25 s into the input is not named
        // within 10 s, but it leads the sound's candidates, and once it has 10 votes the start
        // its alignment implies is within 60 ms of the truth (the room's delay and a 16 ms
        // frame): where the mark is confirmed (two frame phases, 50 ms apart, around it).
        // Another song leads to nothing with a name's votes.
        let creatives = [song(1), jingle(2, .flute), song(3), noise(4)]
        let index = SoundIndex(prints: try creatives.map(reading))
        let lead = 2.25
        let y = render(PinkNoiseGenerator(rms: 0.02, sampleRate: Self.rate, seed: 9), seconds: lead)
            + (try throughRoom(Array(creatives[1].prefix(Int(8 * Self.rate))), snr: 0, seed: 5))
        let m = try SoundMatcher(index: index, sampleRate: Self.rate)
        var starts: [Double] = [], named = false
        var i = 0
        while i < y.count {
            let n = min(1024, y.count - i)
            named = y[i..<(i + n)].withUnsafeBufferPointer { m.process($0) }.contains { $0.reference == 1 } || named
            i += n
            starts += m.leads(limit: 3).filter { $0.reference == 1 && $0.votes >= 10 }.map(\.creativeStart)
        }
        #expect(!named && starts.count > 50)
        #expect(starts.allSatisfy { abs($0 - lead) < 0.06 }, "\(starts)")
        let other = try SoundMatcher(index: index, sampleRate: Self.rate)
        _ = song(11).withUnsafeBufferPointer { other.process($0) }
        #expect(other.leads(limit: 3).allSatisfy { $0.votes < LandmarkTuning.standard.threshold })
    }

    /// Whether the second before `a` and the second before `b` of `x` are the same sound, to
    /// 20 dB (aligned to the best of ±2 frames).
    private func soundsTheSame(_ x: [Float], at a: Double, as b: Double) -> Bool {
        let n = Int(Self.rate), i = Int(a * Self.rate) - n, j = Int(b * Self.rate) - n
        guard i >= 64, j >= 64, i + n + 64 <= x.count, j + n + 64 <= x.count else { return false }
        let energy = (0..<n).reduce(0.0) { $0 + Double(x[j + $1]) * Double(x[j + $1]) }
        return stride(from: -64, through: 64, by: 1).contains { d in
            (0..<n).reduce(0.0) { let e = Double(x[i + d + $1] - x[j + $1]); return $0 + e * e } < 0.01 * energy
        }
    }

    @Test func refusesAudioThatIsNoneOfItsCreatives() throws {
        // (Solo lines of one instrument from one generator are not "other audio": they play the
        // same notes to the same beat, and share landmarks as two takes of one tune would.)
        let index = SoundIndex(prints: try [song(1), jingle(2, .flute), song(3), noise(4)].map(reading))
        for other in [song(11), song(12), jingle(13, .piano), noise(14)] {
            // The threshold's margin: no other audio comes within two-thirds of it.
            let found = try listen(index, other[...], threshold: LandmarkTuning.standard.threshold * 2 / 3)
            #expect(found.isEmpty, "\(found)")
        }
    }

    @Test func aSecondOfACreativesOwnSoundInOtherAudioNamesNothing() throws {
        // Another programme holding a second of the creative sample for sample (a stock sound
        // effect, a phrase a speech synthesiser says alike in two scripts) is not the creative
        // heard: its votes crowd into one second. Four seconds of it are.
        let creative = song(51)
        let index = SoundIndex(prints: [try reading(creative)])
        func programme(holding seconds: Double) -> [Float] {
            var x = song(52, seconds: 14)
            let from = Int(10 * Self.rate), to = Int(5 * Self.rate), n = Int(seconds * Self.rate)
            for i in 0..<n { x[to + i] = creative[from + i] }
            return x
        }
        let m = try SoundMatcher(index: index, sampleRate: Self.rate)
        let second = programme(holding: 1)
        var found: [SoundMatch] = [], most = 0, spread = 0, evidence = -Double.infinity
        for start in stride(from: 0, to: second.count, by: 1024) {
            found += second[start..<min(second.count, start + 1024)].withUnsafeBufferPointer { m.process($0) }
            if let best = m.bestAlignments()[0] {
                most = max(most, best.votes)
                spread = max(spread, m.spreadVotes(reference: 0, alignment: best.alignment).trimmed)
                evidence = max(evidence, m.peakEvidence(reference: 0, alignment: best.alignment).z)
            }
        }
        #expect(found.isEmpty, "\(found)")
        // What the matcher saw: a candidate whose peaks, counted whole, would have named it;
        // only their crowding into one second keeps it unnamed, on both paths.
        #expect(most >= LandmarkTuning.standard.candidateVotes && evidence >= LandmarkTuning.standard.peakThreshold, "\(most) votes, evidence \(evidence)")
        #expect(spread < LandmarkTuning.standard.spreadVotes, "\(spread) votes outside the best second")
        #expect(try listen(index, programme(holding: 4)[...]).first?.reference == 0)
    }

    @Test func theEnvelopesFollowTheCreativeThroughARoomAndNoOtherSong() throws {
        // A held chord has no peak of its own in time; how its bands rise and fall survives
        // the room. Read 6 s from 8 s in: the alignment is then −8 s of frames.
        let creatives = [song(61), song(62)]
        let index = SoundIndex(prints: try creatives.map(reading))
        let start = Int(8 * Self.rate)
        let y = try throughRoom(creatives[0], snr: 10, seed: 61)
        let m = try SoundMatcher(index: index, sampleRate: Self.rate)
        _ = y[start..<(start + Int(6 * Self.rate))].withUnsafeBufferPointer { m.process($0) }
        let alignment = -Int((8 / SpectralPeakPicker.hopDuration).rounded())
        let own = m.envelopeEvidence(reference: 0, alignment: alignment)
        let other = m.envelopeEvidence(reference: 1, alignment: alignment)
        #expect(own.rho > 0.5 && own.z > 3, "\(own)")
        #expect(other.rho < 0.3 && other.z < 3, "\(other)")
        // A frame of misalignment costs little; half a second loses it.
        #expect(m.envelopeEvidence(reference: 0, alignment: alignment + 1).rho > 0.4)
        #expect(m.envelopeEvidence(reference: 0, alignment: alignment + 31).rho < own.rho - 0.2)
    }

    /// Noise heard in bursts of 0.3–0.8 s between pauses of 0.5–1.5 s, drawn from `seed`:
    /// what a voice-over with pauses gives a room, without a voice synthesiser.
    private func bursts(_ seed: UInt64) -> [Float] {
        var x = render(PinkNoiseGenerator(rms: 0.1, sampleRate: Self.rate, seed: seed), seconds: 30)
        var rng = SplitMix64(seed: seed)
        var i = 0, on = true
        while i < x.count {
            let n = Int((on ? 0.3 + 0.5 * rng.nextUniform() : 0.5 + rng.nextUniform()) * Self.rate)
            if !on { for j in i..<min(x.count, i + n) { x[j] = 0 } }
            i += n
            on.toggle()
        }
        return x
    }

    @Test func aCreativeHeardInBurstsIsNamedByItsEnvelopes() throws {
        // Through the room at 5 dB, 6 s of it gather a dozen votes at its alignment, crowded into
        // a few bursts: neither the votes nor the trimmed evidence name it; its envelopes,
        // following it pauses and all at that alignment, do.
        let index = SoundIndex(prints: try (70..<74).map { try reading(bursts($0)) })
        let y = try throughRoom(bursts(70), snr: 5, seed: 5)
        let m = try SoundMatcher(index: index, sampleRate: Self.rate)
        var found: [SoundMatch] = []
        let start = Int(8 * Self.rate), end = start + Int(6 * Self.rate)
        for s in stride(from: start, to: end, by: 1024) {
            found += y[s..<min(end, s + 1024)].withUnsafeBufferPointer { m.process($0) }
        }
        #expect(!found.isEmpty && found.allSatisfy { $0.reference == 0 }, "\(found)")
        let alignment = try #require(m.bestAlignments()[0]).alignment
        let spread = m.spreadVotes(reference: 0, alignment: alignment)
        let peaks = m.peakEvidence(reference: 0, alignment: alignment).trimmed
        let envelopes = m.envelopeEvidence(reference: 0, alignment: alignment).trimmed
        #expect(spread.votes < LandmarkTuning.standard.threshold && peaks < LandmarkTuning.standard.peakThreshold, "\(spread), \(peaks)")
        #expect((peaks + envelopes) / 2.0.squareRoot() < LandmarkTuning.standard.combinedThreshold)
        #expect(m.highestFollowing >= LandmarkTuning.standard.followThreshold)
        // Other bursts, of noise or of a song, follow no creative near the threshold.
        for other in [bursts(80), bursts(81), song(82)] {
            let o = try SoundMatcher(index: index, sampleRate: Self.rate)
            var named: [SoundMatch] = []
            for s in stride(from: 0, to: other.count, by: 1024) {
                named += other[s..<min(other.count, s + 1024)].withUnsafeBufferPointer { o.process($0) }
            }
            #expect(named.isEmpty && o.highestFollowing < LandmarkTuning.standard.followThreshold - 0.2, "\(named), \(o.highestFollowing)")
        }
    }

    @Test func aSharedMusicBedNamesNoCampaign() throws {
        // Two campaigns license the same song under different lines; a third uses it alone.
        let bed = song(21, rms: 0.05)
        let a = zip(bed, line(.flute, 22)).map(+), b = zip(bed, line(.piano, 23)).map(+)
        let index = SoundIndex(prints: try [a, b].map(reading))
        #expect(index.sharedCount > 0)
        #expect(try listen(index, bed[...]).isEmpty)
        // Each campaign is still named by what is its own.
        #expect(try listen(index, a[...]).first?.reference == 0)
        #expect(try listen(index, b[...]).first?.reference == 1)
    }

    @Test func aQuietVoiceOverASharedSongNamesItsCampaign() throws {
        // The song louder than the line over it: in a window the line gathers fewer votes of its
        // own than the song gives the other campaign, but the song votes for both, so the line
        // on top of it still names its campaign; the song alone still names neither.
        let bed = song(21, rms: 0.1)
        let a = zip(bed, line(.flute, 22).map { $0 * 0.5 }).map(+), b = zip(bed, line(.piano, 23)).map(+)
        let index = SoundIndex(prints: try [a, b].map(reading))
        let window = Int(6 * Self.rate)
        var named = 0
        for start in stride(from: 0, to: a.count - window, by: window) {
            let heard = try listen(index, a[start..<(start + window)])
            #expect(heard.allSatisfy { $0.reference == 0 })
            named += heard.isEmpty ? 0 : 1
            #expect(try listen(index, bed[start..<(start + window)]).isEmpty)
        }
        // 2 of the 4 (where the line's own evidence passes); none while the creative's own votes
        // alone faced the other's whole.
        #expect(named >= 2, "named in \(named) of 4 windows of 6 s")
    }

    @Test func theCombinedThresholdRisesWithTheCatalogue() throws {
        // 7.5 up to 100 creatives; 9.0 at 1 000, over the 7.7 that ten hours of unmarked audio
        // reached against 999; and a matcher reads it off its own index.
        #expect(LandmarkTuning.standard.combinedThreshold(creatives: 2) == 7.5 && LandmarkTuning.standard.combinedThreshold(creatives: 100) == 7.5)
        #expect(abs(LandmarkTuning.standard.combinedThreshold(creatives: 1000) - 9.0) < 1e-9)
        #expect(LandmarkTuning.standard.combinedThreshold(creatives: 4096) > 9.8)
        let prints = (1...3).map { SoundPrint(landmarks: [Landmark(hash: UInt32($0), frame: 0)], duration: 1) }
        #expect(try SoundMatcher(index: SoundIndex(prints: prints), sampleRate: Self.rate).combinedLimit == 7.5)
        let many = (0..<1000).map { SoundPrint(landmarks: [Landmark(hash: UInt32($0), frame: 0)], duration: 1) }
        #expect(abs(try SoundMatcher(index: SoundIndex(prints: many), sampleRate: Self.rate).combinedLimit - 9.0) < 1e-9)
    }

    /// Readings kept in their bytes and decoded when the index asks, as a catalogue's are.
    private struct EncodedReadings: SoundReadings {
        let encoded: [[UInt8]]
        var count: Int { encoded.count }
        func reading(_ i: Int) -> SoundPrint { try! SoundPrint(bytes: encoded[i]) }
        func landmarks(_ i: Int) -> [Landmark] { SoundPrint.landmarks(inBytes: encoded[i]) }
    }

    @Test func anIndexOfEncodedReadingsIsTheIndexOfTheDecodedOnes() throws {
        // harkd builds its index from the catalogue's bytes, one creative at a time: the same
        // entries must be held and set aside as shared, the same creatives related.
        let bed = song(31, rms: 0.05)
        let prints = try [zip(bed, line(.flute, 32)).map(+), zip(bed, line(.piano, 33)).map(+), song(34)].map(reading)
        #expect(prints.allSatisfy { SoundPrint.landmarks(inBytes: $0.bytes) == $0.landmarks })
        let decoded = SoundIndex(prints: prints)
        let encoded = SoundIndex(readings: EncodedReadings(encoded: prints.map(\.bytes)))
        #expect(decoded.sharedCount > 0)
        #expect(encoded.count == decoded.count && encoded.sharedCount == decoded.sharedCount && encoded.commonCount == decoded.commonCount)
        #expect((0..<3).map(encoded.count(of:)) == (0..<3).map(decoded.count(of:)))
        #expect(encoded.related == decoded.related && decoded.related[0] == [1])
    }

    @Test func anIndexGivenWhatItsCreativesShareIsTheIndexTheSearchBuilds() throws {
        // A catalogue file keeps what its creatives share so that a device loading it skips that
        // search: the index built from it must hold, set aside and relate exactly what the
        // search would, and take nothing that does not fit the readings it is built from.
        let bed = song(31, rms: 0.05)
        let prints = try [zip(bed, line(.flute, 32)).map(+), zip(bed, line(.piano, 33)).map(+), song(34)].map(reading)
        let searched = SoundIndex(readings: prints, keepSharing: true)
        let sharing = try #require(searched.sharing)
        #expect(searched.sharedCount > 0 && sharing[0].related == [1] && sharing[2].related.isEmpty)
        #expect(sharing.reduce(0) { $0 + $1.landmarks.count } == searched.sharedCount)
        #expect(SoundIndex(prints: prints).sharing == nil)
        let given = SoundIndex(readings: prints, sharing: sharing)
        #expect(given.reusedSharing && !searched.reusedSharing)
        #expect(given.entries == searched.entries && given.related == searched.related && given.sharedCount == searched.sharedCount)
        var outOfRange = sharing
        outOfRange[0].landmarks.append(Int32(prints[0].landmarks.count))
        var itself = sharing
        itself[1].related.append(1)
        for wrong in [Array(sharing.dropLast()), outOfRange, itself] {
            let index = SoundIndex(readings: prints, sharing: wrong)
            #expect(!index.reusedSharing && index.entries == searched.entries && index.related == searched.related)
        }
    }

    @Test func clockDriftOfAHundredAndFiftyPPMKeepsTheAlignment() throws {
        let creative = song(31)
        let index = SoundIndex(prints: [try reading(creative)])
        for ppm in [150.0, -150.0] {
            let resampler = Resampler(from: Self.rate, to: Self.rate * (1 + ppm * 1e-6))
            var y: [Float] = []
            creative.withUnsafeBufferPointer { resampler.process($0, into: &y) }
            resampler.finish(into: &y)
            let found = try listen(index, y[...])
            #expect(found.first?.reference == 0)
            #expect(found.first.map { abs(($0.offset ?? -1) - $0.time) < 0.04 } == true, "\(found)")
        }
    }

    @Test func aCreativeReadAtAnotherRateIsFound() throws {
        // A catalogue made from the 48 kHz master, a device capturing at 16 kHz.
        let master = render(MusicGenerator(rms: 0.1, sampleRate: 48_000, seed: 41, style: .drawn(seed: 41)), seconds: 20 / 3)
        let index = SoundIndex(prints: [try master.withUnsafeBufferPointer { try SoundPrint.read($0, sampleRate: 48_000) }])
        let resampler = Resampler(from: 48_000, to: Self.rate)
        var y: [Float] = []
        master.withUnsafeBufferPointer { resampler.process($0, into: &y) }
        resampler.finish(into: &y)
        #expect(try listen(index, y[...]).first?.reference == 0)
    }
}
