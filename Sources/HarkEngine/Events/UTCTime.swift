import FoundationEssentials
import Glibc

/// Wall-clock times as records carry them.
public enum UTCTime {
    /// UTC, ISO 8601 with milliseconds (`2026-11-23T21:54:27.125Z`), formatted with libc:
    /// Foundation's formatters load ICU's data, some 5 MB of a daemon's resident memory.
    public static func iso8601(_ date: Date) -> String {
        let ms = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var t = time_t(ms >= 0 ? ms / 1000 : (ms - 999) / 1000)
        var parts = tm()
        gmtime_r(&t, &parts)
        var buffer = [CChar](repeating: 0, count: 32)
        let n = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S", &parts)
        let seconds = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let fraction = Int((ms % 1000 + 1000) % 1000)
        return seconds + "." + String(fraction + 1000).dropFirst() + "Z"
    }
}
