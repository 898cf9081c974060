import Foundation
import HarkCatalogue
import HarkDSP
import HarkTesting
import Testing
@testable import HarkDaemon
import HarkSynthesis

/// What harkd listens for from a campaign catalogue, and how it keeps what it had when a new
/// file cannot be trusted.
@Suite struct CampaignsOnAirTests {
    let dir = TemporaryDirectory(prefix: "hark-campaigns")

    private func sound(_ seed: UInt64) throws -> SoundPrint {
        var x = [Float](repeating: 0, count: 5 * 16_000)
        x.withUnsafeMutableBufferPointer { var g = MusicGenerator(rms: 0.1, sampleRate: 16_000, seed: seed, style: .drawn(seed: seed)); g.render(into: $0) }
        return try x.withUnsafeBufferPointer { try SoundPrint.read($0, sampleRate: 16_000) }
    }

    private func catalogue(_ name: String, _ campaigns: [Campaign]) throws -> String {
        let path = dir.file(name)
        let c = try CampaignCatalogue.openForWriting(path)
        for campaign in campaigns { try c.add(campaign) }
        return path
    }

    @Test func listensForTheCampaignsOnAirThatDay() throws {
        let path = try catalogue("c.hark", [
            Campaign(payload: WatermarkPayload(1), from: "2026-11-01", until: "2026-11-30", sound: try sound(1)),
            Campaign(payload: WatermarkPayload(2), from: "2026-12-01", sound: try sound(2)),
            Campaign(payload: WatermarkPayload(3), sound: try sound(3)),
        ])
        var onAir = CampaignsOnAir()
        let line = onAir.load(path, today: "2026-11-27")
        #expect(line == "catalogue \(path): 3 campaign(s), 2 on air today" && onAir.error == nil)
        #expect(onAir.payloadsOnAir == [WatermarkPayload(1), WatermarkPayload(3)])
        // One index of every campaign; the one off air is set aside.
        let index = try #require(onAir.search?.index)
        #expect(index.creatives == 3 && onAir.search?.offAir == [1])
        #expect(Daemon.analysisSettings(DaemonConfiguration(), onAir).analysis.watermark?.catalogue == [WatermarkPayload(1), WatermarkPayload(3)])
        // The same day again changes nothing; the next month brings campaign 2 and ends 1,
        // with the same index.
        let same = onAir.choose(today: "2026-11-27"), next = onAir.choose(today: "2026-12-01")
        #expect(!same && next)
        #expect(onAir.payloadsOnAir == [WatermarkPayload(2), WatermarkPayload(3)])
        #expect(onAir.search?.index === index && onAir.search?.offAir == [0])
        // With no campaign on air nothing is searched by sound, and the mark is read as without one.
        let none = try catalogue("none.hark", [Campaign(payload: WatermarkPayload(9), until: "2020-01-01", sound: try sound(9))])
        let noneLine = onAir.load(none, today: "2026-11-27")
        #expect(noneLine == "catalogue \(none): 1 campaign(s), 0 on air today")
        #expect(onAir.search == nil)
        var c = DaemonConfiguration()
        c.catalogue = [WatermarkPayload(7)]
        #expect(Daemon.analysisSettings(c, onAir).analysis.watermark?.catalogue == [WatermarkPayload(7)] && Daemon.analysisSettings(c, onAir).analysis.sound == nil)
    }

    @Test func keepsWhatItHadWhenTheNewFileCannotBeTrusted() throws {
        let path = try catalogue("c.hark", [Campaign(payload: WatermarkPayload(0xC0FFEE42), sound: try sound(4))])
        var onAir = CampaignsOnAir()
        _ = onAir.load(path, today: "2026-11-27")
        let before = try #require(onAir.search)
        // The file is replaced by a truncated copy of itself, then by text.
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: path))
        let loaded = onAir.load(path, today: "2026-11-27")
        let line = try #require(loaded)
        #expect(line.hasPrefix("\(path): catalogue damaged") && line.hasSuffix("still listening for the 1 campaign(s) read before"), "\(line)")
        #expect(onAir.search == before && onAir.error?.hasPrefix("\(path): catalogue damaged") == true)
        try "c0ffee42\n".write(toFile: path, atomically: true, encoding: .utf8)
        let text = onAir.load(path, today: "2026-11-27")
        #expect(text?.contains("not a Hark campaign catalogue (not a SQLite database)") == true)
        #expect(onAir.search == before)
        // A catalogue that never loaded leaves the mark alone to listen for.
        var fresh = CampaignsOnAir()
        let missing = dir.file("missing.hark")
        let nothing = fresh.load(missing)
        #expect(nothing == "\(missing): no such catalogue; listening for marks alone")
        #expect(fresh.search == nil && fresh.error == "\(missing): no such catalogue")
    }

    @Test func theSettingNamesAFileOrPayloads() throws {
        var c = DaemonConfiguration()
        try c.apply(file: "catalogue = /var/lib/hark/campaigns.hark\nshake-evidence = mark\n", source: "f")
        #expect(c.catalogueFile == "/var/lib/hark/campaigns.hark" && c.catalogue.isEmpty && c.shakeEvidence == .mark)
        try c.override("catalogue", "c0ffee42")
        #expect(c.catalogueFile == nil && c.catalogue == [WatermarkPayload(0xC0FFEE42)])
        #expect(throws: DaemonConfiguration.ParseError(source: "f", line: 1, message: "shake-evidence must be any or mark, not 'sound'")) {
            try c.apply(file: "shake-evidence = sound", source: "f")
        }
    }

    @Test func aShakeCanAskForTheMark() throws {
        #expect(try Command.parse(#"{"cmd":"shake","evidence":"mark"}"#).get() == .shake(seconds: 6, id: nil, evidence: .mark))
        #expect(try Command.parse(#"{"cmd":"shake"}"#).get() == .shake(seconds: 6, id: nil, evidence: nil))
        guard case .failure(let r) = Command.parse(#"{"cmd":"shake","evidence":"sound","id":"e"}"#) else { Issue.record("accepted"); return }
        #expect(r.message == #"evidence must be "any" or "mark", not "sound""# && r.id == "e")
    }
}
