import FoundationEssentials
import Glibc
import HarkEngine

/// Reads a bench's definitions (JSON) and says what is wrong with a file that does not decode,
/// in the file's own terms: which field, where, and what it should have been.
enum DefinitionsFile {
    /// Why a definitions file was refused.
    struct Invalid: Error, CustomStringConvertible, Equatable {
        let description: String
    }

    static func load<T: Decodable>(_ type: T.Type, path: String) throws -> T {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            let why = access(path, F_OK) != 0 ? "no such file" : access(path, R_OK) != 0 ? "not readable" : "\(error)"
            throw Invalid(description: "cannot read it: \(why)")
        }
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch let error as DecodingError {
            throw Invalid(description: describe(error))
        }
    }

    /// `conditions[1].snr`, or "the top level".
    static func place(_ path: [any CodingKey]) -> String {
        guard !path.isEmpty else { return "the top level" }
        var s = ""
        for key in path {
            if let i = key.intValue { s += "[\(i)]" } else { s += (s.isEmpty ? "" : ".") + key.stringValue }
        }
        return s
    }

    static func describe(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, let c):
            return "\"\(key.stringValue)\" is missing at \(place(c.codingPath))"
        case .typeMismatch(let type, let c):
            return "\(place(c.codingPath)) should be \(name(of: type))"
        case .valueNotFound(let type, let c):
            return "\(place(c.codingPath)) is null; it should be \(name(of: type))"
        case .dataCorrupted(let c):
            // The decoder says no more than that about bad JSON.
            return c.codingPath.isEmpty ? "not valid JSON (its brackets, commas or quotes)" : "\(place(c.codingPath)): \(c.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }

    private static func name(of type: Any.Type) -> String {
        switch type {
        case is Double.Type, is Int.Type: return "a number"
        case is String.Type: return "a string"
        case is Bool.Type: return "true or false"
        default:
            let t = "\(type)"
            return t.hasPrefix("Array") ? "a list" : t.hasPrefix("Dictionary") ? "an object" : "a \(t)"
        }
    }
}
