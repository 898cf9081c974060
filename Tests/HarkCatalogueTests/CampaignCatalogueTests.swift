import Foundation
import HarkDSP
import HarkSynthesis
import HarkTesting
import Testing
@testable import HarkCatalogue

/// The catalogue on real SQLite files: what it keeps, and how it refuses files it cannot trust.
@Suite struct CampaignCatalogueTests {
    private let temporary = TemporaryDirectory(prefix: "hark-catalogue")

    private func print(_ seed: UInt64, seconds: Double = 8) throws -> SoundPrint {
        var x = [Float](repeating: 0, count: Int(seconds * 16_000))
        x.withUnsafeMutableBufferPointer { var g = MusicGenerator(rms: 0.1, sampleRate: 16_000, seed: seed, style: .drawn(seed: seed)); g.render(into: $0) }
        return try x.withUnsafeBufferPointer { try SoundPrint.read($0, sampleRate: 16_000) }
    }

    @Test func keepsCampaignsAcrossReopeningAndReplacesByPayload() throws {
        let path = temporary.file("c.hark")
        let a = Campaign(payload: WatermarkPayload(0xc0ffee42), name: "Coffee", from: "2026-11-01", until: "2026-12-31", sound: try print(1))
        let b = Campaign(payload: WatermarkPayload(0x1234), sound: try print(2))
        do {
            let c = try CampaignCatalogue.openForWriting(path)
            try c.add(a)
            try c.add(b)
        }
        #expect(try CampaignCatalogue.read(path) == [b, a])
        var renamed = a
        renamed.name = "Coffee, second cut"
        let c = try CampaignCatalogue.openForWriting(path)
        try c.add(renamed)
        #expect(try c.remove(WatermarkPayload(0x1234)))
        #expect(try !c.remove(WatermarkPayload(0x1234)))
        #expect(try CampaignCatalogue.read(path) == [renamed])
        // Never the audio: a reading of 8 s is a few kilobytes.
        #expect(a.sound.bytes.count < 8 * 64_000 / 30)
    }

    @Test func datesDecideWhatIsOnAir() throws {
        let c = Campaign(payload: WatermarkPayload(1), from: "2026-11-01", until: "2026-11-30", sound: SoundPrint(landmarks: [], duration: 1))
        #expect(c.isOnAir(on: "2026-11-01") && c.isOnAir(on: "2026-11-30"))
        #expect(!c.isOnAir(on: "2026-10-31") && !c.isOnAir(on: "2026-12-01"))
        #expect(Campaign.validDate("2026-02-28") && !Campaign.validDate("2026-2-28") && !Campaign.validDate("tomorrow"))
        #expect(Campaign.validDate(Campaign.today()))
    }

    @Test func refusesMissingEmptyAndForeignFilesByName() throws {
        let missing = temporary.file("none.hark")
        #expect(throws: CatalogueError.noSuchFile(missing)) { try CampaignCatalogue.read(missing) }
        let empty = temporary.write("empty.hark", [])
        #expect(throws: CatalogueError.notACatalogue(empty, "empty file")) { try CampaignCatalogue.read(empty) }
        let text = temporary.write("payloads.txt", Array("c0ffee42, 1234\n".utf8))
        #expect(throws: CatalogueError.notACatalogue(text, "not a SQLite database")) { try CampaignCatalogue.read(text) }
        // Nor is a text file written over when asked to add to it.
        #expect(throws: CatalogueError.notACatalogue(text, "not a SQLite database")) { try CampaignCatalogue.openForWriting(text) }
        #expect(try String(contentsOfFile: text, encoding: .utf8) == "c0ffee42, 1234\n")
        // Another program's SQLite file.
        let foreign = temporary.file("other.sqlite")
        let sqlite = Process()
        sqlite.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        sqlite.arguments = ["python3", "-c", "import sqlite3; c = sqlite3.connect('\(foreign)'); c.execute('create table t (x)'); c.commit()"]
        try sqlite.run()
        sqlite.waitUntilExit()
        #expect(throws: CatalogueError.notACatalogue(foreign, "a SQLite database of another program")) { try CampaignCatalogue.read(foreign) }
    }

    @Test func refusesANewerVersion() throws {
        let path = temporary.file("new.hark")
        try CampaignCatalogue.openForWriting(path).add(Campaign(payload: WatermarkPayload(7), sound: try print(3)))
        let newer = CampaignCatalogue.formatVersion + 1
        try setUserVersion(path, Int(newer))
        #expect(throws: CatalogueError.newerVersion(path, found: newer)) { try CampaignCatalogue.read(path) }
        #expect(throws: CatalogueError.newerVersion(path, found: newer)) { try CampaignCatalogue.openForWriting(path) }
    }

    /// Version 4's learned readings: kept with their network's digest and read back to the
    /// byte, for listening too; a version-3 file (no embedding table) reads with none and gains
    /// the table when next written; a damaged row refuses the file by name.
    @Test func keepsEachCreativesLearnedReading() throws {
        let path = temporary.file("learned.hark")
        let e = CreativeEmbeddings(model: "0123456789abcdef", dimensions: 4, values: [1, -2, 3, -127, 127, 0, 5, -5])
        let file = try CampaignCatalogue.openForWriting(path)
        try file.add(Campaign(payload: WatermarkPayload(7), sound: try print(3), embeddings: e))
        try file.add(Campaign(payload: WatermarkPayload(8), sound: try print(4)))
        let read = try CampaignCatalogue.read(path)
        #expect(read.map(\.embeddings) == [e, nil])
        #expect(try CampaignCatalogue.readForListening(path).embeddings == [e, nil])
        // A device that listens by landmarks alone reads none of them.
        #expect(try CampaignCatalogue.readForListening(path, embeddings: false).embeddings == [nil, nil])
        #expect(try CampaignCatalogue.openForWriting(path).remove(WatermarkPayload(7)))
        #expect(try CampaignCatalogue.read(path).map(\.embeddings) == [nil])

        let old = temporary.file("v3.hark")
        try CampaignCatalogue.openForWriting(old).add(Campaign(payload: WatermarkPayload(9), sound: try print(5)))
        try sql(old, "drop table embedding")
        try setUserVersion(old, 3)
        #expect(try CampaignCatalogue.read(old).map(\.embeddings) == [nil])
        try CampaignCatalogue.openForWriting(old).add(Campaign(payload: WatermarkPayload(10), sound: try print(6), embeddings: e))
        #expect(try CampaignCatalogue.read(old).map(\.embeddings) == [nil, e])

        try sql(old, "update embedding set vectors = zeroblob(5) where payload = 10")
        #expect(throws: CatalogueError.damaged(old, "campaign 0000000a: 5 bytes of embeddings are not whole embeddings of 4")) {
            try CampaignCatalogue.read(old)
        }
    }

    /// Version 5 keeps the fingerprint of the key each creative was marked with, never the key:
    /// read back for listening too, and a version-4 file reads with none and gains the table when
    /// next written; a row that is not eight hex digits refuses the file by name.
    @Test func keepsTheFingerprintOfEachCreativesKeyNotTheKey() throws {
        let path = temporary.file("keys.hark")
        let key = WatermarkKey(text: "my secret")
        #expect(key.fingerprint.count == 8 && key.fingerprint.allSatisfy(\.isHexDigit))
        #expect(key.fingerprint != WatermarkKey.demo.fingerprint && key.fingerprint == WatermarkKey(text: "my secret").fingerprint)
        let file = try CampaignCatalogue.openForWriting(path)
        try file.add(Campaign(payload: WatermarkPayload(7), sound: try print(3), keyFingerprint: key.fingerprint))
        try file.add(Campaign(payload: WatermarkPayload(8), sound: try print(4)))
        #expect(try CampaignCatalogue.read(path).map(\.keyFingerprint) == [key.fingerprint, nil])
        #expect(try CampaignCatalogue.readForListening(path).keyFingerprints == [key.fingerprint, nil])
        let bytes = try #require(FileManager.default.contents(atPath: path))
        #expect(bytes.range(of: Data("my secret".utf8)) == nil, "the key itself is not in the file")
        // Which campaigns another key cannot read, in a line that says so.
        let other = try #require(MarkKeyCheck.otherKey([key.fingerprint, nil], key: .demo, catalogue: "keys.hark"))
        #expect(other.count == 1 && other.line.contains("1 of 2 campaigns in keys.hark were marked with another key (fingerprint \(key.fingerprint))"))
        #expect(MarkKeyCheck.otherKey([key.fingerprint, nil], key: key, catalogue: "keys.hark") == nil)

        let old = temporary.file("v4.hark")
        try CampaignCatalogue.openForWriting(old).add(Campaign(payload: WatermarkPayload(9), sound: try print(5)))
        try sql(old, "drop table mark_key")
        try setUserVersion(old, 4)
        #expect(try CampaignCatalogue.read(old).map(\.keyFingerprint) == [nil])
        try CampaignCatalogue.openForWriting(old).add(Campaign(payload: WatermarkPayload(10), sound: try print(6), keyFingerprint: "0badf00d"))
        #expect(try CampaignCatalogue.read(old).map(\.keyFingerprint) == [nil, "0badf00d"])
        try sql(old, "update mark_key set fingerprint = 12345 where payload = 10")
        #expect(throws: CatalogueError.damaged(old, "a mark key row is not what this version writes")) { try CampaignCatalogue.read(old) }
    }

    @Test func keepsAiringKeysAndTheirChannels() throws {
        let path = temporary.file("airing.hark")
        let key = try AiringKey(bytes: Array(0..<32))
        let a = Campaign(payload: WatermarkPayload(0xc0ffee42), sound: try print(4),
                         airing: AiringCampaign(campaign: WatermarkPayload(0xc0ffee42), key: key, channels: [3, 1]))
        let b = Campaign(payload: WatermarkPayload(0x1234), sound: try print(5))
        let c = try CampaignCatalogue.openForWriting(path)
        try c.add(a)
        try c.add(b)
        #expect(try CampaignCatalogue.read(path) == [b, a])
        #expect(try CampaignCatalogue.readForListening(path).airing == [a.airing!])
        // Added again without a key: its marks carry its payload from now on.
        var plain = a
        plain.airing = nil
        try c.add(plain)
        #expect(try CampaignCatalogue.readForListening(path).airing.isEmpty)
        try c.add(a)
        #expect(try c.remove(a.payload))
        #expect(try CampaignCatalogue.readForListening(path).airing.isEmpty)
        #expect(CampaignCatalogue.channels("1,2, 3,2") == [1, 2, 3])
        #expect(CampaignCatalogue.channels("") == nil && CampaignCatalogue.channels("1,,2") == nil && CampaignCatalogue.channels("70000") == nil)
    }

    /// Version 6 keeps airing slots (a broadcaster's log) and each channel's tolerance: read
    /// back with the campaign's airing, kept when the campaign is added again, gone with it; a
    /// version-5 file reads with none and gains the tables when next written; a row that is not
    /// what this version writes refuses the file by name.
    @Test func keepsAiringSlotsAndEachChannelsTolerance() throws {
        let path = temporary.file("slots.hark")
        let p = WatermarkPayload(0xc0ffee42)
        let a = Campaign(payload: p, sound: try print(4), airing: AiringCampaign(campaign: p, key: try AiringKey(bytes: Array(0..<32)), channels: [7, 9]))
        let c = try CampaignCatalogue.openForWriting(path)
        try c.add(a)
        try c.addSlots([(p, AiringSlot(channel: 9, from: 2_000, until: 2_030)), (p, AiringSlot(channel: 7, from: 1_000, until: 1_000))],
                       tolerances: [9: 20])
        let slots = try #require(CampaignCatalogue.readForListening(path).airing.first?.slots)
        #expect(slots == [AiringSlot(channel: 7, from: 1_000, until: 1_000, tolerance: AiringSlot.defaultTolerance),
                          AiringSlot(channel: 9, from: 2_000, until: 2_030, tolerance: 20)])
        #expect(try c.channelTolerances() == [9: 20])
        // The same campaign, channel and start replaces; the creative added again keeps them.
        try c.addSlots([(p, AiringSlot(channel: 7, from: 1_000, until: 1_010))], tolerances: [:])
        try c.add(a)
        #expect(try CampaignCatalogue.read(path).first?.airing?.slots.map(\.until) == [1_010, 2_030])
        // A new day's log in place of the last.
        try c.addSlots([(p, AiringSlot(channel: 7, from: 90_000, until: 90_000))], tolerances: [:], replacing: true)
        #expect(try CampaignCatalogue.read(path).first?.airing?.slots.map(\.from) == [90_000])
        #expect(try c.remove(p))
        try c.add(a)
        #expect(try CampaignCatalogue.read(path).first?.airing?.slots == [])

        let old = temporary.file("v5.hark")
        try CampaignCatalogue.openForWriting(old).add(a)
        try sql(old, "drop table airing_slot")
        try sql(old, "drop table airing_channel")
        try setUserVersion(old, 5)
        #expect(try CampaignCatalogue.read(old).first?.airing?.slots == [])
        try CampaignCatalogue.openForWriting(old).addSlots([(p, AiringSlot(channel: 7, from: 5, until: 6))], tolerances: [7: 1])
        #expect(try CampaignCatalogue.read(old).first?.airing?.slots == [AiringSlot(channel: 7, from: 5, until: 6, tolerance: 1)])
        try sql(old, "update airing_slot set ends = 1 where channel = 7")
        #expect(throws: CatalogueError.damaged(old, "an airing slot row is not what this version writes")) { try CampaignCatalogue.read(old) }
        try sql(old, "update airing_slot set ends = 6 where channel = 7")
        try sql(old, "update airing_channel set tolerance = 9999 where channel = 7")
        #expect(throws: CatalogueError.damaged(old, "an airing channel row is not what this version writes")) {
            try CampaignCatalogue.readForListening(old)
        }
    }

    @Test func keepsWhatItsCreativesShareUntilTheyChange() throws {
        // Two campaigns over one song and a third of its own: what they share is found when the
        // file is written and read back with it, for the same campaigns only.
        func render(_ seed: UInt64, _ gain: Float) -> [Float] {
            var x = [Float](repeating: 0, count: 8 * 16_000)
            x.withUnsafeMutableBufferPointer { var g = MusicGenerator(rms: 0.1, sampleRate: 16_000, seed: seed, style: .drawn(seed: seed)); g.render(into: $0) }
            return x.map { $0 * gain }
        }
        let bed = render(60, 1)
        let sounds = try [zip(bed, render(61, 0.5)).map(+), zip(bed, render(62, 0.5)).map(+), render(63, 1)].map { x in
            try x.withUnsafeBufferPointer { try SoundPrint.read($0, sampleRate: 16_000) }
        }
        let path = temporary.file("shared.hark")
        let c = try CampaignCatalogue.openForWriting(path)
        for (i, s) in sounds.enumerated() { try c.add(Campaign(payload: WatermarkPayload(UInt32(10 + i)), sound: s)) }
        #expect(try CampaignCatalogue.readForListening(path).sharing == nil)
        try c.keepSharedSound()
        let expected = try #require(SoundIndex(readings: sounds, keepSharing: true).sharing)
        #expect(expected[0].related == [1] && !expected[0].landmarks.isEmpty, "the bed is shared: \(expected.map(\.related))")
        do {
            // Its read transaction holds writers off until it is gone.
            let listening = try CampaignCatalogue.readForListening(path)
            #expect(listening.sharing == expected)
            let index = SoundIndex(readings: listening.readings, sharing: listening.sharing)
            #expect(index.reusedSharing && index.sharedCount == SoundIndex(readings: sounds).sharedCount)
        }
        #expect(try CampaignCatalogue.readWithSharedSound(path).sharing == expected)
        // Any change drops it: a campaign added, replaced or removed.
        try c.add(Campaign(payload: WatermarkPayload(9), sound: try print(64)))
        #expect(try CampaignCatalogue.readForListening(path).sharing == nil)
        try c.keepSharedSound()
        #expect(try CampaignCatalogue.readForListening(path).sharing?.count == 4)
        #expect(try c.remove(WatermarkPayload(9)))
        #expect(try CampaignCatalogue.readForListening(path).sharing == nil)
        #expect(try !c.remove(WatermarkPayload(9)))
        // A row that is not what this version writes is found again, not refused.
        try c.keepSharedSound()
        try sql(path, "update shared_sound set landmarks = zeroblob(2) where payload = 10")
        #expect(try CampaignCatalogue.readForListening(path).sharing == nil)
        #expect(try CampaignCatalogue.read(path).count == 3)
        // A second-version file (no such table) is read, and gains the table when next written.
        try sql(path, "drop table shared_sound")
        try setUserVersion(path, 2)
        #expect(try CampaignCatalogue.readForListening(path).sharing == nil)
        let upgraded = try CampaignCatalogue.openForWriting(path)
        try upgraded.keepSharedSound()
        #expect(try CampaignCatalogue.readForListening(path).sharing == expected)
    }

    /// A catalogue of the first version (no airing table) is read as it is, and gains the table
    /// (and version 2) when it is next written.
    @Test func readsTheFirstVersionAndUpgradesItOnWriting() throws {
        let path = temporary.file("v1.hark")
        let a = Campaign(payload: WatermarkPayload(7), sound: try print(6))
        try CampaignCatalogue.openForWriting(path).add(a)
        try sql(path, "drop table airing")
        try setUserVersion(path, 1)
        #expect(try CampaignCatalogue.read(path) == [a])
        #expect(try CampaignCatalogue.readForListening(path).airing.isEmpty)
        var keyed = a
        keyed.airing = AiringCampaign(campaign: a.payload, key: try AiringKey(bytes: Array(1...16)), channels: [9])
        try CampaignCatalogue.openForWriting(path).add(keyed)
        #expect(try CampaignCatalogue.read(path) == [keyed])
        // A first-version file that claims an airing key is not what any version wrote.
        try setUserVersion(path, 0)
        #expect(throws: CatalogueError.damaged(path, "format version 0")) { try CampaignCatalogue.read(path) }
    }

    @Test func refusesATruncatedCatalogue() throws {
        let path = temporary.file("big.hark")
        let c = try CampaignCatalogue.openForWriting(path)
        for n in 0..<6 { try c.add(Campaign(payload: WatermarkPayload(UInt32(n)), sound: try print(UInt64(10 + n), seconds: 20))) }
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        let cut = temporary.write("cut.hark", Array(whole.prefix(whole.count / 2)))
        let error = #expect(throws: CatalogueError.self) { try CampaignCatalogue.read(cut) }
        #expect(error?.description.hasPrefix("\(cut): catalogue damaged") == true)
    }

    @Test func refusesADamagedSoundReading() throws {
        let good = try print(4)
        var bytes = good.bytes
        bytes.removeLast(3)
        #expect(throws: SoundPrintError.self) { try SoundPrint(bytes: bytes) }
        #expect(try SoundPrint(bytes: good.bytes) == good)
    }

    /// A reading cut short inside an intact file (SQLite's own check passes): the file is refused
    /// whole, by name and campaign.
    @Test func refusesACatalogueWithADamagedReading() throws {
        let path = temporary.file("cut-reading.hark")
        let c = try CampaignCatalogue.openForWriting(path)
        try c.add(Campaign(payload: WatermarkPayload(0xa1), sound: try print(5)))
        try c.add(Campaign(payload: WatermarkPayload(0xa2), sound: try print(6)))
        #expect(try CampaignCatalogue.read(path).map(\.payload) == [WatermarkPayload(0xa1), WatermarkPayload(0xa2)])
        #expect(try CampaignCatalogue.readForListening(path).campaigns.map(\.payload) == [WatermarkPayload(0xa1), WatermarkPayload(0xa2)])
        try sql(path, "update campaign set sound = substr(sound, 1, length(sound) - 3) where payload = 162")
        // Whether read whole or to listen with (harkd's way: each reading read from the file in turn).
        for read in [{ _ = try CampaignCatalogue.read(path) }, { _ = try CampaignCatalogue.readForListening(path) }] as [() throws -> Void] {
            let error = #expect(throws: CatalogueError.self) { try read() }
            #expect(error?.description.hasPrefix("\(path): catalogue damaged (campaign 000000a2:") == true, "\(String(describing: error))")
        }
    }

    /// harkd's way: the readings read from the file as the index asks, one at a time. The index
    /// is the one the decoded catalogue gives, and the file stays as it was read until the
    /// readings are let go (a writer waits).
    @Test func listeningReadsTheFileAsTheIndexAsks() throws {
        let path = temporary.file("listen.hark")
        do {
            let c = try CampaignCatalogue.openForWriting(path)
            for (i, seed) in [7, 8, 7].enumerated() {
                // The third is the first again under another payload: sound the two share.
                try c.add(Campaign(payload: WatermarkPayload(UInt32(0xb0 + i)), sound: try print(UInt64(seed))))
            }
        }
        let decoded = SoundIndex(prints: try CampaignCatalogue.read(path).map(\.sound))
        do {
            let read = try CampaignCatalogue.readForListening(path)
            let index = SoundIndex(readings: read.readings)
            #expect(read.readings.failure == nil)
            #expect(index.count == decoded.count && index.sharedCount == decoded.sharedCount && index.sharedCount > 0)
            #expect((0..<3).map(index.count(of:)) == (0..<3).map(decoded.count(of:)))
            #expect(!write(path, "delete from campaign where payload = 177"), "a writer changed the file while it was being read")
        }
        #expect(write(path, "delete from campaign where payload = 177"))
        #expect(try CampaignCatalogue.readForListening(path).campaigns.map(\.payload) == [WatermarkPayload(0xb0), WatermarkPayload(0xb2)])
    }

    /// Whether another SQLite client, waiting at most 0.2 s for the file, could change it.
    private func write(_ path: String, _ statement: String) -> Bool {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", "import sqlite3; c = sqlite3.connect('\(path)', timeout=0.2); c.execute('\(statement)'); c.commit()"]
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return false }
        p.waitUntilExit()
        return p.terminationStatus == 0
    }

    private func setUserVersion(_ path: String, _ v: Int) throws {
        try sql(path, "pragma user_version = \(v)")
    }

    /// Changes a file behind the catalogue's back, through another SQLite client.
    private func sql(_ path: String, _ statement: String) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", "import sqlite3; c = sqlite3.connect('\(path)'); c.execute('\(statement)'); c.commit()"]
        try p.run()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
    }
}
