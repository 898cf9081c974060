import FoundationEssentials
import Glibc
import HarkSpool
import HarkSystem
import HarkCatalogue
import HarkCapture
import HarkDSP
import HarkEngine
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import UnixSignals

/// harkd: capture, analysis, sessions and the socket, as one swift-service-lifecycle service.
///
/// `run()` brings everything up, tells systemd it is ready, and waits for graceful shutdown
/// (SIGTERM or SIGINT through the service group). Then sessions in flight are answered with an
/// error, clients are closed, the device is closed and the socket file removed. SIGHUP reloads
/// the configuration file.
public final class Daemon: Service, Sendable {
    public let configurationFile: String?
    private let overrides: [(String, String)]
    /// Replaced by SIGHUP's reload on the signal task, read by status requests on NIO's threads.
    private let current: Locked<DaemonConfiguration>
    private var configuration: DaemonConfiguration { current.withLock { $0 } }
    private let logger: Logger
    private let environment: [String: String]
    private let notifier: SystemdNotifier
    private let started: Date
    private let hub: Hub
    private let controller: CaptureController
    private let analysis: AnalysisLoop
    /// Why the analysis thread gave up, if it did: harkd then stops and exits with it.
    private let fatal: Locked<String?>
    private let group: MultiThreadedEventLoopGroup
    private let server: SocketServer
    /// The campaign catalogue as last read; replaced by SIGHUP's reload and at midnight UTC.
    private let campaigns: Locked<CampaignsOnAir>
    /// What all clients' unsent output may hold together (sized for max-clients at start).
    private let budget: OutputBudget
    /// Stamps and spools every record; replaced by SIGHUP's reload when the spool changes.
    private let recorders: Locked<Recorder>

    /// - Parameters:
    ///   - configuration: the configuration file's settings with the command line applied.
    ///   - overrides: the command-line settings, re-applied on top of the file after a reload.
    public convenience init(configuration: DaemonConfiguration, configurationFile: String?, overrides: [(String, String)],
                            logger: Logger, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.init(configuration: configuration, configurationFile: configurationFile, overrides: overrides, logger: logger,
                  environment: environment, opener: nil)
    }

    /// As above, with the PCM opener replaced (tests inject ALSA faults through it).
    init(configuration: DaemonConfiguration, configurationFile: String?, overrides: [(String, String)],
         logger: Logger, environment: [String: String], opener: CaptureSource.Opener?) {
        let current = Locked(configuration), budget = OutputBudget(clients: configuration.resolvedMaxClients)
        let started = Date(), fatal = Locked<String?>(nil)
        (self.current, self.budget, self.started, self.fatal) = (current, budget, started, fatal)
        var onAir = CampaignsOnAir()
        if let line = onAir.load(configuration.catalogueFile, reading: configuration.soundReading, key: configuration.watermarkKey) {
            if onAir.error == nil { logger.info("\(line)") } else { logger.error("\(line)") }
        }
        let campaigns = Locked(onAir)
        self.campaigns = campaigns
        self.configurationFile = configurationFile
        self.overrides = overrides
        self.logger = logger
        self.environment = environment
        let notifier = SystemdNotifier(environment: environment)
        self.notifier = notifier
        let controller = CaptureController(settings: configuration.captureSettings, ringSeconds: configuration.ringSeconds,
                                           opener: opener, logger: logger)
        self.controller = controller
        let recorders = Locked(Recorder.unspooled(unit: configuration.resolvedUnit, logger: logger))
        self.recorders = recorders
        let hub = Hub(logger: logger, recorder: { recorders.withLock { $0 } }, onAudioNeed: { controller.setWanted($0) },
                      status: { hub in
                          Self.status(configuration: current.withLock { $0 }, capture: controller.snapshot, started: started, hub: hub,
                                      budget: budget, spool: recorders.withLock { $0 }.status, onAir: campaigns.withLock { $0 })
                      })
        self.hub = hub
        analysis = AnalysisLoop(controller: controller, hub: hub, settings: Self.analysisSettings(configuration, onAir), logger: logger,
                                onStateChange: { state in
                                    logger.info("capture \(state)")
                                    let device = current.withLock { $0.capture.device }
                                    notifier.notify("STATUS=\(Self.statusLine(state, device: device, clients: hub.clientCount))")
                                },
                                onFatal: { message in
                                    fatal.withLock { $0 = message }
                                    kill(getpid(), SIGTERM)
                                })
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        server = SocketServer(group: group, hub: hub, logger: logger)
    }

    /// With a catalogue file, the mark is looked for among its campaigns on air (none on air:
    /// among none but the listed payloads, if any, else any payload); the airing-coded ones by
    /// the codes of the minutes around the wall clock's. The rate is the capture's, set when
    /// the audio comes.
    static func analysisSettings(_ c: DaemonConfiguration, _ onAir: CampaignsOnAir) -> AnalysisLoop.Settings {
        var p = AnalysisPipeline.Settings(sampleRate: Double(c.capture.rate))
        p.calibration = c.calibration
        p.levelInterval = c.levelInterval
        p.reportInterval = c.reportInterval
        let catalogue = onAir.search == nil ? c.catalogue : onAir.payloadsOnAir
        let airing = onAir.airingOnAir
        // A catalogue whose every campaign on air is airing-coded lists no payload but its codes.
        let listed = catalogue.isEmpty && airing.isEmpty ? nil : catalogue
        // harkd's sessions need every confirmation: the session table keeps the record's memory
        // of which airings were heard and each client's of which it was sent.
        p.repeatInterval = 0
        p.watermark = AnalysisPipeline.WatermarkSearch(
            key: c.watermarkKey, profile: c.watermarkProfile, catalogue: listed,
            airing: airing.isEmpty ? nil : AnalysisPipeline.AiringListening(schedule: AiringSchedule(campaigns: airing)) {
                Date().timeIntervalSince1970
            })
        p.sound = onAir.search
        return AnalysisLoop.Settings(analysis: p, device: c.capture.device)
    }

    public func run() async throws {
        let c = configuration
        let alsaLimit = LogRateLimiter()
        ALSALog.route { [logger] message in
            for line in alsaLimit.admit(message) { logger.warning("\(line)") }
        }
        // The analysers must be buildable at the rate asked for: better to refuse to start than
        // to run with the watermark search silently off.
        var probe = AnalysisPipeline.Settings(sampleRate: Double(c.capture.rate))
        probe.watermark = AnalysisPipeline.WatermarkSearch(key: c.watermarkKey, profile: c.watermarkProfile)
        _ = try AnalysisPipeline(probe)
        hub.limitClients(c.resolvedMaxClients)
        hub.configure(Self.sessionSettings(c))
        let recorder = makeRecorder(c)
        recorders.withLock { $0 = recorder }
        try analysis.start()
        do {
            try await server.start(path: c.resolvedSocketPath, mode: c.socketMode, groupName: c.socketGroup,
                                   queueLimit: c.clientQueueBytes, budget: budget, environment: environment)
        } catch {
            analysis.stop()
            controller.shutdown()
            try? await group.shutdownGracefully()
            throw error
        }
        logger.info("harkd \(Hark.version) ready: mode \(c.mode.rawValue), device '\(c.capture.device)', at most \(hub.maxClients) clients (descriptor limit \(DaemonConfiguration.descriptorLimit))")
        // Said at every start: a harkd run by hand still reads the packaged file when there is
        // one, and writes where that file says.
        if let file = configurationFile {
            logger.info("configuration read from \(file)\(overrides.isEmpty ? "" : ", then " + overrides.map { "--\($0.0)" }.joined(separator: " "))")
        } else {
            logger.info("no configuration file read: defaults\(overrides.isEmpty ? "" : " and " + overrides.map { "--\($0.0)" }.joined(separator: " "))")
        }
        notifier.notify("READY=1\nSTATUS=\(Self.statusLine(controller.snapshot.state, device: c.capture.device, clients: hub.clientCount))")

        await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { [self] in
                for await _ in await UnixSignalsSequence(trapping: .sighup) {
                    reload()
                }
            }
            // Campaigns start and end at midnight UTC: what is listened for follows the date.
            tasks.addTask { [self] in
                while !Task.isCancelled {
                    try await Task.sleep(for: .seconds(30))
                    let today = Campaign.today()
                    let (changed, onAir) = campaigns.withLock { c in (c.choose(today: today), c) }
                    if changed {
                        logger.info("\(today): \(onAir.payloadsOnAir.count) campaign(s) on air")
                        analysis.update(Self.analysisSettings(configuration, onAir))
                    }
                }
            }
            if let interval = notifier.watchdogInterval {
                tasks.addTask { [self] in
                    while !Task.isCancelled {
                        try await Task.sleep(for: .seconds(interval))
                        // Only a live analysis thread earns the watchdog's trust.
                        if Date().timeIntervalSince(analysis.heartbeat.withLock { $0 }) < 2 * interval {
                            notifier.notify("WATCHDOG=1")
                        }
                    }
                }
            }
            try? await gracefulShutdown()
            tasks.cancelAll()
        }
        await shutdown()
        if let message = fatal.withLock({ $0 }) { throw DaemonFailure(message: message) }
    }

    /// Answers sessions, closes clients, the device and the socket.
    func shutdown() async {
        logger.info("shutting down")
        notifier.notify("STOPPING=1")
        hub.shutdown(message: "harkd is shutting down")
        // The analysis thread answers the sessions in flight as it stops; each client gets what
        // was queued for it before its close.
        analysis.stop()
        for c in hub.connections { c.closeWhenWritten() }
        await server.stop()
        let recorder = recorders.withLock { $0 }
        recorder.uplink?.stop()
        controller.shutdown()
        // Nothing commits any more: leave the database alone, its log folded in.
        recorder.spool?.close()
        try? await group.shutdownGracefully()
        logger.info("stopped")
    }

    /// Re-reads the configuration file (command-line settings still win) and applies it.
    func reload() {
        guard let path = configurationFile else {
            logger.info("SIGHUP: no configuration file to reload")
            return
        }
        var fresh = DaemonConfiguration()
        do {
            try fresh.apply(file: DaemonConfiguration.text(ofFile: path), source: path)
            for (k, v) in overrides { try fresh.override(k, v) }
            // The ALSA configuration comes only from the command line (--alsa-config): keep it,
            // or a reload with nothing changed reopened the device under the system's ALSA
            // configuration and lost it ("Unknown PCM default").
            fresh.capture.configuration = configuration.capture.configuration
        } catch {
            logger.error("SIGHUP: configuration not reloaded: \(error)")
            return
        }
        if fresh.resolvedSocketPath != configuration.resolvedSocketPath || fresh.socketMode != configuration.socketMode
            || fresh.socketGroup != configuration.socketGroup {
            logger.warning("SIGHUP: socket settings change only on restart")
        }
        let old = configuration
        current.withLock { $0 = fresh }
        if fresh.spoolPath != old.spoolPath || fresh.spoolMaxMB != old.spoolMaxMB || fresh.spoolMaxDays != old.spoolMaxDays
            || fresh.resolvedUnit != old.resolvedUnit || fresh.uplink != old.uplink {
            // The old spool closes when the last record in flight through it is done.
            recorders.withLock { $0 }.uplink?.stop()
            let recorder = makeRecorder(fresh)
            recorders.withLock { $0 = recorder }
        }
        hub.limitClients(fresh.resolvedMaxClients)
        hub.configure(Self.sessionSettings(fresh))
        let onAir = campaigns.withLock { c in
            if let line = c.load(fresh.catalogueFile, reading: fresh.soundReading, key: fresh.watermarkKey) {
                if c.error == nil { logger.info("SIGHUP: \(line)") } else { logger.error("SIGHUP: \(line)") }
            }
            return c
        }
        analysis.update(Self.analysisSettings(fresh, onAir))
        controller.reconfigure(settings: fresh.captureSettings, ringSeconds: fresh.ringSeconds)
        logger.info("configuration reloaded from \(path)")
    }

    /// What the sessions take from a configuration.
    static func sessionSettings(_ c: DaemonConfiguration) -> SessionTable.Settings {
        SessionTable.Settings(continuous: c.mode == .continuous, calibration: c.calibration, device: c.capture.device,
                              shakeEvidence: c.shakeEvidence, unit: c.resolvedUnit)
    }

    private static func status(configuration: DaemonConfiguration, capture s: (state: String, rate: Int?, overruns: Int, dropped: Int, detail: String?), started: Date, hub: Hub,
                               budget: OutputBudget, spool: Messages.SpoolStatus, onAir: CampaignsOnAir) -> Messages.Status {
        var status = Messages.Status(state: s.state, device: configuration.capture.device, rate: s.rate, mode: configuration.mode.rawValue,
                                     uptime: Date().timeIntervalSince(started), overruns: s.overruns, dropped: s.dropped,
                                     clients: hub.clientCount, sessions: hub.sessionCount, detail: s.detail)
        status.maxClients = hub.maxClients
        status.clientsRefused = hub.clientsRefused
        status.outputHeld = budget.held
        status.spool = spool
        if let path = onAir.path ?? configuration.catalogueFile {
            status.catalogue = Messages.CatalogueStatus(path: path, campaigns: onAir.campaigns.count,
                                                        onAir: onAir.payloadsOnAir.count, error: onAir.error)
        }
        return status
    }

    /// The recorder for `c`: its unit, and its spool opened. A spool that cannot be opened is
    /// an error in the log and in `status`, not a reason to stop measuring; the file is left
    /// as it is.
    private func makeRecorder(_ c: DaemonConfiguration) -> Recorder {
        let unit = c.resolvedUnit
        guard let path = c.spoolPath else {
            if c.uplink != nil {
                let why = "mqtt-url needs a spool: the uplink publishes what the spool holds (set spool = PATH)"
                logger.error("\(why)")
                return Recorder(unit: unit, spool: nil, trouble: why, logger: logger)
            }
            return Recorder(unit: unit, spool: nil, logger: logger)
        }
        let limits = Spool.Limits(maxBytes: Int(c.spoolMaxMB * 1_048_576), maxAge: c.spoolMaxDays * 86_400)
        do {
            let spool = try Spool(path: path, limits: limits) { [logger] message in logger.warning("\(message)") }
            let s = spool.stats
            logger.info("spool \(path): \(s.pending) record(s) to deliver, \(s.delivered) delivered; unit \(unit)")
            var uplink: Uplink?
            if let settings = c.uplink {
                if settings.host.isEmpty {
                    logger.error("mqtt settings without mqtt-url: the uplink is off")
                } else {
                    uplink = Uplink(settings: settings, spool: spool, unit: unit, logger: logger)
                    uplink?.start()
                }
            }
            return Recorder(unit: unit, spool: spool, uplink: uplink, logger: logger)
        } catch {
            logger.error("spool setting: \(error); records are not spooled until this is fixed (SIGHUP reloads)")
            return Recorder(unit: unit, spool: nil, trouble: "\(error)", logger: logger)
        }
    }

    private static func statusLine(_ state: String, device: String, clients: Int) -> String {
        "\(state), device \(device), \(clients) client(s)"
    }
}

/// What stopped harkd from inside (the command line exits 1 with it).
struct DaemonFailure: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
