import Foundation

/// Runs the built `hark` executable and captures what it prints.
struct HarkRun {
    var status: Int32
    var stdout: String
    var stderr: String
    /// Standard output as bytes (audio written to it).
    var stdoutBytes: [UInt8] = []

    var stdoutLines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }
    var stderrLines: [String] { stderr.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }

    /// Every stdout line parsed as a JSON object (a line that does not parse is a test failure
    /// reported by the caller through `nil`).
    var jsonObjects: [[String: Any]?] {
        stdoutLines.map { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }
}

enum Hark {
    /// The `hark` binary SwiftPM built next to the test bundle.
    static let executable: URL = {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("hark")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        fatalError("hark executable not found near \(CommandLine.arguments[0]); build it first")
    }()

    /// `hark-lab`, built beside `hark`.
    static let lab = executable.deletingLastPathComponent().appendingPathComponent("hark-lab")

    /// - Parameter input: bytes written to standard input through a pipe that is then closed
    ///   (nil: standard input is /dev/null).
    static func run(_ arguments: [String], in directory: String? = nil, environment: [String: String]? = nil,
                    input: [UInt8]? = nil, executable: URL = Hark.executable) throws -> HarkRun {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        if let environment { process.environment = environment }
        // Files rather than pipes: no deadlock however much is printed.
        let base = NSTemporaryDirectory() + "hark-run-" + UUID().uuidString
        _ = FileManager.default.createFile(atPath: base + ".out", contents: nil)
        _ = FileManager.default.createFile(atPath: base + ".err", contents: nil)
        defer {
            try? FileManager.default.removeItem(atPath: base + ".out")
            try? FileManager.default.removeItem(atPath: base + ".err")
        }
        let out = FileHandle(forWritingAtPath: base + ".out")!, err = FileHandle(forWritingAtPath: base + ".err")!
        process.standardOutput = out
        process.standardError = err
        let pipe = input.map { _ in Pipe() }
        process.standardInput = pipe ?? FileHandle.nullDevice
        try process.run()
        if let pipe, let input {
            // Written whole before the process is waited for: it must read as it goes (a pipe holds
        // 64 KB).
            try pipe.fileHandleForWriting.write(contentsOf: Data(input))
            try pipe.fileHandleForWriting.close()
        }
        process.waitUntilExit()
        try out.close()
        try err.close()
        let bytes = (try? Data(contentsOf: URL(fileURLWithPath: base + ".out"))) ?? Data()
        return HarkRun(status: process.terminationStatus,
                       stdout: String(decoding: bytes, as: UTF8.self),
                       stderr: (try? String(contentsOfFile: base + ".err", encoding: .utf8)) ?? "",
                       stdoutBytes: Array(bytes))
    }
}

func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF)] }
func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8((v >> (8 * $0)) & 0xFF) } }

/// A canonical 16-bit PCM WAV of a 1 kHz tone, with overridable header fields.
func wav(frames: Int, channels: Int = 1, rate: Int = 48_000, formatTag: Int = 1, declaredDataBytes: Int? = nil) -> [UInt8] {
    let data = (0..<(frames * channels)).flatMap { i in
        le16(Int(Int16(16_000 * sin(2 * Double.pi * 1000 * Double(i / channels) / 48_000))))
    }
    let align = channels * 2
    var out: [UInt8] = Array("RIFF".utf8) + le32(36 + data.count) + Array("WAVE".utf8)
    out += Array("fmt ".utf8) + le32(16) + le16(formatTag) + le16(channels) + le32(rate) + le32(rate * align) + le16(align) + le16(16)
    out += Array("data".utf8) + le32(declaredDataBytes ?? data.count) + data
    return out
}
