/// Any JSON value, with its exact type (a boolean is never mistaken for a number).
enum JSONValue: Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([String: JSONValue])

    var describing: String {
        switch self {
        case .string(let s): return "\"\(s)\""
        case .number(let n): return n == n.rounded() && abs(n) < 1e15 ? String(Int(n)) : String(n)
        case .bool(let b): return String(b)
        case .null: return "null"
        case .array: return "a list"
        case .object: return "an object"
        }
    }

    /// Why a line is not a value this parser takes.
    enum ParseError: Error, Equatable {
        case invalid
        /// More than ``maxValues`` values: the line costs more work than any command needs.
        case tooManyValues
    }

    /// Values one line may hold: a command has a handful (`watch` with its four classes is the
    /// most). Bounding them bounds the work a line costs: Foundation's decoder, trying each
    /// type in turn, took 3.8 ms over 1 351 empty objects, during which the one event-loop
    /// thread served no one else.
    static let maxValues = 64

    /// Parses one JSON text, in one pass over its bytes, refusing past ``maxValues`` values.
    static func parse(_ text: String) throws(ParseError) -> JSONValue {
        var parser = Parser(bytes: Array(text.utf8))
        let value = try parser.value()
        parser.skipSpace()
        guard parser.at == parser.bytes.count else { throw .invalid }
        return value
    }

    private struct Parser {
        let bytes: [UInt8]
        var at = 0
        var values = 0

        mutating func skipSpace() {
            while at < bytes.count {
                switch bytes[at] {
                case 0x20, 0x09, 0x0A, 0x0D: at += 1
                default: return
                }
            }
        }

        /// After a member or an element: true when `closer` ends the container (taken), false
        /// after the comma that says another follows.
        mutating func closes(_ closer: UInt8) throws(ParseError) -> Bool {
            skipSpace()
            guard at < bytes.count else { throw .invalid }
            if bytes[at] == UInt8(ascii: ",") {
                at += 1
                return false
            }
            guard bytes[at] == closer else { throw .invalid }
            at += 1
            return true
        }

        mutating func value() throws(ParseError) -> JSONValue {
            values += 1
            guard values <= JSONValue.maxValues else { throw .tooManyValues }
            skipSpace()
            guard at < bytes.count else { throw .invalid }
            switch bytes[at] {
            case UInt8(ascii: "{"):
                at += 1
                var object: [String: JSONValue] = [:]
                skipSpace()
                if at < bytes.count, bytes[at] == UInt8(ascii: "}") { at += 1; return .object(object) }
                while true {
                    skipSpace()
                    guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { throw .invalid }
                    let key = try string()
                    skipSpace()
                    guard at < bytes.count, bytes[at] == UInt8(ascii: ":") else { throw .invalid }
                    at += 1
                    object[key] = try value()
                    if try closes(UInt8(ascii: "}")) { return .object(object) }
                }
            case UInt8(ascii: "["):
                at += 1
                var array: [JSONValue] = []
                skipSpace()
                if at < bytes.count, bytes[at] == UInt8(ascii: "]") { at += 1; return .array(array) }
                while true {
                    array.append(try value())
                    if try closes(UInt8(ascii: "]")) { return .array(array) }
                }
            case UInt8(ascii: "\""):
                return .string(try string())
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "n"): return try literal("null", .null)
            default:
                return try number()
            }
        }

        mutating func literal(_ word: String, _ v: JSONValue) throws(ParseError) -> JSONValue {
            let w = Array(word.utf8)
            guard at + w.count <= bytes.count, Array(bytes[at..<(at + w.count)]) == w else { throw .invalid }
            at += w.count
            return v
        }

        mutating func number() throws(ParseError) -> JSONValue {
            let start = at
            // JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
            func digits() -> Int {
                let s = at
                while at < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[at]) { at += 1 }
                return at - s
            }
            if at < bytes.count, bytes[at] == UInt8(ascii: "-") { at += 1 }
            let intStart = at
            guard digits() > 0 else { throw .invalid }
            if bytes[intStart] == UInt8(ascii: "0") && at - intStart > 1 { throw .invalid }
            if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
                at += 1
                guard digits() > 0 else { throw .invalid }
            }
            if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
                at += 1
                if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
                guard digits() > 0 else { throw .invalid }
            }
            guard let n = Double(String(decoding: bytes[start..<at], as: UTF8.self)), n.isFinite else { throw .invalid }
            return .number(n)
        }

        mutating func string() throws(ParseError) -> String {
            at += 1     // the opening quote
            var out: [UInt8] = []
            while at < bytes.count {
                let b = bytes[at]
                at += 1
                switch b {
                case UInt8(ascii: "\""):
                    guard let s = String(validating: out, as: UTF8.self) else { throw .invalid }
                    return s
                case UInt8(ascii: "\\"):
                    guard at < bytes.count else { throw .invalid }
                    let e = bytes[at]
                    at += 1
                    switch e {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800...0xDBFF).contains(scalar) {
                            // A surrogate pair: the low half must follow.
                            guard at + 1 < bytes.count, bytes[at] == UInt8(ascii: "\\"), bytes[at + 1] == UInt8(ascii: "u") else { throw .invalid }
                            at += 2
                            let low = try hex4()
                            guard (0xDC00...0xDFFF).contains(low) else { throw .invalid }
                            scalar = 0x10000 + (scalar - 0xD800) << 10 + (low - 0xDC00)
                        }
                        guard let u = Unicode.Scalar(scalar) else { throw .invalid }
                        out += Array(String(Character(u)).utf8)
                    default: throw .invalid
                    }
                default:
                    guard b >= 0x20 else { throw .invalid }
                    out.append(b)
                }
            }
            throw .invalid
        }

        mutating func hex4() throws(ParseError) -> UInt32 {
            guard at + 4 <= bytes.count else { throw .invalid }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let b = bytes[at]
                at += 1
                let d: UInt32
                switch b {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(b - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(b - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(b - UInt8(ascii: "A") + 10)
                default: throw .invalid
                }
                v = v << 4 | d
            }
            return v
        }
    }
}
