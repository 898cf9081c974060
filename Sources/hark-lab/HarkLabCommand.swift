import ArgumentParser
import Foundation
import HarkEngine

/// `hark-lab`: the benches that measure what the product claims, on generated and recorded
/// audio. Neither `hark` nor `harkd` links this code.
@main
struct HarkLabCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hark-lab",
        abstract: "Hark's benches: detection through simulated rooms and codecs, and PEAQ transparency.",
        discussion: "Each bench reads a definitions file from signals/ and prints a Markdown table (docs/figures.md has the runs).",
        version: Hark.version,
        subcommands: [Bench.self, LabEmbed.self])
}

/// The lab's messages: one line each on stderr, prefixed "hark-lab:".
enum Lab {
    static func error(_ message: String) { try? LineWriter.standardError.write(line: "hark-lab: error: \(message)") }
    static func progress(_ message: String) { try? LineWriter.standardError.write(line: "hark-lab: \(message)") }
}
