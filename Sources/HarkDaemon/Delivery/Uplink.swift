import Dispatch
import FoundationEssentials
import Glibc
import HarkSystem
import HarkEngine
import HarkMQTT
import HarkSpool
import Logging

/// Publishes the spool's records to an MQTT broker, oldest first, and marks each delivered
/// only when the broker acknowledges it (QoS 1, PUBACK).
///
/// One thread owns the MQTT client and does everything here, so capture and analysis never
/// wait on the network: they only commit to the spool, which this thread reads. Topics are
/// `hark/<unit>/report`, `…/detection` and `…/shake`, and a retained `…/status` that says
/// `online` and, through the broker's last will, `offline`. A lost or refused connection is
/// retried after a delay that doubles from 0.5 s to 60 s, with ±25 % jitter so a fleet that
/// lost its broker does not come back all at once.
public final class Uplink: Sendable {
    public struct Status: Sendable, Equatable {
        /// `connecting`, `connected`, `disconnected`, `refused` or `error`.
        public var state = "connecting"
        public var detail: String?
        /// Records the broker acknowledged since harkd started.
        public var acknowledged = 0
    }

    /// Messages published and not yet acknowledged, at most.
    static let window = 100
    static let backoffStart = 0.5
    static let backoffLimit = 60.0

    private let settings: UplinkSettings
    private let spool: Spool
    private let unit: String
    private let logger: Logger
    private let running = Locked(false)
    private let current = Locked(Status())
    private let done = DispatchSemaphore(value: 0)

    public init(settings: UplinkSettings, spool: Spool, unit: String, logger: Logger) {
        self.settings = settings
        self.spool = spool
        self.unit = unit
        self.logger = logger
    }

    public var status: Status { current.withLock { $0 } }

    func topic(_ kind: String) -> String { "hark/\(unit)/\(kind)" }

    private var statusPayload: (online: String, offline: String) {
        (#"{"unit":"\#(unit)","state":"online","release":"\#(Hark.version)"}"#, #"{"unit":"\#(unit)","state":"offline"}"#)
    }

    public func start() {
        running.withLock { $0 = true }
        do {
            try DetachedThread.start(name: "hark-uplink") { [self] in run() }
        } catch {
            running.withLock { $0 = false }
            set("error", "\(error)")
            done.signal()
        }
    }

    /// Says `offline` on the status topic, disconnects, and waits (up to `timeout`) for the
    /// thread, which may be inside a TCP connect to an unreachable host.
    public func stop(timeout: Double = 3) {
        guard running.withLock({ r -> Bool in defer { r = false }; return r }) else { return }
        _ = done.wait(timeout: .now() + timeout)
    }

    private var isRunning: Bool { running.withLock { $0 } }

    private func set(_ state: String, _ detail: String? = nil) {
        let changed = current.withLock { s -> Bool in
            defer { (s.state, s.detail) = (state, detail) }
            return s.state != state || s.detail != detail
        }
        guard changed else { return }
        switch state {
        case "connected": logger.info("uplink connected to \(settings.host):\(settings.port)")
        case "refused", "error": logger.error("uplink: \(detail ?? state)")
        default: logger.warning("uplink \(state)\(detail.map { ": \($0)" } ?? "")")
        }
    }

    /// Sleeps `seconds` in short steps, returning early when stopped.
    private func pause(_ seconds: Double) {
        let end = Date(timeIntervalSinceNow: seconds)
        while isRunning, Date() < end { DetachedThread.sleep(seconds: min(0.05, max(0, end.timeIntervalSinceNow))) }
    }

    private func run() {
        defer { done.signal() }
        var options = MQTTClient.Options(host: settings.host, port: settings.port, clientID: settings.clientID ?? "hark-\(unit)")
        options.username = settings.username
        options.password = settings.password
        options.tls = settings.tls
        options.caFile = settings.caFile
        options.certFile = settings.certFile
        options.keyFile = settings.keyFile
        options.keepalive = settings.keepalive
        options.will = (topic("status"), statusPayload.offline)
        let client: MQTTClient
        do {
            client = try MQTTClient(options: options)
        } catch {
            // A setting that cannot work (an unreadable certificate): no retry until SIGHUP.
            set("error", "\(error)")
            return
        }
        var backoff = Self.backoffStart
        var connected = false
        var inFlight: [Int32: Int64] = [:]     // message id → spool seq
        var queuedUpTo: Int64 = 0
        var tokens = 0.0, lastRefill = Date()
        func retryLater(_ state: String, _ detail: String) {
            set(state, detail)
            connected = false
            pause(backoff * Double.random(in: 0.75...1.25))
            backoff = min(backoff * 2, Self.backoffLimit)
        }
        while isRunning {
            if !connected {
                do {
                    // The state stays what the last attempt found (refused, say) until this
                    // one is answered.
                    try client.connect()
                } catch {
                    retryLater("disconnected", "\(error)")
                    continue
                }
                // Wait for the broker's answer.
                var answer: (state: String, detail: String)?
                let deadline = Date(timeIntervalSinceNow: Double(settings.keepalive))
                while isRunning, answer == nil, Date() < deadline {
                    let events: [MQTTClient.Event]
                    do {
                        events = try client.loop(timeout: 0.1)
                    } catch {
                        answer = ("disconnected", "\(error)")
                        break
                    }
                    for e in events where answer == nil {
                        switch e {
                        case .connected: answer = ("connected", ""); connected = true
                        // The broker closes the connection after refusing it: the refusal is the news.
                        case .refused(let why): answer = ("refused", "broker refused the connection: \(why)")
                        case .disconnected(_, let why): answer = ("disconnected", why)
                        case .acknowledged: break
                        }
                    }
                }
                guard connected else {
                    client.disconnect()
                    let (state, detail) = answer ?? ("disconnected", "no answer from the broker in \(settings.keepalive) s")
                    retryLater(state, detail)
                    continue
                }
                backoff = Self.backoffStart
                // Whatever was in flight on the last connection is sent again (duplicates
                // carry the same rid; QoS 1 allows them).
                inFlight = [:]
                queuedUpTo = 0
                _ = try? client.publish(topic: topic("status"), payload: statusPayload.online, retain: true)
                set("connected")
            }
            // Publish what is pending, oldest first, within the window and the rate.
            let now = Date()
            tokens = min(settings.maxRate, tokens + now.timeIntervalSince(lastRefill) * settings.maxRate)
            lastRefill = now
            let room = min(Self.window - inFlight.count, Int(tokens))
            if room > 0, let records = try? spool.pending(after: queuedUpTo, limit: room) {
                for r in records {
                    guard let mid = try? client.publish(topic: topic(r.kind), payload: r.body) else { break }
                    inFlight[mid] = r.seq
                    queuedUpTo = r.seq
                    tokens -= 1
                }
            }
            let events: [MQTTClient.Event]
            do {
                events = try client.loop(timeout: inFlight.isEmpty ? 0.1 : 0.01)
            } catch {
                retryLater("disconnected", "\(error)")
                continue
            }
            var acknowledged: [Int64] = []
            for e in events {
                switch e {
                case .acknowledged(let mid): if let seq = inFlight.removeValue(forKey: mid) { acknowledged.append(seq) }
                case .disconnected(_, let why): connected = false; set("disconnected", why)
                case .refused(let why): connected = false; set("refused", why)
                case .connected: break
                }
            }
            if !acknowledged.isEmpty {
                do {
                    try spool.markDelivered(acknowledged, at: Int64((Date().timeIntervalSince1970 * 1000).rounded()))
                    current.withLock { $0.acknowledged += acknowledged.count }
                } catch {
                    logger.error("uplink: \(error)")
                }
            }
            if !connected { pause(backoff * Double.random(in: 0.75...1.25)); backoff = min(backoff * 2, Self.backoffLimit) }
        }
        if connected {
            _ = try? client.publish(topic: topic("status"), payload: statusPayload.offline, retain: true)
            _ = try? client.loop(timeout: 0.2)
            client.disconnect()
        }
    }
}
