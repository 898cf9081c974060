/// The 32 user bits a watermark carries (a campaign identifier), written as 8 hex digits.
public struct WatermarkPayload: Hashable, Sendable, CustomStringConvertible {
    public static let bitCount = 32
    public let value: UInt32

    public init(_ value: UInt32) {
        self.value = value
    }

    /// Why a payload string was refused.
    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case empty
        case notHex(String)
        case tooLong(String)

        public var description: String {
            switch self {
            case .empty: return "the payload is empty; give 1 to 8 hex digits (32 bits), e.g. 1a2b3c4d"
            case .notHex(let s): return "'\(s)' is not hexadecimal; give 1 to 8 hex digits, e.g. 1a2b3c4d"
            case .tooLong(let s): return "'\(s)' has \(s.count) hex digits; a payload holds 32 bits, at most 8 digits"
            }
        }
    }

    /// Parses 1–8 hex digits, with or without a `0x` prefix.
    public init(hex text: String) throws(ParseError) {
        var s = Substring(text)
        if s.hasPrefix("0x") || s.hasPrefix("0X") { s = s.dropFirst(2) }
        guard !s.isEmpty else { throw .empty }
        guard s.allSatisfy(\.isHexDigit) else { throw .notHex(text) }
        guard s.count <= 8, let v = UInt32(s, radix: 16) else { throw .tooLong(String(s)) }
        value = v
    }

    /// Parses a catalogue: payloads separated by commas, spaces or new lines; `#` starts a
    /// comment that runs to the end of its line. Duplicates are kept once, in first-seen order.
    public static func list(_ text: String) throws(ParseError) -> [WatermarkPayload] {
        var out: [WatermarkPayload] = []
        for line in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            let content = line.prefix { $0 != "#" }
            for item in content.split(whereSeparator: { $0 == "," || $0.isWhitespace }) {
                let p = try WatermarkPayload(hex: String(item))
                if !out.contains(p) { out.append(p) }
            }
        }
        return out
    }

    /// Eight lowercase hex digits.
    public var hex: String {
        let h = String(value, radix: 16)
        return String(repeating: "0", count: 8 - h.count) + h
    }

    public var description: String { hex }

    /// The payload's bits, most significant first.
    var bits: [Bool] { (0..<32).map { (value >> (31 - UInt32($0))) & 1 == 1 } }

    init(bits: [Bool]) {
        value = bits.prefix(32).reduce(UInt32(0)) { $0 << 1 | ($1 ? 1 : 0) }
    }

    /// Payload, CRC-16 and tail, convolutionally coded: the 108 coded bits of one copy.
    var codeword: [Bool] {
        let info = bits + CRC16.checksum(bits).bits
        return ConvolutionalCode.encode(info)
    }
}

extension UInt16 {
    var bits: [Bool] { (0..<16).map { (self >> (15 - UInt16($0))) & 1 == 1 } }
}
