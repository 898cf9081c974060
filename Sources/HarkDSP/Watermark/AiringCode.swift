/// A campaign's secret for its airing codes. Not the watermark key: the watermark key selects
/// the mark's pattern and every device of a network holds it; an airing key belongs to one
/// campaign, and only what may verify that campaign's airings holds it.
public struct AiringKey: Sendable, Equatable {
    public let bytes: [UInt8]

    /// 16 to 64 bytes: fewer could be searched, more add nothing to HMAC-SHA-256.
    public static let lengths = 16...64

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case notHex
        case length(Int)

        public var description: String {
            switch self {
            case .notHex: return "an airing key is hexadecimal: 32 to 128 hex digits (16 to 64 bytes)"
            case .length(let n): return "an airing key is 16 to 64 bytes (32 to 128 hex digits), not \(n) bytes"
            }
        }
    }

    public init(bytes: [UInt8]) throws(ParseError) {
        guard Self.lengths.contains(bytes.count) else { throw .length(bytes.count) }
        self.bytes = bytes
    }

    /// Parses hex digits (an even number, 32 to 128).
    public init(hex: String) throws(ParseError) {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0, digits.allSatisfy({ UInt8(ascii: "0") <= $0 && $0 <= UInt8(ascii: "9") || ($0 | 0x20) >= UInt8(ascii: "a") && ($0 | 0x20) <= UInt8(ascii: "f") })
        else { throw .notHex }
        var out: [UInt8] = []
        for i in stride(from: 0, to: digits.count, by: 2) {
            func nibble(_ c: UInt8) -> UInt8 { c <= UInt8(ascii: "9") ? c - UInt8(ascii: "0") : (c | 0x20) - UInt8(ascii: "a") + 10 }
            out.append(nibble(digits[i]) << 4 | nibble(digits[i + 1]))
        }
        try self.init(bytes: out)
    }

    public var hex: String { bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() }
}

/// One airing: which campaign, on which channel, in which UTC minute.
public struct Airing: Hashable, Sendable {
    /// The campaign's own payload, its identity in the catalogue.
    public var campaign: WatermarkPayload
    public var channel: UInt16
    /// UTC minutes since 1970-01-01 00:00.
    public var minute: Int64

    public init(campaign: WatermarkPayload, channel: UInt16, minute: Int64) {
        self.campaign = campaign
        self.channel = channel
        self.minute = minute
    }
}

/// Payloads that change every minute of an airing, so that a recording replayed later can be
/// told from the airing itself.
///
/// A static mark pays out again whenever a recording of the advert is played back. With an
/// airing code, the embedder at the playout writes, minute by minute, the payload
///
///     HMAC-SHA-256(campaign's airing key, "hark-airing-v1" ‖ 0x00 ‖ channel (2 bytes) ‖ UTC minute (8 bytes)),
///     its first 4 bytes read big-endian,
///
/// channel and minute big-endian, the minute counted from 1970-01-01 00:00 UTC. A device that
/// holds the campaigns' airing keys computes the payloads valid now, ±``AiringSchedule/window``
/// minutes, with no server round trip; a mark of an older minute is not among them. Without the
/// key nobody can compute the next minute's code from the last one's (HMAC is a PRF), and every
/// code is a mark like any other: the detector's false-detection bound counts the codes it
/// listens for, as it counts a catalogue (docs/watermark.md, "Airing codes").
///
/// Copies are 2.4 s, 25 to a minute: a copy whose timeline is aligned to UTC multiples of 2.4 s
/// never straddles a minute, so each copy carries exactly one minute's code.
public enum AiringCode {
    static let label = Array("hark-airing-v1".utf8) + [0]

    /// The payload `key`'s campaign carries on `channel` during UTC minute `minute`.
    public static func payload(key: AiringKey, channel: UInt16, minute: Int64) -> WatermarkPayload {
        var message = label
        message += [UInt8(channel >> 8), UInt8(channel & 0xff)]
        for shift in stride(from: 56, through: 0, by: -8) { message.append(UInt8(truncatingIfNeeded: minute >> Int64(shift))) }
        let mac = SHA256.hmac(key: key.bytes, message: message)
        return WatermarkPayload(mac.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
    }

    /// The UTC minute that time `seconds` (UTC seconds since 1970) falls in. A millisecond of
    /// slack: a copy's start computed as a sum of 2.4 s steps may land a hair before its minute.
    public static func minute(atUTC seconds: Double) -> Int64 {
        Int64((seconds / 60 + 1e-3 / 60).rounded(.down))
    }

    /// Where a mark's copy timeline must start for its copies to begin on UTC multiples of
    /// 2.4 s, given the UTC time (seconds) of the first sample: the `copyOffset` of
    /// ``WatermarkEmbedder``, in [0, 2.4).
    public static func copyOffset(firstSampleUTC seconds: Double) -> Double {
        let copy = WatermarkFormat.copyDuration
        // Within a microsecond of a copy's start is its start: UTC seconds near 1.8e9 over 2.4
        // leave rounding errors of some 1e-7 s.
        let r = seconds - (seconds / copy).rounded(.down) * copy
        return r >= copy - 1e-6 || r < 1e-6 ? 0 : r
    }

    /// The payload of copy `k` of a timeline whose copy 0 began at UTC `origin` seconds (a
    /// multiple of 2.4 s).
    public static func payload(key: AiringKey, channel: UInt16, copy k: Int, originUTC origin: Double) -> WatermarkPayload {
        payload(key: key, channel: channel, minute: minute(atUTC: origin + Double(k) * WatermarkFormat.copyDuration))
    }
}

/// A campaign whose marks carry airing codes: its identity, its key and its channels, and
/// when it airs where a broadcaster's log says (``AiringSlot``).
public struct AiringCampaign: Sendable, Equatable {
    public var campaign: WatermarkPayload
    public var key: AiringKey
    public var channels: [UInt16]
    /// Its airing slots, by start; empty when no log was imported.
    public var slots: [AiringSlot]

    public init(campaign: WatermarkPayload, key: AiringKey, channels: [UInt16], slots: [AiringSlot] = []) {
        self.campaign = campaign
        self.key = key
        self.channels = channels
        self.slots = slots.sorted { $0.from < $1.from }
    }
}

/// The airing codes a device listens for: every campaign's, on every channel, for the minutes
/// within ``window`` of now.
public struct AiringSchedule: Sendable, Equatable {
    public let campaigns: [AiringCampaign]
    /// Minutes either side of now that count as fresh: the device's clock, the playout's and the
    /// broadcast's delay may differ by this much.
    public let window: Int
    public static let defaultWindow = 5

    public init(campaigns: [AiringCampaign], window: Int = AiringSchedule.defaultWindow) {
        self.campaigns = campaigns
        self.window = window
    }

    /// How many codes are valid at any minute: the detector's catalogue size, which sets its
    /// threshold (campaigns × channels × (2 × window + 1)).
    public var codesPerMinute: Int { campaigns.reduce(0) { $0 + $1.channels.count } * (2 * window + 1) }

    /// The codes of one minute, each with its airing.
    public func codes(ofMinute minute: Int64) -> [(WatermarkPayload, Airing)] {
        campaigns.flatMap { c in
            c.channels.map { ch in (AiringCode.payload(key: c.key, channel: ch, minute: minute), Airing(campaign: c.campaign, channel: ch, minute: minute)) }
        }
    }

    /// Every code valid at `minute`, with its airing. A 32-bit code that two airings share (or
    /// that equals one of `reserved`, the campaigns' static payloads) names neither: it is left
    /// out, and is counted in ``codesPerMinute`` all the same. With 11 000 codes that happens
    /// about once in 70 minutes' lists.
    public func codes(around minute: Int64, reserved: Set<WatermarkPayload> = []) -> [WatermarkPayload: Airing] {
        var out: [WatermarkPayload: Airing] = [:]
        var ambiguous = Set<WatermarkPayload>()
        for m in (minute - Int64(window))...(minute + Int64(window)) {
            for (code, airing) in codes(ofMinute: m) {
                if reserved.contains(code) || out[code] != nil { ambiguous.insert(code) }
                out[code] = airing
            }
        }
        for code in ambiguous { out[code] = nil }
        return out
    }

    /// The slot of `campaign` that holds a creative started at `start` (UTC seconds), if any.
    public func slot(of campaign: WatermarkPayload, creativeStart start: Double) -> AiringSlot? {
        campaigns.first { $0.campaign == campaign }?.slots.slot(holding: start)
    }

    /// The airing, within `horizon` minutes before `minute`, whose code is `payload`: what a
    /// mark heard outside the fresh window was (a recording replayed), if any.
    public func pastAiring(of payload: WatermarkPayload, before minute: Int64, horizon: Int) -> Airing? {
        guard horizon > window else { return nil }
        for m in stride(from: minute - Int64(window) - 1, through: minute - Int64(horizon), by: -1) {
            if let hit = codes(ofMinute: m).first(where: { $0.0 == payload }) { return hit.1 }
        }
        return nil
    }
}
