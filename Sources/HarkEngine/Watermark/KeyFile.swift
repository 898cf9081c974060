import FoundationEssentials
import Glibc
import HarkDSP

/// Reads a watermark key from a file, for `hark --key-file` and harkd's `key-file` setting alike
/// (and harkd's `mqtt-password-file`).
///
/// The key is the file's bytes, less **one** trailing line ending (`\n` or `\r\n`): a key
/// written with `echo secret > key` or an editor is then the same key as `--key secret`. A
/// binary key whose last byte is 0x0A loses that byte, on the embedding and the detecting side
/// alike, so it still matches itself; only a key file with no bytes left is refused.
public enum KeyFile {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        case missing(String)
        case unreadable(String)
        case empty(String)

        public var description: String {
            switch self {
            case .missing(let p): return "\(p): no such file (key file)"
            case .unreadable(let p): return "\(p): cannot be read (key file)"
            case .empty(let p): return "\(p): the key file is empty"
            }
        }
    }

    public static func read(_ path: String) throws(Failure) -> WatermarkKey {
        WatermarkKey(bytes: try bytes(path))
    }

    /// A secret that is text (a broker password), read by the same rule.
    public static func readText(_ path: String) throws(Failure) -> String {
        String(decoding: try bytes(path), as: UTF8.self)
    }

    private static func bytes(_ path: String) throws(Failure) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw FileManager.default.fileExists(atPath: path) ? .unreadable(path) : .missing(path)
        }
        var bytes = [UInt8](data)
        if bytes.last == 0x0A {
            bytes.removeLast()
            if bytes.last == 0x0D { bytes.removeLast() }
        }
        guard !bytes.isEmpty else { throw .empty(path) }
        return bytes
    }
}
