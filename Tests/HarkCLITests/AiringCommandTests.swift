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

    @Test func analyzeTellsTheAiringToo() throws {
        // hark analyze --watermark reads airing codes as hark detect does: one set of options.
        let (catalogue, aired) = try aired()
        let run = try Hark.run(["analyze", "--json", aired, "--catalogue", catalogue, "--at", "2026-11-28T20:14:50Z"])
        #expect(run.status == 0, "\(run.stderr)")
        let found = run.jsonObjects.compactMap { $0 }.filter { $0["class"] as? String == "detection" && $0["evidence"] as? String != "sound" }
        #expect(!found.isEmpty && found.allSatisfy { $0["payload"] as? String == "c0ffee01" && $0["airing"] as? String == "fresh" }, "\(run.stdout)")
        let later = try Hark.run(["analyze", "--json", aired, "--catalogue", catalogue, "--at", "2026-11-28T20:44:50Z"])
        let stale = later.jsonObjects.compactMap { $0 }.filter { $0["class"] as? String == "detection" && $0["evidence"] as? String != "sound" }
        #expect(!stale.isEmpty && stale.allSatisfy { $0["airing"] as? String == "stale" }, "\(later.stdout)")
        #expect(later.jsonObjects.contains { $0?["class"] as? String == "report" })
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

    /// A creative heard by its sound alone (here: its unmarked audio, as a room too loud for
    /// its mark would leave it) is fresh when the broadcaster's log has it airing then, and
    /// unknown when the same recording is played the next day; the log's errors are said by line.
    @Test func aLoggedAiringMakesTheSoundAloneFresh() throws {
        let host = dir.file("host.wav"), catalogue = dir.file("slots.hark"), log = dir.file("asrun.csv")
        let generate = try Hark.run(["generate", "music", host, "--duration", "20", "--seed", "3"])
        #expect(generate.status == 0, "\(generate.stderr)")
        let add = try Hark.run(["catalogue", "add", catalogue, host, "--payload", "c0ffee01", "--airing-key", Self.key, "--airing-channels", "7"])
        #expect(add.status == 0, "\(add.stderr)")
        try "house,channel,payload,start\nH1,7,c0ffee01,2026-11-28T20:14:50Z\nH2,7,0badf00d,2026-11-28T20:20:00Z\n".write(toFile: log, atomically: true, encoding: .utf8)
        let imported = try Hark.run(["catalogue", "slots", catalogue, log, "--tolerance", "20"])
        #expect(imported.status == 0 && imported.stdout.contains("1 airing slot(s) of 1 campaign(s) on 1 channel(s)"), "\(imported.stdout)")
        #expect(imported.stderr.contains("skipped the rows of 1 payload(s) the catalogue does not hold: 0badf00d"), "\(imported.stderr)")
        let list = try Hark.run(["catalogue", "list", catalogue, "--json"])
        #expect(list.jsonObjects.first??["airing_slots"] as? Int == 1, "\(list.stdout)")

        let aired = try Hark.run(["detect", "--json", host, "--catalogue", catalogue, "--at", "2026-11-28T20:14:50Z"])
        let sound = aired.jsonObjects.compactMap { $0 }.filter { $0["evidence"] as? String == "sound" }
        #expect(!sound.isEmpty && sound.allSatisfy { $0["airing"] as? String == "fresh" && $0["slot"] as? String == "2026-11-28T20:14:50.000Z" },
                "\(aired.stdout)")
        let nextDay = try Hark.run(["detect", "--json", host, "--catalogue", catalogue, "--at", "2026-11-29T20:14:50Z"])
        let replayed = nextDay.jsonObjects.compactMap { $0 }
        #expect(!replayed.isEmpty && replayed.allSatisfy { $0["airing"] as? String == "unknown" && $0["slot"] == nil }, "\(nextDay.stdout)")
        // Outside the tolerance (30 s late) is no airing either.
        let late = try Hark.run(["detect", "--json", host, "--catalogue", catalogue, "--at", "2026-11-28T20:15:20Z"])
        #expect(late.jsonObjects.compactMap { $0 }.allSatisfy { $0["airing"] as? String == "unknown" }, "\(late.stdout)")

        try "channel,payload,start\n7,c0ffee01,yesterday\n".write(toFile: log, atomically: true, encoding: .utf8)
        let bad = try Hark.run(["catalogue", "slots", catalogue, log])
        #expect(bad.status == 1 && bad.stderr.contains("asrun.csv: line 2: start 'yesterday' is not UTC as 2026-11-28T20:14:05Z"), "\(bad.stderr)")
        #expect(try Hark.run(["catalogue", "list", catalogue, "--json"]).jsonObjects.first??["airing_slots"] as? Int == 1, "nothing lost")
        let wide = try Hark.run(["catalogue", "slots", catalogue, log, "--tolerance", "900"])
        #expect(wide.status != 0 && wide.stderr.contains("--tolerance must be 0 to 300 seconds"), "\(wide.stderr)")
    }
}
