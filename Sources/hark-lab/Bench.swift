import ArgumentParser
import Foundation
import HarkDSP
import HarkEngine
import HarkLab

struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measurement benches.",
        subcommands: [WatermarkBenchCommand.self, TransparencyBenchCommand.self])
}

struct WatermarkBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watermark",
        abstract: "Measure watermark detection through simulated acoustic paths.",
        discussion: """
        Hosts, conditions, windows and trial counts come from the definitions file. Needs \
        espeak-ng (speech hosts) and ffmpeg (codecs). Prints a Markdown table; progress goes to \
        stderr. With HARK_AUDFPRINT naming dpwe/audfprint's audfprint.py (run by \
        HARK_AUDFPRINT_PYTHON, default python3), conditions read by sound get a row of \
        audfprint's answers on the same windows, against the same creatives.
        """)

    @Option(help: ArgumentHelp("Bench definitions.", valueName: "path"), completion: .file())
    var definitions = "signals/watermark-bench.json"

    @Option(help: ArgumentHelp("Work folder for generated hosts and intermediate files.", valueName: "path"), completion: .file())
    var work = ".bench/watermark"

    @Flag(help: "One host of each kind, fewer offsets and less unmarked audio.")
    var quick = false

    @Option(parsing: .unconditional,
            help: ArgumentHelp("Mark the hosts at this strength (dB re the masking threshold) instead of the definitions' own.",
                               valueName: "dB"))
    var strength: Double?

    func run() throws {
        var d: BenchDefinition
        do {
            d = try BenchDefinition.load(path: definitions)
        } catch {
            Lab.error("\(definitions): \(error)")
            throw ExitCode.failure
        }
        if quick { d = d.quick }
        if let strength { d.strength = strength }
        do {
            let report = try WatermarkBench.run(d, workDirectory: work) { Lab.progress($0) }
            try LineWriter.standardOutput.write(raw: WatermarkBench.table(report))
        } catch let error as BenchHosts.Failure {
            Lab.error(error.description)
            throw ExitCode.failure
        } catch let error as WatermarkBench.Failure {
            Lab.error(error.description)
            throw ExitCode.failure
        } catch let error as AudfprintAnchor.Failure {
            Lab.error(error.description)
            throw ExitCode.failure
        }
    }
}

struct TransparencyBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transparency",
        abstract: "Grade how audible the watermark is, with PEAQ.",
        discussion: """
        Marks every host of the definitions file in each profile at each strength and grades \
        the marked file against its host with PEAQ (ITU-R BS.1387, basic version) through \
        GstPEAQ's `peaq`, found in $PEAQ or on PATH. Needs espeak-ng (speech hosts). Prints a \
        Markdown table; progress goes to stderr.
        """)

    @Option(help: ArgumentHelp("Bench definitions.", valueName: "path"), completion: .file())
    var definitions = "signals/transparency-bench.json"

    @Option(help: ArgumentHelp("Work folder for generated hosts and marked files.", valueName: "path"), completion: .file())
    var work = ".bench/transparency"

    @Option(parsing: .unconditional,
            help: ArgumentHelp("Strengths to grade, dB re the masking threshold, comma-separated (default: the definitions').",
                               valueName: "dB,…"))
    var strengths: String?

    @Option(help: ArgumentHelp("Seed for the hosts, payloads and keys (default: the definitions').", valueName: "n"))
    var seed: UInt64?

    @Option(help: ArgumentHelp("Payload-and-key draws to mark each host with; each host is graded by its median and worst draw (default: the definitions').",
                               valueName: "n"))
    var draws: Int?

    /// A study's format (tools/studies/watermark-format-study); no detector reads version 2.
    @Option(help: ArgumentHelp(visibility: .private))
    var formatVersion: Int?

    func validate() throws {
        if let draws, draws < 1 { throw ValidationError("--draws must be at least 1") }
        if let formatVersion, !FormatVersionTwo.versions.contains(formatVersion) {
            throw ValidationError("--format-version must be 1 or 2")
        }
        if let strengths, Self.parse(strengths: strengths) == nil {
            throw ValidationError("--strengths: expected numbers separated by commas, got '\(strengths)'")
        }
    }

    static func parse(strengths: String) -> [Double]? {
        let values = strengths.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard !values.isEmpty, values.allSatisfy({ $0 != nil }) else { return nil }
        return values.map { $0! }
    }

    func run() throws {
        var d: TransparencyDefinition
        do {
            d = try TransparencyDefinition.load(path: definitions)
        } catch {
            Lab.error("\(definitions): \(error)")
            throw ExitCode.failure
        }
        if let strengths, let values = Self.parse(strengths: strengths) { d.strengths = values }
        if let seed { d.seed = seed }
        if let draws { d.draws = draws }
        if let formatVersion { d.formatVersion = formatVersion }
        do {
            let report = try TransparencyBench.run(d, workDirectory: work) { Lab.progress($0) }
            try LineWriter.standardOutput.write(raw: TransparencyBench.table(report))
        } catch let error as PEAQGrader.Failure {
            Lab.error(error.description)
            throw ExitCode.failure
        } catch let error as BenchHosts.Failure {
            Lab.error(error.description)
            throw ExitCode.failure
        }
    }
}
