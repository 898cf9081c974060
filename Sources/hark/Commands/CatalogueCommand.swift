import ArgumentParser
import Foundation
import HarkCatalogue
import HarkDSP
import HarkEngine
import HarkSoundFile
import HarkSystem

/// `hark catalogue`: the campaigns a device listens for (docs/watermark.md, The campaign catalogue).
struct CatalogueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "catalogue",
        abstract: "Build and read the campaign catalogue: payloads, dates and the sound of each creative.",
        discussion: """
        A catalogue is a file (SQLite) that holds, for each campaign, the payload its mark \
        carries, its name, the days it is on air and a compact reading of its creative's sound \
        (landmarks, about 30 kB for 30 s; never the audio). `hark detect --catalogue FILE` and \
        harkd's `catalogue` setting listen for its campaigns by mark and by sound.
        """,
        subcommands: [Add.self, List.self, Remove.self, Slots.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a campaign's creative (the audio as aired) to a catalogue, creating the catalogue if needed.",
            discussion: "A campaign already there under the same payload is replaced.")

        @Argument(help: "Catalogue file.", completion: .file())
        var catalogue: String

        @Argument(help: "The creative as aired: an audio file, its mark already in it.", completion: .audio)
        var creative: String

        @Option(help: ArgumentHelp("The payload its mark carries: 1 to 8 hex digits.", valueName: "hex"))
        var payload: String

        @OptionGroup var campaign: CampaignOptions

        @Option(help: ArgumentHelp("""
            The key the creative was marked with (hark embed's --key). Only its fingerprint is kept, \
            never the key, so that a detection with another key can say so.
            """, valueName: "text"))
        var key: String?

        @Option(help: ArgumentHelp("Read that key from a file (its bytes).", valueName: "path"), completion: .file())
        var keyFile: String?

        func validate() throws {
            do { _ = try WatermarkPayload(hex: payload) } catch { throw ValidationError("--payload: \(error)") }
            if key != nil && keyFile != nil { throw ValidationError("give --key or --key-file, not both") }
            if let k = key, k.isEmpty { throw ValidationError("--key is empty") }
            if campaign.hasAiringKey != (campaign.airingChannels != nil) {
                throw ValidationError("--airing-key and --airing-channels go together: the key's codes are per channel")
            }
        }

        func run() throws {
            var markKey = key.map(WatermarkKey.init(text:))
            if let keyFile {
                do { markKey = try KeyFile.read(keyFile) } catch {
                    Diagnostics.error(error.description)
                    throw ExitCode.failure
                }
            }
            let added = try CampaignOptions.add(creative: creative, payload: try WatermarkPayload(hex: payload), to: catalogue,
                                                details: campaign, markKey: markKey, lookForTheMark: markKey != nil)
            try LineWriter.standardOutput.write(line: "\(catalogue): added \(added.payload.hex)" + (added.name.map { " (\($0))" } ?? "")
                + String(format: ", %.1f s, %d bytes of sound reading", added.sound.duration, added.sound.bytes.count))
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List a catalogue's campaigns.")

        @Argument(help: "Catalogue file.", completion: .file())
        var catalogue: String

        @Flag(help: #"One {"class":"campaign",…} object per line."#)
        var json = false

        func run() throws {
            let campaigns = try CampaignOptions.read(catalogue)
            let out = LineWriter.standardOutput
            let today = Campaign.today()
            if !json && !campaigns.isEmpty {
                try out.write(line: Self.row(["payload", "on air", "from", "until", "seconds", "landmarks", "learned", "name, airing codes"]))
            }
            for c in campaigns {
                if json {
                    var j = JSONLine()
                    j.add("class", "campaign")
                    j.add("payload", c.payload.hex)
                    if let name = c.name { j.add("name", name) }
                    if let from = c.from { j.add("from", from) }
                    if let until = c.until { j.add("until", until) }
                    j.add("on_air", c.isOnAir(on: today))
                    j.add("seconds", c.sound.duration, decimals: 2)
                    j.add("landmarks", c.sound.landmarks.count)
                    j.add("bytes", c.sound.bytes.count)
                    if let a = c.airing {
                        j.add("airing_channels", integers: a.channels.map(Int.init))
                        j.add("airing_slots", a.slots.count)
                    }
                    if let e = c.embeddings {
                        j.add("embeddings", e.count)
                        j.add("embedding_bytes", e.bytes.count)
                    }
                    try out.write(line: j.line)
                } else {
                    let learned = c.embeddings.map { String(format: "%.1f kB", Double($0.bytes.count) / 1000) } ?? "none"
                    let more = [c.name, c.airing.map { "airing codes on channels " + $0.channels.map(String.init).joined(separator: ",") },
                                c.airing.flatMap { $0.slots.isEmpty ? nil : "\($0.slots.count) airing slots" }]
                        .compactMap { $0 }.joined(separator: "; ")
                    try out.write(line: Self.row([c.payload.hex, c.isOnAir(on: today) ? "yes" : "no", c.from ?? "…", c.until ?? "…",
                                                  String(format: "%.1f", c.sound.duration), String(format: "%.1f kB", Double(c.sound.bytes.count) / 1000),
                                                  learned, more]))
                }
            }
            if !json && campaigns.isEmpty { try out.write(line: "\(catalogue): no campaigns") }
        }

        /// A line of the table: each column padded to its heading's width or more.
        static func row(_ cells: [String]) -> String {
            let widths = [8, 6, 10, 10, 7, 9, 7]
            return cells.enumerated().map { i, cell in
                guard i < widths.count else { return cell }
                let pad = max(0, widths[i] - cell.count)
                // Numbers right-aligned, words left.
                return i == 4 || i == 5 || i == 6 ? String(repeating: " ", count: pad) + cell : cell + String(repeating: " ", count: pad)
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a campaign from a catalogue.")

        @Argument(help: "Catalogue file.", completion: .file())
        var catalogue: String

        @Argument(help: "The campaign's payload (hex).")
        var payload: String

        func validate() throws {
            do { _ = try WatermarkPayload(hex: payload) } catch { throw ValidationError("payload: \(error)") }
        }

        func run() throws {
            let p = try WatermarkPayload(hex: payload)
            guard FileManager.default.fileExists(atPath: catalogue) else {
                Diagnostics.error(CatalogueError.noSuchFile(catalogue).description)
                throw ExitCode.failure
            }
            let removed: Bool
            do {
                let file = try CampaignCatalogue.openForWriting(catalogue)
                removed = try file.remove(p)
                if removed { try file.keepSharedSound() }
            } catch {
                Diagnostics.error(error.description)
                throw ExitCode.failure
            }
            guard removed else {
                Diagnostics.error("\(catalogue): no campaign \(p.hex)")
                throw ExitCode.failure
            }
            try LineWriter.standardOutput.write(line: "\(catalogue): removed \(p.hex)")
        }
    }
}

extension CatalogueCommand {
    struct Slots: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import a broadcaster's log of when airing-coded campaigns air (their airing slots).",
            discussion: """
            The log is comma-separated: a first line naming the columns channel, payload, start \
            and optionally end (others are ignored), then one airing a line, times in UTC as \
            2026-11-28T20:14:05Z. A campaign whose marks carry airing codes is then fresh when \
            its sound is heard starting within one of its slots, give or take its channel's \
            tolerance, even where its mark is too faint to hear (docs/protocol.md, Airing \
            slots). Rows of campaigns the catalogue does not hold, or that carry no airing \
            codes, are skipped with a warning. A log with an error imports nothing.
            """)

        @Argument(help: "Catalogue file.", completion: .file())
        var catalogue: String

        @Argument(help: "The log (CSV).", completion: .file())
        var log: String

        @Option(help: ArgumentHelp("""
            Seconds either side of a slot that still count on the log's channels: the broadcast's \
            delay and the device's clock (default \(Int(AiringSlot.defaultTolerance)) s, at most \(Int(AiringSlot.maxTolerance))).
            """, valueName: "seconds"))
        var tolerance: Double?

        @Flag(help: "Drop every slot the catalogue holds before importing (a new day's log).")
        var replace = false

        func validate() throws {
            if let t = tolerance, !(0...AiringSlot.maxTolerance).contains(t) {
                throw ValidationError("--tolerance must be 0 to \(Int(AiringSlot.maxTolerance)) seconds")
            }
        }

        func run() throws {
            guard let text = try? String(contentsOfFile: log, encoding: .utf8) else {
                Diagnostics.error("\(log): cannot be read as text")
                throw ExitCode.failure
            }
            let parsed: AiringLog
            do { parsed = try AiringLog(text: text) } catch {
                Diagnostics.error("\(log): \(error)")
                throw ExitCode.failure
            }
            let campaigns = try CampaignOptions.read(catalogue)
            let coded = Set(campaigns.compactMap { $0.airing?.campaign })
            let held = Set(campaigns.map(\.payload))
            let kept = parsed.entries.filter { coded.contains($0.campaign) }
            let unknown = Set(parsed.entries.map(\.campaign)).subtracting(held)
            let uncoded = Set(parsed.entries.map(\.campaign)).intersection(held).subtracting(coded)
            if !unknown.isEmpty {
                Diagnostics.warning("\(log): skipped the rows of \(unknown.count) payload(s) the catalogue does not hold: " + Self.list(unknown))
            }
            if !uncoded.isEmpty {
                Diagnostics.warning("\(log): skipped the rows of \(uncoded.count) campaign(s) whose marks carry no airing codes (every airing of theirs is fresh): " + Self.list(uncoded))
            }
            let channels = Set(kept.map(\.slot.channel))
            do {
                let file = try CampaignCatalogue.openForWriting(catalogue)
                try file.addSlots(kept.map { ($0.campaign, $0.slot) }, tolerances: tolerance.map { t in Dictionary(uniqueKeysWithValues: channels.map { ($0, t) }) } ?? [:],
                                  replacing: replace)
            } catch {
                Diagnostics.error(error.description)
                throw ExitCode.failure
            }
            var line = "\(catalogue): \(kept.count) airing slot(s) of \(Set(kept.map(\.campaign)).count) campaign(s) on \(channels.count) channel(s)"
            if let first = kept.map(\.slot.from).min(), let last = kept.map(\.slot.until).max() {
                line += ", " + UTCTime.iso8601(Date(timeIntervalSince1970: first)) + " to " + UTCTime.iso8601(Date(timeIntervalSince1970: last))
            }
            if let tolerance { line += String(format: "; tolerance %.0f s on those channels", tolerance) }
            try LineWriter.standardOutput.write(line: line)
        }

        private static func list(_ payloads: Set<WatermarkPayload>) -> String {
            let sorted = payloads.map(\.hex).sorted()
            return sorted.prefix(8).joined(separator: ", ") + (sorted.count > 8 ? ", …" : "")
        }
    }
}

/// `--name`, `--from`, `--until`: what a catalogue says of a campaign beside its sound.
struct CampaignOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The campaign's name, for people.", valueName: "text"))
    var name: String?

    @Option(help: ArgumentHelp("First day on air, YYYY-MM-DD (UTC).", valueName: "date"))
    var from: String?

    @Option(help: ArgumentHelp("Last day on air, YYYY-MM-DD (UTC).", valueName: "date"))
    var until: String?

    @Option(help: ArgumentHelp("""
        The campaign's airing key (32 to 128 hex digits): its marks carry airing codes, a \
        payload per channel and UTC minute, instead of --payload (docs/watermark.md, Airing codes).
        """, valueName: "hex"))
    var airingKey: String?

    @Option(help: ArgumentHelp("Read the airing key (hex) from a file: a key on a command line is seen by every user of the machine.", valueName: "path"),
            completion: .file())
    var airingKeyFile: String?

    @Option(help: ArgumentHelp("With --airing-key: the channels it airs on, numbers 0-65535 separated by commas.", valueName: "n,…"))
    var airingChannels: String?

    /// Whether any option describing the campaign was given.
    var given: Bool { name != nil || from != nil || until != nil || hasAiringKey || airingChannels != nil }

    var hasAiringKey: Bool { airingKey != nil || airingKeyFile != nil }

    /// The airing key's hex digits, from the option or its file.
    private var airingKeyText: String? {
        airingKey ?? airingKeyFile.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) }.map { $0.filter { !$0.isWhitespace } }
    }

    /// The parsed airing key, if one was given (validated already).
    var parsedAiringKey: AiringKey? { airingKeyText.flatMap { try? AiringKey(hex: $0) } }

    func validate() throws {
        if airingKey != nil && airingKeyFile != nil { throw ValidationError("give --airing-key or --airing-key-file, not both") }
        if let path = airingKeyFile, airingKeyText == nil { throw ValidationError("--airing-key-file: cannot read '\(path)'") }
        if let text = airingKeyText {
            let option = airingKey != nil ? "--airing-key" : "--airing-key-file"
            do { _ = try AiringKey(hex: text) } catch { throw ValidationError("\(option): \(error)") }
        }
        if let airingChannels, CampaignCatalogue.channels(airingChannels) == nil {
            throw ValidationError("--airing-channels must be numbers 0-65535 separated by commas, not '\(airingChannels)'")
        }
        for (option, value) in [("--from", from), ("--until", until)] {
            if let value, !Campaign.validDate(value) { throw ValidationError("\(option) must be a date as YYYY-MM-DD, not '\(value)'") }
        }
        if let from, let until, until < from { throw ValidationError("--until (\(until)) is before --from (\(from))") }
    }

    /// Reads the creative's sound and adds the campaign; every error is one line naming its file.
    /// - Parameters:
    ///   - markKey: the key the creative was marked with, when known: its fingerprint is kept.
    ///   - lookForTheMark: warn when the creative's payload is not heard in it with `markKey`
    ///     (the creative was marked elsewhere: an unmarked file or another key is caught here,
    ///     not on air).
    static func add(creative: String, payload: WatermarkPayload, to path: String, details: CampaignOptions,
                    channels fallback: [UInt16]? = nil, markKey: WatermarkKey? = nil, lookForTheMark: Bool = false) throws -> Campaign {
        let sound: SoundPrint, embeddings: CreativeEmbeddings
        do {
            (sound, embeddings) = try CreativeReading.readBoth(SoundFileSource(path: creative))
        } catch let error as SoundFileError {
            Diagnostics.error(error.description)
            throw ExitCode.failure
        } catch {
            Diagnostics.error("\(creative): \(error)")
            throw ExitCode.failure
        }
        warnings(creative: creative, payload: payload, markKey: lookForTheMark && details.parsedAiringKey == nil ? markKey : nil)
            .forEach(Diagnostics.warning)
        let channels = details.airingChannels.flatMap(CampaignCatalogue.channels) ?? fallback
        let airing = details.parsedAiringKey.map { AiringCampaign(campaign: payload, key: $0, channels: channels ?? []) }
        let campaign = Campaign(payload: payload, name: details.name, from: details.from, until: details.until, sound: sound, airing: airing,
                                embeddings: embeddings, keyFingerprint: markKey?.fingerprint)
        do {
            // What the creatives share is found once here, not by every device that loads the file.
            let file = try CampaignCatalogue.openForWriting(path)
            try file.add(campaign)
            try file.keepSharedSound()
        } catch {
            Diagnostics.error(error.description)
            throw ExitCode.failure
        }
        return campaign
    }

    /// What is wrong with a creative that is still added: silence (its sound names nothing and
    /// it carries no mark), or, with `markKey`, its payload not heard in it by either profile.
    private static func warnings(creative: String, payload: WatermarkPayload, markKey: WatermarkKey?) -> [String] {
        guard let source = try? SoundFileSource(path: creative) else { return [] }
        var blocks = MonoBlockReader(source)
        var peak: Float = 0
        while let mono = try? blocks.next(), !mono.isEmpty { for v in mono where v.isFinite { peak = max(peak, abs(v)) } }
        // 80 dB under full scale: quieter than any creative as aired, louder than dither alone.
        guard peak >= 1e-4 else {
            return ["\(creative) is silent (its peak is \(peak > 0 ? String(format: "%.0f", 20 * log10(Double(peak))) : "-inf") dB re full scale): "
                    + "its sound names nothing and it carries no mark"]
        }
        guard let markKey else { return [] }
        for profile in [WatermarkProfile.tv, .stadium] {
            var heard = false
            guard let again = try? SoundFileSource(path: creative) else { return [] }
            var settings = AnalysisPipeline.Settings(sampleRate: Double(again.sampleRate))
            settings.watermark = AnalysisPipeline.WatermarkSearch(key: markKey, profile: profile, catalogue: [payload])
            _ = try? WatermarkScan.run(source: again, settings: settings) { d in
                if d.payload == payload { heard = true }
            }
            if heard { return [] }
        }
        return ["\(creative): no mark of payload \(payload.hex) heard in it with the key given (tv or stadium profile): "
                + "added all the same, heard by its sound alone unless it is the creative as aired, marked with that key"]
    }

    /// A catalogue's campaigns, or an error line naming the file and exit 1.
    static func read(_ path: String) throws -> [Campaign] {
        do { return try CampaignCatalogue.read(path) } catch {
            Diagnostics.error(error.description)
            throw ExitCode.failure
        }
    }

    /// A catalogue's campaigns and what their creatives share as the file keeps it, or an error
    /// line naming the file and exit 1.
    static func readWithSharedSound(_ path: String) throws -> (campaigns: [Campaign], sharing: [SharedSound]?) {
        do { return try CampaignCatalogue.readWithSharedSound(path) } catch {
            Diagnostics.error(error.description)
            throw ExitCode.failure
        }
    }
}
