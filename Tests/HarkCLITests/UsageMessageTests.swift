import Foundation
import HarkTesting
import Testing

/// What hark says to a command line it cannot run: one line naming what is wrong, and exit
/// status 64 (EX_USAGE) for every usage error, 1 for a failure while running.
@Suite struct UsageMessageTests {
    @Test func aMistypedCommandIsNamedWithTheNearestOne() throws {
        let run = try Hark.run(["detec", "heard.wav"])
        #expect(run.status == 64)
        #expect(run.stderrLines.count == 1, "\(run.stderr)")
        let line = run.stderrLines.first ?? ""
        #expect(line.hasPrefix("hark: error: 'detec' is not a command of hark; did you mean 'detect'?"), "\(line)")
        #expect(!line.contains("unexpected"), "\(line)")
    }

    @Test func aMistypedSubcommandOfASubcommandToo() throws {
        let run = try Hark.run(["catalogue", "lsit", "c.hark"])
        #expect(run.status == 64)
        #expect(run.stderr.contains("'lsit' is not a command of hark catalogue; did you mean 'list'?"), "\(run.stderr)")
        // A word far from every name gets the list, not a guess.
        let far = try Hark.run(["frobnicate"])
        #expect(far.status == 64)
        #expect(far.stderr.contains("'frobnicate' is not a command of hark (its commands: analyze, plot,"), "\(far.stderr)")
        #expect(!far.stderr.contains("did you mean"), "\(far.stderr)")
    }

    @Test func usageErrorsExit64AndFailuresExit1() throws {
        #expect(try Hark.run(["analyze", "--interval", "-1", "x.wav"]).status == 64)
        #expect(try Hark.run(["bench", "transparency", "--strengths", "1,x"], executable: Hark.lab).status == 64)
        // The benches left hark for hark-lab, and hark says where they went.
        let moved = try Hark.run(["bench", "watermark", "--quick"])
        #expect(moved.status == 64 && moved.stderr.contains("the benches are hark-lab's: hark-lab bench watermark --quick"), "\(moved.stderr)")
        #expect(try Hark.run(["analyze", "/nonexistent/absent.wav"]).status == 1)
        // help and options before a command are still the parser's.
        #expect(try Hark.run(["help", "detect"]).status == 0)
        #expect(try Hark.run(["--version"]).status == 0)
    }
}

/// A file asked for in a folder that is not there: the message names the folder, for audio
/// (libsndfile) and pictures (cairo) alike, and nothing is left behind.
@Suite struct OutputFolderTests {
    let dir = TemporaryDirectory()

    @Test func aMissingFolderIsNamed() throws {
        let tone = dir.file("tone.wav")
        #expect(try Hark.run(["generate", "sine", tone, "--duration", "1"]).status == 0)
        let missing = dir.file("absent")
        for arguments in [["generate", "sine", missing + "/a.wav"], ["simulate", tone, missing + "/b.wav"],
                          ["plot", tone, "-o", missing + "/p.png"]] {
            let run = try Hark.run(arguments)
            #expect(run.status == 1, "\(arguments)")
            #expect(run.stderrLines.count == 1 && run.stderr.contains("the folder \(missing) does not exist"), "\(run.stderr)")
            #expect(!run.stderr.contains("output stream") && !run.stderr.contains("System error"), "\(run.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: missing))
    }
}
