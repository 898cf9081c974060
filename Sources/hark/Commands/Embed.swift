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
        """)

    @Argument(help: "Host audio file.")
    var input: String

    @Argument(help: "Output file (.wav, .flac, .ogg, .aiff, .raw).")
    var output: String

    @Option(help: ArgumentHelp("Payload: 1 to 8 hex digits (32 bits).", valueName: "hex"))
    var payload: String

    @OptionGroup var keys: KeyOptions

    @Option(parsing: .unconditional,
            help: ArgumentHelp("""
                Tone power re the host's masking threshold, dB (−20 … 20). The default, −2 for \
                the tv profile and 0 for stadium, grades as transparent with PEAQ whatever the \
                payload and key; every dB above it makes the mark louder, easier to hear and \
                easier to detect (docs/watermark.md gives the PEAQ grade and the detection of \
                each level).
                """, valueName: "dB"))
    var strength: Double?

    @OptionGroup var format: FormatVersionOption

    func validate() throws {
        do { _ = try WatermarkPayload(hex: payload) } catch { throw ValidationError("--payload: \(error)") }
        if let strength, !(strength.isFinite && Embedding.strengthRange.contains(strength)) {
            throw ValidationError(String(format: "--strength must be between %.0f and %.0f dB", Embedding.strengthRange.lowerBound,
                                         Embedding.strengthRange.upperBound))
        }
    }

    func run() throws {
        let key = try keys.resolve()
        let result: EmbedResult
        do {
            result = try Embedding.embed(input: input, output: output,
                                         options: EmbedOptions(payload: try WatermarkPayload(hex: payload), key: key, strength: strength,
                                                               profile: keys.watermarkProfile,
                                                               version: format.version ?? .v1))
        } catch let error as SoundFileError {
            Diagnostics.error(error.description)
            throw ExitCode.failure
        } catch let error as EmbedError {
            Diagnostics.error(error.description)
            throw ExitCode.failure
        }
        try LineWriter.report(writing: output).write(line: String(
            format: "wrote %@: payload %@, %.2f s; watermark %.1f dB re host overall, closest 1/3-octave band %.1f dB (%@ Hz)%@",
            output, try WatermarkPayload(hex: payload).hex, result.duration, result.ratio, result.worstBand.ratio,
            result.worstBand.label, result.limitedSamples > 0 ? "; reduced at \(result.limitedSamples) samples to avoid clipping" : ""))
    }
}
