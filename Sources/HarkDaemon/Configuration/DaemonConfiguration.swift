import FoundationEssentials
import Glibc
import HarkSystem
import HarkCapture
import HarkDSP
import HarkEngine

/// Everything harkd can be told, from its configuration file and command line.
///
/// The file is `key = value` lines; `#` starts a comment. Example (docs/daemon.md lists every key):
///
///     device = default
///     mode = on-demand
///     report-interval = 60
///     socket-group = audio
public struct DaemonConfiguration: Sendable, Equatable {
    public enum Mode: String, Sendable, CaseIterable {
        /// The microphone is open only while a session or an audio watcher needs it.
        case onDemand = "on-demand"
        /// Always capturing: periodic noise reports and detections for watchers.
        case continuous
    }

    public var capture = CaptureSettings()
    /// Period and ALSA buffer, in seconds (converted at the configured rate).
    public var periodSeconds = 0.02
    public var bufferSeconds = 0.2
    public var mode = Mode.onDemand
    /// Seconds between noise reports in continuous mode.
    public var reportInterval = 60.0
    /// Seconds between `level` messages to watchers.
    public var levelInterval = 1.0
    /// Seconds of audio the capture ring holds before dropping.
    public var ringSeconds = 2.0
    public var socketPath: String?
    public var socketMode: UInt16 = 0o660
    public var socketGroup: String?
    public var watermarkKey = WatermarkKey.demo
    /// The band the marks on air were embedded in.
    public var watermarkProfile = WatermarkProfile.tv
    /// The payloads on air: detections are limited to these, at a lower threshold (empty: any).
    public var catalogue: [WatermarkPayload] = []
    /// The campaign catalogue file (`catalogue = PATH`): its campaigns on air today are
    /// listened for by mark and by sound, and they replace ``catalogue``.
    public var catalogueFile: String?
    /// Which readings of the catalogue's creatives listen (`sound-reading`: both, landmarks,
    /// learned; docs/sound-embedder.md).
    public var soundReading = SoundReadingChoice.standard
    /// What answers a shake that does not say: any evidence, or the mark.
    public var shakeEvidence = Command.ShakeEvidence.any
    public var calibration = 0.0
    /// Unsent bytes a client may accumulate before it is dropped.
    public var clientQueueBytes = 256 * 1024
    /// Clients served at once (nil: ``defaultMaxClients(descriptorLimit:)``).
    public var maxClients: Int?

    /// Descriptors kept for what is not a client: the capture device (ALSA opens a few), the
    /// spool (database, log, shared memory, lock), the uplink's socket, the event loops, the
    /// journal.
    public static let descriptorReserve = 64

    /// The descriptor limit less ``descriptorReserve``, and at most 1 024: with 1 024
    /// descriptors and no cap, 399 connects once failed unanswered and a connected client's
    /// noise session could not open the capture device ("Too many open files").
    public static func defaultMaxClients(descriptorLimit: Int) -> Int {
        max(1, min(1_024, descriptorLimit - descriptorReserve))
    }

    /// This process's limit on open descriptors (its soft limit).
    public static var descriptorLimit: Int {
        var files = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &files) == 0 else { return 1_024 }
        return files.rlim_cur >= rlim_t(Int.max / 2) ? Int.max / 2 : Int(files.rlim_cur)
    }

    /// The clients served at once: ``maxClients``, or the default for this process's limit.
    public var resolvedMaxClients: Int { maxClients ?? Self.defaultMaxClients(descriptorLimit: Self.descriptorLimit) }
    /// The name every record carries (and the uplink's topics): nil means the machine id.
    public var unit: String?
    /// The SQLite file every report, detection and shake result is committed to before it is
    /// sent (nil: no spool).
    public var spoolPath: String?
    public var spoolMaxMB = 64.0
    public var spoolMaxDays = 30.0
    /// The MQTT uplink (nil: off).
    public var uplink: UplinkSettings?

    /// ``unit``, or `/etc/machine-id`, or the host name.
    public var resolvedUnit: String {
        if let unit { return unit }
        if let id = try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8)
            .trimmingWhitespace(), !id.isEmpty, (try? Self.checkUnit(id)) != nil {
            return id
        }
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, name.count)
        let host = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return (try? Self.checkUnit(host)) != nil ? host : "unknown"
    }

    /// A unit names an MQTT topic level: no `/`, `+`, `#`, spaces or control characters.
    static func checkUnit(_ value: String) throws(Message) {
        guard !value.isEmpty, value.utf8.count <= 64,
              value.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7f && !"/+#".unicodeScalars.contains($0) }) else {
            throw Message(text: "unit must be 1 to 64 characters without spaces, '/', '+' or '#', not '\(value)'")
        }
    }

    public init() {}

    /// The socket path when none is configured: `$HARK_SOCKET`, where the clients look first
    /// too, else `$RUNTIME_DIRECTORY/hark.sock` (systemd's), else `/run/hark/hark.sock`.
    public static func defaultSocketPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let path = environment["HARK_SOCKET"], !path.isEmpty { return path }
        if let dir = environment["RUNTIME_DIRECTORY"]?.split(separator: ":").first, !dir.isEmpty {
            return "\(dir)/hark.sock"
        }
        return "/run/hark/hark.sock"
    }

    public var resolvedSocketPath: String { socketPath ?? Self.defaultSocketPath() }

    /// The capture settings with period and buffer converted at the configured rate.
    public var captureSettings: CaptureSettings {
        var c = capture
        c.periodFrames = max(16, Int(periodSeconds * Double(c.rate)))
        c.bufferFrames = max(2 * c.periodFrames, Int(bufferSeconds * Double(c.rate)))
        return c
    }

    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public var source: String
        public var line: Int
        public var message: String
        public var description: String { line > 0 ? "\(source):\(line): \(message)" : "\(source): \(message)" }
    }

    /// The text of a configuration file, or why it cannot be read: the file named, and for a
    /// file that is not UTF-8 the line and byte where it stops being text.
    public static func text(ofFile path: String) throws(ParseError) -> String {
        guard let file = fopen(path, "rb") else {
            throw ParseError(source: path, line: 0, message: "cannot read the configuration file: \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = fread(&chunk, 1, chunk.count, file)
            if n > 0 { bytes += chunk[0..<n] }
            if n < chunk.count { break }
            // A configuration file is a few kilobytes; a device or a pipe that never ends is not one.
            if bytes.count > 1 << 20 { throw ParseError(source: path, line: 0, message: "over 1 MB: not a configuration file") }
        }
        if ferror(file) != 0 {
            throw ParseError(source: path, line: 0, message: "cannot read the configuration file: \(String(cString: strerror(errno)))")
        }
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        // Find the first byte that breaks UTF-8, to name its line and column.
        var line = 1, lineStart = 0, i = 0
        while i < bytes.count {
            let b = bytes[i]
            let length = b < 0x80 ? 1 : b >> 5 == 0b110 ? 2 : b >> 4 == 0b1110 ? 3 : b >> 3 == 0b11110 ? 4 : 0
            let end = i + max(length, 1)
            if length == 0 || end > bytes.count || String(validating: bytes[i..<end], as: UTF8.self) == nil {
                throw ParseError(source: path, line: line,
                                 message: String(cFormat: "not UTF-8 text: byte 0x%02X at column %d", Int32(b), Int32(i - lineStart + 1))
                                     + " (save the file as UTF-8)")
            }
            if b == 0x0A { line += 1; lineStart = i + 1 }
            i = end
        }
        throw ParseError(source: path, line: 0, message: "not UTF-8 text")
    }

    /// Applies the settings in `text` (a configuration file) on top of this configuration.
    public mutating func apply(file text: String, source: String) throws(ParseError) {
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let trimmed = line.trimmingWhitespace()
            if trimmed.isEmpty { continue }
            let parts = trimmed.split(separator: "=", maxSplits: 1).map { $0.trimmingWhitespace() }
            guard parts.count == 2, !parts[0].isEmpty else {
                throw ParseError(source: source, line: number + 1, message: "expected 'key = value', found '\(trimmed)'")
            }
            do {
                try set(parts[0], parts[1])
            } catch let message {
                throw ParseError(source: source, line: number + 1, message: message.text)
            }
        }
    }

    struct Message: Error { var text: String }

    /// Sets one key; used for the file and for command-line overrides alike.
    mutating func set(_ key: String, _ value: String) throws(Message) {
        func number(_ range: ClosedRange<Double>) throws(Message) -> Double {
            guard let v = Double(value), range.contains(v) else {
                throw Message(text: "\(key) must be a number from \(range.lowerBound) to \(range.upperBound), not '\(value)'")
            }
            return v
        }
        switch key {
        case "device":
            guard !value.isEmpty else { throw Message(text: "device is empty") }
            capture.device = value
        case "rate": capture.rate = Int(try number(8_000...192_000))
        case "channels": capture.channels = Int(try number(1...8))
        case "format":
            guard let f = SampleFormat(rawValue: value.uppercased()) else {
                throw Message(text: "format must be S16, S32 or FLOAT, not '\(value)'")
            }
            capture.format = f
        case "period-ms": periodSeconds = try number(1...500) / 1000
        case "buffer-ms": bufferSeconds = try number(10...5_000) / 1000
        case "mode":
            guard let m = Mode(rawValue: value) else { throw Message(text: "mode must be on-demand or continuous, not '\(value)'") }
            mode = m
        case "report-interval": reportInterval = try number(1...86_400)
        case "level-interval": levelInterval = try number(0.05...60)
        case "ring-seconds": ringSeconds = try number(0.1...60)
        case "socket": socketPath = value
        case "socket-mode":
            guard let m = UInt16(value, radix: 8), m <= 0o777 else { throw Message(text: "socket-mode must be octal, e.g. 0660") }
            socketMode = m
        case "socket-group": socketGroup = value
        case "key":
            guard !value.isEmpty else { throw Message(text: "key is empty") }
            watermarkKey = WatermarkKey(text: value)
        case "key-file":
            do {
                watermarkKey = try KeyFile.read(value)
            } catch {
                throw Message(text: "key-file \(error.description)")
            }
        case "profile":
            guard let p = WatermarkProfile(rawValue: value) else { throw Message(text: "profile must be tv or stadium, not '\(value)'") }
            watermarkProfile = p
        case "sound-reading":
            guard let choice = SoundReadingChoice(rawValue: value) else {
                throw Message(text: "sound-reading must be both, landmarks or learned, not '\(value)'")
            }
            soundReading = choice
        case "catalogue":
            // A path (it has a / or a .) names a campaign catalogue; anything else is payloads.
            if value.contains("/") || value.contains(".") {
                catalogueFile = value
                catalogue = []
            } else {
                catalogue = try Self.catalogue(value, source: "catalogue")
                catalogueFile = nil
            }
        case "shake-evidence":
            guard let e = Command.ShakeEvidence(rawValue: value) else { throw Message(text: "shake-evidence must be any or mark, not '\(value)'") }
            shakeEvidence = e
        case "catalogue-file":
            guard let data = FileManager.default.contents(atPath: value) else {
                throw Message(text: "catalogue-file \(value): missing or unreadable")
            }
            catalogue = try Self.catalogue(String(decoding: data, as: UTF8.self), source: "catalogue-file \(value)")
        case "calibration": calibration = try number(-200...200)
        case "client-queue-kb": clientQueueBytes = Int(try number(1...65_536) * 1024)
        case "max-clients": maxClients = Int(try number(1...1_000_000))
        case "unit":
            try Self.checkUnit(value)
            unit = value
        case "spool":
            guard !value.isEmpty else { throw Message(text: "spool is empty (leave it out for no spool)") }
            spoolPath = value
        case "mqtt-url":
            var u = uplink ?? UplinkSettings(host: "", port: 0)
            try u.apply(url: value)
            uplink = u
        case "mqtt-client-id", "mqtt-username", "mqtt-password", "mqtt-password-file", "mqtt-ca", "mqtt-cert", "mqtt-key",
             "mqtt-keepalive", "mqtt-max-rate":
            // Kept until mqtt-url says where: the order of lines in the file does not matter.
            var u = uplink ?? UplinkSettings(host: "", port: 0)
            try u.set(key, value)
            uplink = u
        case "spool-max-mb": spoolMaxMB = try number(0.1...1_000_000)
        case "spool-max-days": spoolMaxDays = try number(0.01...36_500)
        default:
            throw Message(text: "unknown setting '\(key)'")
        }
    }

    private static func catalogue(_ text: String, source: String) throws(Message) -> [WatermarkPayload] {
        let list: [WatermarkPayload]
        do { list = try WatermarkPayload.list(text) } catch { throw Message(text: "\(source): \(error)") }
        guard list.count <= WatermarkDetector.maxCatalogue else {
            throw Message(text: "\(source): \(list.count) payloads; a catalogue holds at most \(WatermarkDetector.maxCatalogue)")
        }
        return list
    }

    /// Sets `key` from the command line; errors name the flag.
    public mutating func override(_ key: String, _ value: String) throws(ParseError) {
        do { try set(key, value) } catch { throw ParseError(source: "--\(key)", line: 0, message: error.text) }
    }
}

/// Where and how harkd publishes its records: an MQTT broker (docs/daemon.md, "Delivery").
public struct UplinkSettings: Sendable, Equatable {
    public var host: String
    public var port: Int
    public var tls = false
    /// nil: `hark-<unit>`.
    public var clientID: String?
    public var username: String?
    public var password: String?
    public var caFile: String?
    public var certFile: String?
    public var keyFile: String?
    public var keepalive = 30
    /// Records published per second at most while a backlog drains.
    public var maxRate = 5_000.0

    public init(host: String, port: Int) {
        (self.host, self.port) = (host, port)
    }

    /// `mqtt://[user[:password]@]host[:port]` (1883) or `mqtts://…` (TLS, 8883).
    mutating func apply(url: String) throws(DaemonConfiguration.Message) {
        func bad(_ why: String) -> DaemonConfiguration.Message {
            DaemonConfiguration.Message(text: "mqtt-url must be mqtt://host[:port] or mqtts://host[:port] (\(why)), not '\(url)'")
        }
        let scheme: String, rest: Substring
        if url.hasPrefix("mqtt://") { (scheme, rest) = ("mqtt", url.dropFirst(7)) }
        else if url.hasPrefix("mqtts://") { (scheme, rest) = ("mqtts", url.dropFirst(8)) }
        else { throw bad("unknown scheme") }
        var authority = rest
        if let slash = authority.firstIndex(of: "/") {
            guard authority[slash...].allSatisfy({ $0 == "/" }) else { throw bad("no path is allowed") }
            authority = authority[..<slash]
        }
        if let at = authority.lastIndex(of: "@") {
            let credentials = authority[..<at]
            authority = authority[authority.index(after: at)...]
            let parts = credentials.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard let user = parts.first, !user.isEmpty else { throw bad("empty user name") }
            username = String(user).percentDecoded ?? String(user)
            if parts.count == 2 { password = String(parts[1]).percentDecoded ?? String(parts[1]) }
        }
        var hostPart = authority, portPart: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw bad("unclosed IPv6 address") }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.first == ":" else { throw bad("junk after the address") }
                portPart = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portPart = authority[authority.index(after: colon)...]
        }
        guard !hostPart.isEmpty, !hostPart.contains(where: { $0 == " " || $0 == "/" }) else { throw bad("no host") }
        tls = scheme == "mqtts"
        port = tls ? 8883 : 1883
        if let portPart {
            guard let p = Int(portPart), (1...65_535).contains(p) else { throw bad("port must be 1 to 65535") }
            port = p
        }
        host = String(hostPart)
    }

    mutating func set(_ key: String, _ value: String) throws(DaemonConfiguration.Message) {
        func file(_ setting: String) throws(DaemonConfiguration.Message) -> String {
            guard !value.isEmpty else { throw DaemonConfiguration.Message(text: "\(setting) is empty") }
            return value
        }
        switch key {
        case "mqtt-client-id":
            guard !value.isEmpty, value.utf8.count <= 23 * 8 else { throw DaemonConfiguration.Message(text: "mqtt-client-id must be 1 to 184 bytes") }
            clientID = value
        case "mqtt-username": username = value
        case "mqtt-password": password = value
        case "mqtt-password-file":
            do {
                password = try KeyFile.readText(value)
            } catch {
                throw DaemonConfiguration.Message(text: "mqtt-password-file \(value): \(error)")
            }
        case "mqtt-ca": caFile = try file(key)
        case "mqtt-cert": certFile = try file(key)
        case "mqtt-key": keyFile = try file(key)
        case "mqtt-keepalive":
            guard let k = Int(value), (5...3_600).contains(k) else { throw DaemonConfiguration.Message(text: "mqtt-keepalive must be 5 to 3600 s, not '\(value)'") }
            keepalive = k
        case "mqtt-max-rate":
            guard let r = Double(value), r >= 1, r <= 1_000_000 else { throw DaemonConfiguration.Message(text: "mqtt-max-rate must be 1 to 1000000 records/s, not '\(value)'") }
            maxRate = r
        default: break
        }
    }
}

