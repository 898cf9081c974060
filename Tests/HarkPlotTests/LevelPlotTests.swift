import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import HarkTesting
import Testing
@testable import HarkPlot

@Suite struct LevelPlotTests {
    private let temporary = TemporaryDirectory(prefix: "hark-plot")
    private var dir: String { temporary.path }

    /// Ten seconds at −40 dB with a burst to −10 dB from 4 to 6 s.
    func burst(withSpectrogram: Bool) -> PlotData {
        var d = PlotData(title: "burst", duration: 10, unit: "dB re full-scale sine")
        for i in 1...100 {
            let t = Double(i) / 10
            let l = t > 4 && t <= 6 ? -10.0 : -40
            d.intervals.append(.init(time: t, duration: 0.1, LAF: l, LAeq: l, LCpeak: l + 3))
        }
        d.statistics = [("LA10", -12), ("LA90", -44)]
        d.bands = [("100", -50), ("1000", -12), ("10000", nil)]
        d.detections = [(5, "c0ffee42")]
        if withSpectrogram {
            let f = (0..<40).map { 50 * pow(400, Double($0) / 39) }
            d.spectrogram = .init(frequencies: f, levels: (0..<100).map { c in f.map { _ in c >= 40 && c < 60 ? -10 : -70 } })
        }
        return d
    }

    func draw(_ d: PlotData, _ name: String, width: Int = 900, height: Int = 700) throws -> String {
        let path = dir + "/" + name
        let canvas = try Canvas(path: path, width: width, height: height)
        LevelPlot.draw(d, on: canvas)
        try canvas.finish()
        return path
    }

    @Test func pngHasItsSizeAndTheBurstShowsWhereItIs() throws {
        let image = try PNGImage(path: draw(burst(withSpectrogram: true), "burst.png"))
        #expect(image.width == 900 && image.height == 700)
        // The spectrogram panel: bright at 5 s (inside the burst), dark at 2 s and 8 s.
        let plotWidth = 900.0 - LevelPlot.left - LevelPlot.right
        func column(_ t: Double) -> Int { Int(LevelPlot.left + plotWidth * t / 10) }
        let usable = 700.0 - LevelPlot.top - 3 * LevelPlot.gap
        let row = Int(LevelPlot.top + usable * 0.42 + LevelPlot.gap + usable * 0.15)
        func brightness(_ t: Double) -> Int { let p = image.pixel(column(t), row); return p.red + p.green + p.blue }
        #expect(brightness(5.5) > brightness(2) + 200 && brightness(5.5) > brightness(8) + 200,
                "\(brightness(2)) \(brightness(5.5)) \(brightness(8))")
        // The level lines (saturated colours; the statistics' dashed lines are green) rise over
        // the burst: the topmost such pixel is higher up at 5.5 s than at 2 s.
        func highestLevel(_ t: Double) -> Int? {
            (Int(LevelPlot.top) + 2..<Int(LevelPlot.top + usable * 0.42)).first { y in
                let p = image.pixel(column(t), y)
                let spread = max(p.red, p.green, p.blue) - min(p.red, p.green, p.blue)
                let green = p.green > p.red + 30 && p.green > p.blue + 30
                return spread > 80 && !green
            }
        }
        let inBurst = try #require(highestLevel(5.5)), before = try #require(highestLevel(2))
        #expect(inBurst < before - 50, "\(inBurst) \(before)")
    }

    @Test func anotherMeasurementDrawsOtherPixels() throws {
        let a = try PNGImage(path: draw(burst(withSpectrogram: false), "a.png"))
        var quieter = burst(withSpectrogram: false)
        quieter.intervals = quieter.intervals.map { var i = $0; i.LAF = -40; i.LAeq = -40; return i }
        let b = try PNGImage(path: draw(quieter, "b.png"))
        var differing = 0
        for y in stride(from: 0, to: a.height, by: 2) {
            for x in stride(from: 0, to: a.width, by: 2) where a.pixel(x, y) != b.pixel(x, y) { differing += 1 }
        }
        #expect(differing > 100)
    }

    @Test func svgParsesAndCarriesTheLabels() throws {
        let path = try draw(burst(withSpectrogram: true), "burst.svg")
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let parser = XMLParser(data: data)
        #expect(parser.parse(), "\(parser.parserError.map { "\($0)" } ?? "")")
        #expect(String(decoding: data.prefix(200), as: UTF8.self).contains("<svg"))
    }

    @Test func badNamesAndUnwritableFoldersFailClearly() throws {
        #expect(throws: PlotError.unknownImageType("x.gif")) { try Canvas(path: "x.gif", width: 300, height: 300) }
        // Refused before any drawing, naming the folder (cairo would say "error while writing to output stream").
        #expect(throws: PlotError.cairo(path: "/nonexistent-folder/x.png", detail: "the folder /nonexistent-folder does not exist")) {
            try Canvas(path: "/nonexistent-folder/x.png", width: 300, height: 300)
        }
    }

    @Test func theLegendNamesOnlyTheSeriesDrawn() throws {
        // A harkd noise session's levels carry LAF and LCpeak but no LAeq: no orange in the legend.
        var d = burst(withSpectrogram: false)
        d.intervals = d.intervals.map { var i = $0; i.LAeq = nil; return i }
        let image = try PNGImage(path: draw(d, "no-laeq.png"))
        let full = try PNGImage(path: draw(burst(withSpectrogram: false), "full.png"))
        func orange(_ im: PNGImage) -> Int {
            var n = 0
            for y in Int(LevelPlot.top)..<Int(LevelPlot.top) + 80 {
                for x in (im.width - Int(LevelPlot.right))..<im.width {
                    let p = im.pixel(x, y)
                    if p.red > 180 && p.green > 60 && p.green < 130 && p.blue < 60 { n += 1 }
                }
            }
            return n
        }
        #expect(orange(full) > 10 && orange(image) == 0, "\(orange(full)) \(orange(image))")
    }

    @Test func digitalSilenceDoesNotStretchTheLevelAxis() {
        // LCpeak −165.7 dB stretched the axis from −170 to 0 with 18 crowded labels.
        let axis = LevelPlot.levelAxis([-20, -5, -31, -165.7])
        #expect(axis.hi == 0 && axis.lo >= -110, "\(axis)")
        #expect((axis.hi - axis.lo) / axis.step + 1 <= 9, "\(axis)")
        // Without silence, the axis is as before: whole tens around the values.
        #expect(LevelPlot.levelAxis([-44, -9]) == (-50, 0, 10))
    }

    @Test func aPictureFromALogLeavesNoBlankBand() {
        // Three gaps were kept without a spectrogram: some 110 px of nothing under the spectrum.
        for (height, spectrogram) in [(700.0, false), (700, true), (480, false)] {
            let h = LevelPlot.panelHeights(canvasHeight: height, spectrogram: spectrogram)
            let gaps = spectrogram ? 3.0 : 2
            #expect(abs(LevelPlot.top + h.levels + h.spectrogram + h.spectrum + gaps * LevelPlot.gap - height) < 1e-9)
        }
    }

    @Test func atSixHundredFortyByFourHundredEightyNoTextOverlapsOrOverflows() throws {
        // At 640×480 the level axis's title was longer than its panel, the frequency ticks
        // overlapped, and LA10/50/90 within 2 dB of each other hid each other's labels.
        var d = burst(withSpectrogram: true)
        d.statistics = [("LA10", -12.0), ("LA50", -13.2), ("LA90", -14.1)]
        d.detections = []
        let canvas = try Canvas(path: dir + "/small.png", width: 640, height: 480)
        LevelPlot.draw(d, on: canvas)
        try canvas.finish()
        let texts = canvas.texts
        for t in texts {
            #expect(t.minX >= 0 && t.maxX <= 640 && t.minY >= 0 && t.maxY <= 480, "\(t.text) leaves the picture: \(t)")
        }
        for i in texts.indices {
            for j in texts.indices where j > i && texts[i].overlaps(texts[j]) {
                Issue.record("'\(texts[i].text)' overlaps '\(texts[j].text)'")
            }
        }
        // The key says what its numbers are, and the spectrum what it shows.
        #expect(texts.contains { $0.text.hasSuffix(" dB") } && texts.contains { $0.text.hasPrefix("LZeq") })
        // The level axis's title had room for "level (dB)" alone: the reference is said beside it.
        #expect(texts.contains { $0.text.contains("re full-scale sine") }, "\(texts.map(\.text))")
    }

    /// LA10 / LA50 / LA90 were labelled inside the level panel, over the curves (at the default
    /// size the running LAeq crossed the LA50 label): now in the margin, clear of the curves'
    /// rectangle, of each other and of the legend, each at most a few labels from its line.
    @Test func theStatisticalLevelsAreLabelledClearOfTheCurves() throws {
        for (width, height) in [(640, 480), (1000, 700)] {
            var d = burst(withSpectrogram: true)
            d.statistics = [("LA10", -12.0), ("LA50", -13.2), ("LA90", -14.1)]
            let canvas = try Canvas(path: dir + "/stats-\(width).png", width: width, height: height)
            LevelPlot.draw(d, on: canvas)
            try canvas.finish()
            let panelRight = Double(width) - LevelPlot.right
            let labels = canvas.texts.filter { $0.text.hasPrefix("LA10 ") || $0.text.hasPrefix("LA50 ") || $0.text.hasPrefix("LA90 ") }
            #expect(labels.count == 3)
            for l in labels { #expect(l.minX > panelRight && l.maxX <= Double(width), "\(l) inside the panel at \(width)×\(height)") }
            let legend = canvas.texts.filter { ["LAF", "LAeq, running", "LCpeak", "watermark"].contains($0.text) }
            for l in labels {
                for o in legend + labels where o.text != l.text { #expect(!l.overlaps(o), "'\(l.text)' overlaps '\(o.text)'") }
            }
            // Highest first, top to bottom, as their lines are.
            #expect(labels.map(\.text.first) == labels.sorted { $0.minY < $1.minY }.map(\.text.first))
            #expect(labels.sorted { $0.minY < $1.minY }.map { String($0.text.prefix(4)) } == ["LA10", "LA50", "LA90"])
        }
    }

    /// A search for watermarks that heard none says so: a picture without marks did not tell
    /// "none heard" from "not looked for".
    @Test func aSearchThatHeardNothingSaysSo() throws {
        var d = burst(withSpectrogram: false)
        d.detections = []
        d.watermarkSearched = true
        let canvas = try Canvas(path: dir + "/none.png", width: 900, height: 600)
        LevelPlot.draw(d, on: canvas)
        #expect(canvas.texts.contains { $0.text == "watermark: none" })
        d.watermarkSearched = false
        let plain = try Canvas(path: dir + "/plain.png", width: 900, height: 600)
        LevelPlot.draw(d, on: plain)
        #expect(!plain.texts.contains { $0.text.hasPrefix("watermark") })
    }

    /// A picture drawn from a log is titled by the audio the log measured, the log beside it.
    @Test func aLogsPictureIsTitledByItsAudio() {
        var log = PlotLog(name: "/tmp/levels.jsonl")
        log.add(["class": "level", "file": "/data/carriage.flac", "t": 0.5, "LAF": -30.0, "LAeq": -31.0, "LCpeak": -12.0])
        log.add(["class": "report", "file": "/data/carriage.flac", "duration": 0.5, "LAeq": -31.0])
        #expect(log.data.title == "carriage.flac (log levels.jsonl): LAeq -31.0 dB re full-scale sine, 0.5 s", "\(log.data.title)")
        var session = PlotLog(name: "harkd noise session")
        session.add(["class": "level", "t": 0.1, "LAF": -30.0])
        #expect(session.data.title == "harkd noise session")
    }

    @Test func runningLAeqIsTheEnergyAverageSoFar() {
        var d = PlotData(title: "", duration: 2, unit: "dB")
        d.intervals = [.init(time: 1, duration: 1, LAF: nil, LAeq: -20, LCpeak: nil),
                       .init(time: 2, duration: 1, LAF: nil, LAeq: -30, LCpeak: nil)]
        let r = d.runningLAeq
        #expect(abs(r[0]! + 20) < 1e-9)
        #expect(abs(r[1]! - 10 * log10((0.01 + 0.001) / 2)) < 1e-9)
    }
}
