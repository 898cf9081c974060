import Testing
@testable import HarkDaemon

@Suite struct CommandTests {
    @Test func deepNestingIsRefusedBeforeDecoding() throws {
        // 500 nested arrays in a 1 KB line: decoding them took about 3 s of the event loop.
        let deep = String(repeating: "[", count: 500) + String(repeating: "]", count: 500)
        guard case .failure(let r) = Command.parse(deep) else { Issue.record("accepted"); return }
        #expect(r.message == "nested deeper than 8 levels")
        let deepInObject = #"{"cmd":"status","x":"# + String(repeating: "{\"a\":", count: 20) + "1" + String(repeating: "}", count: 21)
        #expect(throws: Command.Rejection.self) { try Command.parse(deepInObject).get() }
        // Brackets inside strings do not count, and 8 levels are fine.
        #expect(try Command.parse(#"{"cmd":"status","id":"[[[[[[[[[[[[[[[[[[[[\"{{{{{{{{{{{{"}"#).get()
                == .status(id: "[[[[[[[[[[[[[[[[[[[[\"{{{{{{{{{{{{"))
        #expect(try Command.parse(#"{"cmd":"status","x":[[[[[[[1]]]]]]]}"#).get() == .status())
    }

    @Test func parsesEveryCommand() throws {
        #expect(try Command.parse(#"{"cmd":"status"}"#).get() == .status())
        #expect(try Command.parse(#"{"cmd":"version"}"#).get() == .version())
        #expect(try Command.parse(#"{"cmd":"shake","seconds":6,"id":"a1"}"#).get() == .shake(seconds: 6, id: "a1"))
        #expect(try Command.parse(#"{"cmd":"shake"}"#).get() == .shake(seconds: 6, id: nil))
        #expect(try Command.parse(#"{"cmd":"noise","seconds":2.5}"#).get() == .noise(seconds: 2.5, id: nil))
        #expect(try Command.parse(#"{"cmd":"watch","classes":["detection","status"]}"#).get() == .watch([.detection, .status]))
        #expect(try Command.parse(#"{"cmd":"watch","classes":[]}"#).get() == .watch([]))
    }

    @Test func refusesWithAReason() {
        func message(_ line: String) -> String? {
            if case .failure(let r) = Command.parse(line) { return r.message }
            return nil
        }
        #expect(message("garbage") == "not valid JSON")
        #expect(message("[1,2]")?.contains("expected a JSON object") == true)
        #expect(message(#"{"id":"x"}"#)?.contains("missing \"cmd\"") == true)
        #expect(message(#"{"cmd":"dance"}"#)?.contains("unknown command 'dance'") == true)
        #expect(message(#"{"cmd":"shake","seconds":"six"}"#)?.contains("seconds must be a number from 1 to 60, not \"six\"") == true)
        #expect(message(#"{"cmd":"shake","seconds":true}"#)?.contains("not true") == true)
        #expect(message(#"{"cmd":"shake","seconds":0}"#)?.contains("from 1 to 60") == true)
        #expect(message(#"{"cmd":"noise","seconds":4000}"#)?.contains("from 1 to 3600") == true)
        #expect(message(#"{"cmd":"status","id":7}"#)?.contains("id must be a string") == true)
        #expect(message(#"{"cmd":"watch","classes":["detection","gossip"]}"#)?.contains("unknown class \"gossip\"") == true)
        #expect(message(#"{"cmd":"watch"}"#)?.contains("watch needs") == true)
    }

    @Test func everyRefusalCarriesAStableCode() {
        let cases: [(String, Messages.ErrorCode)] = [
            ("garbage", .notJSON), ("[1,2]", .notAnObject), (String(repeating: "[", count: 9), .tooDeep),
            (#"{"cmd":"status","id":7}"#, .badID), (#"{"id":"x"}"#, .noCommand), (#"{"cmd":"dance"}"#, .unknownCommand),
            (#"{"cmd":"shake","seconds":0}"#, .badArgument), (#"{"cmd":"watch"}"#, .badArgument),
            (#"{"cmd":"watch","classes":["gossip"]}"#, .badArgument),
        ]
        for (line, code) in cases {
            guard case .failure(let r) = Command.parse(line) else { Issue.record("\(line) accepted"); continue }
            #expect(r.code == code, "\(line)")
        }
        // Codes are the protocol's: spelled as docs/protocol.md lists them.
        #expect(Messages.ErrorCode.allCases.map(\.rawValue) == ["too-deep", "not-json", "not-an-object", "bad-id", "no-command",
                                                                  "unknown-command", "bad-argument", "line-too-long",
                                                                  "too-many-sessions", "shutting-down", "no-audio", "too-many-clients", "too-many-values"])
    }

    @Test func echoesTheIdOfARefusedCommand() {
        guard case .failure(let r) = Command.parse(#"{"cmd":"shake","seconds":-1,"id":"q"}"#) else { Issue.record("accepted"); return }
        #expect(r.id == "q")
    }

    @Test func aLineThatCostsMoreWorkThanAnyCommandIsRefusedAndSaysWhy() {
        // 1 351 empty objects in 4 KB cost Foundation's decoder 3.8 ms a line on the event loop.
        let hostile = #"{"cmd":"status","x":["# + Array(repeating: "{}", count: 1_351).joined(separator: ",") + "]}"
        guard case .failure(let r) = Command.parse(hostile) else { Issue.record("accepted"); return }
        #expect(r.code == .tooManyValues && r.message.contains("more than 64 values"), "\(r)")
        let numbers = #"{"cmd":"status","x":["# + (0..<2_000).map(String.init).joined(separator: ",") + "]}"
        guard case .failure(let n) = Command.parse(numbers) else { Issue.record("accepted"); return }
        #expect(n.code == .tooManyValues)
        // A command with every field it may have is far inside the bound.
        guard case .success = Command.parse(#"{"cmd":"watch","id":"w","classes":["detection","level","report","status"]}"#) else {
            Issue.record("refused"); return
        }
    }

    @Test func theParserReadsJSONAsJSONIsWritten() throws {
        #expect(try JSONValue.parse(#" {"a" : [1, -2.5e3, true, false, null, "x\u00e9\n\"\ud83d\ude00"], "b": {}} "#)
            == .object(["a": .array([.number(1), .number(-2500), .bool(true), .bool(false), .null, .string("x\u{e9}\n\"\u{1F600}")]), "b": .object([:])]))
        for bad in ["", "{", #"{"a":1,}"#, "[1 2]", "01", "1.", "-", #""\x""#, "tru", #"{"a":1} x"#, "\"a\u{01}\"", #""\ud83d""#, "NaN", "1e999"] {
            #expect(throws: JSONValue.ParseError.invalid, "\(bad)") { try JSONValue.parse(bad) }
        }
        #expect(throws: JSONValue.ParseError.tooManyValues) { try JSONValue.parse("[" + Array(repeating: "0", count: 64).joined(separator: ",") + "]") }
        #expect(try JSONValue.parse("[" + Array(repeating: "0", count: 63).joined(separator: ",") + "]") == .array(Array(repeating: .number(0), count: 63)))
    }
}
