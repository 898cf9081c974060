import ArgumentParser
import Foundation
import HarkDSP
import HarkEngine
import HarkLab
import HarkSoundFile

/// `hark-lab embed`: a host marked in a format a study names (tools/studies/watermark-format-study).
/// `hark embed` marks in the format on air only; no detector reads a study's format.
struct LabEmbed: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "embed",
        abstract: "Mark a host file in a study's watermark format (1: the format on air, 2: the lab's version 2).")

    @Argument(help: "The host file.") var input: String
    @Argument(help: "The marked file to write.") var output: String

    @Option(help: ArgumentHelp("Payload: 1 to 8 hex digits.", valueName: "hex")) var payload: String
    @Option(parsing: .unconditional, help: ArgumentHelp("Tone power re the host's masking threshold, dB (the profile's default when absent).", valueName: "dB"))
    var strength: Double?
    @Option(help: ArgumentHelp("Secret key text (default: the demo key).", valueName: "text")) var key: String?
    @Option(help: ArgumentHelp("The band: tv or stadium.", valueName: "tv|stadium")) var profile: String = "tv"
    @Option(help: ArgumentHelp("The format: 1 (on air) or 2 (the study).", valueName: "n")) var formatVersion: Int = FormatVersionTwo.version

    func validate() throws {
        guard WatermarkProfile(rawValue: profile) != nil else { throw ValidationError("--profile must be tv or stadium") }
        if !FormatVersionTwo.versions.contains(formatVersion) {
            throw ValidationError("--format-version must be 1 or 2")
        }
        do { _ = try WatermarkPayload(hex: payload) } catch { throw ValidationError("--payload: \(error)") }
        if let strength, !(strength.isFinite && Embedding.strengthRange.contains(strength)) {
            throw ValidationError("--strength must be between \(Int(Embedding.strengthRange.lowerBound)) and \(Int(Embedding.strengthRange.upperBound)) dB")
        }
    }

    func run() throws {
        let key = key.map(WatermarkKey.init(text:)) ?? .demo
        let profile = WatermarkProfile(rawValue: profile) ?? .tv
        let options = EmbedOptions(payload: try WatermarkPayload(hex: payload), key: key, strength: strength, profile: profile,
                                   study: FormatVersionTwo.study(version: formatVersion, key: key, profile: profile))
        do {
            let result = try Embedding.embed(input: input, output: output, options: options)
            Lab.progress(String(format: "wrote %@ in format version %d: %.2f s, watermark %.1f dB re host", output, formatVersion,
                                result.duration, result.ratio))
        } catch let error as SoundFileError {
            Lab.error(error.description)
            throw ExitCode.failure
        } catch let error as EmbedError {
            Lab.error(error.description)
            throw ExitCode.failure
        }
    }
}
