import FoundationEssentials
import Glibc
import Logging

/// Log lines on stderr, one per message. Under systemd (`$JOURNAL_STREAM` set) each line starts
/// with its syslog priority (`<3>` error … `<7>` debug) so journald files it at that level;
/// otherwise with a timestamp and the level name.
public struct DaemonLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    private let label: String
    private let journal: Bool

    public init(label: String, level: Logger.Level = .info, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.label = label
        logLevel = level
        journal = environment["JOURNAL_STREAM"] != nil
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var text = "\(event.message)"
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        if !all.isEmpty { text += " " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ") }
        let line: String
        if journal {
            let priority: Int
            switch event.level {
            case .trace, .debug: priority = 7
            case .info: priority = 6
            case .notice: priority = 5
            case .warning: priority = 4
            case .error: priority = 3
            case .critical: priority = 2
            }
            line = "<\(priority)>\(text)\n"
        } else {
            line = "\(Self.timestamp()) \(label) \(event.level): \(text)\n"
        }
        // One write per line, so lines from several threads do not interleave.
        var bytes = Array(line.utf8)[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return }
            bytes = bytes.dropFirst(n)
        }
    }

    /// UTC time as `2026-01-31T12:00:00Z`, from libc: Foundation's date formatters load ICU,
    /// several megabytes of resident memory for one timestamp.
    static func timestamp(_ seconds: time_t = time(nil)) -> String {
        var t = seconds
        var parts = tm()
        gmtime_r(&t, &parts)
        var buffer = [CChar](repeating: 0, count: 32)
        let n = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%SZ", &parts)
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
