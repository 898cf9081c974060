import ArgumentParser
import FoundationEssentials
import Glibc
import HarkCapture
import HarkDaemon
import HarkEngine
import HarkSystem
import Logging
import ServiceLifecycle

/// `harkd`: the Hark daemon.
@main
struct HarkdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "harkd",
        abstract: "Capture audio with ALSA and serve watermark detections and noise measurements over a local socket.",
        discussion: "Settings come from the configuration file, then from these options. docs/daemon.md lists them all.",
        version: Hark.version)

    /// As the default, but the help the manual generator reads is spelled in ASCII
    /// (``ManualText``).
    static func main() async {
        HeapTrim.useOneArena()
        guard ManualText.isDumpRequest(CommandLine.arguments) else {
            do {
                var command = try parseAsRoot()
                if var asynchronous = command as? AsyncParsableCommand {
                    try await asynchronous.run()
                } else {
                    try command.run()
                }
            } catch {
                exit(withError: error)
            }
            return
        }
        do {
            _ = try parseAsRoot()
        } catch {
            print(ManualText.ascii(message(for: error)))
        }
    }

    @Option(help: ArgumentHelp("Configuration file (key = value lines; default $HARKD_CONFIG, else /etc/hark/harkd.conf when it exists).",
                               valueName: "path"), completion: .file())
    var config: String?

    /// The file harkd reads when `--config` is not given: `$HARKD_CONFIG` (which must exist),
    /// else the packaged `/etc/hark/harkd.conf` if there is one.
    static func defaultConfiguration(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let path = environment["HARKD_CONFIG"], !path.isEmpty { return path }
        let packaged = "/etc/hark/harkd.conf"
        return FileManager.default.fileExists(atPath: packaged) ? packaged : nil
    }

    @Option(name: [.customShort("D"), .long], help: ArgumentHelp("ALSA capture device.", valueName: "name"),
            completion: .custom { _, _, _ in CaptureDevices.pcms().map(\.name) })
    var device: String?

    @Option(help: ArgumentHelp("Sample rate to ask for.", valueName: "Hz"))
    var rate: Int?

    @Option(help: ArgumentHelp("Channels to capture (averaged for analysis).", valueName: "n"))
    var channels: Int?

    @Option(help: ArgumentHelp("S16, S32 or FLOAT.", valueName: "format"), completion: .list(["S16", "S32", "FLOAT"]))
    var format: String?

    @Option(help: ArgumentHelp("on-demand (default) or continuous.", valueName: "mode"), completion: .list(["on-demand", "continuous"]))
    var mode: String?

    @Option(help: ArgumentHelp("Socket path (default $HARK_SOCKET, else $RUNTIME_DIRECTORY/hark.sock, else /run/hark/hark.sock).", valueName: "path"), completion: .file())
    var socket: String?

    @Option(help: ArgumentHelp("Seconds between continuous noise reports.", valueName: "s"))
    var reportInterval: Double?

    @Option(help: ArgumentHelp("Watermark key text.", valueName: "text"))
    var key: String?

    @Option(help: ArgumentHelp("Watermark key file.", valueName: "path"), completion: .file())
    var keyFile: String?

    @Option(help: ArgumentHelp("Watermark band: tv (default) or stadium; the embedder's.", valueName: "tv|stadium"), completion: .list(["tv", "stadium"]))
    var profile: String?

    @Option(help: ArgumentHelp("A campaign catalogue file (hark catalogue add): listen for its campaigns on air by mark and by sound. Or payloads on air (hex, comma-separated): detect only these, at a lower threshold.", valueName: "file|hex,…"), completion: .file())
    var catalogue: String?

    @Option(help: ArgumentHelp("Read the catalogue from a file (payloads separated by commas, spaces or lines; # comments).", valueName: "path"), completion: .file())
    var catalogueFile: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("Calibration offset, dB.", valueName: "dB"))
    var calibration: Double?

    @Option(help: ArgumentHelp("ALSA configuration file to use instead of the system's (its text is loaded in process).", valueName: "path"), completion: .file())
    var alsaConfig: String?

    @Option(help: ArgumentHelp("""
        Capture from this FIFO instead of a sound card: raw 16-bit mono at 48 kHz, as hark feed \
        writes it, through ALSA's file plugin (the real capture path, no hardware).
        """, valueName: "path"), completion: .file())
    var captureFifo: String?

    @Option(help: ArgumentHelp("SQLite file every report, detection and shake result is committed to before it is sent.", valueName: "path"), completion: .file())
    var spool: String?

    @Option(help: ArgumentHelp("This device's name in every record (default: the machine id).", valueName: "name"))
    var unit: String?

    @Flag(help: "List the capture devices ALSA offers (PCM names for -D, and sound cards), then exit.")
    var listDevices = false

    @Flag(help: "Log debug messages.")
    var verbose = false

    /// An ALSA configuration whose `default` capture device reads raw S16 mono 48 kHz from `fifo`.
    static func fifoConfiguration(_ fifo: String) -> String {
        let path = fifo.hasPrefix("/") ? fifo : FileManager.default.currentDirectoryPath + "/" + fifo
        return """
            pcm.hark_fifo { type file slave { pcm { type null } } file "/dev/null" infile "\(path)" format "raw" }
            pcm.default { type plug slave { pcm "hark_fifo"; format S16_LE; rate 48000; channels 1 } }

            """
    }

    /// `arecord -L` and `arecord -l` in one, for the `device` setting.
    static func deviceList() -> String {
        var lines = ["capture PCMs (use the name with -D or device =):"]
        let pcms = CaptureDevices.pcms()
        if pcms.isEmpty { lines.append("  (none: ALSA's configuration defines no PCM)") }
        let width = min(40, pcms.map(\.name.count).max() ?? 0)
        for p in pcms {
            lines.append("  " + p.name + String(repeating: " ", count: max(0, width - p.name.count)) + "  " + p.description)
        }
        lines.append("sound cards:")
        let cards = CaptureDevices.cards()
        if cards.isEmpty { lines.append("  (none found: no sound card, or no permission on /dev/snd)") }
        for c in cards { lines.append("  hw:\(c.index)  (hw:CARD=\(c.id))  \(c.name)") }
        return lines.joined(separator: "\n")
    }

    func run() async throws {
        if listDevices {
            print(Self.deviceList())
            return
        }
        LoggingSystem.bootstrap { label in DaemonLogHandler(label: label) }
        var logger = Logger(label: "harkd")
        logger.logLevel = verbose ? .debug : .info
        // Every client is a descriptor: the usual soft limit (1 024) would refuse connections
        // long before memory runs short. The hard limit is the administrator's to set.
        var files = rlimit()
        if getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &files) == 0, files.rlim_cur < files.rlim_max {
            files.rlim_cur = files.rlim_max
            setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &files)
        }
        var settings = DaemonConfiguration()
        var overrides: [(String, String)] = []
        for (key, value) in [("device", device), ("rate", rate.map(String.init)), ("channels", channels.map(String.init)),
                             ("format", format), ("mode", mode), ("socket", socket),
                             ("report-interval", reportInterval.map { String($0) }), ("key", key), ("key-file", keyFile), ("profile", profile),
                             ("catalogue", catalogue), ("catalogue-file", catalogueFile),
                             ("calibration", calibration.map { String($0) }), ("spool", spool), ("unit", unit)] {
            if let value { overrides.append((key, value)) }
        }
        let config = self.config ?? Self.defaultConfiguration()
        do {
            if let config {
                try settings.apply(file: DaemonConfiguration.text(ofFile: config), source: config)
            }
            for (k, v) in overrides { try settings.override(k, v) }
            if let alsaConfig {
                guard let text = try? String(contentsOfFile: alsaConfig, encoding: .utf8) else {
                    throw ValidationError("\(alsaConfig): cannot read the ALSA configuration")
                }
                settings.capture.configuration = text
                logger.notice("ALSA devices come from \(alsaConfig), not from the system's ALSA configuration")
            }
            if let captureFifo {
                guard alsaConfig == nil else { throw ValidationError("give --capture-fifo or --alsa-config, not both") }
                settings.capture.configuration = Self.fifoConfiguration(captureFifo)
                settings.capture.device = "default"
                logger.notice("capturing from the FIFO \(captureFifo) through ALSA's file plugin, not from a sound card")
            }
        } catch let error as DaemonConfiguration.ParseError {
            logger.critical("\(error)")
            throw ExitCode(78)       // EX_CONFIG
        }
        let daemon = Daemon(configuration: settings, configurationFile: config, overrides: overrides, logger: logger)
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: daemon, successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        do {
            try await group.run()
        } catch {
            logger.critical("\(error)")
            throw ExitCode(1)
        }
    }
}
