import FoundationEssentials
import Glibc

/// What a client can ask (docs/protocol.md). One JSON object per line, with a `"cmd"`.
public enum Command: Equatable, Sendable {
    case watch(Set<WatchClass>, id: String? = nil)
    /// `evidence`: what a shake needs to hear (nil: the daemon's `shake-evidence` setting).
    case shake(seconds: Double, id: String?, evidence: ShakeEvidence? = nil)
    case noise(seconds: Double, id: String?)
    case status(id: String? = nil)
    case version(id: String? = nil)

    /// Message classes a client can subscribe to with `watch`.
    public enum WatchClass: String, Sendable, CaseIterable, Comparable {
        case detection, level, report, status

        public static func < (a: WatchClass, b: WatchClass) -> Bool { a.rawValue < b.rawValue }
        /// Whether watching this class needs the microphone open.
        var needsAudio: Bool { self != .status }
    }

    /// What answers a shake (docs/protocol.md, shake): any evidence of the campaign, or its mark.
    public enum ShakeEvidence: String, Sendable, Equatable {
        /// The mark, the creative's sound, or both.
        case any
        /// The mark (alone or with the sound): a creative's sound alone does not answer.
        case mark
    }

    public static let shakeSeconds = 1.0...60.0
    public static let noiseSeconds = 1.0...3_600.0
    static let maxIDLength = 128
    /// Deepest nesting of arrays and objects a line may have. No command needs more than 2;
    /// decoding 500 nested arrays took about 3 s on the event loop.
    static let maxDepth = 8

    /// The deepest nesting of `[` and `{` outside strings, read up to the first level over
    /// `limit` (so a hostile line costs one pass at most).
    static func nestingDepth(_ line: String, limit: Int) -> Int {
        var depth = 0, deepest = 0, inString = false, escaped = false
        for b in line.utf8 {
            if inString {
                if escaped { escaped = false } else if b == UInt8(ascii: "\\") { escaped = true } else if b == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch b {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                deepest = max(deepest, depth)
                if deepest > limit { return deepest }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return deepest
    }

    /// Why a line was refused; `id` is echoed when the line had a usable one.
    public struct Rejection: Error, Equatable, Sendable {
        public var code: Messages.ErrorCode
        public var message: String
        public var id: String?

        public init(_ code: Messages.ErrorCode, _ message: String, id: String? = nil) {
            (self.code, self.message, self.id) = (code, message, id)
        }
    }

    /// Parses one line from a client.
    public static func parse(_ line: String) -> Result<Command, Rejection> {
        guard nestingDepth(line, limit: maxDepth) <= maxDepth else {
            return .failure(Rejection(.tooDeep, "nested deeper than \(maxDepth) levels"))
        }
        let value: JSONValue
        do {
            value = try JSONValue.parse(line)
        } catch .tooManyValues {
            return .failure(Rejection(.tooManyValues, "more than \(JSONValue.maxValues) values in one line: no command needs so many"))
        } catch {
            return .failure(Rejection(.notJSON, "not valid JSON"))
        }
        guard case .object(let object) = value else {
            return .failure(Rejection(.notAnObject, "expected a JSON object such as {\"cmd\":\"status\"}"))
        }
        var id: String?
        if let raw = object["id"] {
            guard case .string(let s) = raw, s.count <= maxIDLength else {
                return .failure(Rejection(.badID, "id must be a string of at most \(maxIDLength) characters"))
            }
            id = s
        }
        func fail(_ code: Messages.ErrorCode, _ message: String) -> Result<Command, Rejection> {
            .failure(Rejection(code, message, id: id))
        }
        guard case .string(let cmd)? = object["cmd"] else {
            return fail(.noCommand, "missing \"cmd\" (one of watch, shake, noise, status, version)")
        }
        func seconds(_ range: ClosedRange<Double>, default fallback: Double) -> Result<Double, Rejection> {
            guard let raw = object["seconds"] else { return .success(fallback) }
            guard case .number(let n) = raw, range.contains(n) else {
                return .failure(Rejection(.badArgument, "seconds must be a number from \(Int(range.lowerBound)) to \(Int(range.upperBound)), not \(raw.describing)", id: id))
            }
            return .success(n)
        }
        switch cmd {
        case "watch":
            guard case .array(let list)? = object["classes"] else {
                return fail(.badArgument, "watch needs \"classes\": a list of detection, level, report, status")
            }
            var classes = Set<WatchClass>()
            for item in list {
                guard case .string(let name) = item, let c = WatchClass(rawValue: name) else {
                    return fail(.badArgument, "unknown class \(item.describing) in watch (detection, level, report, status)")
                }
                classes.insert(c)
            }
            return .success(.watch(classes, id: id))
        case "shake":
            var evidence: ShakeEvidence?
            if let raw = object["evidence"] {
                guard case .string(let name) = raw, let e = ShakeEvidence(rawValue: name) else {
                    return fail(.badArgument, "evidence must be \"any\" or \"mark\", not \(raw.describing)")
                }
                evidence = e
            }
            return seconds(shakeSeconds, default: 6).map { .shake(seconds: $0, id: id, evidence: evidence) }
        case "noise":
            return seconds(noiseSeconds, default: 10).map { .noise(seconds: $0, id: id) }
        case "status":
            return .success(.status(id: id))
        case "version":
            return .success(.version(id: id))
        default:
            return fail(.unknownCommand, "unknown command '\(cmd)' (watch, shake, noise, status, version)")
        }
    }
}
