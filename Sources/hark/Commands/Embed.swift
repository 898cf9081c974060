import ArgumentParser
import Foundation
import HarkDSP
import HarkEngine
import HarkSoundFile

struct Embed: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add a watermark carrying a 32-bit payload to an audio file.",
        discussion: """
        The mark repeats every 2.4 s through the whole file, follows the host's level (quiet \
        passages get less, silence none), stays at the requested strength overall and at least \
        3 dB under the host in every 1/3-octave band, and never clips. The output keeps the \
        input's sample rate, channels and, where the output type allows, its encoding. See \
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
            help: ArgumentHelp("Watermark power re host power, dB (−40 … −10).", valueName: "dB"))
    var strength: Double = -20

    func validate() throws {
        do { _ = try WatermarkPayload(hex: payload) } catch { throw ValidationError("--payload: \(error)") }
        guard strength.isFinite, (-40.0 ... -10.0).contains(strength) else {
            throw ValidationError("--strength must be between -40 and -10 dB")
        }
    }

    func run() throws {
        let key = try keys.resolve()
        let result: EmbedResult
        do {
            result = try Embedding.embed(input: input, output: output,
                                         options: EmbedOptions(payload: try WatermarkPayload(hex: payload), key: key, strength: strength,
                                                               profile: keys.watermarkProfile))
        } catch let error as SoundFileError {
            Diagnostics.error(error.description)
            throw ExitCode.failure
        } catch let error as EmbedError {
            Diagnostics.error(error.description)
            throw ExitCode.failure
        }
        try LineWriter.standardOutput.write(line: String(
            format: "wrote %@: payload %@, %.2f s; watermark %.1f dB re host overall, closest 1/3-octave band %.1f dB (%@ Hz)%@",
            output, try WatermarkPayload(hex: payload).hex, result.duration, result.ratio, result.worstBand.ratio,
            result.worstBand.label, result.limitedSamples > 0 ? "; reduced at \(result.limitedSamples) samples to avoid clipping" : ""))
    }
}
