import ArgumentParser
import Foundation
import HarkDSP
import HarkEngine
import HarkPlot

struct Plot: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Draw a measurement: level over time, the 1/3-octave spectrum and a spectrogram, as PNG or SVG.",
        discussion: """
        INPUT is an audio file (measured as 'hark analyze' measures it) or a log of 'hark \
        analyze --json' lines. The level panel shows LAF, the running LAeq and LCpeak over \
        time with the LA10, LA50 and LA90 lines; the spectrum panel the 1/3-octave Leq over the \
        whole; from an audio file, a spectrogram between them. Watermark detections are marked \
        on the time axes (from audio with --watermark, --catalogue or a key; from a log, its \
        detection lines).
        """)

    @Argument(help: "Audio file, or a log of 'hark analyze --json' lines (- for standard input).", completion: .file())
    var input: String

    @Option(name: .shortAndLong, help: ArgumentHelp("The picture: a name ending in .png or .svg.", valueName: "path"), completion: .file())
    var output: String

    @Option(help: ArgumentHelp("Picture width, pixels (PNG) or points (SVG).", valueName: "n"))
    var width = 1200

    @Option(help: ArgumentHelp("Picture height.", valueName: "n"))
    var height = 900

    @Option(parsing: .unconditional, help: ArgumentHelp("Decibels added to every level (from 'hark calibrate').", valueName: "dB"))
    var calibration: Double = 0

    @Flag(help: "Also search the audio for watermarks and mark them (the demo key unless --key or --key-file).")
    var watermark = false

    @OptionGroup var keys: KeyOptions
    @OptionGroup(title: "Headerless input") var raw: RawInputOptions
    @OptionGroup var catalogue: CatalogueOptions

    func validate() throws {
        guard (200...8000).contains(width), (200...8000).contains(height) else {
            throw ValidationError("--width and --height must be between 200 and 8000")
        }
        guard calibration.isFinite, abs(calibration) <= 200 else {
            throw ValidationError("--calibration must be between -200 and 200 dB")
        }
        let lower = output.lowercased()
        guard lower.hasSuffix(".png") || lower.hasSuffix(".svg") else {
            throw ValidationError("the picture's name must end in .png or .svg, not '\(output)'")
        }
    }

    func run() throws {
        // Standard input is kept in a temporary file: whether it is a log or audio shows only
        // in its first bytes, and the spectrogram reads audio a second time.
        var command = self
        var temporary: String?
        if input == "-" {
            let path = NSTemporaryDirectory() + "hark-plot-\(getpid())-\(UUID().uuidString)"
            guard FileManager.default.createFile(atPath: path, contents: nil), let out = FileHandle(forWritingAtPath: path) else {
                Diagnostics.error("cannot keep standard input in \(path)")
                throw ExitCode.failure
            }
            while let chunk = try FileHandle.standardInput.read(upToCount: 1 << 20), !chunk.isEmpty { try out.write(contentsOf: chunk) }
            try out.close()
            temporary = path
            command.input = path
        }
        defer { if let temporary { unlink(temporary) } }
        try command.draw(named: input == "-" ? "standard input" : nil)
    }

    func draw(named name: String?) throws {
        var data: PlotData
        do {
            data = try Self.isLog(input) ? Self.readLog(input) : measure()
        } catch let error as PlotLogError {
            Diagnostics.error(error.description.replacingOccurrences(of: input, with: name ?? input))
            throw ExitCode.failure
        }
        if let name { data.title = name + data.title.drop { $0 != ":" } }
        do {
            try Self.render(data, to: output, width: width, height: height)
        } catch {
            Diagnostics.error("\(error)")
            throw ExitCode.failure
        }
        try LineWriter.standardError.write(line: "wrote \(output): \(data.intervals.count) intervals, \(data.detections.count) detection(s)")
    }

    /// A log starts with `{`; anything else is audio.
    static func isLog(_ path: String) -> Bool {
        let lower = path.lowercased()
        if lower.hasSuffix(".jsonl") || lower.hasSuffix(".json") || lower.hasSuffix(".log") { return true }
        guard path != "-", let h = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? h.close() }
        let head = (try? h.read(upToCount: 64)) ?? Data()
        return head.first(where: { !($0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09) }) == UInt8(ascii: "{")
    }

    /// Measures an audio file as `hark analyze` does, at intervals that give the picture some
    /// 600 points, then (from a file, which can be read twice) its spectrogram.
    func measure() throws -> PlotData {
        let chosen = try catalogue.resolve()
        let key = watermark || keys.given || chosen != nil ? try keys.resolve() : nil
        let source: SoundFileSource
        do { source = try SoundFileSource(path: input, raw: raw.layout) } catch {
            Diagnostics.error(error.description)
            throw ExitCode.failure
        }
        let seconds = source.expectedFrames.map { Double($0) / Double(source.sampleRate) }
        let interval = max(0.05, LevelPlot.niceStep((seconds ?? 60) / 600))
        var settings = LevelAnalysis.settings(for: source)
        settings.levelInterval = interval
        settings.calibration = calibration
        let listening = Listening(key: key, profile: keys.watermarkProfile, chosen: chosen)
        let analysis = try LevelAnalysis(source: source, settings: listening.settings(settings))
        var data = PlotData(title: (input as NSString).lastPathComponent, duration: seconds ?? 0,
                            unit: calibration == 0 ? "dB re full-scale sine" : "dB SPL")
        data.watermarkSearched = key != nil
        let report = try analysis.run(emit: { event in
            switch event {
            case .level(let l):
                data.intervals.append(.init(time: l.levels.time, duration: l.levels.duration, LAF: l.levels.LAF,
                                            LAeq: l.levels.LAeq, LCpeak: l.levels.LCpeak))
            case .detection(let d):
                data.detections.append((d.detection.time, d.detection.payload.hex))
            case .report:
                break
            }
        })
        report.warnings.forEach(Diagnostics.warning)
        data.duration = report.meter.duration
        data.title = "\(data.title): LAeq \(report.meter.LAeq.map { String(format: "%.1f", $0) } ?? "–") \(data.unit), \(String(format: "%.1f", report.meter.duration)) s"
        data.statistics = [("LA10", report.meter.LA10), ("LA50", report.meter.LA50), ("LA90", report.meter.LA90)]
            .compactMap { label, level in level.map { (label, $0) } }
        data.bands = report.bands
        if input != "-" { data.spectrogram = try spectrogram(columns: min(width - 250, 1000)) }
        return data
    }

    /// The file read again, channels averaged, into ``Spectrogram`` columns and rows on a
    /// logarithmic frequency axis from 50 Hz.
    func spectrogram(columns: Int) throws -> PlotData.SpectrogramImage? {
        let source = try SoundFileSource(path: input, raw: raw.layout)
        let rate = Double(source.sampleRate)
        guard let frames = source.expectedFrames, frames > 0 else { return nil }
        let s = try Spectrogram(sampleRate: rate, columns: columns, totalFrames: Int(frames))
        let channels = source.channels
        var buffer = [Float](repeating: 0, count: 8192 * channels)
        var mono = [Float](repeating: 0, count: 8192)
        while true {
            let n = try buffer.withUnsafeMutableBufferPointer { try source.read(into: $0) }
            guard n > 0 else { break }
            for i in 0..<n {
                var sum: Float = 0
                for c in 0..<channels { sum += buffer[i * channels + c] }
                mono[i] = sum / Float(channels)
            }
            mono.withUnsafeBufferPointer { s.process(UnsafeBufferPointer(rebasing: $0[0..<n])) }
        }
        s.finish()
        let top = min(20_000, rate / 2), bottom = 50.0, rows = 160
        let frequencies = (0..<rows).map { bottom * pow(top / bottom, Double($0) / Double(rows - 1)) }
        // A full-scale sine reads (N/4)² in its bin: levels re that, so the colours read in dB re
        // full scale.
        let reference = pow(Float(Spectrogram.frameLength) / 4, 2)
        let binWidth = rate / Double(Spectrogram.frameLength)
        let levels = s.power.map { column in
            frequencies.map { f -> Double in
                let k = min(column.count - 1, max(1, Int((f / binWidth).rounded())))
                return 10 * log10(Double(max(column[k] / reference, 1e-12))) + calibration
            }
        }
        return PlotData.SpectrogramImage(frequencies: frequencies, levels: levels)
    }

    /// Reads a log of `hark analyze --json` lines: level, report and detection lines.
    static func readLog(_ path: String) throws -> PlotData {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw PlotLogError.unreadable(path) }
        return try parseLog(text, name: path)
    }

    /// Level, report and detection lines (of `hark analyze --json`) as a picture's data; `name`
    /// titles it and names it in errors.
    static func parseLog(_ text: String, name path: String) throws -> PlotData {
        var log = PlotLog(name: path)
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: true).enumerated() {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw PlotLogError.notJSON(path, line: number + 1)
            }
            log.add(object)
        }
        guard !log.data.intervals.isEmpty || !log.data.bands.isEmpty else { throw PlotLogError.nothingToDraw(path) }
        return log.data
    }

    /// Draws `data` into `path` (PNG or SVG).
    static func render(_ data: PlotData, to path: String, width: Int, height: Int) throws(PlotError) {
        let canvas = try Canvas(path: path, width: width, height: height)
        LevelPlot.draw(data, on: canvas)
        try canvas.finish()
    }
}

enum PlotLogError: Error, CustomStringConvertible {
    case unreadable(String)
    case notJSON(String, line: Int)
    case nothingToDraw(String)

    var description: String {
        switch self {
        case .unreadable(let p): return "\(p): cannot be read as text"
        case .notJSON(let p, let n): return "\(p), line \(n): not a JSON object (a log of 'hark analyze --json' lines is expected)"
        case .nothingToDraw(let p): return "\(p): no level or report lines to draw"
        }
    }
}
