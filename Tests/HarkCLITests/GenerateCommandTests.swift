import Foundation
import HarkTesting
import Testing

@Suite struct GenerateCommandTests {
    let dir = TemporaryDirectory()

    @Test func sameSeedSameBytesOtherSeedOtherBytes() throws {
        for kind in ["white", "pink"] {
            let a = dir.file("\(kind)a.flac"), b = dir.file("\(kind)b.flac"), c = dir.file("\(kind)c.flac")
            _ = try Hark.run(["generate", kind, a, "--seed", "7", "--duration", "1"])
            _ = try Hark.run(["generate", kind, b, "--seed", "7", "--duration", "1"])
            _ = try Hark.run(["generate", kind, c, "--seed", "8", "--duration", "1"])
            let da = try Data(contentsOf: URL(fileURLWithPath: a))
            #expect(da == (try Data(contentsOf: URL(fileURLWithPath: b))))
            #expect(da != (try Data(contentsOf: URL(fileURLWithPath: c))))
        }
    }

    @Test(arguments: ["sine", "sweep", "white", "pink", "burst", "silence", "calibrator", "music"])
    func everyKindWritesAReadableFile(kind: String) throws {
        for name in ["x.wav", "x.flac", "x.ogg"] {
            let file = dir.file(kind + name)
            let gen = try Hark.run(["generate", kind, file, "--duration", "1.5", "--rate", "44100", "--channels", "2"])
            #expect(gen.status == 0, "\(kind) \(name): \(gen.stderr)")
            let run = try Hark.run(["analyze", "--json", file])
            #expect(run.status == 0, "\(kind) \(name): \(run.stderr)")
            let report = run.jsonObjects.last ?? nil
            #expect(report?["rate"] as? Int == 44_100 && report?["channels"] as? Int == 2)
            #expect(abs((report?["duration"] as? Double ?? 0) - 1.5) < 0.001)
        }
    }

    @Test(arguments: [("s24", "x.wav"), ("f32", "x.wav"), ("f64", "x.wav"), ("s24", "x.flac"), ("s16", "x.raw"), ("s32", "x.aiff")])
    func encodings(encoding: String, name: String) throws {
        let file = dir.file(encoding + name)
        let gen = try Hark.run(["generate", "sine", file, "--encoding", encoding, "--duration", "0.5"])
        #expect(gen.status == 0, "\(gen.stderr)")
        #expect(gen.stdout.contains(encoding))
    }

    @Test func aBurstSaysItsLevelIsTheTonesWhileOn() throws {
        let run = try Hark.run(["generate", "burst", dir.file("b.wav"), "--level", "-20"])
        #expect(run.status == 0 && run.stdout.contains("(the tone is at -20.00 dB while on; the level is over the whole file)"), "\(run.stdout)")
    }

    @Test func rawIsHeaderlessSixteenBit() throws {
        let file = dir.file("x.raw")
        _ = try Hark.run(["generate", "silence", file, "--duration", "1", "--rate", "16000"])
        let size = try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int
        #expect(size == 32_000)
    }

    @Test func clippingIsRefusedAndLeavesNoFile() throws {
        let file = dir.file("loud.wav")
        let run = try Hark.run(["generate", "white", file, "--level", "3"])
        #expect(run.status == 1)
        #expect(run.stderrLines.count == 1 && run.stderr.contains("would clip"))
        #expect(!FileManager.default.fileExists(atPath: file))
        // Float output keeps the excursions instead.
        #expect(try Hark.run(["generate", "white", dir.file("loud.wav"), "--level", "3", "--encoding", "f32"]).status == 0)
    }

    @Test func aCueCarriesItsPayloadFromItsStart() throws {
        let dir = TemporaryDirectory()
        let cue = dir.file("cue.wav")
        let run = try Hark.run(["generate", "cue", cue, "--payload", "57ad1001", "--level", "-12", "--seed", "3"])
        #expect(run.status == 0 && run.stdout.contains("cue, 4.000 s"), "\(run.stderr)")
        // It says which band it is marked in and how to find it, and the help agrees.
        #expect(run.stdout.contains("marked in the stadium profile: hark detect --profile stadium finds it"), "\(run.stdout)")
        #expect(try Hark.run(["generate", "--help"]).stdout.contains("stadium for generate cue"))
        let detect = try Hark.run(["detect", cue, "--profile", "stadium", "--catalogue", "57ad1001,1234", "--json"])
        let first = try #require(detect.jsonObjects.first ?? nil, "\(detect.stdout)")
        #expect(first["payload"] as? String == "57ad1001" && (first["t"] as? Double ?? 9) <= 2.6, "\(first)")
        let noPayload = try Hark.run(["generate", "cue", cue])
        #expect(noPayload.status != 0 && noPayload.stderr.contains("a cue carries a payload: give --payload"), "\(noPayload.stderr)")
        let notCue = try Hark.run(["generate", "pink", cue, "--payload", "1"])
        #expect(notCue.status != 0 && notCue.stderr.contains("are for cue"), "\(notCue.stderr)")
    }

    @Test func badRequestsAreRefused() throws {
        for (arguments, text) in [
            (["generate", "sine", dir.file("a.wav"), "--frequency", "30000"], "--frequency"),
            (["generate", "hum", dir.file("a.wav")], "hum"),
            (["generate", "sine", dir.file("a.mp4")], "a.mp4"),
            (["generate", "sine", dir.file("a.flac"), "--encoding", "f32"], "FLAC cannot hold f32"),
            (["generate", "sine", dir.file("no/such/dir/a.wav")], "cannot create"),
            (["generate", "burst", dir.file("a.wav"), "--burst", "2", "--period", "1"], "--burst"),
        ] {
            let run = try Hark.run(arguments)
            #expect(run.status != 0, "\(arguments)")
            #expect(run.stderrLines.count == 1 && run.stderr.contains(text), "\(arguments): \(run.stderr)")
        }
    }

    @Test func aUsageErrorListsTheChoicesAndPointsAtItsCommandsHelp() throws {
        // The list of kinds was lost: only "Please provide one of the following:" was left.
        let run = try Hark.run(["generate", "foo", dir.file("x.wav")])
        #expect(run.status == 64 && run.stderrLines.count == 1, "\(run.stderr)")
        #expect(run.stderr.contains("one of the following: sine, sweep, white, pink"), "\(run.stderr)")
        #expect(run.stderr.contains("(see 'hark generate --help')"), "\(run.stderr)")
        let nested = try Hark.run(["catalogue", "add", dir.file("c.hark")])
        #expect(nested.stderr.contains("(see 'hark catalogue add --help')"), "\(nested.stderr)")
        #expect(try Hark.run(["frobnicate"]).stderr.contains("(see 'hark --help')"))
    }
}
