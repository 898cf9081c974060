import Foundation
import Testing
@testable import HarkDSP
@testable import HarkEngine
import HarkSynthesis

/// The shared analysis chain on its own: intervals, reports, detections and its refusals.
@Suite struct AnalysisPipelineTests {
    private func tone(seconds: Double, rate: Double, amplitude: Double = 0.1) -> [Float] {
        (0..<Int(seconds * rate)).map { Float(amplitude * sin(2 * Double.pi * 1000 * Double($0) / rate)) }
    }

    private func run(_ p: AnalysisPipeline, _ x: [Float], block: Int) throws -> [AnalysisPipeline.Output] {
        var out: [AnalysisPipeline.Output] = []
        var i = 0
        while i < x.count {
            let n = min(block, x.count - i)
            try x[i..<(i + n)].withUnsafeBufferPointer { try p.process($0) { out.append($0) } }
            i += n
        }
        try p.finish { out.append($0) }
        return out
    }

    private func detections(_ out: [AnalysisPipeline.Output]) -> [WatermarkDetection] {
        out.compactMap { if case .detection(let d) = $0 { return d } else { return nil } }
    }

    /// Generated music marked with the demo key at the default strength, as a campaign is aired.
    private func marked(seconds: Double, rate: Double, seed: UInt64, payload: WatermarkPayload) throws -> [Float] {
        var host = [Float](repeating: 0, count: Int(seconds * rate))
        host.withUnsafeMutableBufferPointer { var g = MusicGenerator(rms: 0.1, sampleRate: rate, seed: seed); g.render(into: $0) }
        let embedder = try WatermarkEmbedder(format: WatermarkFormat(key: .demo), payload: payload, sampleRate: rate)
        var mark: [Float] = []
        host.withUnsafeBufferPointer { embedder.process($0, into: &mark) }
        embedder.finish(into: &mark)
        return zip(host, mark).map(+)
    }

    @Test func intervalsAndReportsLandOnTheirBoundariesWhateverTheBlocks() throws {
        var s = AnalysisPipeline.Settings(sampleRate: 16_000)
        s.levelInterval = 0.25
        s.reportInterval = 1
        for block in [333, 4096] {
            let out = try run(AnalysisPipeline(s), tone(seconds: 2.1, rate: 16_000), block: block)
            let levels = out.compactMap { if case .level(_, let end) = $0 { return end } else { return nil } }
            let reports = out.compactMap { if case .report(let m) = $0 { return m } else { return nil } }
            #expect(levels.count == 9 && levels.prefix(8) == [0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2])
            #expect(abs(levels[8] - 2.1) < 1e-9)
            // Two whole report intervals and the last tenth of a second.
            #expect(reports.map(\.end).count == 3 && reports[0].end == 1 && reports[1].end == 2)
            #expect(abs(reports[0].meter.duration - 1) < 1e-9 && abs(reports[2].meter.duration - 0.1) < 1e-9)
            // A 0.1-amplitude 1 kHz sine: −20 dB re full-scale sine, A-weighting 0 dB at 1 kHz.
            #expect(abs((reports[0].meter.LAeq ?? 0) + 20) < 0.05)
            #expect(reports[0].bands.contains { $0.label == "1000" && abs(($0.level ?? 0) + 20) < 0.2 })
        }
    }

    @Test func detectionsAreInPipelineTimeAcrossARestart() throws {
        // A mark, with the search restarted at 4 s as after a gap:
        // the detection that follows is placed in the pipeline's time, not the new detector's.
        let rate = 48_000.0
        let x = try marked(seconds: 12, rate: rate, seed: 3, payload: WatermarkPayload(0xABCD))
        var s = AnalysisPipeline.Settings(sampleRate: rate)
        s.bands = false
        s.watermark = AnalysisPipeline.WatermarkSearch(key: .demo)
        let p = try AnalysisPipeline(s)
        var found: [WatermarkDetection] = []
        try x[0..<Int(4 * rate)].withUnsafeBufferPointer { try p.process($0) { if case .detection(let d) = $0 { found.append(d) } } }
        try p.restartWatermarkSearch()
        try x[Int(4 * rate)...].withUnsafeBufferPointer { try p.process($0) { if case .detection(let d) = $0 { found.append(d) } } }
        let after = try #require(found.first { $0.time > 4 })
        #expect(after.payload == WatermarkPayload(0xABCD))
        // The new search needs 2.4 s of its own audio: confirmed at 6.4 s of pipeline time, not
        // 2.4 s. The copy it completed is placed on the copy grid of the mark (which began at 0).
        #expect(after.time > 6.35 && after.time < 9, "\(after.time)")
        let grid = after.start / WatermarkFormat.copyDuration
        #expect(abs(grid - grid.rounded()) < 0.05 && after.start > 1, "\(after.start)")
    }

    @Test func aSearchAloneFindsWhatTheWholePipelineFindsAndNothingElse() throws {
        // `hark detect` runs the pipeline with its meter off: the same detections at the same
        // times, no levels and no reports, even when intervals are asked for.
        let rate = 48_000.0
        let x = try marked(seconds: 8, rate: rate, seed: 5, payload: WatermarkPayload(0x5EA5))
        var whole = AnalysisPipeline.Settings(sampleRate: rate)
        whole.levelInterval = 0.5
        whole.reportInterval = 2
        whole.repeatInterval = 0
        whole.watermark = AnalysisPipeline.WatermarkSearch(key: .demo)
        var alone = whole
        alone.meter = false
        let all = try run(AnalysisPipeline(whole), x, block: 4096)
        let searched = try run(AnalysisPipeline(alone), x, block: 1000)
        func detections(_ out: [AnalysisPipeline.Output]) -> [String] {
            out.compactMap { if case .detection(let d) = $0 { return "\(d.payload.hex) \(d.time) \(d.mark?.score ?? 0)" } else { return nil } }
        }
        #expect(!detections(all).isEmpty && detections(all).allSatisfy { $0.hasPrefix("00005ea5 ") })
        #expect(detections(searched) == detections(all))
        #expect(searched.count == detections(searched).count, "a search alone emitted levels or reports")
        #expect(all.count > detections(all).count)
    }

    @Test func aSearchAloneTakesTheDetectorsRates() throws {
        var s = AnalysisPipeline.Settings(sampleRate: 4_000)
        s.meter = false
        s.watermark = AnalysisPipeline.WatermarkSearch(key: .demo)
        #expect(throws: WatermarkDetectorError.rateTooLow(4_000)) { try AnalysisPipeline(s) }
        s.sampleRate = 384_000
        _ = try AnalysisPipeline(s)
    }

    @Test func anUnusableRateIsRefusedWithAReason() {
        // The meter's precondition used to trap here.
        var s = AnalysisPipeline.Settings(sampleRate: 4_000)
        s.watermark = AnalysisPipeline.WatermarkSearch(key: .demo)
        #expect(throws: RateOutOfRange(rate: 4_000)) { try AnalysisPipeline(s) }
        #expect(RateOutOfRange(rate: 4_000).description == "audio at 4000 Hz: the meter and the watermark search need 8 to 192 kHz")
    }

    @Test func theCreativesSoundAndItsMarkAreFusedIntoOneCampaign() throws {
        // A campaign's creative as aired, in a catalogue with another: its sound names it within
        // a second, its mark within a copy (2.4 s), and the mark's detection carries both.
        let rate = 48_000.0
        let payload = WatermarkPayload(0xC0FFEE42), other = WatermarkPayload(0x1234)
        let x = try marked(seconds: 8, rate: rate, seed: 7, payload: payload)
        var decoy = [Float](repeating: 0, count: Int(8 * rate))
        decoy.withUnsafeMutableBufferPointer { var g = MusicGenerator(rms: 0.1, sampleRate: rate, seed: 8, style: .drawn(seed: 8)); g.render(into: $0) }
        let prints = try [x, decoy].map { s in try s.withUnsafeBufferPointer { try SoundPrint.read($0, sampleRate: rate) } }
        var s = AnalysisPipeline.Settings(sampleRate: rate)
        s.meter = false
        s.watermark = AnalysisPipeline.WatermarkSearch(key: .demo, catalogue: [payload, other])
        s.sound = AnalysisPipeline.SoundSearch(index: SoundIndex(prints: prints), payloads: [payload, other])
        let found = try detections(run(AnalysisPipeline(s), x, block: 4096))
        #expect(found.allSatisfy { $0.payload == payload }, "\(found)")
        let sound = try #require(found.first)
        #expect(sound.evidence == .sound && sound.time < 2 && sound.mark == nil && sound.sound?.votes ?? 0 >= LandmarkTuning.standard.candidateVotes)
        #expect(abs((sound.sound?.offset ?? -1) - sound.time) < 0.05)
        let both = try #require(found.first { $0.evidence == .markAndSound })
        #expect(both.mark?.score ?? 0 >= 7 && both.sound != nil && abs((both.sound?.offset ?? -1) - both.time) < 0.1, "\(both)")
        let line = AnalysisEvent.detection(DetectionEvent(source: "x", detection: sound)).jsonLine
        #expect(line.contains(#""evidence":"sound","confidence":null,"score":null,"copies":0,"sound_votes":"#), "\(line)")
        #expect(AnalysisEvent.detection(DetectionEvent(source: "x", detection: both)).jsonLine.contains(#""evidence":"mark+sound""#))
    }

    /// 5.7 s of music marked 8 dB under the aired default with `payload`, and 1.3 s of pink
    /// noise to play before it.
    private static func faintCreative(_ payload: WatermarkPayload, rate: Double) throws -> (lead: [Float], creative: [Float]) {
        var host = [Float](repeating: 0, count: Int(5.7 * rate))
        host.withUnsafeMutableBufferPointer { var g = MusicGenerator(rms: 0.1, sampleRate: rate, seed: 12); g.render(into: $0) }
        let embedder = try WatermarkEmbedder(format: WatermarkFormat(key: .demo), payload: payload, sampleRate: rate, strength: -10)
        var mark: [Float] = []
        host.withUnsafeBufferPointer { embedder.process($0, into: &mark) }
        embedder.finish(into: &mark)
        var lead = [Float](repeating: 0, count: Int(1.3 * rate))
        lead.withUnsafeMutableBufferPointer { var g = PinkNoiseGenerator(rms: 0.03, sampleRate: rate, seed: 3); g.render(into: $0) }
        return (lead, zip(host, mark).map(+))
    }

    @Test func aFaintMarkIsConfirmedWhereTheSoundPlacesItsCreative() throws {
        // A creative marked 8 dB under the aired default, 1.3 s into the input, in a catalogue
        // of 100 campaigns: the mark's search never reaches its threshold (7.64), the sound
        // names the creative, and the mark read where the sound places it (6.95) confirms the
        // campaign: `mark+sound`, `"mark":"at-sound"`. Without the sound, nothing of the mark.
        let rate = 48_000.0
        let payload = WatermarkPayload(0xC0DE0007)
        let (lead, creative) = try Self.faintCreative(payload, rate: rate)
        var decoy = [Float](repeating: 0, count: Int(6 * rate))
        decoy.withUnsafeMutableBufferPointer { var g = MusicGenerator(rms: 0.1, sampleRate: rate, seed: 8, style: .drawn(seed: 8)); g.render(into: $0) }
        let prints = try [creative, decoy].map { x in try x.withUnsafeBufferPointer { try SoundPrint.read($0, sampleRate: rate) } }
        let others = (1...99).map { WatermarkPayload(0xD0_0000 + UInt32($0)) }
        var s = AnalysisPipeline.Settings(sampleRate: rate)
        s.meter = false
        s.watermark = AnalysisPipeline.WatermarkSearch(key: .demo, catalogue: others + [payload])
        let markAlone = try detections(run(AnalysisPipeline(s), lead + creative, block: 4096))
        #expect(markAlone.isEmpty, "\(markAlone)")
        s.sound = AnalysisPipeline.SoundSearch(index: SoundIndex(prints: prints), payloads: [payload, others[0]])
        let found = try detections(run(AnalysisPipeline(s), lead + creative, block: 4096))
        #expect(found.allSatisfy { $0.payload == payload }, "\(found)")
        let confirmed = try #require(found.first { $0.mark?.confirmedAtSound == true })
        #expect(confirmed.evidence == WatermarkDetection.Evidence.markAndSound && confirmed.mark?.score ?? 0 >= WatermarkDetector.confirmationThreshold)
        #expect(abs((confirmed.sound?.offset ?? -1) - (confirmed.time - 1.3)) < 0.05, "\(confirmed)")
        let line = AnalysisEvent.detection(DetectionEvent(source: "x", detection: confirmed)).jsonLine
        #expect(line.contains(#""evidence":"mark+sound""#) && line.contains(#""mark":"at-sound""#), "\(line)")
    }

    @Test func readersSideBySideFindTheSameDetectionsAtTheSameTimes() throws {
        // `hark detect` reads a block with the mark's search and the sound's readings on threads
        // of their own, the sound's confirmations with the next block's search: the input of
        // the test above, where the mark is heard only where the sound places it, with the
        // level meter on, gives the same detections, in the same order, either way; and the
        // levels and the report are the same.
        let rate = 48_000.0
        let payload = WatermarkPayload(0xC0DE0007)
        let (lead, creative) = try Self.faintCreative(payload, rate: rate)
        let airedPayload = WatermarkPayload(0xC0FFEE42)
        let aired = try marked(seconds: 6, rate: rate, seed: 7, payload: airedPayload)
        let prints = try [creative, aired].map { x in try x.withUnsafeBufferPointer { try SoundPrint.read($0, sampleRate: rate) } }
        let others = (1...98).map { WatermarkPayload(0xD0_0000 + UInt32($0)) }
        var s = AnalysisPipeline.Settings(sampleRate: rate)
        s.levelInterval = 1
        s.watermark = AnalysisPipeline.WatermarkSearch(key: .demo, catalogue: others + [payload, airedPayload])
        s.sound = AnalysisPipeline.SoundSearch(index: SoundIndex(prints: prints), payloads: [payload, airedPayload])
        let input = lead + creative + aired
        let oneByOne = try run(AnalysisPipeline(s), input, block: 4096)
        s.concurrentReadings = true
        let sideBySide = try run(AnalysisPipeline(s), input, block: 4096)
        let found = detections(oneByOne)
        #expect(found.contains { $0.mark?.confirmedAtSound == true } && found.contains { $0.payload == airedPayload && $0.mark != nil }, "\(found)")
        #expect(detections(sideBySide) == found)
        func levels(_ out: [AnalysisPipeline.Output]) -> [Double] {
            out.compactMap { if case .level(let l, let end) = $0 { return (l.LAeq ?? -1) + end } else { return nil } }
        }
        #expect(levels(sideBySide) == levels(oneByOne) && levels(oneByOne).count == Int((Double(input.count) / rate).rounded(.up)))
    }

    @Test func aPipelineStartedLaterInTheStreamReportsOnTheStreamsClock() throws {
        // harkd starts a new pipeline when the capture's format changes, at the stream time the
        // last one reached. Every analyser is built knowing it: the mark's search, the sound's
        // matcher, the confirmation at the sound's place, levels and reports all come out on the
        // stream's clock, exactly what a pipeline started at 0 says, moved by the start.
        let rate = 48_000.0
        let payload = WatermarkPayload(0xC0DE0007)
        let (lead, creative) = try Self.faintCreative(payload, rate: rate)
        let print = try creative.withUnsafeBufferPointer { try SoundPrint.read($0, sampleRate: rate) }
        let others = (1...99).map { WatermarkPayload(0xD0_0000 + UInt32($0)) }
        var s = AnalysisPipeline.Settings(sampleRate: rate)
        s.levelInterval = 1
        s.reportInterval = 4
        s.bands = false
        s.repeatInterval = 0
        s.watermark = AnalysisPipeline.WatermarkSearch(key: .demo, catalogue: others + [payload])
        s.sound = AnalysisPipeline.SoundSearch(index: SoundIndex(prints: [print]), payloads: [payload])
        func heard(from start: Double) throws -> [String] {
            var settings = s
            settings.startTime = start
            return try run(AnalysisPipeline(settings), lead + creative, block: 4096).map { output in
                func t(_ x: Double) -> String { String(format: "%.9f", x - start) }
                switch output {
                case .detection(let d):
                    return "\(d.evidence.rawValue) \(d.mark?.confirmedAtSound == true) \(t(d.time)) \(t(d.start)) \(t(d.windowStart))"
                case .level(_, let end): return "level \(t(end))"
                case .report(let m): return "report \(t(m.end))"
                }
            }
        }
        let fromZero = try heard(from: 0)
        #expect(fromZero.contains { $0.hasPrefix("mark+sound true ") }, "no confirmation at the sound's place: \(fromZero)")
        #expect(fromZero.contains { $0.hasPrefix("sound ") } && fromZero.contains("report 7.000000000"), "\(fromZero)")
        #expect(try heard(from: 86_400.25) == fromZero)
    }

    @Test func aCreativeOffAirIsNeverReportedByItsSound() throws {
        // The index holds both creatives (harkd indexes its whole catalogue once); the one played
        // is off air that day, so its sound names nothing, while on air it is named.
        let rate = 16_000.0
        let prints = try [1, 2].map { (seed: UInt64) -> SoundPrint in
            var x = [Float](repeating: 0, count: Int(8 * rate))
            x.withUnsafeMutableBufferPointer { var g = MusicGenerator(rms: 0.1, sampleRate: rate, seed: seed, style: .drawn(seed: seed)); g.render(into: $0) }
            return try x.withUnsafeBufferPointer { try SoundPrint.read($0, sampleRate: rate) }
        }
        var played = [Float](repeating: 0, count: Int(8 * rate))
        played.withUnsafeMutableBufferPointer { var g = MusicGenerator(rms: 0.1, sampleRate: rate, seed: 1, style: .drawn(seed: 1)); g.render(into: $0) }
        let index = SoundIndex(prints: prints)
        let payloads = [WatermarkPayload(0xA1), WatermarkPayload(0xA2)]
        func heard(offAir: Set<Int>) throws -> [WatermarkDetection] {
            var s = AnalysisPipeline.Settings(sampleRate: rate)
            s.meter = false
            s.sound = AnalysisPipeline.SoundSearch(index: index, payloads: payloads, offAir: offAir)
            return try detections(run(AnalysisPipeline(s), played, block: 4096))
        }
        let onAir = try heard(offAir: [1])
        #expect(!onAir.isEmpty && onAir.allSatisfy { $0.payload == payloads[0] }, "\(onAir)")
        #expect(try heard(offAir: [0]).isEmpty)
    }

    @Test func anAiringCodedCreativeHeardByItsSoundIsFreshOnlyWithinItsSlot() throws {
        // A campaign whose marks carry airing codes, its creative heard 1.5 s into a recording
        // that began at 20:14:00 UTC with no mark in it: its sound alone proves no airing, unless
        // the broadcaster's log has it starting then. The same recording a day later: unknown.
        let rate = 16_000.0
        var creative = [Float](repeating: 0, count: Int(8 * rate))
        creative.withUnsafeMutableBufferPointer { var g = MusicGenerator(rms: 0.1, sampleRate: rate, seed: 4, style: .drawn(seed: 4)); g.render(into: $0) }
        let print = try creative.withUnsafeBufferPointer { try SoundPrint.read($0, sampleRate: rate) }
        var lead = [Float](repeating: 0, count: Int(1.5 * rate))
        lead.withUnsafeMutableBufferPointer { var g = PinkNoiseGenerator(rms: 0.01, sampleRate: rate, seed: 3); g.render(into: $0) }
        let payload = WatermarkPayload(0xC0FFEE01), begins = 1_795_896_840.0
        let slot = AiringSlot(channel: 7, from: begins + 1.5, until: begins + 1.5, tolerance: 2)
        let airing = AiringCampaign(campaign: payload, key: try AiringKey(bytes: Array(0..<32)), channels: [7], slots: [slot])
        func heard(startUTC: Double) throws -> [WatermarkDetection] {
            var s = AnalysisPipeline.Settings(sampleRate: rate)
            s.meter = false
            s.watermark = AnalysisPipeline.WatermarkSearch(key: .demo, catalogue: [],
                                                           airing: .init(schedule: AiringSchedule(campaigns: [airing]), startUTC: startUTC))
            s.sound = AnalysisPipeline.SoundSearch(index: SoundIndex(prints: [print]), payloads: [payload])
            return try detections(run(AnalysisPipeline(s), lead + creative, block: 4096))
        }
        let aired = try heard(startUTC: begins)
        #expect(!aired.isEmpty && aired.allSatisfy { $0.evidence == .sound && $0.airingCoded && $0.airingSlot == slot && $0.airing?.channel == 7 && !$0.stale },
                "\(aired)")
        let line = AnalysisEvent.detection(DetectionEvent(source: "x", detection: aired[0])).jsonLine
        #expect(line.contains(#""airing":"fresh","channel":7,"minute":"2026-11-28T20:14Z","slot":"2026-11-28T20:14:01.500Z""#), "\(line)")
        let replayed = try heard(startUTC: begins + 86_400)
        #expect(!replayed.isEmpty && replayed.allSatisfy { $0.airing == nil && $0.airingSlot == nil }, "\(replayed)")
        #expect(AnalysisEvent.detection(DetectionEvent(source: "x", detection: replayed[0])).jsonLine.contains(#""airing":"unknown""#))
        // Live audio is placed by the clock, less the audio that came after the detection.
        let live = AnalysisPipeline.AiringListening(schedule: AiringSchedule(campaigns: [airing])) { begins }
        #expect(live.utc(at: 8, now: 10) == begins - 2)
        #expect(AnalysisPipeline.AiringListening(schedule: AiringSchedule(campaigns: [airing]), startUTC: begins).utc(at: 8, now: 10) == begins + 8)
    }

    @Test func theSoundsMatcherIsHandedOverBeforeItsFramesRunOut() throws {
        // A matcher's alignments are 32 bits (397 days of frames); the pipeline hands over to a
        // new one after `restartAfter` (100 days; here 5 s), and what it names after that is in
        // the pipeline's time, at the right place in the creative.
        let rate = 16_000.0
        var x = [Float](repeating: 0, count: Int(16 * rate))
        x.withUnsafeMutableBufferPointer { var g = MusicGenerator(rms: 0.1, sampleRate: rate, seed: 5, style: .drawn(seed: 5)); g.render(into: $0) }
        let print = try x.withUnsafeBufferPointer { try SoundPrint.read($0, sampleRate: rate) }
        var s = AnalysisPipeline.Settings(sampleRate: rate)
        s.meter = false
        s.sound = AnalysisPipeline.SoundSearch(index: SoundIndex(prints: [print]), payloads: [WatermarkPayload(0x5)])
        s.sound?.restartAfter = 5
        let pipeline = try AnalysisPipeline(s)
        let found = try detections(run(pipeline, x, block: 4096))
        #expect(pipeline.soundRestarts == 3)
        let late = found.filter { $0.time > 5.5 }
        #expect(!late.isEmpty, "\(found)")
        #expect(late.allSatisfy { abs(($0.sound?.offset ?? -1) - $0.time) < 0.1 && $0.windowStart >= 5 - 0.01 }, "\(late)")
    }

    @Test func withoutACatalogueTheMarkAloneIsTheEvidence() throws {
        let rate = 48_000.0
        let x = try marked(seconds: 6, rate: rate, seed: 9, payload: WatermarkPayload(0xABC))
        var s = AnalysisPipeline.Settings(sampleRate: rate)
        s.meter = false
        s.watermark = AnalysisPipeline.WatermarkSearch(key: .demo)
        let found = try detections(run(AnalysisPipeline(s), x, block: 4096))
        #expect(!found.isEmpty && found.allSatisfy { $0.evidence == .mark && $0.sound == nil })
        let line = AnalysisEvent.detection(DetectionEvent(source: "x", detection: found[0])).jsonLine
        #expect(line.contains(#""evidence":"mark","confidence":"#) && !line.contains("sound_votes"), "\(line)")
    }
}
