import Glibc

extension String {
    /// printf-style formatting (flags, width, precision; `d i u x X o c` for integers, `f e g a`
    /// and their capitals for floating point, `%@` for any value's description, `%%`).
    ///
    /// Foundation's `String(format:)` lives in its full module, with ICU; the targets here use
    /// FoundationEssentials. Each argument goes to the C library's `snprintf` one at a time, so
    /// numbers read exactly as `printf` prints them.
    public init(cFormat format: String, _ arguments: Any...) {
        var out = ""
        var remaining = arguments[...]
        var chars = format.unicodeScalars[...]
        while let c = chars.popFirst() {
            guard c == "%" else { out.unicodeScalars.append(c); continue }
            var spec = "%"
            var conversion: Unicode.Scalar?
            while let d = chars.popFirst() {
                if "-+ #0123456789.*".unicodeScalars.contains(d) { spec.unicodeScalars.append(d); continue }
                if d == "l" || d == "h" || d == "z" || d == "j" || d == "q" || d == "L" { continue }
                conversion = d
                break
            }
            guard let conversion else { out += spec; break }
            if conversion == "%" { out += "%"; continue }
            let argument = remaining.popFirst()
            switch conversion {
            case "@":
                out += argument.map { String(describing: $0) } ?? ""
            case "d", "i", "u", "x", "X", "o", "c":
                out += Self.printf(spec + "ll" + String(conversion), Self.integer(argument))
            case "f", "F", "e", "E", "g", "G", "a", "A":
                out += Self.printf(spec + String(conversion), Self.real(argument))
            default:
                out += spec + String(conversion)
            }
        }
        self = out
    }

    private static func printf(_ spec: String, _ value: any CVarArg) -> String {
        withVaList([value]) { list in
            var buffer = [CChar](repeating: 0, count: 128)
            let n = Int(vsnprintf(&buffer, buffer.count, spec, list))
            if n >= buffer.count {
                buffer = [CChar](repeating: 0, count: n + 1)
                _ = withVaList([value]) { vsnprintf(&buffer, buffer.count, spec, $0) }
            }
            return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    private static func integer(_ value: Any?) -> Int64 {
        switch value {
        case let v as Int: Int64(v)
        case let v as Int64: v
        case let v as Int32: Int64(v)
        case let v as Int16: Int64(v)
        case let v as Int8: Int64(v)
        case let v as UInt: Int64(bitPattern: UInt64(v))
        case let v as UInt64: Int64(bitPattern: v)
        case let v as UInt32: Int64(v)
        case let v as UInt16: Int64(v)
        case let v as UInt8: Int64(v)
        default: 0
        }
    }

    private static func real(_ value: Any?) -> Double {
        switch value {
        case let v as Double: v
        case let v as Float: Double(v)
        case let v as Int: Double(v)
        default: .nan
        }
    }
}
