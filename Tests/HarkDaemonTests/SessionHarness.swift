import Foundation
import HarkCapture
import HarkDSP
import HarkEngine
import Logging
@testable import HarkDaemon

/// A ``Hub`` and the ``SessionTable`` its analysis thread would own, driven from the test's
/// thread: every call posts to the hub or feeds the table, then applies the hub's queue and
/// delivers what the table answered, as one turn of harkd's analysis loop does.
final class SessionHarness {
    let hub: Hub
    private(set) var table: SessionTable
    private let recorders = Locked(Recorder.unspooled())
    private let statuses = Locked<@Sendable () -> Messages.Status>({
        Messages.Status(state: "idle", device: "", rate: nil, mode: "", uptime: 0, overruns: 0, dropped: 0, clients: 0, sessions: 0)
    })
    private let needs = Locked<@Sendable (Bool) -> Void>({ _ in })

    init(logger: Logger = Logger(label: "test")) {
        let (recorders, statuses, needs) = (recorders, statuses, needs)
        hub = Hub(logger: logger, recorder: { recorders.withLock { $0 } }, onAudioNeed: { need in needs.withLock { $0 }(need) },
                  status: { _ in statuses.withLock { $0 }() })
        table = SessionTable(logger: logger, captureState: {
            let s = statuses.withLock { $0 }()
            return (s.state, s.detail)
        })
    }

    var recorder: Recorder {
        get { recorders.withLock { $0 } }
        set {
            recorders.withLock { $0 = newValue }
            // The unit stamped on records is the table's, as harkd's reload sets it.
            var settings = table.settings
            settings.unit = newValue.unit
            hub.configure(settings)
            turn()
        }
    }
    var statusProvider: @Sendable () -> Messages.Status {
        get { statuses.withLock { $0 } }
        set { statuses.withLock { $0 = newValue } }
    }
    var onAudioNeed: @Sendable (Bool) -> Void {
        get { needs.withLock { $0 } }
        set { needs.withLock { $0 = newValue } }
    }

    /// One turn: what the hub queued, applied and delivered.
    func turn(_ more: [SessionOutput] = []) {
        hub.deliver(table.apply(hub.take()) + more, table: table)
    }

    private func run(_ body: (inout SessionTable) -> [SessionOutput]) {
        turn()
        hub.deliver(body(&table), table: table)
    }

    func connect(_ c: ClientConnection) -> Hub.Refusal? {
        defer { turn() }
        return hub.connect(c)
    }
    func disconnect(_ id: Int) { hub.disconnect(id); turn() }
    func inputClosed(_ id: Int) { hub.inputClosed(id); turn() }
    func handle(_ command: Command, from client: Int) { hub.handle(command, from: client); turn() }
    func limitClients(_ n: Int) { hub.limitClients(n) }
    func configure(continuous: Bool, calibration: Double, device: String, shakeEvidence: Command.ShakeEvidence = .any) {
        hub.configure(SessionTable.Settings(continuous: continuous, calibration: calibration, device: device, shakeEvidence: shakeEvidence,
                                            unit: recorder.unit))
        turn()
    }
    func shutdown(message: String) { hub.shutdown(message: message); turn() }

    func tick(streamTime: Double, now: Date = Date()) { run { $0.tick(streamTime: streamTime, now: now) } }
    func feed(_ samples: UnsafeBufferPointer<Float>, rate: Double, streamTime: Double) { run { $0.feed(samples, rate: rate) } }
    func gap(_ gap: CaptureGap, rate: Double) { turn(); table.gap(gap, rate: rate) }
    func nonFinite(_ count: Int) { turn(); table.nonFinite(count) }
    /// `d` as the pipeline would hand it over had it ended at stream second `time`, its copy
    /// beginning at `start` (its window as long as it was).
    func detection(_ d: WatermarkDetection, time: Double, start: Double) {
        var placed = d
        (placed.time, placed.start, placed.windowStart) = (time, start, time - (d.time - d.windowStart))
        run { $0.detection(placed) }
    }

    var sessionCount: Int { table.sessionCount }
    var audioNeeded: Bool { table.audioNeeded }
    var clientCount: Int { hub.clientCount }
    var clientsRefused: Int { hub.clientsRefused }
}
