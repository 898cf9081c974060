/// The commands' help as the manual-page generator reads it (`--experimental-dump-help`).
///
/// The generator drops every character outside ASCII, which changed meanings: "1–8 channels"
/// read "18 channels", "8–192 kHz" read "8192 kHz", "−2 dB" read "2 dB". So the help it reads
/// spells them in ASCII first, and a blank line between paragraphs (which mdoc warns about:
/// "Empty input line") becomes a line break.
public enum ManualText {
    static let spellings: [Character: String] = [
        "–": "-", "—": "--", "−": "-", "…": "...", "×": "x", "→": "->", "≥": ">=", "≤": "<=",
        "±": "+/-", "≈": "~", "²": "^2", "³": "^3", "µ": "u", "°": " deg", "·": ".", "√": "sqrt",
        "’": "'", "‘": "'", "“": "'", "”": "'", "\u{00A0}": " ", "\u{2009}": " ", "\u{202F}": " ",
    ]

    /// `text` (the JSON the parser dumps) in ASCII; a character with no spelling becomes "?".
    public static func ascii(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for c in text {
            if c.isASCII { out.append(c) } else { out += spellings[c] ?? "?" }
        }
        // Inside the JSON strings a newline is the two characters \n.
        while out.contains(#"\n\n"#) { out = out.replacing(#"\n\n"#, with: #"\n"#) }
        return out
    }

    /// Whether these arguments ask for the help dump the manual generator reads.
    public static func isDumpRequest(_ arguments: [String]) -> Bool {
        arguments.contains("--experimental-dump-help")
    }
}
