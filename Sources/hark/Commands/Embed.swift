import ArgumentParser
import Foundation
import HarkDSP
import HarkEngine
import HarkSoundFile

struct Embed: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add a watermark carrying a 32-bit payload to an audio file.",
        discussion: """
        The mark repeats every 2.4 s through the whole file. Every tone follows the host's \
        masking threshold frame by frame (a perceptual model: critical bands, spreading, \
        tonality, forward masking, the threshold in quiet at 92 dB SPL for full scale), so \
        quiet passages get less, tonal passages much less, and silence or a pause the host \
        cannot cover none. The mark never clips the output. The output keeps the input's \
        sample rate, channels and, where the output type allows, its encoding. See \
        docs/watermark.md.

        What each --strength costs, measured (PEAQ ODG on the bench's nine hosts, the median \
        host / the worst of eight payload and key draws: 0 is imperceptible, −1 perceptible \
        but not annoying, −2 slightly annoying, −3 annoying; and the share of the bench's \
        trials heard through a living room at SNR 10 dB within 6 s, with a catalogue of 100):
          tv −3.5 dB              −0.28 / −0.55   29 %
          tv −2 dB (default)      −0.39 / −0.83   36 %
          tv −1 dB                −0.51 / −1.08   45 %
          tv 0 dB                 −0.69 / −1.38   50 %
          tv +5 dB                −1.92 / −2.81   73 %
          tv +10 dB               −3.33 / −3.60   98 %
          stadium −1 dB           −0.51 / −1.09
          stadium 0 dB (default)  −0.67 / −1.35
          stadium +1 dB           −0.85 / −1.62
          stadium +10 dB          −3.21 / −3.53
        """)

    @Argument(help: "Host audio file.", completion: .file())
    var input: String

    @Argument(help: "Output file (.wav, .flac, .ogg, .aiff, .raw).", completion: .file())
    var output: String

    @Option(help: ArgumentHelp("""
        Payload: 1 to 8 hex digits (32 bits). With --airing-key, the campaign's payload, its \
        identity in the catalogue and in detections, while the mark carries its airing codes.
        """, valueName: "hex"))
    var payload: String

    @OptionGroup var keys: KeyOptions

    @Option(parsing: .unconditional,
            help: ArgumentHelp("""
                Tone power re the host's masking threshold, dB (−20 … 20). The default, −2 for \
                the tv profile and 0 for stadium, grades as transparent with PEAQ whatever the \
                payload and key; every dB above it makes the mark louder, easier to hear and \
                easier to detect (the table above; docs/watermark.md, "The trade-off").
                """, valueName: "dB"))
    var strength: Double?

    @OptionGroup var format: FormatVersionOption

    @Option(help: ArgumentHelp("Add the marked output to this campaign catalogue (hark catalogue add).", valueName: "path"), completion: .file())
    var catalogue: String?

    @OptionGroup(title: "With --catalogue") var campaign: CampaignOptions

    @Option(help: ArgumentHelp("With --airing-key: the channel this airing is on (0-65535).", valueName: "n"))
    var channel: UInt16?

    @Option(help: ArgumentHelp("""
        With --airing-key: when the file's first sample airs, UTC, as 2026-11-28T20:15:00Z. Each \
        copy carries the code of the minute it airs in.
        """, valueName: "time"))
    var airingStart: String?

    func validate() throws {
        if catalogue == nil && (campaign.name != nil || campaign.from != nil || campaign.until != nil || campaign.channels != nil) {
            throw ValidationError("--name, --from, --until and --channels describe the campaign for --catalogue; give --catalogue too")
        }
        if campaign.airingKey != nil {
            guard channel != nil, let airingStart else { throw ValidationError("--airing-key needs --channel and --airing-start: a code is per channel and minute") }
            guard UTCTime.parse(airingStart) != nil else {
                throw ValidationError("--airing-start must be UTC as 2026-11-28T20:15:00Z, not '\(airingStart)'")
            }
        } else if channel != nil || airingStart != nil {
            throw ValidationError("--channel and --airing-start are for --airing-key")
        }
        if catalogue != nil && output == "-" { throw ValidationError("--catalogue needs an output file, not standard output") }
        do { _ = try WatermarkPayload(hex: payload) } catch { throw ValidationError("--payload: \(error)") }
        if let strength, !(strength.isFinite && Embedding.strengthRange.contains(strength)) {
            throw ValidationError(String(format: "--strength must be between %.0f and %.0f dB", Embedding.strengthRange.lowerBound,
                                         Embedding.strengthRange.upperBound))
        }
    }

    /// The airing to code, when --airing-key was given.
    private var airing: EmbedOptions.AiringCoding? {
        guard let key = campaign.parsedAiringKey, let channel, let start = airingStart.flatMap(UTCTime.parse) else { return nil }
        return EmbedOptions.AiringCoding(key: key, channel: channel, startUTC: start)
    }

    func run() throws {
        let key = try keys.resolve()
        let result: EmbedResult
        do {
            result = try Embedding.embed(input: input, output: output,
                                         options: EmbedOptions(payload: try WatermarkPayload(hex: payload), key: key, strength: strength,
                                                               profile: keys.watermarkProfile,
                                                               version: format.version ?? .v1, airing: airing))
        } catch let error as SoundFileError {
            Diagnostics.error(error.description)
            throw ExitCode.failure
        } catch let error as EmbedError {
            Diagnostics.error(error.description)
            throw ExitCode.failure
        }
        try LineWriter.report(writing: output).write(line: String(
            format: "wrote %@: payload %@%@, %.2f s; watermark %.1f dB re host overall, closest 1/3-octave band %.1f dB (%@ Hz)%@",
            output, try WatermarkPayload(hex: payload).hex,
            airing.map { a in " as airing codes on channel \(a.channel) from \(UTCTime.minute(AiringCode.minute(atUTC: a.startUTC)))" } ?? "",
            result.duration, result.ratio, result.worstBand.ratio,
            result.worstBand.label, result.limitedSamples > 0 ? "; reduced at \(result.limitedSamples) samples to avoid clipping" : ""))
        if let catalogue {
            // The creative as it leaves the embedder: the catalogue holds what will air.
            let added = try CampaignOptions.add(creative: output, payload: try WatermarkPayload(hex: payload), to: catalogue, details: campaign,
                                                channels: channel.map { [$0] })
            try LineWriter.report(writing: output).write(line: "\(catalogue): added \(added.payload.hex)")
        }
    }
}
