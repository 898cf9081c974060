import HarkDSP
import Testing
import HarkCatalogue

/// A broadcaster's as-run or planned log as `hark catalogue slots` reads it, and each way it
/// can be wrong, said by line.
@Suite struct AiringLogTests {
    @Test func readsABroadcastersLog() throws {
        let log = try AiringLog(text: """
            # as-run, channel 7
            house,channel,start,payload,title\r
            H1, 7, 2026-11-28T20:14:05Z, c0ffee42, Coffee 30\r

            H2,9,2026-11-28T21:00:00Z,1,Tea
            """)
        #expect(log.entries.map(\.campaign) == [WatermarkPayload(0xc0ffee42), WatermarkPayload(1)])
        #expect(log.entries[0].slot == AiringSlot(channel: 7, from: 1_795_896_845, until: 1_795_896_845) && log.entries[0].line == 3)
        let planned = try AiringLog(text: "channel,payload,start,end\n7,2a,2026-11-28T20:00:00Z,2026-11-28T20:15:00Z\n")
        #expect(planned.entries.first?.slot.until == 1_795_896_900)
        func error(_ text: String) -> String {
            do { _ = try AiringLog(text: text); return "" } catch { return error.description }
        }
        #expect(error("channel,start\n") == "line 1: the first line names the columns, and these are missing: payload")
        #expect(error("# nothing\n") == "no header line (channel,payload,start[,end])")
        #expect(error("channel,payload,start\n70000,1,2026-11-28T20:00:00Z") == "line 2: channel '70000' is not a number 0-65535")
        #expect(error("channel,payload,start\n7,xyz,2026-11-28T20:00:00Z") == "line 2: payload 'xyz' is not 1 to 8 hex digits")
        #expect(error("channel,payload,start\n7,1,2026-11-28 20:00") == "line 2: start '2026-11-28 20:00' is not UTC as 2026-11-28T20:14:05Z")
        #expect(error("channel,payload,start,end\n7,1,2026-11-28T20:00:00Z,2026-11-28T19:00:00Z").hasPrefix("line 2: end 2026-11-28T19:00:00Z is before start"))
        #expect(error("channel,payload,start,end\n7,1,2026-11-28T20:00:00Z,2026-11-28T22:00:00Z") == "line 2: a slot of 7200 s; at most 3600 s tell an airing from a recording")
        #expect(error("channel,payload,start\n7,1") == "line 2: start '' is not UTC as 2026-11-28T20:14:05Z")
    }
}
