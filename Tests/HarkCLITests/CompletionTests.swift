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
}
