import Foundation
import HarkTesting
import Testing
@testable import HarkDSP
@testable import HarkLab
import HarkEngine
import HarkSoundFile

/// The transparency bench's parts that need no PEAQ: its definitions, its table and what it
/// says when `peaq` is missing. (The grades themselves come from `tools/bench-transparency`.)
@Suite(.serialized) struct TransparencyBenchTests {
    @Test func definitionsInTheRepositoryLoadAndCoverTheExposingHosts() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../signals/transparency-bench.json").path
        let d = try TransparencyDefinition.load(path: path)
        #expect(Set(d.profiles) == Set(WatermarkProfile.allCases))
        let kinds = Set(d.hosts.map(\.kind))
        for kind in ["speech", "sparse-speech", "flute", "piano", "drums", "advert"] { #expect(kinds.contains(kind), "\(kind)") }
        #expect(kinds.isSubset(of: Set(BenchHosts.kinds)))
        #expect(d.targets?["tv"]?.median == -0.5 && d.targets?["tv"]?.worst == -1.0)
    }

    @Test func tableGivesMedianWorstAndTargets() {
        var r = TransparencyReport()
        r.columns = [(.tv, WatermarkProfile.tv.defaultStrength), (.tv, 0)]
        func g(_ odg: Double, _ ratio: Double) -> TransparencyGrade { TransparencyGrade(odgs: [odg], ratios: [ratio]) }
        r.rows = [TransparencyRow(host: "speech", baseline: 0.1, grades: [g(-0.2, -31), g(-1.5, -21)]),
                  TransparencyRow(host: "flute", baseline: 0.1, grades: [g(-0.1, -40), g(-1.0, -30)]),
                  TransparencyRow(host: "drums", baseline: 0.0, grades: [g(-0.9, -35), g(-2.0, -25)])]
        r.targets = ["tv": .init(median: -0.5, worst: -1.0)]
        #expect(r.median(0) == -0.2 && r.worst(0) == -0.9 && r.median(1) == -1.5 && r.worst(1) == -2.0)
        let table = TransparencyBench.table(r)
        #expect(table.contains("| speech | 0.10 | -0.20 (-31 dB) | -1.50 (-21 dB) |"))
        #expect(table.contains("| **worst** | | **-0.90** | **-2.00** |"))
        #expect(table.contains("Target, tv profile at the default strength: median ≥ -0.5, every host ≥ -1.0: met."))
    }

    /// With a crowd, each strength is graded twice, on the programme alone and as heard, each
    /// column labelled and held to the target.
    @Test func aCrowdGradesTheProgrammeAloneAndAsHeard() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../signals/transparency-bench-crowd.json").path
        let d = try TransparencyDefinition.load(path: path)
        #expect(d.crowd?.level == 2 && d.profiles == [.stadium])
        var r = TransparencyReport()
        r.columns = [(.stadium, -4), (.stadium, -4)]
        r.asHeard = [false, true]
        r.rows = [TransparencyRow(host: "speech", baseline: 0.1, grades: [TransparencyGrade(odgs: [-3.0], ratios: [-20]),
                                                                          TransparencyGrade(odgs: [-0.6], ratios: [-20])])]
        r.targets = ["stadium": .init(median: -1.0, worst: -1.5)]
        let table = TransparencyBench.table(r)
        #expect(table.contains("| host | baseline | stadium, -4 dB, programme alone | stadium, -4 dB, as heard |"), "\(table)")
        #expect(table.contains("Target, stadium profile at -4 dB, as heard: median ≥ -1.0, every host ≥ -1.5: met."), "\(table)")
        #expect(table.contains("Target, stadium profile at -4 dB, programme alone: median ≥ -1.0, every host ≥ -1.5: not met."), "\(table)")
    }

    @Test func severalDrawsGradeEachHostByItsMedianAndWorstDraw() {
        var r = TransparencyReport()
        r.columns = [(.tv, WatermarkProfile.tv.defaultStrength)]
        r.rows = [TransparencyRow(host: "speech", baseline: 0.1,
                                  grades: [TransparencyGrade(odgs: [-0.8, -1.1, -0.7], ratios: [-27, -26, -28])]),
                  TransparencyRow(host: "flute", baseline: 0.1,
                                  grades: [TransparencyGrade(odgs: [-0.3, -0.2, -0.4], ratios: [-30, -30, -31])]),
                  TransparencyRow(host: "drums", baseline: 0.0,
                                  grades: [TransparencyGrade(odgs: [-0.1, -0.5, -0.45], ratios: [-33, -33, -33])])]
        r.targets = ["tv": .init(median: -0.5, worst: -1.0)]
        // Host medians -0.8, -0.3, -0.45: their median is -0.45, within -0.5; but speech's worst
        // draw, -1.1, is under -1.0, so one campaign in three would be heard there.
        #expect(r.draws == 3 && r.median(0) == -0.45 && r.worst(0) == -1.1)
        let table = TransparencyBench.table(r)
        #expect(table.contains("| speech | 0.10 | -0.80 / -1.10 (-27 dB) |"))
        #expect(table.contains("over 3 draws of payload and key"))
        #expect(table.contains("every host ≥ -1.0: not met."))
    }

    @Test func theFirstDrawOfEachHostIsTheOneASingleDrawReads() {
        let one = TransparencyBench.draws(seed: 1, hosts: 9, count: 1)
        let eight = TransparencyBench.draws(seed: 1, hosts: 9, count: 8)
        #expect(one.count == 9 && eight.allSatisfy { $0.count == 8 })
        #expect(zip(one, eight).allSatisfy { $0[0].payload == $1[0].payload && $0[0].key.bytes == $1[0].key.bytes })
        // The other draws differ from the first and from each other host's.
        let payloads = Set(eight.flatMap { $0.map(\.payload.value) })
        #expect(payloads.count == 72)
    }

    @Test func missingPEAQSaysHowToGetIt() throws {
        let saved = ProcessInfo.processInfo.environment["PEAQ"]
        setenv("PEAQ", "/nonexistent/peaq", 1)
        defer { if let saved { setenv("PEAQ", saved, 1) } else { unsetenv("PEAQ") } }
        do {
            _ = try PEAQGrader()
            Issue.record("a grader was made without peaq")
        } catch let error as PEAQGrader.Failure {
            #expect(error.description.contains("HSU-ANT/gstpeaq") && error.description.contains("$PEAQ"))
        }
    }

    @Test func deliveryIsSixteenBitWithItsOwnDither() throws {
        let temporary = TemporaryDirectory(prefix: "hark-deliver")
        let dir = temporary.path
        let source = dir + "/in.wav"
        let w = try SoundFileWriter(path: source, sampleRate: 48_000, channels: 1, format: .init(container: .wav, encoding: .f32))
        try [Float](repeating: 0, count: 48_000).withUnsafeBufferPointer { try w.write($0) }
        try w.finish()
        try TransparencyBench.deliver(source, to: dir + "/a.wav", seed: 1)
        try TransparencyBench.deliver(source, to: dir + "/b.wav", seed: 2)
        func read(_ p: String) throws -> [Float] {
            let r = try SoundFileReader(path: p)
            #expect(r.outputFormat?.encoding == .s16)
            var x = [Float](repeating: 0, count: 48_000)
            _ = try x.withUnsafeMutableBufferPointer { try r.read(into: $0) }
            return x
        }
        let a = try read(dir + "/a.wav"), b = try read(dir + "/b.wav")
        // Silence becomes ±1 LSB of dither, different in each file.
        #expect(a.allSatisfy { abs($0) <= 1.5 / 32768 } && a.contains { $0 != 0 } && a != b)
    }
}
