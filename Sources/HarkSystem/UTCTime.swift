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

    /// A UTC minute (minutes since 1970) as `2026-11-28T03:41Z`.
    public static func minute(_ minute: Int64) -> String {
        var t = time_t(minute * 60)
        var parts = tm()
        gmtime_r(&t, &parts)
        var buffer = [CChar](repeating: 0, count: 32)
        let n = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%MZ", &parts)
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Parses UTC in ISO 8601, `YYYY-MM-DDTHH:MM[:SS[.fff]]Z` (the `Z` required: a local time
    /// would shift every airing minute); seconds since 1970, or nil.
    public static func parse(_ text: String) -> Double? {
        let u = Array(text.utf8)
        func number(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= u.count else { return nil }
            var v = 0
            for c in u[from..<(from + count)] {
                guard c >= 48 && c <= 57 else { return nil }
                v = v * 10 + Int(c - 48)
            }
            return v
        }
        func at(_ i: Int, _ c: Character) -> Bool { i < u.count && u[i] == c.asciiValue! }
        guard let y = number(0, 4), at(4, "-"), let mo = number(5, 2), at(7, "-"), let d = number(8, 2),
              at(10, "T"), let h = number(11, 2), at(13, ":"), let mi = number(14, 2) else { return nil }
        var i = 16
        var seconds = 0.0
        if at(i, ":") {
            guard let s = number(17, 2) else { return nil }
            seconds = Double(s)
            i = 19
            if at(i, ".") {
                var j = i + 1, scale = 0.1
                while j < u.count, u[j] >= 48 && u[j] <= 57 { seconds += Double(u[j] - 48) * scale; scale /= 10; j += 1 }
                guard j > i + 1 else { return nil }
                i = j
            }
        }
        guard at(i, "Z"), i + 1 == u.count, y >= 1970, (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, seconds < 61 else { return nil }
        var parts = tm()
        (parts.tm_year, parts.tm_mon, parts.tm_mday) = (Int32(y - 1900), Int32(mo - 1), Int32(d))
        (parts.tm_hour, parts.tm_min, parts.tm_sec) = (Int32(h), Int32(mi), 0)
        let t = timegm(&parts)
        guard t != -1 else { return nil }
        return Double(t) + seconds
    }
}
