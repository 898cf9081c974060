import Foundation
import HarkTesting
import Testing

@Suite struct AnalyzeCommandTests {
    let dir = TemporaryDirectory()

    @Test func generatedToneAnalysedAsJSON() throws {
        let file = dir.file("tone.flac")
        let gen = try Hark.run(["generate", "sine", file, "--frequency", "1000", "--level", "-20", "--duration", "3.5"])
        #expect(gen.status == 0, "\(gen.stderr)")
        let run = try Hark.run(["analyze", "--json", file])
        #expect(run.status == 0 && run.stderr.isEmpty, "\(run.stderr)")
        let objects = run.jsonObjects
        #expect(objects.allSatisfy { $0 != nil }, "every line is a JSON object")
        #expect(objects.map { $0?["class"] as? String } == ["level", "level", "level", "level", "report"])
        let report = try #require(objects.last!)
        #expect((report["file"] as? String) == file)
        let laeq = try #require(report["LAeq"] as? Double)
        #expect(abs(laeq + 20) <= 0.02)
        #expect(abs((report["duration"] as? Double ?? 0) - 3.5) < 1e-9)
        let bands = try #require(report["bands"] as? [String: Any])
        #expect(bands.count == 28)
        let kHz = try #require(bands["1000"] as? Double)
        #expect(abs(kHz + 20) < 0.05)
        for key in ["LCeq", "LZeq", "LAE", "LAFmax", "LAFmin", "LASmax", "LCpeak", "LA10", "LA50", "LA90"] {
            #expect(report[key] is Double, "\(key)")
        }
    }

    @Test func summaryForPeople() throws {
        let file = dir.file("pink.wav")
        _ = try Hark.run(["generate", "pink", file, "--duration", "2", "--level", "-30"])
        let run = try Hark.run(["analyze", file, "--calibration", "120"])
        #expect(run.status == 0)
        #expect(run.stdout.contains("LAeq") && run.stdout.contains("dB SPL, calibration +120.00 dB"))
        #expect(run.stdout.contains("1000 Hz"))
    }

    @Test func calibrationOffsetReachesTheLevels() throws {
        let file = dir.file("cal.wav")
        _ = try Hark.run(["generate", "calibrator", file, "--duration", "5", "--level", "-17.5"])
        let cal = try Hark.run(["calibrate", file, "--reference", "94", "--json"])
        #expect(cal.status == 0, "\(cal.stderr)")
        let object = try #require(cal.jsonObjects.first ?? nil)
        let offset = try #require(object["offset"] as? Double)
        #expect(abs(offset - 111.5) < 0.02)
        let run = try Hark.run(["analyze", "--json", "--calibration", String(offset), file])
        let laeq = try #require(run.jsonObjects.last??["LAeq"] as? Double)
        #expect(abs(laeq - 94) < 0.03)
    }

    // MARK: bad input: one line on stderr naming the file, non-zero status, nothing on stdout

    private func expectOneError(_ arguments: [String], naming name: String?, containing text: String,
                                sourceLocation: SourceLocation = #_sourceLocation) throws {
        let run = try Hark.run(arguments)
        #expect(run.status != 0, sourceLocation: sourceLocation)
        #expect(run.stdout.isEmpty, "stdout: \(run.stdout)", sourceLocation: sourceLocation)
        #expect(run.stderrLines.count == 1, "stderr: \(run.stderr)", sourceLocation: sourceLocation)
        let line = run.stderrLines.first ?? ""
        #expect(line.hasPrefix("hark: error: "), sourceLocation: sourceLocation)
        if let name { #expect(line.contains(name), "\(line)", sourceLocation: sourceLocation) }
        #expect(line.contains(text), "\(line)", sourceLocation: sourceLocation)
    }

    @Test func missingFile() throws {
        try expectOneError(["analyze", "--json", dir.file("absent.wav")], naming: "absent.wav", containing: "no such file")
    }

    @Test func directory() throws {
        try expectOneError(["analyze", "--json", dir.path], naming: dir.path, containing: "is a directory")
    }

    @Test func emptyFile() throws {
        try expectOneError(["analyze", "--json", dir.write("empty.wav", [])], naming: "empty.wav", containing: "empty file")
    }

    @Test func aHeaderWithNoAudioIsAnErrorNotAnEmptyReport() throws {
        // Before: a report of dashes "over 0.0 s" and exit 0.
        let path = dir.write("nothing.wav", wav(frames: 0))
        try expectOneError(["analyze", "--json", path], naming: "nothing.wav", containing: "no audio frames to measure")
        let run = try Hark.run(["analyze", path])
        #expect(run.status == 1 && run.stdout.isEmpty, "\(run.stdout)")
        // One file without audio fails the run; the others are still measured.
        let good = dir.write("good.wav", wav(frames: 48_000))
        let both = try Hark.run(["analyze", "--json", path, good])
        #expect(both.status == 1 && both.stdout.contains("good.wav") && !both.stdout.contains("nothing.wav"))
    }

    @Test func randomBytes() throws {
        var rng = SystemRandomNumberGenerator()
        let path = dir.write("noise.bin", (0..<4096).map { _ in UInt8.random(in: 0...255, using: &rng) })
        try expectOneError(["analyze", "--json", path], naming: "noise.bin", containing: "not an audio format")
    }

    @Test func headerCutShort() throws {
        let path = dir.write("cut.wav", Array(wav(frames: 100).prefix(40)))
        try expectOneError(["analyze", "--json", path], naming: "cut.wav", containing: "header")
    }

    @Test func zeroChannels() throws {
        var bytes = wav(frames: 100)
        bytes[22] = 0
        try expectOneError(["analyze", "--json", dir.write("ch0.wav", bytes)], naming: "ch0.wav", containing: "0 channels")
    }

    @Test func zeroRate() throws {
        try expectOneError(["analyze", "--json", dir.write("r0.wav", wav(frames: 100, rate: 0))], naming: "r0.wav",
                           containing: "sample rate 0 Hz is outside")
    }

    @Test func unsupportedEncoding() throws {
        try expectOneError(["analyze", "--json", dir.write("mp3.wav", wav(frames: 100, formatTag: 0x55))],
                           naming: "mp3.wav", containing: "unsupported sample encoding")
    }

    @Test func nonNumericOption() throws {
        let path = dir.write("ok.wav", wav(frames: 4800))
        try expectOneError(["analyze", "--interval", "soon", path], naming: nil, containing: "'soon' is invalid for '--interval")
        try expectOneError(["analyze", "--calibration", "x", path], naming: nil, containing: "--calibration")
        try expectOneError(["generate", "sine", dir.file("a.wav"), "--rate", "fast"], naming: nil, containing: "--rate")
        // A negative number is a value out of range, not a missing one.
        try expectOneError(["analyze", "--interval", "-1", path], naming: nil, containing: "--interval must be between 0.01 and 86400 seconds")
        try expectOneError(["generate", "sine", dir.file("a.wav"), "--duration", "-2"], naming: nil, containing: "--duration")
    }

    @Test func channelOutOfRange() throws {
        let path = dir.write("stereo.wav", wav(frames: 4800, channels: 2))
        try expectOneError(["analyze", "--json", "--channel", "3", path], naming: "stereo.wav", containing: "channel 3")
    }

    @Test func headerClaimingMoreThanTheFileHolds() throws {
        // 1 s of audio under a header that promises 3 s.
        let path = dir.write("short.wav", wav(frames: 48_000, declaredDataBytes: 288_000))
        let run = try Hark.run(["analyze", "--json", path])
        #expect(run.status == 0)
        #expect(run.stderrLines.count == 1)
        #expect(run.stderr.contains("hark: warning: \(path): header declares 3.000 s"))
        #expect(run.stderr.contains("2.000 s missing"))
        let report = try #require(run.jsonObjects.last ?? nil)
        #expect(report["duration"] as? Double == 1)
        #expect((report["warnings"] as? [String])?.count == 1)
    }

    @Test func oneBadFileAmongGoodOnes() throws {
        let good = dir.write("good.wav", wav(frames: 4800))
        let run = try Hark.run(["analyze", "--json", good, dir.file("missing.wav"), good])
        #expect(run.status == 1)
        #expect(run.jsonObjects.compactMap { $0?["class"] as? String }.filter { $0 == "report" }.count == 2)
        #expect(run.stderrLines == ["hark: error: \(dir.file("missing.wav")): no such file"])
    }

    @Test func closedPipeEndsQuietly() throws {
        let file = dir.file("long.wav")
        _ = try Hark.run(["generate", "white", file, "--duration", "60", "--rate", "8000"])
        let process = Process()
        process.executableURL = Hark.executable
        process.arguments = ["analyze", "--json", "--interval", "0.01", file]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let first = out.fileHandleForReading.availableData   // at least one line
        try out.fileHandleForReading.close()                 // the reader goes away
        process.waitUntilExit()
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(!first.isEmpty)
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0)
        #expect(errors.isEmpty, "\(errors)")
    }
}

@Suite struct AnalyzeInputTests {
    let dir = TemporaryDirectory()

    @Test(arguments: [8_000, 192_000])
    func extremeRates(rate: Int) throws {
        let file = dir.file("r\(rate).flac")
        #expect(try Hark.run(["generate", "sine", file, "--rate", String(rate), "--frequency", "1000", "--duration", "2"]).status == 0)
        let run = try Hark.run(["analyze", "--json", file])
        #expect(run.status == 0, "\(run.stderr)")
        let report = try #require(run.jsonObjects.last ?? nil)
        #expect(abs((report["LAeq"] as? Double ?? 0) + 20) < 0.02)
        let bands = try #require(report["bands"] as? [String: Any])
        #expect(bands.count == (rate == 8_000 ? 21 : 28))
    }

    /// Feeds `bytes` to `hark analyze --json /dev/stdin` through a pipe.
    private func analysePiped(_ bytes: Data) throws -> (Int32, String, String) {
        let process = Process()
        process.executableURL = Hark.executable
        process.arguments = ["analyze", "--json", "/dev/stdin"]
        let input = Pipe(), out = Pipe(), err = Pipe()
        process.standardInput = input
        process.standardOutput = out
        process.standardError = err
        // hark may stop reading early (that is what one test checks); the write must then fail
        // with EPIPE instead of killing the test process.
        signal(SIGPIPE, SIG_IGN)
        try process.run()
        let writer = Thread {
            try? input.fileHandleForWriting.write(contentsOf: bytes)
            try? input.fileHandleForWriting.close()
        }
        writer.start()
        let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    @Test func wavFromAPipe() throws {
        let (status, out, err) = try analysePiped(Data(wav(frames: 48_000)))
        #expect(status == 0, "\(err)")
        #expect(out.contains(#""class":"report""#) && out.contains(#""duration":1.000"#))
    }

    @Test func dashIsStandardInputWithTheFilesFigures() throws {
        let file = dir.file("tone.wav")
        _ = try Hark.run(["generate", "sine", file, "--level", "-20", "--duration", "2"])
        let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        let process = Process()
        process.executableURL = Hark.executable
        process.arguments = ["analyze", "--json", "-"]
        let input = Pipe(), out = Pipe()
        process.standardInput = input
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        try input.fileHandleForWriting.write(contentsOf: bytes)
        try input.fileHandleForWriting.close()
        let piped = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let direct = try Hark.run(["analyze", "--json", file]).stdout
        // The same figures; only the name differs.
        #expect(piped.replacingOccurrences(of: "\"standard input\"", with: "\"\(file)\"") == direct, "\(piped)")
    }

    @Test func audioWrittenToStandardOutputPipesIntoAnalyze() throws {
        // hark generate pink - | hark analyze --json -, two processes and a real pipe.
        let producer = Process(), consumer = Process()
        producer.executableURL = Hark.executable
        producer.arguments = ["generate", "pink", "-", "--duration", "2", "--seed", "3"]
        consumer.executableURL = Hark.executable
        consumer.arguments = ["analyze", "--json", "-"]
        let pipe = Pipe(), out = Pipe(), err = Pipe(), producerErr = Pipe()
        producer.standardOutput = pipe
        producer.standardError = producerErr
        consumer.standardInput = pipe
        consumer.standardOutput = out
        consumer.standardError = err
        try producer.run()
        try consumer.run()
        let piped = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let warnings = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let report = String(decoding: producerErr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        producer.waitUntilExit()
        consumer.waitUntilExit()
        #expect(producer.terminationStatus == 0 && consumer.terminationStatus == 0, "\(warnings)")
        // What generate says it wrote goes to standard error, not into the audio.
        #expect(report.hasPrefix("wrote -: pink, 2.000 s"), "\(report)")
        // The stream's header carries the placeholder length: no "missing audio" warning.
        #expect(warnings.isEmpty, "\(warnings)")
        let file = dir.file("pink.wav")
        _ = try Hark.run(["generate", "pink", file, "--duration", "2", "--seed", "3"])
        let direct = try Hark.run(["analyze", "--json", file]).stdout
        #expect(piped.replacingOccurrences(of: "\"standard input\"", with: "\"\(file)\"") == direct, "\(piped)")
    }

    @Test func audioWrittenToStandardOutputInAFileGetsItsLengths() throws {
        // Standard output redirected to a file can seek: the placeholders are filled in.
        let file = dir.file("redirected.wav")
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-c", "\"$0\" generate sine - --duration 1 --encoding f32 > \"$1\" 2>/dev/null", Hark.executable.path, file]
        try shell.run()
        shell.waitUntilExit()
        let data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
        func u32(_ at: Int) -> Int { Int(data[at]) | Int(data[at + 1]) << 8 | Int(data[at + 2]) << 16 | Int(data[at + 3]) << 24 }
        #expect(data.count == 44 + 48_000 * 4)
        #expect(u32(4) == data.count - 8 && u32(40) == 48_000 * 4)
        let analysed = try Hark.run(["analyze", file])
        #expect(analysed.status == 0 && analysed.stderr.isEmpty && analysed.stdout.contains("32 bit float"), "\(analysed.stderr)")
        // 16-bit samples are converted as libsndfile converts them: the same bytes as by path.
        let streamed = dir.file("streamed.wav"), byPath = dir.file("by-path.wav")
        let again = Process()
        again.executableURL = URL(fileURLWithPath: "/bin/sh")
        again.arguments = ["-c", "\"$0\" generate pink - --duration 1 --seed 2 > \"$1\" 2>/dev/null", Hark.executable.path, streamed]
        try again.run()
        again.waitUntilExit()
        _ = try Hark.run(["generate", "pink", byPath, "--duration", "1", "--seed", "2"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: streamed)) == Data(contentsOf: URL(fileURLWithPath: byPath)))
    }

    @Test func headerlessSamplesAreReadInTheLayoutGiven() throws {
        // arecord -t raw | hark analyze - --rate 48000: the figures of the same samples in a WAV.
        let raw = dir.file("pink.raw"), wav = dir.file("pink.wav")
        _ = try Hark.run(["generate", "pink", raw, "--duration", "2", "--seed", "5", "--channels", "2", "--encoding", "s24"])
        _ = try Hark.run(["generate", "pink", wav, "--duration", "2", "--seed", "5", "--channels", "2", "--encoding", "s24"])
        let process = Process()
        process.executableURL = Hark.executable
        process.arguments = ["analyze", "--json", "-", "--rate", "48000", "--channels", "2", "--encoding", "s24"]
        let input = Pipe(), out = Pipe()
        process.standardInput = input
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        try input.fileHandleForWriting.write(contentsOf: Data(contentsOf: URL(fileURLWithPath: raw)))
        try input.fileHandleForWriting.close()
        let piped = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let direct = try Hark.run(["analyze", "--json", wav]).stdout
        func figures(_ s: String) -> String {
            s.replacingOccurrences(of: #""file":"[^"]*""#, with: "", options: .regularExpression)
                .replacingOccurrences(of: #""format":"[^"]*""#, with: "", options: .regularExpression)
        }
        #expect(figures(piped) == figures(direct), "\(piped)")
        // Without its layout a .raw file is refused with what to give.
        let bare = try Hark.run(["analyze", raw])
        #expect(bare.status == 1 && bare.stderr.contains("--rate, --channels and --encoding"), "\(bare.stderr)")
    }

    @Test func arecordsPlaceholderLengthThroughAPipeIsNoTruncation() throws {
        // arecord writing to a pipe declares 0x7FFFFFFF bytes of data.
        let (status, out, err) = try analysePiped(Data(wav(frames: 24_000, declaredDataBytes: 0x7FFF_FFFF)))
        #expect(status == 0 && out.contains(#""duration":0.500"#), "\(out)")
        #expect(!err.contains("missing"), "\(err)")
    }

    @Test func flacFromAPipeIsExplained() throws {
        let file = dir.file("x.flac")
        _ = try Hark.run(["generate", "pink", file, "--duration", "1"])
        let (status, out, err) = try analysePiped(try Data(contentsOf: URL(fileURLWithPath: file)))
        #expect(status == 1 && out.isEmpty)
        #expect(err.contains("cannot be read from a pipe"))
    }

    @Test func endlessDeviceIsRefusedNotHung() throws {
        let run = try Hark.run(["analyze", "/dev/zero"])
        #expect(run.status == 1 && run.stderr.contains("/dev/zero: not an audio format"))
    }

    @Test func standardInputHasOneNameAndEmptyInputIsSaidToBeEmpty() throws {
        // analyze said /dev/stdin, detect '-', plot "standard input"; empty input was "not an audio format".
        for command in [["analyze", "-"], ["detect", "-"]] {
            let empty = try Hark.run(command, input: [])
            #expect(empty.status == 1 && empty.stderr == "hark: error: standard input: empty input (nothing was written to it)\n", "\(command): \(empty.stderr)")
            let garbage = try Hark.run(command, input: Array("not audio at all".utf8))
            #expect(garbage.status == 1 && garbage.stderr.hasPrefix("hark: error: standard input: not an audio format"), "\(command): \(garbage.stderr)")
        }
        let detected = try Hark.run(["detect", "-"], input: wav(frames: 4_800))
        #expect(detected.stdout == "standard input: no watermark found\n", "\(detected.stdout) \(detected.stderr)")
    }

    /// A 32-bit float WAV of `frames` copies of `value`.
    private func floatWAV(_ value: Float, frames: Int) -> [UInt8] {
        let data = (0..<frames).flatMap { _ in withUnsafeBytes(of: value.bitPattern.littleEndian) { Array($0) } }
        var out: [UInt8] = Array("RIFF".utf8) + le32(36 + data.count) + Array("WAVE".utf8)
        out += Array("fmt ".utf8) + le32(16) + le16(3) + le16(1) + le32(48_000) + le32(48_000 * 4) + le16(4) + le16(32)
        return out + Array("data".utf8) + le32(data.count) + data
    }

    @Test func samplesFarBeyondFullScaleAreNamedAndThePercentilesAreNotClipped() throws {
        // Before: exit 0, "LAeq": 759.01, LA10 = LA50 = LA90 = 30.00, every band null, no warning.
        let file = dir.file("huge.wav")
        var bytes = floatWAV(1e38, frames: 48_000)
        // Alternate signs, so the huge samples make a signal and not a constant.
        for i in stride(from: 44 + 4, to: bytes.count, by: 8) { bytes[i + 3] |= 0x80 }
        FileManager.default.createFile(atPath: file, contents: Data(bytes))
        let run = try Hark.run(["analyze", "--json", file])
        #expect(run.status == 0)
        #expect(run.stderr.contains("48000 samples lay beyond ±10000 × full scale (+80 dB) and were measured at that limit"), "\(run.stderr)")
        let summary = try #require(run.jsonObjects.last ?? nil)
        #expect((summary["warnings"] as? [String])?.contains { $0.contains("beyond ±10000") } == true, "\(summary)")
        let laeq = try #require(summary["LAeq"] as? Double)
        #expect(laeq > 70 && laeq < 90, "\(laeq)")
        for key in ["LA10", "LA50", "LA90"] {
            let v = summary[key] as? Double
            #expect(v == nil || abs(v! - laeq) < 3, "\(key) \(v ?? .nan) against LAeq \(laeq)")
        }
        // An all-NaN file: no level, and the detector says why it heard nothing.
        let nan = dir.file("nan.wav")
        FileManager.default.createFile(atPath: nan, contents: Data(floatWAV(.nan, frames: 48_000)))
        let detected = try Hark.run(["detect", nan])
        #expect(detected.stderr.contains("48000 samples were not finite"), "\(detected.stderr)")
        let analysed = try Hark.run(["analyze", nan])
        #expect(analysed.stderr.contains("48000 samples were not finite numbers (NaN or infinity) and were measured as silence"), "\(analysed.stderr)")
    }
}
