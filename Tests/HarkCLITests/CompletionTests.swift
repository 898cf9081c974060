import Foundation
import Testing

/// The shell completions tools/install puts in place, generated from the argument parser.
@Suite struct CompletionTests {
    @Test func bashCompletionParsesAndKnowsEveryCommand() throws {
        let run = try Hark.run(["--generate-completion-script", "bash"])
        #expect(run.status == 0)
        for command in ["analyze", "detect", "embed", "shake", "noise", "spool", "status"] {
            #expect(run.stdout.contains(command), "\(command)")
        }
        let script = NSTemporaryDirectory() + "hark-completion-\(UUID().uuidString).bash"
        try run.stdout.write(toFile: script, atomically: true, encoding: .utf8)
        defer { unlink(script) }
        let bash = Process()
        bash.executableURL = URL(fileURLWithPath: "/bin/bash")
        bash.arguments = ["-n", script]
        try bash.run()
        bash.waitUntilExit()
        #expect(bash.terminationStatus == 0, "bash -n refused the completion script")
    }

    /// What bash offers for `words` (the last being completed) with the generated script of
    /// `tool` sourced, in a folder holding `recording.wav`.
    private func offered(_ tool: URL, _ words: [String]) throws -> [String] {
        let dir = NSTemporaryDirectory() + "hark-complete-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Beside a recording, what sits beside recordings: a log, a pid file, a picture.
        for name in ["recording.wav", "rec.log", "rec.pid", "rec.png"] { FileManager.default.createFile(atPath: dir + "/" + name, contents: Data()) }
        try FileManager.default.createDirectory(atPath: dir + "/recordings", withIntermediateDirectories: true)
        let script = dir + "/completion.bash"
        let generate = Process()
        generate.executableURL = tool
        generate.arguments = ["--generate-completion-script", "bash"]
        let pipe = Pipe()
        generate.standardOutput = pipe
        try generate.run()
        let text = pipe.fileHandleForReading.readDataToEndOfFile()
        generate.waitUntilExit()
        try text.write(to: URL(fileURLWithPath: script))
        let name = tool.lastPathComponent
        let quoted = words.map { "'\($0)'" }.joined(separator: " ")
        let bash = Process()
        bash.executableURL = URL(fileURLWithPath: "/bin/bash")
        bash.currentDirectoryURL = URL(fileURLWithPath: dir)
        // A custom completion runs the tool by its name, as an installed one is found.
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = tool.deletingLastPathComponent().path + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        bash.environment = environment
        bash.arguments = ["-c", """
            source completion.bash
            COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1); COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
            _\(name) \(name) "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
            printf '%s\\n' "${COMPREPLY[@]}"
            """]
        let out = Pipe()
        bash.standardOutput = out
        try bash.run()
        let reply = out.fileHandleForReading.readDataToEndOfFile()
        bash.waitUntilExit()
        return String(decoding: reply, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    @Test func bashCompletesFileNamesAndTheValuesOfModeAndFormat() throws {
        // Before, no argument completed a file name and --mode offered nothing.
        let harkd = Hark.executable.deletingLastPathComponent().appendingPathComponent("harkd")
        // Audio and folders, not the log, the pid file or the picture beside them.
        #expect(try offered(Hark.executable, ["hark", "analyze", "rec"]).sorted() == ["recording.wav", "recordings"])
        #expect(try offered(Hark.executable, ["hark", "detect", "rec"]).sorted() == ["recording.wav", "recordings"])
        #expect(try offered(Hark.executable, ["hark", "detect", "--catalogue", "recording"]).sorted() == ["recording.wav", "recordings"])
        #expect(try offered(harkd, ["harkd", "--config", "recording"]).sorted() == ["recording.wav", "recordings"])
        #expect(try offered(harkd, ["harkd", "--mode", ""]) == ["on-demand", "continuous"])
        #expect(try offered(harkd, ["harkd", "--format", ""]) == ["S16", "S32", "FLOAT"])
        // -D offers the PCMs ALSA's configuration names, as --list-devices lists them.
        let listed = try Hark.run(["--list-devices"], executable: harkd).stdoutLines
            .prefix { !$0.hasPrefix("sound cards:") }.dropFirst().compactMap { $0.split(separator: " ").first.map(String.init) }
        let devices = try offered(harkd, ["harkd", "-D", ""])
        #expect(!devices.isEmpty && devices == listed.filter { $0 != "(none:" }, "\(devices) against \(listed)")
    }
}
