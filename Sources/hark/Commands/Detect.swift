import ArgumentParser
import Foundation
import HarkCatalogue
import HarkDSP
import HarkEngine
import HarkSoundFile

struct Detect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Find watermarks in audio files and print their payloads.",
        discussion: """
        Prints each payload when it is verified (CRC and score above the false-detection \
        threshold), with the time into the file at which that happened. With --catalogue, \
        only those payloads are looked for, which hears weaker or shorter marks. With --json, one \
        {"class":"detection",…} object per line (docs/protocol.md). Exits 0 when a watermark was \
        found, 2 when every file was searched and none was, 1 when a file could not be read.
        """)

    @Argument(help: "Audio files to search.", completion: .audio)
    var files: [String]

    @Flag(help: "One JSON object per line.")
    var json = false

    @OptionGroup var keys: KeyOptions
    @OptionGroup(title: "Headerless input") var raw: RawInputOptions
    @OptionGroup var catalogue: CatalogueOptions
    @OptionGroup(title: "Airing codes") var airing: AiringOptions

    func run() throws {
        let key = try keys.resolve()
        let chosen = try catalogue.resolve()
        let catalogueName = catalogue.catalogue ?? catalogue.catalogueFile ?? ""
        let listening = Listening(key: key, profile: keys.watermarkProfile, chosen: chosen,
                                  airing: try airing.listening(for: chosen?.airing ?? [], catalogue: catalogueName))
        // Said once, before any file: a detection with another key finds no mark in any of them.
        let otherKey = chosen.flatMap { MarkKeyCheck.otherKey($0.keyFingerprints, key: key, catalogue: catalogueName) }
        if let otherKey { Diagnostics.warning(otherKey.line) }
        let out = LineWriter.standardOutput
        var found = 0
        try Diagnostics.eachFile(files) { _, given in
            let source = try SoundFileSource(path: given, raw: raw.layout)
            let path = given == "-" ? SoundFileReader.standardInputName : given
            var count = 0
            let known = listening.known
            var settings = listening.settings(AnalysisPipeline.Settings(sampleRate: Double(source.sampleRate)))
            // A file is searched as fast as the machine allows: its readers side by side.
            settings.concurrentReadings = true
            let unusable = try WatermarkScan.run(source: source, settings: settings) { d in
                if let known, !known.contains(d.payload) { return }
                count += 1
                try out.write(line: json ? AnalysisEvent.detection(DetectionEvent(source: path, detection: d)).jsonLine
                                         : DetectionEvent.summary(path, d))
            }
            source.warnings.forEach(Diagnostics.warning)
            if unusable > 0 {
                Diagnostics.warning("\(path): \(unusable) samples were not finite or beyond ±\(Int(WatermarkDetector.sampleLimit)) × full scale; the watermark search read them as 0 or clamped")
            }
            if !json && count == 0 {
                let why = otherKey.map { " (\($0.count) campaign(s) of the catalogue were marked with another key than the one given)" } ?? ""
                try out.write(line: "\(path): no watermark found\(why)")
            }
            found += count
        }
        if found == 0 { throw ExitCode.nothingHeard }
    }
}
