import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import HarkPlot
import HarkTesting
import Testing

@Suite struct PlotCommandTests {
    let dir = TemporaryDirectory()

    /// A 1 kHz burst for the first second of 6 s, silence after it.
    func burstFile() throws -> String {
        let file = dir.file("burst.wav")
        #expect(try Hark.run(["generate", "burst", file, "--duration", "6", "--burst", "1", "--period", "10",
                              "--level", "-10"]).status == 0)
        return file
    }

    @Test func audioBecomesAPictureOfTheRequestedSizeWhereTheBurstShows() throws {
        let file = try burstFile()
        let picture = dir.file("burst.png")
        let run = try Hark.run(["plot", file, "-o", picture, "--width", "1000", "--height", "800"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.isEmpty && run.stderr.contains("wrote \(picture)"))
        let image = try PNGImage(path: picture)
        #expect(image.width == 1000 && image.height == 800)
        // The spectrogram's middle row: bright while the burst sounds (0–1 s), dark after it.
        let plotWidth = 1000.0 - 78 - 170, usable = 800.0 - 48 - 3 * 64
        let row = Int(48 + usable * 0.42 + 64 + usable * 0.15)
        func brightness(_ t: Double) -> Int {
            let p = image.pixel(Int(78 + plotWidth * t / 6), row)
            return p.red + p.green + p.blue
        }
        #expect(brightness(0.5) > brightness(4) + 150, "\(brightness(0.5)) \(brightness(4))")
    }

    @Test func aLogBecomesAnSVGThatParses() throws {
        let file = try burstFile()
        let log = dir.file("burst.jsonl")
        let analysed = try Hark.run(["analyze", "--json", "--interval", "0.1", file])
        #expect(analysed.status == 0)
        try analysed.stdout.write(toFile: log, atomically: true, encoding: .utf8)
        let picture = dir.file("burst.svg")
        let run = try Hark.run(["plot", log, "-o", picture])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("60 intervals"), "\(run.stderr)")
        let parser = XMLParser(data: try Data(contentsOf: URL(fileURLWithPath: picture)))
        #expect(parser.parse())
    }

    @Test func badInputsSayWhatIsWrong() throws {
        let notes = dir.write("notes.jsonl", Array("{\"class\":\"level\",\"t\":1}\nnot json\n".utf8))
        let broken = try Hark.run(["plot", notes, "-o", dir.file("x.png")])
        #expect(broken.status == 1 && broken.stderr.contains("line 2: not a JSON object"), "\(broken.stderr)")
        let gif = try Hark.run(["plot", notes, "-o", dir.file("x.gif")])
        #expect(gif.status == 64 && gif.stderr.contains("must end in .png or .svg"), "\(gif.stderr)")
        let missing = try Hark.run(["plot", dir.file("nothing.wav"), "-o", dir.file("y.png")])
        #expect(missing.status == 1 && !missing.stderr.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: dir.file("x.png")) && !FileManager.default.fileExists(atPath: dir.file("y.png")))
    }
}
