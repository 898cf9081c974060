import FoundationEssentials
import Glibc
import HarkEngine
import HarkSystem
import HarkSimulation

/// dpwe/audfprint, the landmark fingerprinter the sound reading is measured against, run
/// unmodified on the bench's own windows and creatives: its rows sit beside the sound's in the
/// table. It is an outside program, found through `HARK_AUDFPRINT` (its `audfprint.py`) and run
/// by `HARK_AUDFPRINT_PYTHON` (default `python3`); without it the bench runs without its rows.
public struct AudfprintAnchor {
    public enum Failure: Error, CustomStringConvertible {
        case missing(String)
        case failed(String)
        public var description: String {
            switch self {
            case .missing(let path):
                return """
                    HARK_AUDFPRINT names \(path), which is not a file. audfprint is a Python program: \
                    git clone https://github.com/dpwe/audfprint; python3 -m venv env; \
                    env/bin/pip install numpy scipy docopt joblib psutil; then \
                    HARK_AUDFPRINT=audfprint/audfprint.py HARK_AUDFPRINT_PYTHON=env/bin/python (it reads audio through ffmpeg)
                    """
            case .failed(let m): return "audfprint failed: \(m)"
            }
        }
    }

    /// The settings the anchor was measured with: 100 hashes a second, 5 common hashes
    /// to name a sound; every other setting is audfprint's default.
    static let settings = ["--density", "100", "--min-count", "5"]

    let python: String
    let script: String

    /// nil when `HARK_AUDFPRINT` is unset.
    init?(environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        guard let script = environment["HARK_AUDFPRINT"], !script.isEmpty else { return nil }
        guard FileManager.default.fileExists(atPath: script) else { throw Failure.missing(script) }
        self.script = script
        let python = environment["HARK_AUDFPRINT_PYTHON"].flatMap { $0.isEmpty ? nil : $0 } ?? "python3"
        guard let found = python.contains("/") ? python : Simulation.findExecutable(python) else {
            throw Failure.failed("no \(python) to run it with (HARK_AUDFPRINT_PYTHON)")
        }
        self.python = found
    }

    private func run(_ arguments: [String]) throws -> String {
        let r = try Subprocess.run(python, [script] + arguments, timeLimit: 3600)
        let out = String(decoding: r.standardOutput, as: UTF8.self)
        guard r.status == 0, !r.timedOut else {
            throw Failure.failed(String(decoding: r.standardError, as: UTF8.self).split(separator: "\n").suffix(3).joined(separator: "; "))
        }
        return out
    }

    private func listFile(_ files: [String], at path: String) throws {
        try Data((files.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: path))
    }

    /// A new database of `files` at `database`.
    func build(database: String, files: [String]) throws {
        try listFile(files, at: database + ".list")
        _ = try run(["new", "--dbase", database, "--list", database + ".list"] + Self.settings)
    }

    /// `base` with `files` added, saved as `database`.
    func extend(_ base: String, with files: [String], as database: String) throws {
        try? FileManager.default.removeItem(atPath: database)
        try FileManager.default.copyItem(atPath: base, toPath: database)
        try listFile(files, at: database + ".list")
        _ = try run(["add", "--dbase", database, "--list", database + ".list"] + Self.settings)
    }

    /// The file each query is named as (its path as the database holds it), or nil.
    func match(database: String, queries: [String]) throws -> [String: String?] {
        guard !queries.isEmpty else { return [:] }
        try listFile(queries, at: database + ".queries")
        let out = try run(["match", "--dbase", database, "--list", database + ".queries"] + Self.settings)
        return try Self.parse(out, queries: queries)
    }

    /// audfprint's verbose lines: `Matched QUERY D sec N raw hashes as REF at T s with …` or
    /// `NOMATCH QUERY D sec N raw hashes`. Every query must have its line.
    static func parse(_ output: String, queries: [String]) throws -> [String: String?] {
        var named: [String: String?] = [:]
        for line in output.split(separator: "\n") {
            if line.hasPrefix("NOMATCH "), let q = queries.first(where: { line.dropFirst(8).hasPrefix($0 + " ") }) {
                named[q] = .some(nil)
            } else if line.hasPrefix("Matched "), let q = queries.first(where: { line.dropFirst(8).hasPrefix($0 + " ") }),
                      let asRange = line.firstRange(of: " raw hashes as "), let atRange = line[asRange.upperBound...].firstRange(of: " at ") {
                named[q] = String(line[asRange.upperBound..<atRange.lowerBound])
            }
        }
        if let missing = queries.first(where: { named[$0] == nil }) {
            throw Failure.failed("no answer for \(missing)")
        }
        return named
    }
}
