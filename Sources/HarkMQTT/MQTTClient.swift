import CMosquitto
import FoundationEssentials
import Glibc

/// Why libmosquitto refused, in its words, with the setting or step that failed.
public struct MQTTError: Error, CustomStringConvertible, Equatable {
    public var what: String
    public var code: Int32
    public var description: String {
        guard case .success(let lib) = LibMosquitto.shared else { return what }
        return "\(what): \(lib.describe(code))"
    }
}

/// One MQTT client connection through libmosquitto: owns the `struct mosquitto` handle, turns
/// result codes into ``MQTTError`` and callbacks into ``Event``s returned by ``loop(timeout:)``.
///
/// Not thread-safe, by design: one thread owns it and drives its network loop, so every
/// callback runs on that thread, inside ``connect()`` or ``loop(timeout:)``.
public final class MQTTClient {
    public struct Options: Sendable, Equatable {
        public var host: String
        public var port: Int
        public var clientID: String
        /// Kept by the broker across connections (QoS 1 messages it still owes are resent).
        public var persistentSession = true
        public var username: String?
        public var password: String?
        /// TLS: the broker's certificate must chain to ``caFile`` (or to the system's
        /// certificates in /etc/ssl/certs) and name ``host``.
        public var tls = false
        public var caFile: String?
        public var certFile: String?
        public var keyFile: String?
        public var keepalive = 30
        /// Published by the broker, retained, if this client vanishes without disconnecting.
        public var will: (topic: String, payload: String)?

        public init(host: String, port: Int, clientID: String) {
            (self.host, self.port, self.clientID) = (host, port, clientID)
        }

        public static func == (a: Options, b: Options) -> Bool {
            (a.host, a.port, a.clientID, a.persistentSession, a.username, a.password) == (b.host, b.port, b.clientID, b.persistentSession, b.username, b.password)
                && a.tls == b.tls && (a.caFile, a.certFile, a.keyFile, a.keepalive) == (b.caFile, b.certFile, b.keyFile, b.keepalive)
                && a.will?.topic == b.will?.topic && a.will?.payload == b.will?.payload
        }
    }

    public enum Event: Equatable, Sendable {
        /// The broker accepted the connection.
        case connected
        /// The broker answered the connection with a refusal (bad credentials, not authorised).
        case refused(String)
        /// The connection ended; `expected` when this side asked for it.
        case disconnected(expected: Bool, reason: String)
        /// The broker acknowledged (PUBACK) the message with this id.
        case acknowledged(Int32)
    }

    private var handle: OpaquePointer?
    private var events: [Event] = []
    public let options: Options

    private let lib: LibMosquitto

    public init(options: Options) throws(MQTTError) {
        lib = try LibMosquitto.shared.get()
        self.options = options
        guard let h = lib.new(options.clientID, !options.persistentSession, nil) else {
            throw MQTTError(what: "cannot make an MQTT client", code: MOSQ_ERR_NOMEM.rawValue)
        }
        handle = h
        lib.userDataSet(h, Unmanaged.passUnretained(self).toOpaque())
        try check(lib.intOption(h, MOSQ_OPT_PROTOCOL_VERSION, Int32(MQTT_PROTOCOL_V311)), "protocol version")
        if let user = options.username {
            try check(lib.usernamePasswordSet(h, user, options.password), "mqtt-username")
        }
        if options.tls {
            // Checked here so that an unreadable file is named now, not at the first handshake.
            for (setting, path) in [("mqtt-ca", options.caFile), ("mqtt-cert", options.certFile), ("mqtt-key", options.keyFile)] {
                if let path, !FileManager.default.isReadableFile(atPath: path) {
                    throw MQTTError(what: "\(setting) \(path) cannot be read", code: MOSQ_ERR_INVAL.rawValue)
                }
            }
            try check(lib.tlsSet(h, options.caFile, options.caFile == nil ? "/etc/ssl/certs" : nil,
                                        options.certFile, options.keyFile, nil), "TLS settings (mqtt-ca, mqtt-cert, mqtt-key)")
        }
        if let will = options.will {
            try check(lib.willSet(h, will.topic, Int32(will.payload.utf8.count), will.payload, 1, true), "last will")
        }
        lib.connectCallbackSet(h) { _, context, rc in
            guard let client = MQTTClient.from(context) else { return }
            let why = client.lib.connackString(rc).map { String(cString: $0) } ?? "refused (\(rc))"
            client.events.append(rc == 0 ? .connected : .refused(why))
        }
        lib.disconnectCallbackSet(h) { _, context, rc in
            guard let client = MQTTClient.from(context) else { return }
            client.events.append(.disconnected(expected: rc == 0, reason: rc == 0 ? "disconnected" : client.lib.describe(rc)))
        }
        lib.publishCallbackSet(h) { _, context, mid in
            MQTTClient.from(context)?.events.append(.acknowledged(mid))
        }
    }

    deinit {
        if let h = handle { lib.destroy(h) }
    }

    private static func from(_ context: UnsafeMutableRawPointer?) -> MQTTClient? {
        context.map { Unmanaged<MQTTClient>.fromOpaque($0).takeUnretainedValue() }
    }

    private func check(_ rc: Int32, _ what: String) throws(MQTTError) {
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw MQTTError(what: what, code: rc) }
    }

    /// Opens the TCP (and TLS) connection and sends CONNECT; the answer arrives as an event
    /// from ``loop(timeout:)``. Blocks for as long as the TCP connect takes.
    public func connect() throws(MQTTError) {
        try check(lib.connect(handle, options.host, Int32(options.port), Int32(options.keepalive)),
                  "cannot connect to \(options.host):\(options.port)")
    }

    /// Publishes at QoS 1; returns the message id its acknowledgement will carry.
    public func publish(topic: String, payload: String, retain: Bool = false) throws(MQTTError) -> Int32 {
        var mid: Int32 = 0
        try check(lib.publish(handle, &mid, topic, Int32(payload.utf8.count), payload, 1, retain), "publish to \(topic)")
        return mid
    }

    /// Runs the network for up to `timeout` seconds and returns what happened. Throws when the
    /// connection is gone.
    public func loop(timeout: Double) throws(MQTTError) -> [Event] {
        let rc = lib.loop(handle, Int32(timeout * 1000), 1)
        let happened = events
        events = []
        if rc != MOSQ_ERR_SUCCESS.rawValue && happened.isEmpty {
            throw MQTTError(what: "connection to \(options.host):\(options.port)", code: rc)
        }
        return happened
    }

    /// Sends DISCONNECT (the broker then does not publish the will).
    public func disconnect() {
        _ = lib.disconnect(handle)
        _ = try? loop(timeout: 0)
    }
}
