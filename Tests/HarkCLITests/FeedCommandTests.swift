import Foundation
import HarkTesting
import Testing

/// `hark feed`: the stand-in microphone that drives harkd through ALSA's file plugin.
@Suite struct FeedCommandTests {
    let dir = TemporaryDirectory()

    /// A mono 48 kHz WAV whose sample i is i / 12: reading one sample tells where in the file it is.
    private func ramp(seconds: Double) -> String {
        let frames = Int(seconds * 48_000)
        let data = (0..<frames).flatMap { le16($0 / 12) }
        var out: [UInt8] = Array("RIFF".utf8) + le32(36 + data.count) + Array("WAVE".utf8)
        out += Array("fmt ".utf8) + le32(16) + le16(1) + le16(1) + le32(48_000) + le32(96_000) + le16(2) + le16(16)
        out += Array("data".utf8) + le32(data.count) + data
        return dir.write("ramp.wav", out)
    }

    private func startFeed(_ arguments: [String]) throws -> Process {
        let p = Process()
        p.executableURL = Hark.executable
        p.arguments = ["feed"] + arguments
        p.standardError = FileHandle.nullDevice
        try p.run()
        return p
    }

    /// Reads `count` bytes (or to the end) from the FIFO, then closes it.
    private func readFIFO(_ path: String, count: Int) -> [UInt8] {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 8192)
        while out.count < count {
            let n = read(fd, &chunk, min(chunk.count, count - out.count))
            if n <= 0 { break }
            out += chunk[0..<n]
        }
        return out
    }

    private func sample(_ bytes: [UInt8], _ i: Int) -> Int { Int(Int16(bitPattern: UInt16(bytes[2 * i]) | UInt16(bytes[2 * i + 1]) << 8)) }

    @Test func writesTheInputSampleForSampleInWholePeriods() throws {
        let input = ramp(seconds: 0.5)
        let fifo = dir.file("mic.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let feed = try startFeed([input, fifo, "--speed", "50"])
        let bytes = readFIFO(fifo, count: 1 << 20)
        feed.waitUntilExit()
        #expect(feed.terminationStatus == 0)
        #expect(bytes.count == 25 * 960 * 2)          // 24 000 frames is exactly 25 periods of 20 ms
        #expect((0..<24_000).allSatisfy { sample(bytes, $0) == $0 / 12 })
    }

    @Test func aReaderThatLeavesIsFollowedByTheNextAtTheLivePosition() throws {
        let input = ramp(seconds: 8)
        let fifo = dir.file("mic.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let feed = try startFeed([input, fifo, "--speed", "4", "--loop"])
        defer { feed.terminate(); feed.waitUntilExit() }
        let first = readFIFO(fifo, count: 9_600)           // 0.1 s of audio, then the reader leaves
        #expect(first.count == 9_600 && sample(first, 0) == 0)
        // 4 s of programme at 4× real time. A whole second, not half: the feeder must be scheduled
        // and meet the reader's absence (its write refused) before the next reader comes, and on
        // two cores busy with the other tests half a second was once not enough.
        Thread.sleep(forTimeInterval: 1.0)
        let second = readFIFO(fifo, count: 9_600)
        #expect(second.count == 9_600)
        // The programme played on while no one listened: the next reader joins it later on,
        // not at the start, and in whole samples of the same stream (the 8 s loop not yet round).
        let position = Double(sample(second, 0) * 12) / 48_000
        #expect(position > 1.0 && position < 7.5, "second reader joined at \(position) s")
        let step = sample(second, 100) - sample(second, 0)   // 100 samples on: 8 or 9 steps of the ramp
        #expect(step == 8 || step == 9)
        #expect(feed.isRunning)
    }

    @Test func refusesWhatIsNotAFIFO() throws {
        let input = ramp(seconds: 0.1)
        let r = try Hark.run(["feed", input, dir.file("plain.raw")])
        #expect(r.status == 64)
        #expect(r.stderr.contains("is not a FIFO"))
    }
}
