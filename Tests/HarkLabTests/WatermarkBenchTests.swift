import Foundation
import HarkDSP
import HarkTesting
import Testing
@testable import HarkLab
import HarkSynthesis
import HarkEngine

/// What the robustness bench refuses before it runs a trial.
@Suite struct WatermarkBenchTests {
    static let definitions = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../signals/watermark-bench.json").path

    /// The docs quote each of these files with the command that reruns it; one that no longer
    /// loads would fail only when someone tries.
    @Test func everyCommittedBenchDefinitionLoads() throws {
        let folder = URL(fileURLWithPath: Self.definitions).deletingLastPathComponent()
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasPrefix("watermark-bench") && $0.hasSuffix(".json") }
        #expect(files.count >= 2)
        for file in files {
            let d = try BenchDefinition.load(path: folder.appendingPathComponent(file).path)
            #expect(!d.hosts.isEmpty && !d.conditions.isEmpty && !d.windows.isEmpty, "\(file)")
        }
    }

    @Test func aCodecWithoutFFmpegIsRefusedNotSkipped() throws {
        let d = try BenchDefinition.load(path: Self.definitions)
        let codec = try #require(d.conditions.first { $0.codec != nil })
        #expect(throws: WatermarkBench.Failure.codecUnavailable(condition: codec.name, codec: codec.codec!)) {
            try WatermarkBench.checkTools(d) { _ in nil }
        }
        let error = WatermarkBench.Failure.codecUnavailable(condition: codec.name, codec: codec.codec!)
        #expect(error.description.contains("ffmpeg is not installed") && error.description.contains(codec.name))
        // With ffmpeg found, or with no condition needing it, nothing is refused.
        try WatermarkBench.checkTools(d) { $0 == "ffmpeg" ? "/usr/bin/ffmpeg" : nil }
        var withoutCodecs = d
        withoutCodecs.conditions = d.conditions.map { var c = $0; c.codec = nil; return c }
        try WatermarkBench.checkTools(withoutCodecs) { _ in nil }
    }

    /// Other catalogues read the condition's own windows: a row read with the condition's own
    /// catalogue again matches it trial for trial, and adding rows leaves the condition's as it was.
    @Test func otherCataloguesReadTheSameWindows() throws {
        let temporary = TemporaryDirectory(prefix: "hark-bench")
        let dir = temporary.path
        let json = """
        {"seed": 3, "strength": -10.5, "hostSeconds": 6, "hosts": [{"name": "noise", "kind": "pink", "count": 1}],
         "payloadsPerHost": 1, "windows": [3, 4.5], "offsetsPerWindow": 4,
         "conditions": [{"name": "clean", "catalogue": 1}],
         "falsePositives": {"minutesPerKind": 0, "kinds": []}}
        """
        var d = try JSONDecoder().decode(BenchDefinition.self, from: Data(json.utf8))
        let alone = try WatermarkBench.run(d, workDirectory: dir) { _ in }
        d.conditions[0].alsoCatalogues = [1, 4096]
        let more = try WatermarkBench.run(d, workDirectory: dir) { _ in }
        func figures(_ r: BenchRow) -> String { "\(r.window) \(r.trials) \(r.detected) \(r.wrong) \(String(describing: r.medianSeconds))" }
        #expect(alone.rows.map(\.condition) == ["clean", "clean"])
        #expect(more.rows.map(\.condition) == ["clean", "clean", "clean, catalogue of 1", "clean, catalogue of 1",
                                               "clean, catalogue of 4096", "clean, catalogue of 4096"])
        // A name that gives the condition's own catalogue's size says the other size instead.
        d.conditions[0].name = "clean, catalogue of 1"
        #expect(d.readings()[0].map(\.name) == ["clean, catalogue of 1", "clean, catalogue of 1", "clean, catalogue of 4096"])
        #expect(more.rows[0..<2].map(figures) == alone.rows.map(figures))
        #expect(more.rows[2..<4].map(figures) == alone.rows.map(figures))
        // Weak enough that the windows differ, or "the same" would say nothing.
        #expect(alone.rows.contains { $0.detected > 0 && $0.detected < $0.trials }, "\(alone.rows.map(figures))")
        #expect(more.rows[4..<6].allSatisfy { $0.trials == 4 }, "\(more.rows.map(figures))")
    }

    /// The sound's ceiling reads the creative where the trial put it: told the window's true
    /// start it names the creative, and no decoy; told another start, nothing, though the
    /// creative plays throughout.
    @Test func theSoundsCeilingReadsTheCreativeAtItsKnownPlace() throws {
        let rate = 16_000.0
        func song(_ seed: UInt64) -> [Float] {
            var g = MusicGenerator(rms: 0.1, sampleRate: rate, seed: seed, style: .drawn(seed: seed))
            var x = [Float](repeating: 0, count: Int(20 * rate))
            x.withUnsafeMutableBufferPointer { g.render(into: $0) }
            return x
        }
        let songs = (1...5).map { song(UInt64(40 + $0)) }
        let index = SoundIndex(prints: try songs.map { x in try x.withUnsafeBufferPointer { try SoundPrint.read($0, sampleRate: rate) } })
        let payload = WatermarkPayload(0xc0de_0001)
        let start = Int(8 * rate)
        let window = songs[0][start..<(start + Int(4 * rate))]
        let there = try WatermarkBench.ceiling(window, rate: rate, index: index, payload: payload, offset: start) { _ in }
        #expect(there.map(\.payload) == [payload])
        let elsewhere = try WatermarkBench.ceiling(window, rate: rate, index: index, payload: payload, offset: start - Int(3 * rate)) { _ in }
        #expect(elsewhere.isEmpty, "\(elsewhere.map(\.payload.hex))")
    }

    /// audfprint's rows need the program; without it the bench has none and says how to get it.
    @Test func audfprintIsFoundByItsVariableAndItsAnswersAreRead() throws {
        #expect(try AudfprintAnchor(environment: [:]) == nil)
        #expect(try AudfprintAnchor(environment: ["HARK_AUDFPRINT": ""]) == nil)
        do {
            _ = try AudfprintAnchor(environment: ["HARK_AUDFPRINT": "/nonexistent/audfprint.py"])
            Issue.record("a missing audfprint.py was taken")
        } catch let error as AudfprintAnchor.Failure {
            #expect(error.description.contains("/nonexistent/audfprint.py") && error.description.contains("github.com/dpwe/audfprint"))
        }
        let queries = ["/w/window-0.wav", "/w/window-1.wav", "/w/window-10.wav"]
        let output = """
            Tue Nov 27 17:01:02 2026 Reading hash table /w/trial.pklz
            Matched /w/window-0.wav 6.0 sec 2145 raw hashes as /w/creative-3.wav at   8.1 s with    31 of    40 common hashes at rank  0
            NOMATCH /w/window-1.wav 6.0 sec 1990 raw hashes
            Matched /w/window-10.wav 3.0 sec 1004 raw hashes as /h/song-500-40s-seed9001.wav at -2.0 s with     6 of     9 common hashes at rank  0
            Processed 3 files (15.0 s total dur) in 2.1 s sec = 0.140 x RT
            """
        let named = try AudfprintAnchor.parse(output, queries: queries)
        #expect(named["/w/window-0.wav"] == .some("/w/creative-3.wav"))
        #expect(named["/w/window-1.wav"] == .some(nil))
        // window-1 is a prefix of window-10: each line is its own query's.
        #expect(named["/w/window-10.wav"] == .some("/h/song-500-40s-seed9001.wav"))
        // A query without its line is an error, not a miss.
        #expect(throws: AudfprintAnchor.Failure.self) { try AudfprintAnchor.parse(output, queries: queries + ["/w/window-2.wav"]) }
        // Its rows sit after each sound-read condition's own.
        let d = try BenchDefinition.load(path: Self.definitions.replacing("watermark-bench.json", with: "watermark-bench-sound.json"))
        let rows = d.readings(anchor: true)[1]
        #expect(rows.last?.witness == .anchor && rows.last?.name.hasSuffix(": audfprint, 100 creatives") == true)
        #expect(!d.readings()[1].contains { $0.witness == .anchor })
    }

    /// A run that marked nothing (no hosts: the watermark-ceiling tool runs one to make the
    /// bench's noise files) says nothing of transparency or keys, rather than "inf to -inf dB".
    @Test func aTableOfNothingMarkedPrintsNoEmptyRanges() {
        var r = BenchReport()
        #expect(!WatermarkBench.table(r).contains("inf") && !WatermarkBench.table(r).contains("Wrong key"))
        r.ratioRange = (-31.5, -18.0)
        r.worstBand = -8.2
        r.wrongKeyWindows = 20
        let table = WatermarkBench.table(r)
        #expect(table.contains("Transparency: watermark -31.5 to -18.0 dB re host overall; closest 1/3-octave band -8.2 dB."))
        #expect(table.contains("Wrong key: 0 detections in 20 marked files."))
    }
}
