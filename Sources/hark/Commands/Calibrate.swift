import ArgumentParser
import Foundation
import HarkEngine
import HarkSoundFile

struct Calibrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compute the calibration offset from a recording of a sound calibrator.",
        discussion: """
        Record a few seconds with the calibrator (e.g. 94 dB SPL at 1 kHz) on the microphone, \
        then pass the file and the calibrator's level. The printed offset goes to \
        'hark analyze --calibration'.
        """)

    @Argument(help: "Recording of the calibrator tone.", completion: .file())
    var file: String

    @Option(parsing: .unconditional, help: ArgumentHelp("The calibrator's level in dB SPL.", valueName: "dB"))
    var reference: Double = 94

    @Option(parsing: .unconditional, help: ArgumentHelp("The calibrator's frequency in Hz.", valueName: "Hz"))
    var frequency: Double = 1000

    @Option(help: ArgumentHelp("Use only this channel (1 is the first).", valueName: "n"))
    var channel: Int?

    @Flag(help: "Print the result as one JSON line.")
    var json = false

    func validate() throws {
        guard reference.isFinite, reference > 0, reference < 200 else {
            throw ValidationError("--reference must be a level in dB SPL between 0 and 200")
        }
        guard frequency.isFinite, frequency >= 31.5, frequency <= 16_000 else {
            throw ValidationError("--frequency must be between 31.5 and 16000 Hz")
        }
        if let c = channel, c < 1 { throw ValidationError("--channel counts from 1") }
    }

    func run() throws {
        let result: CalibrationResult
        do {
            let source = try SoundFileSource(path: file)
            result = try CalibrationAnalysis.measure(source: source, reference: reference, frequency: frequency, channel: channel)
            source.warnings.forEach(Diagnostics.warning)
        } catch let error as SoundFileError {
            Diagnostics.error(error.description)
            throw ExitCode.failure
        } catch let error as CalibrationError {
            Diagnostics.error(error.description)
            throw ExitCode.failure
        }
        let out = LineWriter.standardOutput
        if json {
            var j = JSONLine()
            j.add("class", "calibration")
            j.add("file", file)
            j.add("offset", result.offset, decimals: 2)
            j.add("measured", result.measured, decimals: 2)
            j.add("reference", result.reference, decimals: 2)
            j.add("duration", result.duration, decimals: 3)
            j.add("spread", result.spread, decimals: 2)
            try out.write(line: j.line)
        } else {
            try out.write(line: String(format: "calibration offset: %+.2f dB", result.offset))
            try out.write(line: String(format: "  the %g Hz tone reads %.2f dB re full scale over %.2f s (steady within %.2f dB); calibrator %.1f dB SPL",
                                       frequency, result.measured, result.duration, result.spread, result.reference))
            try out.write(line: String(format: "  use: hark analyze --calibration %.2f FILE", result.offset))
        }
    }
}
