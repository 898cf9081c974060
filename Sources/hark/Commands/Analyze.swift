import ArgumentParser
import Foundation
import HarkEngine
import HarkSoundFile

struct Analyze: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure the sound levels of audio files (IEC 61672-1 meter and 1/3-octave bands).",
        discussion: """
        Reads any format libsndfile reads (WAV, FLAC, Ogg/Vorbis, MP3, AIFF, …), 1–8 channels, \
        8–192 kHz. Channels are averaged unless --channel picks one. Levels are dB re the RMS \
        of a full-scale sine until a calibration offset (from 'hark calibrate') turns them \
        into dB SPL. With --json, prints one 'level' line per interval and one 'report' line \
        per file (see docs/protocol.md).
        """)

    @Argument(help: "Audio files to analyse.", completion: .audio)
    var files: [String]

    @Flag(help: "One JSON object per line instead of a summary.")
    var json = false

    @Option(parsing: .unconditional, help: ArgumentHelp("Seconds per level line (with --json).", valueName: "seconds"))
    var interval: Double = 1

    @Option(parsing: .unconditional, help: ArgumentHelp("Decibels added to every level (from 'hark calibrate').", valueName: "dB"))
    var calibration: Double = 0

    @Option(help: ArgumentHelp("Measure only this channel (1 is the first) instead of the average.", valueName: "n"))
    var channel: Int?

    @Flag(help: "Also search for watermarks (with --key or --key-file; the demo key otherwise). --catalogue or --profile implies it.")
    var watermark = false

    @OptionGroup var keys: KeyOptions
    @OptionGroup(title: "Headerless input") var raw: RawInputOptions
    @OptionGroup var catalogue: CatalogueOptions
    @OptionGroup(title: "Airing codes") var airing: AiringOptions

    func validate() throws {
        guard interval.isFinite, interval >= 0.01, interval <= 86_400 else {
            throw ValidationError("--interval must be between 0.01 and 86400 seconds")
        }
        guard calibration.isFinite, abs(calibration) <= 200 else {
            throw ValidationError("--calibration must be between -200 and 200 dB")
        }
        if let c = channel, c < 1 { throw ValidationError("--channel counts from 1") }
    }

    func run() throws {
        let out = LineWriter.standardOutput
        let sink: EventSink = json ? JSONLinesSink(writer: out) : SummarySink(writer: out)
        let chosen = try catalogue.resolve()
        let key = watermark || keys.given || chosen != nil ? try keys.resolve() : nil
        let listening = Listening(key: key, profile: keys.watermarkProfile, chosen: chosen,
                                  airing: try airing.listening(for: chosen?.airing ?? [], catalogue: catalogue.catalogue ?? catalogue.catalogueFile ?? ""))
        // With a catalogue file only its campaigns are reported, as by hark detect.
        let known = listening.known
        try Diagnostics.eachFile(files) { index, given in
            let source = try SoundFileSource(path: given, raw: raw.layout)
            let path = given == "-" ? SoundFileReader.standardInputName : given
            var settings = LevelAnalysis.settings(for: source)
            settings.levelInterval = json ? interval : nil
            settings.calibration = calibration
            let analysis = try LevelAnalysis(source: source, settings: listening.settings(settings), channel: channel)
            let progress = ProgressReporter(writer: .standardError, name: path, totalFrames: source.expectedFrames,
                                            sampleRate: source.sampleRate)
            if !json && index > 0 { try out.write(line: "") }
            let report = try analysis.run(emit: { event in
                if case .detection(let e) = event, let known, !known.contains(e.detection.payload) { return }
                if case .report = event { progress.finish() }
                try sink.receive(event)
            }, progress: progress.update)
            report.warnings.forEach(Diagnostics.warning)
        }
    }
}
