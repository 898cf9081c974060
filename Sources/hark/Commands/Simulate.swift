import ArgumentParser
import Foundation
import HarkEngine
import HarkSimulation
import HarkSoundFile

struct Simulate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Pass audio through a simulated acoustic path (codec, speaker, room, noise, microphone, clock).",
        discussion: """
        Stages run in order: --codec (through ffmpeg when installed; skipped with a warning \
        otherwise), --speaker, --rt60/--distance/--volume (a synthetic room: direct path, early \
        reflections, exponential diffuse tail with the direct-to-reverberant ratio of Sabine's \
        critical distance), --noise at --snr re the programme as received, --mic, \
        --drift-ppm, --rate, --gain, --clip. The output is one channel, as a microphone records; \
        .wav output is 32-bit float unless the path clips.
        """)

    @Argument(help: "Input audio.", completion: .audio) var input: String
    @Argument(help: "Output audio.", completion: .file()) var output: String

    @Option(help: ArgumentHelp("aac64, aac96, aac128, mp3_64, mp3_128, opus32, opus64.", valueName: "codec"))
    var codec: String?
    @Option(help: ArgumentHelp("Loudspeaker pass band.", valueName: "LO:HI"))
    var speaker: String?
    @Option(parsing: .unconditional, help: ArgumentHelp("Reverberation time, seconds.", valueName: "s"))
    var rt60: Double?
    @Option(help: ArgumentHelp("Source to microphone distance, metres.", valueName: "m"))
    var distance: Double = 2.7
    @Option(help: ArgumentHelp("Room volume, cubic metres (54: living room; 96000: stadium bowl).", valueName: "m3"))
    var volume: Double = 54
    @Option(help: ArgumentHelp("pink, white, babble, crowd, or a noise file.", valueName: "kind"))
    var noise: String?
    @Option(parsing: .unconditional, help: ArgumentHelp("Noise re programme, dB.", valueName: "dB"))
    var snr: Double = 10
    @Option(help: ArgumentHelp("Microphone pass band.", valueName: "LO:HI"))
    var mic: String?
    @Option(name: .customLong("drift-ppm"), parsing: .unconditional, help: ArgumentHelp("Capture clock offset, ppm.", valueName: "ppm"))
    var driftPPM: Double = 0
    @Option(parsing: .unconditional, help: ArgumentHelp("Output sample rate.", valueName: "Hz"))
    var rate: Int?
    @Option(parsing: .unconditional, help: ArgumentHelp("Gain, dB.", valueName: "dB"))
    var gain: Double = 0
    @Flag(help: "Hard-clip at full scale.")
    var clip = false
    @Option(help: ArgumentHelp("Seed for the room and the noise.", valueName: "n"))
    var seed: UInt64 = 1

    private func band(_ text: String?, _ name: String) throws -> ClosedRange<Double>? {
        guard let text else { return nil }
        let parts = text.split(separator: ":").map { Double($0) }
        guard parts.count == 2, let lo = parts[0], let hi = parts[1], lo > 0, hi > lo else {
            throw ValidationError("--\(name) takes LO:HI in Hz, e.g. 150:12000")
        }
        return lo...hi
    }

    func validate() throws {
        _ = try band(speaker, "speaker")
        _ = try band(mic, "mic")
        if let c = codec, AcousticPath.codecs[c] == nil {
            throw ValidationError("unknown --codec '\(c)'; one of \(AcousticPath.codecs.keys.sorted().joined(separator: ", "))")
        }
        if let r = rt60, !(r > 0 && r <= 10) { throw ValidationError("--rt60 must be between 0 and 10 s") }
        guard distance > 0, volume > 0 else { throw ValidationError("--distance and --volume must be positive") }
        guard abs(driftPPM) <= 10_000 else { throw ValidationError("--drift-ppm must be within ±10000") }
        if let r = rate, !SoundFileError.sampleRates.contains(r) { throw ValidationError("--rate must be 8000–192000 Hz") }
    }

    func run() throws {
        var path = AcousticPath()
        path.codec = codec
        path.speaker = try band(speaker, "speaker")
        path.rt60 = rt60
        path.distance = distance
        path.volume = volume
        if let noise {
            switch noise {
            case "pink": path.noise = .pink
            case "white": path.noise = .white
            case "babble": path.noise = .babble
            case "crowd": path.noise = .crowd
            default: path.noise = .file(noise)
            }
        }
        path.snr = snr
        path.mic = try band(mic, "mic")
        path.driftPPM = driftPPM
        path.rate = rate
        path.gain = gain
        path.clip = clip
        path.seed = seed
        do {
            let warnings = try Simulation.run(input: input, output: output, path: path)
            warnings.forEach(Diagnostics.warning)
        } catch let error as SoundFileError {
            Diagnostics.error(error.description)
            throw ExitCode.failure
        } catch let error as SimulationError {
            Diagnostics.error(error.description)
            throw ExitCode.failure
        }
        // What was made, so a bench log says which path each file went through.
        var summary = "wrote \(output)"
        if let written = try? SoundFileReader(path: output) {
            summary += String(format: ": %.2f s, %d Hz, one channel", Double(written.declaredFrames) / Double(written.sampleRate),
                              written.sampleRate)
            written.close()
        }
        summary += "; \(path.stages)"
        try LineWriter.report(writing: output).write(line: summary)
    }
}
