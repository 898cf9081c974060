import Foundation
import Glibc
import Testing
@testable import HarkEngine

@Suite struct ProgressReporterTests {
    /// Opens a pseudo-terminal so the reporter sees a real terminal.
    private func withTerminal(_ body: (LineWriter) -> Void) -> String {
        var primary: Int32 = 0, secondary: Int32 = 0
        guard openpty(&primary, &secondary, nil, nil, nil) == 0 else { return "no pty" }
        defer { close(primary) }
        body(LineWriter(fd: secondary))
        close(secondary)
        var out = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(primary, &buffer, buffer.count)
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        return String(decoding: out, as: UTF8.self)
    }

    @Test func drawsOnATerminalForLongRecordings() {
        let text = withTerminal { writer in
            let p = ProgressReporter(writer: writer, name: "long.flac", totalFrames: 48_000 * 3600, sampleRate: 48_000)
            p.update(48_000 * 900)
            p.finish()
        }
        #expect(text.contains("long.flac: 25% (15:00.000 of 1:00:00.000)"))
        #expect(text.hasSuffix("\r\u{1B}[K"))
    }

    @Test func silentForShortRecordingsAndNonTerminals() {
        let short = withTerminal { writer in
            ProgressReporter(writer: writer, name: "short.wav", totalFrames: 48_000 * 10, sampleRate: 48_000).update(48_000)
        }
        #expect(short.isEmpty)
        let devNull = LineWriter(fd: open("/dev/null", O_WRONLY))
        #expect(!devNull.isTerminal)
        close(devNull.fd)
    }
}
