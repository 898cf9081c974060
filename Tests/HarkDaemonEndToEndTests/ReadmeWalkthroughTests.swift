import Foundation
import Testing

/// The README's walkthrough, run as written (a doctest): the shell block after the
/// `<!-- walkthrough -->` marker, from the clone, with `set -e`, so that a command that fails or
/// a file it never made stops it. The one change: `$PWD/.build/release` is this build's folder.
/// The shake and the detections must name the campaign, as the comments say.
@Suite struct ReadmeWalkthroughTests {
    static let clone = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func walkthrough() throws -> String {
        let readme = try String(contentsOf: clone.appendingPathComponent("README.md"), encoding: .utf8)
        let marked = try #require(readme.range(of: "<!-- walkthrough -->\n```sh\n"), "the README has no walkthrough block")
        let end = try #require(readme.range(of: "\n```", range: marked.upperBound..<readme.endIndex))
        return String(readme[marked.upperBound..<end.lowerBound])
    }

    @Test func theWalkthroughRunsAsWritten() throws {
        let block = try Self.walkthrough()
        #expect(block.contains("export PATH=$PWD/.build/release:$PATH"))
        let bin = builtExecutable("hark").deletingLastPathComponent().path
        // Whatever it left running (harkd, the feed) goes with it, however it ends.
        let script = "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n"
            + block.replacingOccurrences(of: "$PWD/.build/release", with: bin) + "\n"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/bash")
        p.arguments = ["-c", script]
        p.currentDirectoryURL = Self.clone
        var environment = ProcessInfo.processInfo.environment
        environment["HARK_SOCKET"] = nil
        p.environment = environment
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let errors = Locked(Data())
        let drained = DispatchSemaphore(value: 0)
        Thread {
            let data = err.fileHandleForReading.readDataToEndOfFile()
            errors.with { $0 = data }
            drained.signal()
        }.start()
        let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        drained.wait()
        let stderr = errors.with { String(decoding: $0, as: UTF8.self) }
        #expect(p.terminationStatus == 0, "exit \(p.terminationStatus)\n\(stdout)\n\(stderr)")
        // What the comments promise: the campaign named in the clean file and in the room,
        // and the shake answered.
        let named = stdout.split(separator: "\n").filter { $0.contains("payload c0ffee42 at") }
        #expect(named.contains { $0.contains("aired.wav") } && named.contains { $0.contains("room.wav") }, "\(stdout)")
        #expect(stdout.contains("payload c0ffee42 heard after"), "\(stdout)")
        #expect(stdout.contains("calibration offset") || stdout.contains("+114.00"), "\(stdout)")
    }
}
