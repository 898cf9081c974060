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
                                                                  "too-many-sessions", "shutting-down", "no-audio", "too-many-clients"])
    }

    @Test func echoesTheIdOfARefusedCommand() {
        guard case .failure(let r) = Command.parse(#"{"cmd":"shake","seconds":-1,"id":"q"}"#) else { Issue.record("accepted"); return }
        #expect(r.id == "q")
    }
}
