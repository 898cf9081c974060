import Foundation
import HarkTesting
import Testing

/// `hark embed --live`, run as a playout would: through ALSA (its `file` plugin, fed in real
/// time through a FIFO, since there is no sound card here), and as a stream on standard input
/// and output. The output must be the input, delayed by the stated latency, plus a mark that
/// `hark detect` hears.
@Suite(.serialized) struct LiveEmbedCommandTests {
    let dir = TemporaryDirectory()
    /// The embedder's delay at 48 kHz: half a 2 048-sample frame, two hops and one more (53.3 ms).
    static let latencyFrames = 2560

    /// Twelve seconds of the generator's music, as raw mono 16-bit samples.
    private func host() throws -> (wav: String, samples: [Int16]) {
        let wav = dir.file("host.wav")
        let run = try Hark.run(["generate", "music", wav, "--duration", "12", "--seed", "4"])
        #expect(run.status == 0, "\(run.stderr)")
        let data = try Data(contentsOf: URL(fileURLWithPath: wav))
        let samples = data.dropFirst(44).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        #expect(samples.count == 12 * 48_000)
        return (wav, samples)
    }

    private func raw(_ path: String) throws -> [Int16] {
        try Data(contentsOf: URL(fileURLWithPath: path)).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// The output's energy against the input's, the output read `lag` frames later, in dB.
    private func differenceReInput(_ input: [Int16], _ output: [Int16], lag: Int) -> Double {
        var d = 0.0, h = 0.0
        for k in 0..<min(input.count, output.count - lag) {
            let x = Double(input[k]), e = Double(output[k + lag]) - x
            d += e * e
            h += x * x
        }
        return 10 * log10(d / h)
    }

    /// Writes mono 16-bit `samples` into `fifo` at twice real time, 100 ms at once, on a thread
    /// of its own: an ALSA `file` device reading it is paced as a card paces its capture. It
    /// outlives the reader by a second of padding: its write then fails instead of killing the
    /// tests.
    private func pace(_ samples: [Int16], into fifo: String) {
        signal(SIGPIPE, SIG_IGN)
        let bytes = samples.withUnsafeBufferPointer { Data(buffer: $0) } + Data(count: 48_000 * 2)
        Thread {
            guard let handle = FileHandle(forWritingAtPath: fifo) else { return }
            let start = Date()
            var offset = 0
            while offset < bytes.count {
                let n = min(9_600, bytes.count - offset)
                try? handle.write(contentsOf: bytes[offset..<(offset + n)])
                offset += n
                let due = Double(offset) / 2 / 48_000 / 2
                let wait = due - Date().timeIntervalSince(start)
                if wait > 0 { Thread.sleep(forTimeInterval: wait) }
            }
            try? handle.close()
        }.start()
    }

    @Test func marksWhatALSACapturesAndPlaysItBackAtTheStatedDelay() throws {
        let (_, samples) = try host()
        let fifo = dir.file("in.fifo"), out = dir.file("out.raw"), config = dir.file("live.conf")
        #expect(mkfifo(fifo, 0o600) == 0)
        try """
            pcm.wavin { type file; slave { pcm { type null } }; file "/dev/null"; infile "\(fifo)"; format "raw" }
            pcm.in { type plug; slave { pcm "wavin"; format S16_LE; rate 48000; channels 1 } }
            pcm.wavout { type file; slave { pcm { type null } }; file "\(out)"; format "raw" }
            pcm.out { type plug; slave { pcm "wavout"; format S16_LE; rate 48000; channels 1 } }
            """.write(toFile: config, atomically: true, encoding: .utf8)
        pace(samples, into: fifo)
        // As systemd runs it (Type=notify): it says when it is ready, how it is, and that it stops.
        let notify = dir.file("notify.sock")
        let socketFD = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(socketFD) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in notify.utf8.enumerated() where i < raw.count - 1 { raw[i] = b }
        }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        #expect(bound == 0)
        let run = try Hark.run(["embed", "--live", "--input", "in", "--output", "out", "--alsa-config", config, "--channels", "1",
                                "--seconds", "12", "--payload", "c0ffee42", "--status-interval", "4"],
                               environment: ["NOTIFY_SOCKET": notify, "WATCHDOG_USEC": "2000000"])
        #expect(run.status == 0, "\(run.stderr)")
        var notes: [String] = []
        var buffer = [UInt8](repeating: 0, count: 512)
        while case let n = recv(socketFD, &buffer, buffer.count, Int32(MSG_DONTWAIT)), n > 0 {
            notes.append(String(decoding: buffer[0..<n], as: UTF8.self))
        }
        #expect(notes.first == "READY=1" && notes.last == "STOPPING=1", "\(notes)")
        #expect(notes.contains("WATCHDOG=1") && notes.contains { $0.hasPrefix("STATUS=live 4 s: host ") }, "\(notes)")
        // Its status: levels, the mark's level, faults, the latency (53.3 ms here, plus the
        // capture period of 10 ms and the playback buffer of 30 ms on a card).
        #expect(run.stderr.contains("hark: live 4 s: host "), "\(run.stderr)")
        #expect(run.stderr.contains("marked 12.00 s live: latency 93.3 ms; overruns 0, dropped frames 0, underruns 0"), "\(run.stderr)")
        let played = try raw(out)
        #expect(played.count == samples.count + Self.latencyFrames)
        #expect(played.prefix(Self.latencyFrames).allSatisfy { $0 == 0 })
        let mark = differenceReInput(samples, played, lag: Self.latencyFrames)
        #expect(mark < -20 && mark > -35, "mark \(mark) dB re the input")
        // Nowhere else near it is the input: the delay is exactly the stated one.
        for shift in [-480, -7, -1, 1, 7, 480] {
            #expect(differenceReInput(samples, played, lag: Self.latencyFrames + shift) > mark + 5, "shift \(shift)")
        }
        let detect = try Hark.run(["detect", out, "--rate", "48000"])
        #expect(detect.stdout.contains("payload c0ffee42"), "\(detect.stdout)")
    }

    /// The venue's microphone through ALSA (`--ambient`): a crowd 10 dB over the programme
    /// (pink noise 6 dB over it, raised 4 dB by `--ambient-gain`)
    /// raises the masking the mark follows, so the same programme comes out with a louder mark
    /// than without it, still heard by `hark detect`; the crowd itself is never played.
    @Test func followsTheCrowdThroughAnAmbientCaptureDevice() throws {
        let (_, samples) = try host()
        let crowdWav = dir.file("crowd.wav")
        let made = try Hark.run(["generate", "pink", crowdWav, "--duration", "12", "--level", "-14", "--seed", "9"])
        #expect(made.status == 0, "\(made.stderr)")
        let crowd = try Data(contentsOf: URL(fileURLWithPath: crowdWav)).dropFirst(44).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        #expect(crowd.count == samples.count)
        func marked(withCrowd: Bool) throws -> (level: Double, output: String, stderr: String) {
            let tag = withCrowd ? "crowd" : "alone"
            let fifo = dir.file("in-\(tag).fifo"), ambientFifo = dir.file("ambient-\(tag).fifo")
            let out = dir.file("out-\(tag).raw"), config = dir.file("live-\(tag).conf")
            #expect(mkfifo(fifo, 0o600) == 0 && mkfifo(ambientFifo, 0o600) == 0)
            try """
                pcm.wavin { type file; slave { pcm { type null } }; file "/dev/null"; infile "\(fifo)"; format "raw" }
                pcm.in { type plug; slave { pcm "wavin"; format S16_LE; rate 48000; channels 1 } }
                pcm.ambin { type file; slave { pcm { type null } }; file "/dev/null"; infile "\(ambientFifo)"; format "raw" }
                pcm.venue { type plug; slave { pcm "ambin"; format S16_LE; rate 48000; channels 1 } }
                pcm.wavout { type file; slave { pcm { type null } }; file "\(out)"; format "raw" }
                pcm.out { type plug; slave { pcm "wavout"; format S16_LE; rate 48000; channels 1 } }
                """.write(toFile: config, atomically: true, encoding: .utf8)
            if withCrowd { pace(crowd, into: ambientFifo) }
            pace(samples, into: fifo)
            let run = try Hark.run(["embed", "--live", "--input", "in", "--output", "out", "--alsa-config", config, "--channels", "1",
                                    "--seconds", "12", "--payload", "c0ffee42", "--status-interval", "0"]
                                   + (withCrowd ? ["--ambient", "venue", "--ambient-gain", "4"] : []))
            #expect(run.status == 0, "\(run.stderr)")
            let played = try raw(out)
            #expect(played.count == samples.count + Self.latencyFrames)
            return (differenceReInput(samples, played, lag: Self.latencyFrames), out, run.stderr)
        }
        let alone = try marked(withCrowd: false)
        let heard = try marked(withCrowd: true)
        #expect(heard.level > alone.level + 6, "mark \(heard.level) dB re the input with the crowd, \(alone.level) without")
        #expect(heard.level < 0, "mark \(heard.level) dB re the input: the crowd was played, not only followed")
        // The venue's device opened and read with no fault (faster than real time is this test's pace).
        let venue = heard.stderr.split(separator: "\n").filter { $0.contains("ambient:") }
        #expect(venue.contains { $0.contains("capturing from 'venue'") }, "\(heard.stderr)")
        #expect(venue.allSatisfy { $0.contains("capturing from") || $0.contains("faster than real time") }, "\(heard.stderr)")
        let detect = try Hark.run(["detect", heard.output, "--rate", "48000"])
        #expect(detect.stdout.contains("payload c0ffee42"), "\(detect.stdout)")
    }

    @Test func marksAStreamFromStandardInputToStandardOutput() throws {
        let (_, samples) = try host()
        let stereo = samples.flatMap { [$0, $0] }
        let input = stereo.withUnsafeBufferPointer { Array(UnsafeRawBufferPointer($0)) }
        let out = dir.file("out.raw")
        let run = try Hark.run(["embed", "--live", "--input", "-", "--output", "-", "--payload", "c0ffee42", "--status-interval", "0"],
                               input: input)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("marked 12.00 s live: latency 53.3 ms"), "\(run.stderr)")
        try Data(run.stdoutBytes).write(to: URL(fileURLWithPath: out))
        let played = try raw(out)
        #expect(played.count == stereo.count + 2 * Self.latencyFrames)
        let mark = differenceReInput(stereo, played, lag: 2 * Self.latencyFrames)
        #expect(mark < -20 && mark > -35, "mark \(mark) dB re the input")
        let detect = try Hark.run(["detect", out, "--rate", "48000", "--channels", "2"])
        #expect(detect.stdout.contains("payload c0ffee42"), "\(detect.stdout)")
        // A stream that ends mid-frame, or is not 16-bit samples at all, is still whole frames out.
        let odd = try Hark.run(["embed", "--live", "--input", "-", "--output", "-", "--payload", "1", "--status-interval", "0"],
                               input: Array(input.prefix(48_001)))
        #expect(odd.status == 0 && odd.stdoutBytes.count % 4 == 0, "\(odd.stderr)")
    }

    @Test func refusesWhatItCannotPlayByName() throws {
        let config = dir.file("devices.conf")
        try """
            pcm.zeros { type file; slave { pcm { type null } }; file "/dev/null"; infile "/dev/zero"; format "raw" }
            pcm.in { type plug; slave { pcm "zeros"; format S16_LE; rate 48000; channels 2 } }
            pcm.sink { type file; slave { pcm { type null } }; file "/dev/null"; format "raw" }
            pcm.out { type plug; slave { pcm "sink"; format S16_LE; rate 48000; channels 2 } }
            """.write(toFile: config, atomically: true, encoding: .utf8)
        // A device that is not there at the start is an error naming it (under systemd the unit
        // is restarted); ALSA's own words come as warnings.
        let noInput = try Hark.run(["embed", "--live", "--input", "nothing", "--output", "out", "--alsa-config", config, "--payload", "1"])
        #expect(noInput.status == 1 && noInput.stderr.contains("hark: error: cannot open capture device 'nothing'"), "\(noInput.stderr)")
        #expect(noInput.stderr.split(separator: "\n").allSatisfy { $0.hasPrefix("hark: ") }, "\(noInput.stderr)")
        let noOutput = try Hark.run(["embed", "--live", "--input", "in", "--output", "nothing", "--alsa-config", config, "--payload", "1"])
        #expect(noOutput.status == 1 && noOutput.stderr.contains("hark: error: cannot open playback device 'nothing'"), "\(noOutput.stderr)")
        let mixed = try Hark.run(["embed", "--live", "--input", "-", "--output", "out", "--payload", "1"])
        #expect(mixed.status != 0 && mixed.stderr.contains("--input - and --output - go together"), "\(mixed.stderr)")
        let files = try Hark.run(["embed", "a.wav", "b.wav", "--live", "--payload", "1"])
        #expect(files.status != 0 && files.stderr.contains("--live takes --input and --output, not files"), "\(files.stderr)")
        let notLive = try Hark.run(["embed", "a.wav", "b.wav", "--input", "x", "--payload", "1"])
        #expect(notLive.status != 0 && notLive.stderr.contains("are for --live"), "\(notLive.stderr)")
        let now = try Hark.run(["embed", "a.wav", "b.wav", "--payload", "1", "--airing-key", String(repeating: "ab", count: 16), "--channel", "1",
                                "--airing-start", "now"])
        #expect(now.status != 0 && now.stderr.contains("--airing-start now is for --live"), "\(now.stderr)")
    }
}
