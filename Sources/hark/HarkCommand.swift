import ArgumentParser
import Foundation
import HarkEngine
import HarkSoundFile
import HarkSystem

/// `hark`: the meter, the watermark and the creatives' sound, test signals and harkd's clients.
@main
struct HarkCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hark",
        abstract: "Measure sound levels, mark and detect adverts by watermark and by their own sound, and talk to harkd.",
        discussion: """
        The meter: analyze, plot, calibrate. Adverts: embed, detect, catalogue. Test signals \
        and acoustic paths: generate, simulate (the benches that measure Hark are hark-lab's). harkd's clients: status, watch, shake, \
        noise, spool, and feed (a stand-in microphone). Each command's --help says more; \
        docs/ in the source has the reference.
        """,
        version: Hark.version,
        subcommands: [Analyze.self, Plot.self, Generate.self, Calibrate.self, Embed.self, Detect.self, Simulate.self,
                      Feed.self, Status.self, Watch.self, Shake.self, Noise.self, SpoolCommand.self, CatalogueCommand.self])

    /// Like ArgumentParser's `main()`, but every error is one line on stderr (the usage text
    /// is one `--help` away), and output to a closed pipe ends the program quietly.
    static func main() {
        signal(SIGPIPE, SIG_IGN)
        // A parent that spawns us from a thread with signals blocked (libdispatch's worker
        // threads block them) would leave us deaf to Ctrl-C and SIGTERM.
        var stop = sigset_t()
        sigemptyset(&stop)
        for s in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] { sigaddset(&stop, s) }
        sigprocmask(SIG_UNBLOCK, &stop, nil)
        if let unknown = unknownSubcommand(CommandLine.arguments) {
            Diagnostics.error(unknown)
            Foundation.exit(ExitCode.validationFailure.rawValue)
        }
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch where ManualText.isDumpRequest(CommandLine.arguments) && exitCode(for: error) == .success {
            print(ManualText.ascii(message(for: error)))
            Foundation.exit(0)
        } catch let exit as ExitCode {
            Foundation.exit(exit.rawValue)
        } catch is LineWriter.Closed {
            Foundation.exit(0)
        } catch {
            if exitCode(for: error) == .success {
                self.exit(withError: error)   // --help, --version
            }
            Diagnostics.error(oneLine(HarkCommand.message(for: error))
                              + (isUsageError(error) ? " (see '\(commandPath(CommandLine.arguments)) --help')" : ""))
            Foundation.exit(exitCode(for: error).rawValue)
        }
    }

    private static func isUsageError(_ error: Error) -> Bool {
        exitCode(for: error) == .validationFailure
    }

    /// The parser's message on one line: a list of choices it puts one per line ("Please
    /// provide one of the following:\n  - sine\n  - pink") becomes "…: sine, pink".
    static func oneLine(_ message: String) -> String {
        let lines = message.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard let first = lines.first else { return message }
        let choices = lines.dropFirst().map { $0.hasPrefix("- ") ? String($0.dropFirst(2)) : $0 }
        return choices.isEmpty ? first : first + " " + choices.joined(separator: ", ")
    }

    /// A word where a command expects one of its subcommands but that names none of them: the
    /// parser would call it and what follows "unexpected arguments". Says which command it is
    /// not, and the nearest name when a letter or two is off.
    static func unknownSubcommand(_ arguments: [String]) -> String? {
        var path = ["hark"]
        var command: ParsableCommand.Type = HarkCommand.self
        for word in arguments.dropFirst() {
            let subcommands = command.configuration.subcommands
            guard !subcommands.isEmpty, !word.hasPrefix("-"), word != "help" else { return nil }
            guard let sub = subcommands.first(where: { $0._commandName == word || $0.configuration.aliases.contains(word) }) else {
                let here = path.joined(separator: " ")
                if here == "hark", word == "bench" { return "the benches are hark-lab's: hark-lab bench \(arguments.dropFirst(2).joined(separator: " "))" }
                let names = subcommands.map { $0._commandName }
                let nearest = names.map { (name: $0, distance: editDistance(word, $0)) }.min { $0.distance < $1.distance }
                let hint = nearest.flatMap { $0.distance <= 2 ? "; did you mean '\($0.name)'?" : nil } ?? ""
                return "'\(word)' is not a command of \(here)\(hint) (its commands: \(names.joined(separator: ", "))) (see '\(here) --help')"
            }
            path.append(word)
            command = sub
        }
        return nil
    }

    /// Levenshtein distance: insertions, deletions and substitutions, one each.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        var row = Array(0...b.count)
        for i in 1...max(1, a.count) where !a.isEmpty {
            var previous = row[0]
            row[0] = i
            for j in 1...max(1, b.count) where !b.isEmpty {
                let saved = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = saved
            }
        }
        return a.isEmpty ? b.count : row[b.count]
    }

    /// The command a usage error belongs to, for its help: `hark generate`, `hark catalogue add`.
    static func commandPath(_ arguments: [String]) -> String {
        var path = ["hark"]
        var command: ParsableCommand.Type = HarkCommand.self
        for word in arguments.dropFirst() {
            guard let sub = command.configuration.subcommands.first(where: { $0._commandName == word }) else { break }
            path.append(word)
            command = sub
        }
        return path.joined(separator: " ")
    }
}

/// Messages for the person at the terminal: one line each, on stderr, prefixed "hark:".
extension ExitCode {
    /// `hark detect` and `hark shake` ran without error but heard no watermark: distinct from
    /// 1 (an error) so a script can tell "not marked" from "could not look".
    static let nothingHeard = ExitCode(2)
}

enum Diagnostics {
    static func error(_ message: String) {
        try? LineWriter.standardError.write(line: "hark: error: \(message)")
    }

    static func warning(_ message: String) {
        try? LineWriter.standardError.write(line: "hark: warning: \(message)")
    }

    static func progress(_ message: String) {
        try? LineWriter.standardError.write(line: "hark: \(message)")
    }

    /// Runs `body` on each file in turn. A file that fails gets one error line naming it and the
    /// others still run; the command then exits 1. A closed stdout stops everything.
    static func eachFile(_ files: [String], _ body: (_ index: Int, _ path: String) throws -> Void) throws {
        var failed = false
        for (index, path) in files.enumerated() {
            do {
                try body(index, path)
            } catch let error as SoundFileError {
                Self.error(error.description)
                failed = true
            } catch let closed as LineWriter.Closed {
                throw closed
            } catch {
                Self.error("\(path): \(error)")
                failed = true
            }
        }
        if failed { throw ExitCode.failure }
    }
}
