import Foundation
import HarkCatalogue
import HarkTesting
import Testing

/// `hark catalogue` and the detecting commands' `--catalogue FILE`, run as a user would.
@Suite struct CatalogueCommandTests {
    let dir = TemporaryDirectory()

    private func generate(_ kind: String, _ name: String, seconds: Double = 10, seed: Int = 1) throws -> String {
        let path = dir.file(name)
        let run = try Hark.run(["generate", kind, path, "--duration", String(seconds), "--seed", String(seed)])
        #expect(run.status == 0, "\(run.stderr)")
        return path
    }

    /// A catalogue of two campaigns: generated music marked with c0ffee42 as it leaves the
    /// embedder, and pink noise (unmarked) as 00001234.
    private func catalogue() throws -> (catalogue: String, aired: String) {
        let host = try generate("music", "host.wav"), aired = dir.file("aired.wav"), catalogue = dir.file("campaigns.hark")
        let embed = try Hark.run(["embed", host, aired, "--payload", "c0ffee42", "--catalogue", catalogue,
                                  "--name", "Coffee", "--from", "2026-01-01", "--until", "2099-12-31"])
        #expect(embed.status == 0, "\(embed.stderr)")
        #expect(embed.stdout.contains("\(catalogue): added c0ffee42"))
        let noise = try generate("pink", "noise.wav")
        let add = try Hark.run(["catalogue", "add", catalogue, noise, "--payload", "1234"])
        #expect(add.status == 0 && add.stdout.contains("added 00001234"), "\(add.stderr)")
        return (catalogue, aired)
    }

    @Test func listsWhatItHolds() throws {
        let (catalogue, _) = try catalogue()
        let list = try Hark.run(["catalogue", "list", catalogue, "--json"])
        #expect(list.status == 0, "\(list.stderr)")
        let objects = list.jsonObjects.compactMap { $0 }
        #expect(objects.map { $0["payload"] as? String } == ["00001234", "c0ffee42"])
        let coffee = try #require(objects.last)
        #expect(coffee["class"] as? String == "campaign" && coffee["name"] as? String == "Coffee")
        #expect(coffee["from"] as? String == "2026-01-01" && coffee["until"] as? String == "2099-12-31")
        #expect(coffee["on_air"] as? Bool == true && objects.first?["on_air"] as? Bool == true)
        // A reading, never the audio: 10 s of 48 kHz audio is 960 kB as 16-bit samples.
        #expect((coffee["bytes"] as? Int ?? .max) < 25_000 && (coffee["landmarks"] as? Int ?? 0) > 500, "\(coffee)")
        // Its learned reading: an embedding every quarter second of the creative, a byte a value.
        #expect((coffee["embeddings"] as? Int ?? 0) >= 30 && (coffee["embedding_bytes"] as? Int ?? .max) < 5_000, "\(coffee)")
        // The table has a heading, and every column starts where its heading does.
        let lines = try Hark.run(["catalogue", "list", catalogue]).stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 3 && lines[0].hasPrefix("payload   on air  from"), "\(lines)")
        #expect(lines[2].hasPrefix("c0ffee42  yes     2026-01-01  2099-12-31"), "\(lines)")
        func startsAt(_ line: String, _ column: Int) -> Bool {
            let c = Array(line)
            return c.count > column && c[column - 1] == " " && c[column] != " "
        }
        for heading in ["on air", "from", "until"] {
            let column = Array(lines[0]).count - Array(lines[0][lines[0].range(of: heading)!.lowerBound...]).count
            #expect(lines.dropFirst().allSatisfy { startsAt($0, column) }, "\(heading): \(lines)")
        }
        let name = Array(lines[0]).count - Array(lines[0][lines[0].range(of: "name")!.lowerBound...]).count
        #expect(startsAt(lines[2], name) && lines[2].hasSuffix("Coffee"), "\(lines)")
        // What the creatives share is found as the file is written, for whoever listens with it.
        #expect(try CampaignCatalogue.readForListening(catalogue).sharing?.count == 2)
        let removed = try Hark.run(["catalogue", "remove", catalogue, "1234"])
        #expect(removed.status == 0)
        #expect(try Hark.run(["catalogue", "list", catalogue, "--json"]).jsonObjects.count == 1)
        #expect(try CampaignCatalogue.readForListening(catalogue).sharing?.count == 1)
        let again = try Hark.run(["catalogue", "remove", catalogue, "1234"])
        #expect(again.status == 1 && again.stderr.contains("\(catalogue): no campaign 00001234"))
    }

    @Test func detectNamesTheCampaignBySoundThenByMarkAndSound() throws {
        let (catalogue, aired) = try catalogue()
        let run = try Hark.run(["detect", "--json", aired, "--catalogue", catalogue])
        #expect(run.status == 0, "\(run.stderr)")
        let found = run.jsonObjects.compactMap { $0 }
        #expect(found.allSatisfy { $0["payload"] as? String == "c0ffee42" }, "\(run.stdout)")
        let first = try #require(found.first)
        #expect(first["evidence"] as? String == "sound" && (first["t"] as? Double ?? 99) < 2, "\(first)")
        #expect(first["score"] is NSNull && (first["sound_votes"] as? Int ?? 0) > 0 && first["offset"] is Double)
        #expect(found.contains { $0["evidence"] as? String == "mark+sound" && $0["score"] is Double }, "\(run.stdout)")
        // The noise campaign's own creative is named by its sound alone.
        let noise = try Hark.run(["detect", dir.file("noise.wav"), "--catalogue", catalogue])
        #expect(noise.status == 0 && noise.stdout.contains("payload 00001234") && noise.stdout.contains("by its sound"), "\(noise.stdout)")
        // Audio that is none of them: nothing, exit 2.
        let other = try generate("pink", "other.wav", seed: 9)
        let none = try Hark.run(["detect", other, "--catalogue", catalogue])
        #expect(none.status == 2 && none.stdout.contains("no watermark found"), "\(none.stdout)")
    }

    /// A catalogue read with another key than its creatives were marked with says so, by the
    /// keys' fingerprints (the file holds those, never a key), where it would otherwise say only
    /// "no watermark found"; the same key says nothing.
    @Test func aDetectionWithAnotherKeyIsToldSo() throws {
        let host = try generate("music", "host.wav"), aired = dir.file("aired.wav"), catalogue = dir.file("keyed.hark")
        #expect(try Hark.run(["embed", host, aired, "--payload", "c0ffee42", "--key", "my secret", "--catalogue", catalogue]).status == 0)
        let noise = try generate("pink", "noise.wav")
        #expect(try Hark.run(["catalogue", "add", catalogue, noise, "--payload", "1234", "--key", "my secret"]).status == 0)
        let other = try generate("pink", "other.wav", seed: 9)
        let wrong = try Hark.run(["detect", other, "--catalogue", catalogue])
        #expect(wrong.status == 2)
        #expect(wrong.stderr.contains("warning: 2 of 2 campaigns in \(catalogue) were marked with another key (fingerprint "), "\(wrong.stderr)")
        #expect(wrong.stdout.contains("no watermark found (2 campaign(s) of the catalogue were marked with another key than the one given)"),
                "\(wrong.stdout)")
        let right = try Hark.run(["detect", other, "--catalogue", catalogue, "--key", "my secret"])
        #expect(right.status == 2 && !right.stderr.contains("another key") && right.stdout.hasSuffix("no watermark found\n"), "\(right.stderr)")
        // The mark itself needs the key; the creative's sound does not.
        let marked = try Hark.run(["detect", "--json", aired, "--catalogue", catalogue])
        #expect(marked.jsonObjects.compactMap { $0 }.allSatisfy { $0["evidence"] as? String == "sound" }, "\(marked.stdout)")
        #expect(try Hark.run(["detect", "--json", aired, "--catalogue", catalogue, "--key", "my secret"]).stdout.contains("mark+sound"))
    }

    /// A creative that cannot be what aired is added all the same (a campaign may be heard by its
    /// sound alone) but not in silence: a silent file, and with --key a payload whose mark is
    /// not in it, each get a warning; a marked creative with its key gets none.
    @Test func addingSilenceOrAnUnmarkedCreativeIsWarnedAbout() throws {
        let catalogue = dir.file("warned.hark")
        let quiet = dir.file("quiet.wav")
        #expect(try Hark.run(["generate", "sine", quiet, "--level", "-120", "--duration", "5"]).status == 0)
        let silent = try Hark.run(["catalogue", "add", catalogue, quiet, "--payload", "5"])
        #expect(silent.status == 0 && silent.stderr.contains("warning: \(quiet) is silent (its peak is -") && silent.stderr.contains("dB re full scale)"), "\(silent.stderr)")
        let noise = try generate("pink", "noise.wav")
        let unmarked = try Hark.run(["catalogue", "add", catalogue, noise, "--payload", "1234", "--key", "my secret"])
        #expect(unmarked.status == 0 && unmarked.stderr.contains("\(noise): no mark of payload 00001234 heard in it with the key given"),
                "\(unmarked.stderr)")
        // Without a key nothing is looked for; with the key it was marked with, it is heard.
        #expect(try Hark.run(["catalogue", "add", catalogue, noise, "--payload", "1234"]).stderr.isEmpty)
        let host = try generate("music", "host.wav"), aired = dir.file("aired.wav")
        #expect(try Hark.run(["embed", host, aired, "--payload", "c0ffee42", "--key", "my secret"]).status == 0)
        let marked = try Hark.run(["catalogue", "add", catalogue, aired, "--payload", "c0ffee42", "--key", "my secret"])
        #expect(marked.status == 0 && marked.stderr.isEmpty, "\(marked.stderr)")
        #expect(try Hark.run(["catalogue", "add", catalogue, aired, "--payload", "c0ffee43", "--key", "my secret"]).stderr
            .contains("no mark of payload c0ffee43"))
    }

    @Test func refusesCataloguesItCannotTrustByName() throws {
        let (catalogue, aired) = try catalogue()
        let missing = dir.file("none.hark")
        let list = try Hark.run(["catalogue", "list", missing])
        #expect(list.status == 1 && list.stderr.contains("\(missing): no such catalogue"), "\(list.stderr)")
        // Neither a file nor a list of payloads.
        let typo = try Hark.run(["detect", aired, "--catalogue", missing])
        #expect(typo.status != 0 && typo.stderr.contains("--catalogue: no such catalogue file '\(missing)'"), "\(typo.stderr)")
        let text = dir.write("notes.txt", Array("c0ffee42\n".utf8))
        let foreign = try Hark.run(["detect", aired, "--catalogue", text])
        #expect(foreign.status == 1 && foreign.stderr.contains("\(text): not a Hark campaign catalogue (not a SQLite database)"))
        let whole = try Data(contentsOf: URL(fileURLWithPath: catalogue))
        let cut = dir.write("cut.hark", Array(whole.prefix(whole.count * 2 / 3)))
        let truncated = try Hark.run(["detect", aired, "--catalogue", cut])
        #expect(truncated.status == 1 && truncated.stderr.contains("\(cut): catalogue damaged"), "\(truncated.stderr)")
        let bad = try Hark.run(["catalogue", "add", catalogue, dir.file("absent.wav"), "--payload", "99"])
        #expect(bad.status == 1 && bad.stderr.contains("absent.wav"), "\(bad.stderr)")
        let dates = try Hark.run(["catalogue", "add", catalogue, aired, "--payload", "99", "--from", "2026-12-01", "--until", "2026-11-01"])
        #expect(dates.status != 0 && dates.stderr.contains("--until (2026-11-01) is before --from (2026-12-01)"))
        let orphan = try Hark.run(["embed", aired, dir.file("x.wav"), "--payload", "99", "--name", "x"])
        #expect(orphan.status != 0 && orphan.stderr.contains("give --catalogue too"))
        // None of that changed the catalogue.
        #expect(try Hark.run(["catalogue", "list", catalogue, "--json"]).jsonObjects.count == 2)
    }
}
