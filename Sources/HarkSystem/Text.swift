/// String helpers that Foundation's full module would give, kept here so that Hark's targets
/// need only FoundationEssentials (see ``PosixLock``).
extension StringProtocol {
    /// Without leading and trailing spaces, tabs and line ends.
    public func trimmingWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0.isNewline }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}

/// The directory part of a path, as `dirname` would give it but "" for a bare name.
public func directoryOfPath(_ path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "" }
    if slash == path.startIndex { return "/" }
    return String(path[..<slash])
}

extension String {
    /// `%XX` escapes decoded (as in a URL's user name or password); nil when an escape is
    /// malformed or the bytes are not UTF-8, as Foundation's `removingPercentEncoding` does.
    public var percentDecoded: String? {
        var bytes: [UInt8] = []
        var utf8 = self.utf8[...]
        while let b = utf8.popFirst() {
            guard b == UInt8(ascii: "%") else { bytes.append(b); continue }
            guard utf8.count >= 2,
                  let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) else { return nil }
            bytes.append(value)
            utf8 = utf8.dropFirst(2)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
