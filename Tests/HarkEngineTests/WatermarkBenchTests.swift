import Foundation
import Testing
@testable import HarkEngine

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
