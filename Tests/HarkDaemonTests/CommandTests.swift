import Testing
@testable import HarkDaemon

@Suite struct CommandTests {
    @Test func parsesEveryCommand() throws {
        #expect(try Command.parse(#"{"cmd":"status"}"#).get() == .status)
        #expect(try Command.parse(#"{"cmd":"version"}"#).get() == .version)
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

    @Test func echoesTheIdOfARefusedCommand() {
        guard case .failure(let r) = Command.parse(#"{"cmd":"shake","seconds":-1,"id":"q"}"#) else { Issue.record("accepted"); return }
        #expect(r.id == "q")
    }
}
