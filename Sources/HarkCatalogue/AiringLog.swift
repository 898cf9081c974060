import HarkDSP
import HarkSystem

/// A broadcaster's as-run or planned log, as `hark catalogue slots` imports it: comma-separated
/// values whose first line (after `#` comments and blank lines) names the columns, `channel`,
/// `payload`, `start` and, optionally, `end`, in any order among others that are ignored (a
/// house number, a title). A row is one airing of the creative whose mark carries `payload`
/// (hex) on `channel` (0–65535), starting at `start` (UTC, `2026-11-28T20:14:05Z`); with `end`,
/// starting at some moment up to `end`: a planned break rather than an exact time.
public struct AiringLog: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var campaign: WatermarkPayload
        public var slot: AiringSlot
        /// The line of the log it came from (1-based).
        public var line: Int
    }

    public var entries: [Entry]

    /// Why a log cannot be read: what and on which line, so that the broadcaster's file can be
    /// mended. Nothing of a log with an error is imported.
    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public var line: Int
        public var why: String
        public var description: String { line == 0 ? why : "line \(line): \(why)" }
    }

    /// The longest slot: a planned break longer than this says too little of when the creative
    /// aired to tell an airing from a recording.
    public static let longestSlot = 3600.0

    public init(text: String) throws(ParseError) {
        var columns: [String: Int]?
        var out: [Entry] = []
        // By line end, not by "\n": a CRLF line end is one Character, so "\n" never matches it.
        for (i, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let trimmed = raw.trimmingWhitespace()
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let cells = trimmed.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingWhitespace() }
            guard let names = columns else {
                var found: [String: Int] = [:]
                for (j, c) in cells.enumerated() { found[c.lowercased()] = j }
                let missing = ["channel", "payload", "start"].filter { found[$0] == nil }
                guard missing.isEmpty else {
                    throw ParseError(line: i + 1, why: "the first line names the columns, and these are missing: " + missing.joined(separator: ", "))
                }
                columns = found
                continue
            }
            func cell(_ name: String) -> String? { names[name].flatMap { $0 < cells.count ? cells[$0] : nil } }
            guard let channelText = cell("channel"), let channel = UInt16(channelText) else {
                throw ParseError(line: i + 1, why: "channel '\(cell("channel") ?? "")' is not a number 0-65535")
            }
            let payloadText = cell("payload") ?? ""
            guard let campaign = try? WatermarkPayload(hex: payloadText) else {
                throw ParseError(line: i + 1, why: "payload '\(payloadText)' is not 1 to 8 hex digits")
            }
            let startText = cell("start") ?? ""
            guard let start = UTCTime.parse(startText) else {
                throw ParseError(line: i + 1, why: "start '\(startText)' is not UTC as 2026-11-28T20:14:05Z")
            }
            var end = start
            if let endText = cell("end"), !endText.isEmpty {
                guard let e = UTCTime.parse(endText) else { throw ParseError(line: i + 1, why: "end '\(endText)' is not UTC as 2026-11-28T20:14:05Z") }
                guard e >= start else { throw ParseError(line: i + 1, why: "end \(endText) is before start \(startText)") }
                guard e - start <= Self.longestSlot else {
                    throw ParseError(line: i + 1, why: "a slot of \(Int(e - start)) s; at most \(Int(Self.longestSlot)) s tell an airing from a recording")
                }
                end = e
            }
            out.append(Entry(campaign: campaign, slot: AiringSlot(channel: channel, from: start, until: end), line: i + 1))
        }
        guard columns != nil else { throw ParseError(line: 0, why: "no header line (channel,payload,start[,end])") }
        entries = out
    }
}
