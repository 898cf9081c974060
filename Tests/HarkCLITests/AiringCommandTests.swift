import Foundation
import HarkTesting
import Testing

/// Airing codes from the command line: a creative marked minute by minute as it airs, its
/// campaign's key in the catalogue, and `hark detect --at` telling a fresh airing from a
/// recording played back.
@Suite struct AiringCommandTests {
    let dir = TemporaryDirectory()
    static let key = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

    /// 20 s of music aired on channel 7 from 20:14:50 UTC, so its copies carry two minutes' codes.
    private func aired() throws -> (catalogue: String, aired: String) {
        let host = dir.file("host.wav"), aired = dir.file("aired.wav"), catalogue = dir.file("c.hark")
        let generate = try Hark.run(["generate", "music", host, "--duration", "20", "--seed", "3"])
        #expect(generate.status == 0, "\(generate.stderr)")
        let embed = try Hark.run(["embed", host, aired, "--payload", "c0ffee01", "--airing-key", Self.key, "--channel", "7",
                                  "--airing-start", "2026-11-28T20:14:50Z", "--catalogue", catalogue])
        #expect(embed.status == 0, "\(embed.stderr)")
        #expect(embed.stdout.contains("payload c0ffee01 as airing codes on channel 7 from 2026-11-28T20:14Z"), "\(embed.stdout)")
        return (catalogue, aired)
    }

    private func marks(_ run: HarkRun) -> [[String: Any]] {
        run.jsonObjects.compactMap { $0 }.filter { $0["evidence"] as? String != "sound" }
    }

    @Test func aFreshAiringIsNamedWithItsChannelAndMinutes() throws {
        let (catalogue, aired) = try aired()
        let list = try Hark.run(["catalogue", "list", catalogue, "--json"])
        #expect(list.jsonObjects.first??["airing_channels"] as? [Int] == [7], "\(list.stdout)")
        let run = try Hark.run(["detect", "--json", aired, "--catalogue", catalogue, "--at", "2026-11-28T20:14:50Z"])
        #expect(run.status == 0, "\(run.stderr)")
        let found = marks(run)
        #expect(!found.isEmpty && found.allSatisfy { $0["payload"] as? String == "c0ffee01" && $0["airing"] as? String == "fresh" && $0["channel"] as? Int == 7 }, "\(run.stdout)")
        // The code the mark carried is the minute's, not the campaign's payload.
        #expect(found.contains { $0["minute"] as? String == "2026-11-28T20:14Z" && $0["code"] as? String == "66eedd8f" }, "\(run.stdout)")
        #expect(found.contains { $0["minute"] as? String == "2026-11-28T20:15Z" }, "\(run.stdout)")
    }

    @Test func aRecordingPlayedBackLaterIsStaleAndOlderOnesAreNotHeard() throws {
        let (catalogue, aired) = try aired()
        let later = try Hark.run(["detect", "--json", aired, "--catalogue", catalogue, "--at", "2026-11-28T20:44:50Z"])
        #expect(later.status == 0, "\(later.stderr)")
        let stale = marks(later)
        #expect(!stale.isEmpty && stale.allSatisfy { $0["airing"] as? String == "stale" && $0["minute"] is String }, "\(later.stdout)")
        // The text line says so too, with the airing's minute.
        let text = try Hark.run(["detect", aired, "--catalogue", catalogue, "--at", "2026-11-28T20:44:50Z"])
        #expect(text.stdout.contains("; stale: a recording of an earlier airing (aired 2026-11-28T20:1"), "\(text.stdout)")
        // Beyond the stale horizon the mark is an unknown one: only the sound names the creative.
        let much = try Hark.run(["detect", "--json", aired, "--catalogue", catalogue, "--at", "2026-11-28T20:44:50Z", "--stale-minutes", "20"])
        #expect(marks(much).isEmpty, "\(much.stdout)")
        #expect(much.jsonObjects.contains { $0?["evidence"] as? String == "sound" })
    }

    @Test func refusesWhatCannotBeCoded() throws {
        let (catalogue, aired) = try aired()
        // Without --at the airing codes cannot be told: their marks are not listened for, and
        // it says so; the creative's sound still is (and answers nothing about freshness).
        let noTime = try Hark.run(["detect", "--json", aired, "--catalogue", catalogue])
        #expect(noTime.status == 0 && noTime.stderr.contains("1 campaign(s) carry airing codes, whose marks are not listened for without --at"),
                "\(noTime.stderr)")
        #expect(marks(noTime).isEmpty && noTime.jsonObjects.contains { $0?["evidence"] as? String == "sound" }, "\(noTime.stdout)")
        let local = try Hark.run(["detect", aired, "--catalogue", catalogue, "--at", "2026-11-28T20:14:50"])
        #expect(local.status != 0 && local.stderr.contains("--at must be UTC"), "\(local.stderr)")
        let short = try Hark.run(["embed", aired, dir.file("x.wav"), "--payload", "1", "--airing-key", "0011", "--channel", "1",
                                  "--airing-start", "2026-11-28T20:14:50Z"])
        #expect(short.status != 0 && short.stderr.contains("16 to 64 bytes"), "\(short.stderr)")
        let noChannel = try Hark.run(["embed", aired, dir.file("x.wav"), "--payload", "1", "--airing-key", Self.key])
        #expect(noChannel.status != 0 && noChannel.stderr.contains("--airing-key needs --channel and --airing-start"), "\(noChannel.stderr)")
        let noChannels = try Hark.run(["catalogue", "add", catalogue, aired, "--payload", "2", "--airing-key", Self.key])
        #expect(noChannels.status != 0 && noChannels.stderr.contains("--airing-key and --airing-channels go together"), "\(noChannels.stderr)")
    }
}
