import ArgumentParser
import Foundation
import HarkCatalogue
import HarkDSP
import HarkEngine
import HarkSoundFile
import HarkSystem

extension WatermarkProfile: ExpressibleByArgument {}
extension SoundReadingChoice: ExpressibleByArgument {}

/// `--key` / `--key-file` / `--profile`, shared by the watermark commands: what selects the
/// pattern.
struct KeyOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Secret key text that selects the watermark pattern (default: the demo key).", valueName: "text"))
    var key: String?

    @Option(help: ArgumentHelp("Read the key from a file (its bytes).", valueName: "path"), completion: .file())
    var keyFile: String?

    @Option(help: ArgumentHelp("""
        The band the tones use: tv (300 Hz-6 kHz) or stadium (600 Hz-7.5 kHz, for a PA heard \
        over a crowd). Default: tv, but stadium for generate cue. Embedding and detection must \
        use the same (hark detect --profile stadium finds a cue).
        """, valueName: "tv|stadium"))
    var profile: WatermarkProfile?

    /// Whether any option here was given (for commands where they imply a watermark search).
    var given: Bool { key != nil || keyFile != nil || profile != nil }

    /// The profile asked for, TV when none was.
    var watermarkProfile: WatermarkProfile { profile ?? .tv }

    func validate() throws {
        if key != nil && keyFile != nil { throw ValidationError("give --key or --key-file, not both") }
        if let k = key, k.isEmpty { throw ValidationError("--key is empty") }
    }

    /// The key, or an error line naming the key file.
    func resolve() throws -> WatermarkKey {
        if let path = keyFile {
            do {
                return try KeyFile.read(path)
            } catch {
                Diagnostics.error(error.description)
                throw ExitCode.failure
            }
        }
        return key.map(WatermarkKey.init(text:)) ?? .demo
    }
}

/// `--catalogue` / `--catalogue-file`: the campaigns known to be on air, for the detecting commands.
struct CatalogueOptions: ParsableArguments {
    @Option(help: ArgumentHelp("""
        A campaign catalogue file (hark catalogue add): listen for its campaigns by mark and by \
        their creatives' sound. Or payloads (hex, comma-separated): report only those marks. \
        Either way the mark is heard at the lower threshold a short list allows (docs/watermark.md).
        """, valueName: "file|hex,…"), completion: .file())
    var catalogue: String?

    @Option(help: ArgumentHelp("Read the payloads from a file: payloads separated by commas, spaces or lines; # comments. (A catalogue file works here too.)", valueName: "path"), completion: .file())
    var catalogueFile: String?

    @Option(help: ArgumentHelp("""
        With a catalogue file: read the creatives' sound by their landmarks (the default), by \
        both readings, or by the learned reading alone (docs/sound-embedder.md).
        """, valueName: "both|landmarks|learned"))
    var soundReading = SoundReadingChoice.standard

    /// What was given: the payloads, and the creatives' sound when a catalogue file was.
    struct Resolved {
        var payloads: [WatermarkPayload]
        var sound: AnalysisPipeline.SoundSearch?
        /// The campaigns whose marks carry airing codes.
        var airing: [AiringCampaign] = []
        /// The fingerprint of the key each campaign was marked with (nil: not known).
        var keyFingerprints: [String?] = []
    }

    func validate() throws {
        if catalogue != nil && catalogueFile != nil { throw ValidationError("give --catalogue or --catalogue-file, not both") }
        if let text = catalogue, !FileManager.default.fileExists(atPath: text) {
            // A path that names nothing is a file that is missing, not a bad payload list.
            if text.contains("/") || text.contains(".") { throw ValidationError("--catalogue: no such catalogue file '\(text)'") }
            _ = try Self.parse(text, source: "--catalogue")
        }
    }

    /// The catalogue, nil when none was given; errors name the option or file.
    func resolve() throws -> Resolved? {
        if let text = catalogue {
            if FileManager.default.fileExists(atPath: text) { return try Self.campaigns(text, reading: soundReading) }
            return Resolved(payloads: try Self.parse(text, source: "--catalogue"))
        }
        guard let path = catalogueFile else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot be read" : "no such file"
            Diagnostics.error("\(path): \(reason) (catalogue file)")
            throw ExitCode.failure
        }
        if CampaignCatalogue.hasSQLiteHeader(data) { return try Self.campaigns(path, reading: soundReading) }
        do {
            return Resolved(payloads: try Self.parse(String(decoding: data, as: UTF8.self), source: path))
        } catch let error as ValidationError {
            Diagnostics.error(error.message)
            throw ExitCode.failure
        }
    }

    /// Every campaign of a catalogue file, whatever its dates: a recording may be of any day.
    private static func campaigns(_ path: String, reading: SoundReadingChoice) throws -> Resolved {
        let (campaigns, sharing) = try CampaignOptions.readWithSharedSound(path)
        guard !campaigns.isEmpty else {
            Diagnostics.error("\(path): the catalogue holds no campaign")
            throw ExitCode.failure
        }
        guard campaigns.count <= WatermarkDetector.maxCatalogue else {
            Diagnostics.error("\(path): \(campaigns.count) campaigns; a catalogue holds at most \(WatermarkDetector.maxCatalogue)")
            throw ExitCode.failure
        }
        let payloads = campaigns.map(\.payload)
        let learned: (index: EmbeddingIndex?, otherModel: Int) = reading == .landmarks ? (nil, 0) : EmbeddingIndex.forCatalogue(campaigns.map(\.embeddings))
        if learned.otherModel > 0 {
            Diagnostics.warning("\(path): \(learned.otherModel) campaign(s) were read by another build's sound embedder: heard by their landmarks alone (add them again with their audio)")
        }
        if reading == .learned && learned.index == nil {
            Diagnostics.error("\(path): no campaign has a learned reading of this build's (add them again with their audio)")
            throw ExitCode.failure
        }
        var sound = AnalysisPipeline.SoundSearch(index: SoundIndex(readings: campaigns.map(\.sound), sharing: sharing),
                                                 payloads: payloads, embeddings: learned.index)
        sound.landmarks = reading != .learned
        // A campaign with airing codes is heard by its codes, never by a static payload.
        return Resolved(payloads: campaigns.filter { $0.airing == nil }.map(\.payload), sound: sound,
                        airing: campaigns.compactMap(\.airing), keyFingerprints: campaigns.map(\.keyFingerprint))
    }

    private static func parse(_ text: String, source: String) throws -> [WatermarkPayload] {
        let list: [WatermarkPayload]
        do { list = try WatermarkPayload.list(text) } catch { throw ValidationError("\(source): \(error)") }
        guard !list.isEmpty else { throw ValidationError("\(source): the catalogue names no payload") }
        guard list.count <= WatermarkDetector.maxCatalogue else {
            throw ValidationError("\(source): \(list.count) payloads; a catalogue holds at most \(WatermarkDetector.maxCatalogue)")
        }
        return list
    }
}

/// The layout of headerless input (`arecord -t raw`, ALSA's file plugin, `ffmpeg -f s16le`),
/// which the samples cannot tell: given `--rate`, the input is read as raw samples.
struct RawInputOptions: ParsableArguments {
    @Option(parsing: .unconditional, help: ArgumentHelp("Read the input as headerless samples at this rate (Hz), little-endian.", valueName: "Hz"))
    var rate: Int?

    @Option(help: ArgumentHelp("Interleaved channels of headerless input.", valueName: "n"))
    var channels = 1

    @Option(help: ArgumentHelp("Sample encoding of headerless input: s16, s24, s32, f32 or f64.", valueName: "encoding"))
    var encoding = "s16"

    func validate() throws {
        guard let encoding = OutputFormat.Encoding(rawValue: encoding), encoding != .vorbis else {
            throw ValidationError("--encoding must be s16, s24, s32, f32 or f64, not '\(encoding)'")
        }
        _ = encoding
    }

    /// The layout, when the input is raw.
    var layout: RawLayout? {
        guard let rate else { return nil }
        return RawLayout(sampleRate: rate, channels: channels, encoding: OutputFormat.Encoding(rawValue: encoding) ?? .s16)
    }
}

/// `--at`, `--fresh-minutes`, `--stale-minutes`: when a recording was made, for a catalogue whose
/// campaigns carry airing codes.
struct AiringOptions: ParsableArguments {
    @Option(help: ArgumentHelp("""
        When the recording began, UTC, as 2026-11-28T20:15:00Z: needed when the catalogue's \
        campaigns carry airing codes, whose minute is told against it.
        """, valueName: "time"))
    var at: String?

    @Option(help: ArgumentHelp("Minutes either side of the recording's time within which an airing is fresh.", valueName: "n"))
    var freshMinutes = AiringSchedule.defaultWindow

    @Option(help: ArgumentHelp("""
        Minutes back that an older airing is recognised (reported as stale, a recording played \
        back); older marks are not reported.
        """, valueName: "n"))
    var staleMinutes = AnalysisPipeline.AiringListening.defaultStaleHorizon

    func validate() throws {
        if let at, UTCTime.parse(at) == nil { throw ValidationError("--at must be UTC as 2026-11-28T20:15:00Z, not '\(at)'") }
        guard (0...60).contains(freshMinutes) else { throw ValidationError("--fresh-minutes must be 0 to 60") }
        guard (0...1440).contains(staleMinutes) else { throw ValidationError("--stale-minutes must be 0 to 1440 (a day)") }
    }

    /// What to listen for, given the catalogue's airing campaigns; nil when there are none.
    func listening(for campaigns: [AiringCampaign], catalogue: String) throws -> AnalysisPipeline.AiringListening? {
        guard !campaigns.isEmpty else { return nil }
        guard let start = at.flatMap(UTCTime.parse) else {
            // The other campaigns are heard all the same: only these need the recording's time.
            Diagnostics.warning("\(catalogue): \(campaigns.count) campaign(s) carry airing codes, whose marks are not listened for without --at (the UTC time the recording began); their sound is, and the other campaigns are")
            return nil
        }
        let schedule = AiringSchedule(campaigns: campaigns, window: freshMinutes)
        guard schedule.codesPerMinute <= WatermarkDetector.maxPayloads else {
            Diagnostics.error("\(catalogue): \(schedule.codesPerMinute) airing codes a minute (campaigns × channels × \(2 * freshMinutes + 1) minutes); a detector listens for at most \(WatermarkDetector.maxPayloads)")
            throw ExitCode.failure
        }
        return AnalysisPipeline.AiringListening(schedule: schedule, startUTC: start, staleHorizon: staleMinutes)
    }
}

/// What `hark analyze`, `hark plot` and `hark detect` listen for, resolved once from their
/// options: the watermark search (nil key: none), the catalogue's creatives by their sound, the
/// airing codes. Each file's pipeline settings are made from it at the file's rate.
struct Listening {
    var key: WatermarkKey?
    var profile: WatermarkProfile
    var chosen: CatalogueOptions.Resolved?
    var airing: AnalysisPipeline.AiringListening?

    /// `base` (made for a file's rate) listening for all of it.
    func settings(_ base: AnalysisPipeline.Settings) -> AnalysisPipeline.Settings {
        var s = base
        s.watermark = key.map { AnalysisPipeline.WatermarkSearch(key: $0, profile: profile, catalogue: chosen?.payloads, airing: airing) }
        s.sound = chosen?.sound
        return s
    }

    /// With a catalogue file only its campaigns are reported: an airing-coded campaign's marks
    /// left unread without --at would otherwise surface as their raw codes (nil: any payload).
    var known: Set<WatermarkPayload>? { chosen?.sound.map { Set($0.payloads) } }
}
