import Foundation
import Testing

/// The Python client printed in docs/protocol.md, run as it is against harkd: app developers
/// who do not write Swift start from code that works.
@Suite(.serialized) struct PythonClientTests {
    static let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// The first ```python block under "A client in Python" in docs/protocol.md.
    static func documentedClient() throws -> String {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/protocol.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        let section = try #require(text.range(of: "## A client in Python"))
        let start = try #require(text.range(of: "```python\n", range: section.upperBound..<text.endIndex))
        let end = try #require(text.range(of: "\n```", range: start.upperBound..<text.endIndex))
        return String(text[start.upperBound..<end.lowerBound]) + "\n"
    }

    @Test(.enabled(if: python != nil, "needs python3 (tools/setup installs it)"))
    func theDocumentedClientShakesAndMeasures() throws {
        let h = try DaemonHarness()
        try hark(["generate", "music", h.dir + "/host.wav", "--duration", "20"])
        try hark(["embed", h.dir + "/host.wav", h.dir + "/marked.wav", "--payload", "c0ffee42"])
        let raw = try h.raw(from: h.dir + "/marked.wav", name: "marked.raw")
        let script = h.dir + "/client.py"
        try Self.documentedClient().write(toFile: script, atomically: true, encoding: .utf8)
        try h.start()
        h.feed(raw, speed: 4)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.python!)
        p.arguments = [script, h.socket]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let problems = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "\(problems)")
        #expect(text.contains("shake: payload c0ffee42 heard after"), "\(text)")
        #expect(text.contains("\rLAF "), "no live level: \(text)")
        #expect(text.range(of: #"noise: LAeq +-?\d+\.\d dB, LAFmax +-?\d+\.\d dB over 5\.0 s \(record [0-9a-f-]{36}\)"#,
                           options: .regularExpression) != nil, "\(text)")
        #expect(h.terminate() == 0)
    }
}
