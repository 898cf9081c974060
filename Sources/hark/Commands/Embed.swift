import ArgumentParser
import Foundation
import HarkCapture
import HarkDSP
import HarkEngine
import HarkSoundFile
import HarkSystem

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

    @Argument(help: "Host audio file (not with --live).", completion: .audio)
    var inputFile: String?

    @Argument(help: "Output file (.wav, .flac, .ogg, .aiff, .raw; not with --live).", completion: .file())
    var outputFile: String?

    @OptionGroup(title: "Live marking") var live: LiveOptions

    @Option(help: ArgumentHelp("""
        What the audience hears beside the programme (a stadium's crowd): a recording at the \
        programme's rate, or with --live an ALSA capture device (a microphone in the venue). The \
        mark follows the masking threshold of the two together, held lower in their loudest \
        bands, where the ear tells level changes apart finest, and is added to the programme \
        alone (docs/watermark.md, "The crowd as a masker").
        """, valueName: "file|device"), completion: .file())
    var ambient: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("""
        With --ambient: dB applied to it so that it stands for what the quietest seats hear \
        (the crowd there re the recording or microphone).
        """, valueName: "dB"))
    var ambientGain = -6.0

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

    @Option(help: ArgumentHelp("Add the marked output to this campaign catalogue (hark catalogue add).", valueName: "path"), completion: .file())
    var catalogue: String?

    @OptionGroup(title: "With --catalogue") var campaign: CampaignOptions

    @Option(help: ArgumentHelp("With --airing-key: the channel this airing is on (0-65535).", valueName: "n"))
    var channel: UInt16?

    @Option(help: ArgumentHelp("""
        With --airing-key: when the file's first sample airs, UTC, as 2026-11-28T20:15:00Z (with \
        --live, now). Each copy carries the code of the minute it airs in.
        """, valueName: "time"))
    var airingStart: String?

    /// The files, once validated.
    private var input: String { inputFile ?? "" }
    private var output: String { outputFile ?? "" }

    func validate() throws {
        if live.live {
            guard inputFile == nil, outputFile == nil else { throw ValidationError("--live takes --input and --output, not files") }
            guard catalogue == nil else { throw ValidationError("--catalogue needs a file the embedder writes; with --live, add the creative with hark catalogue add") }
        } else {
            guard inputFile != nil, outputFile != nil else { throw ValidationError("give the host file and the output file (or --live with --input and --output)") }
            guard !live.given else { throw ValidationError("--input, --output, --rate, --channels, --seconds and --status-interval are for --live") }
        }
        if catalogue == nil && (campaign.name != nil || campaign.from != nil || campaign.until != nil || campaign.airingChannels != nil) {
            throw ValidationError("--name, --from, --until and --airing-channels describe the campaign for --catalogue; give --catalogue too")
        }
        if campaign.hasAiringKey {
            guard channel != nil, let airingStart else { throw ValidationError("--airing-key needs --channel and --airing-start: a code is per channel and minute") }
            if airingStart == "now" {
                guard live.live else { throw ValidationError("--airing-start now is for --live; a file airs at a time you give") }
            } else if UTCTime.parse(airingStart) == nil {
                throw ValidationError("--airing-start must be UTC as 2026-11-28T20:15:00Z (or now, with --live), not '\(airingStart)'")
            }
        } else if channel != nil || airingStart != nil {
            throw ValidationError("--channel and --airing-start are for --airing-key")
        }
        if catalogue != nil && output == "-" { throw ValidationError("--catalogue needs an output file, not standard output") }
        do { _ = try WatermarkPayload(hex: payload) } catch { throw ValidationError("--payload: \(error)") }
        if live.live && ambient == "-" { throw ValidationError("--ambient with --live is an ALSA capture device") }
        if live.live && ambient != nil && live.input == "-" { throw ValidationError("--ambient with --live needs ALSA devices, not standard input") }
        if !ambientGain.isFinite || abs(ambientGain) > 60 { throw ValidationError("--ambient-gain must be between -60 and 60 dB") }
        if let strength, !(strength.isFinite && Embedding.strengthRange.contains(strength)) {
            throw ValidationError(String(format: "--strength must be between %.0f and %.0f dB", Embedding.strengthRange.lowerBound,
                                         Embedding.strengthRange.upperBound))
        }
    }

    private func embedOptions(key: WatermarkKey) throws -> EmbedOptions {
        var options = EmbedOptions(payload: try WatermarkPayload(hex: payload), key: key, strength: strength,
                                   profile: keys.watermarkProfile, airing: airing)
        if !live.live, let ambient { options.ambient = EmbedOptions.Ambient(path: ambient, gain: ambientGain) }
        // Live, the venue's microphone joins the programme in LiveMarking.
        options.hearsAmbient = ambient != nil
        return options
    }

    /// The airing to code, when --airing-key was given.
    private var airing: EmbedOptions.AiringCoding? {
        // Live, "now" is when the first sample arrives, near enough: the copies then follow the
        // sample clock, which drifts from UTC by up to 0.1 ms a second (9 s a day, within the
        // 5 minutes a device allows for a week).
        let start = airingStart == "now" ? Date().timeIntervalSince1970 : airingStart.flatMap(UTCTime.parse)
        guard let key = campaign.parsedAiringKey, let channel, let start else { return nil }
        return EmbedOptions.AiringCoding(key: key, channel: channel, startUTC: start)
    }

    func run() throws {
        let key = try keys.resolve()
        if live.live {
            try runLive(key: key)
            return
        }
        let result: EmbedResult
        do {
            result = try Embedding.embed(input: input, output: output,
                                         options: embedOptions(key: key))
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
                                                channels: channel.map { [$0] }, markKey: key)
            try LineWriter.report(writing: output).write(line: "\(catalogue): added \(added.payload.hex)")
        }
    }
}

extension Embed {
    private func runLive(key: WatermarkKey) throws {
        let options = try embedOptions(key: key)
        var configuration: String?
        if let path = live.alsaConfig {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                Diagnostics.error("\(path): cannot read the ALSA configuration")
                throw ExitCode.failure
            }
            configuration = text
        }
        let settings = LiveMarking.Settings(input: live.input ?? "default", output: live.output ?? "default", rate: live.rate,
                                            channels: live.channels, periodFrames: live.rate / 100, playbackPeriods: 3,
                                            seconds: live.seconds, statusInterval: live.statusInterval, alsaConfiguration: configuration,
                                            ambient: ambient, ambientGain: ambientGain)
        let summary: LiveMarking.Summary
        do {
            summary = try LiveMarking.run(settings, options: options)
        } catch let error as ALSAError {
            Diagnostics.error(error.description)
            throw ExitCode.failure
        } catch is LiveMarking.StreamClosed {
            return
        } catch let failure as LiveMarking.StartFailure {
            Diagnostics.error(failure.reason)
            throw ExitCode.failure
        }
        Diagnostics.progress(String(format: "marked %.2f s live: latency %.1f ms; overruns %d, dropped frames %d, underruns %d%@",
                                    summary.seconds, 1000 * summary.latency, summary.overruns, summary.dropped, summary.underruns,
                                    summary.limited > 0 ? "; mark reduced at \(summary.limited) samples to avoid clipping" : ""))
    }
}

/// `--live` and its devices: marking a stream as it plays.
struct LiveOptions: ParsableArguments {
    @Flag(help: "Mark a stream as it plays: from --input to --output (ALSA devices, or - for raw 16-bit samples on standard input and output).")
    var live = false

    @Option(help: ArgumentHelp("With --live: the ALSA capture device, or - for standard input (default: default).", valueName: "device"))
    var input: String?

    @Option(help: ArgumentHelp("With --live: the ALSA playback device, or - for standard output (default: default).", valueName: "device"))
    var output: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("With --live: sample rate, Hz.", valueName: "Hz"))
    var rate = 48_000

    @Option(help: ArgumentHelp("With --live: channels.", valueName: "n"))
    var channels = 2

    @Option(parsing: .unconditional, help: ArgumentHelp("With --live: stop after this many seconds of input.", valueName: "s"))
    var seconds: Double?

    @Option(parsing: .unconditional, help: ArgumentHelp("With --live: seconds between status lines on standard error (0: none).", valueName: "s"))
    var statusInterval = 10.0

    @Option(help: ArgumentHelp("With --live: an ALSA configuration file to use instead of the system's.", valueName: "path"), completion: .file())
    var alsaConfig: String?

    var given: Bool { input != nil || output != nil || seconds != nil || alsaConfig != nil }

    func validate() throws {
        guard (8_000...192_000).contains(rate) else { throw ValidationError("--rate must be 8000 to 192000 Hz") }
        guard (1...8).contains(channels) else { throw ValidationError("--channels must be 1 to 8") }
        if let seconds, !(seconds > 0 && seconds.isFinite) { throw ValidationError("--seconds must be positive") }
        guard statusInterval >= 0, statusInterval.isFinite else { throw ValidationError("--status-interval must be 0 or more") }
        if live && (input == "-") != (output == "-") {
            throw ValidationError("--input - and --output - go together (a stream in, a stream out); or give two ALSA devices")
        }
    }
}
