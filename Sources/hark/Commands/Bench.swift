import ArgumentParser
import Foundation
import HarkEngine

struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measurement benches.",
        subcommands: [WatermarkBenchCommand.self])
}

struct WatermarkBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watermark",
        abstract: "Measure watermark detection through simulated acoustic paths.",
        discussion: """
        Hosts, conditions, windows and trial counts come from the definitions file. Needs \
        espeak-ng (speech hosts) and ffmpeg (codecs). Prints a Markdown table; progress goes to \
        stderr.
        """)

    @Option(help: ArgumentHelp("Bench definitions.", valueName: "path"))
    var definitions = "signals/watermark-bench.json"

    @Option(help: ArgumentHelp("Work folder for generated hosts and intermediate files.", valueName: "path"))
    var work = ".bench/watermark"

    @Flag(help: "One host of each kind, fewer offsets and less unmarked audio.")
    var quick = false

    func run() throws {
        var d: BenchDefinition
        do {
            d = try BenchDefinition.load(path: definitions)
        } catch {
            Diagnostics.error("\(definitions): \(error)")
            throw ExitCode.failure
        }
        if quick { d = d.quick }
        do {
            let report = try WatermarkBench.run(d, workDirectory: work) { Diagnostics.progress($0) }
            try LineWriter.standardOutput.write(raw: WatermarkBench.table(report))
        } catch let error as BenchHosts.Failure {
            Diagnostics.error(error.description)
            throw ExitCode.failure
        }
    }
}
