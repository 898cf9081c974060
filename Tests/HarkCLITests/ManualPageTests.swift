import Foundation
import Testing

/// The manual pages as tools/manual makes them and groff renders them.
@Suite struct ManualPageTests {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Runs `arguments[0]` with the rest; returns its standard output and error.
    private func run(_ arguments: [String], in directory: URL? = nil) throws -> (status: Int32, out: String, err: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = arguments
        if let directory { p.currentDirectoryURL = directory }
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    /// A page rendered as a terminal shows it, in one long line per paragraph.
    private func rendered(_ page: String) throws -> (text: String, warnings: String) {
        let r = try run(["groff", "-mdoc", "-Tutf8", "-ww", "-rLL=300n", page])
        #expect(r.status == 0, "\(r.err)")
        let text = r.out.replacing(#/\x1B\[[0-9;]*m/#, with: "").replacing(#/.\x08/#, with: "")
        return (text, r.err)
    }

    @Test func thePagesSayWhatTheHelpSaysAndHarkdsIsADaemonsPage() throws {
        let bin = Hark.executable.deletingLastPathComponent()
        let generator = bin.appendingPathComponent("generate-manual")
        #expect(FileManager.default.isExecutableFile(atPath: generator.path), "build it first: swift build --product generate-manual")
        let out = NSTemporaryDirectory() + "hark-man-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let made = try run([Self.root.appendingPathComponent("tools/manual").path, generator.path, bin.path, out], in: Self.root)
        #expect(made.status == 0, "\(made.err)")

        // Every non-ASCII character was dropped, changing meanings: "18 channels", "8192 kHz",
        // "tv 2 dB (default) 0.39 / 0.83"; and man warned "Empty input line #158".
        let hark = try rendered(out + "/hark.1")
        for phrase in ["1-8 channels, 8-192 kHz", "AIFF, ...)"] { #expect(hark.text.contains(phrase), "\(phrase)") }
        #expect(hark.text.contains(#/tv -2 dB \(default\) +-0\.39 \/ -0\.83/#))
        #expect(!hark.text.contains("18 channels") && !hark.text.contains("8192 kHz"))
        #expect(hark.warnings.isEmpty, "\(hark.warnings)")

        // harkd's page: section 8, the sections a daemon's page has, and no "subcommand".
        let harkd = try rendered(out + "/harkd.8")
        #expect(harkd.text.hasPrefix("HARKD(8)"))
        for section in ["SYNOPSIS", "EXIT STATUS", "SIGNALS", "FILES", "SEE ALSO"] {
            #expect(harkd.text.contains("\n\(section)\n"), "no \(section)")
        }
        #expect(!harkd.text.contains("subcommand"), "\(harkd.text.prefix(600))")
        #expect(harkd.text.contains("SIGHUP") && harkd.text.contains("/etc/hark/harkd.conf") && harkd.text.contains("hark(1)"))
        #expect(harkd.warnings.isEmpty, "\(harkd.warnings)")
    }
}
