import Foundation
import Logging
import NIOCore
import NIOEmbedded
import Testing
@testable import HarkDaemon

/// The protocol over NIO's EmbeddedChannel: no socket, no thread, the real handlers.
@Suite struct ProtocolHandlerTests {
    private func channel(hub: Hub = Hub(logger: Logger(label: "test"))) throws -> (EmbeddedChannel, Hub) {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineFramer()))
        try channel.pipeline.syncOperations.addHandler(ClientHandler(hub: hub, budget: OutputBudget(clients: 4), logger: Logger(label: "test")))
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/hark-test")).wait()
        #expect(channel.isActive)
        return (channel, hub)
    }

    private func lines(_ channel: EmbeddedChannel) throws -> [String] {
        // Output is written on the next turn of the event loop.
        channel.embeddedEventLoop.run()
        var out: [String] = []
        while var b = try channel.readOutbound(as: ByteBuffer.self) {
            out += (b.readString(length: b.readableBytes) ?? "").split(separator: "\n").map(String.init)
        }
        return out
    }

    private func write(_ channel: EmbeddedChannel, _ text: String) throws {
        try channel.writeInbound(channel.allocator.buffer(string: text))
    }

    @Test func greetsWithTheVersionBanner() throws {
        let (c, _) = try channel()
        #expect(try lines(c) == [#"{"class":"version","release":"0.1.0","proto":1}"#])
    }

    @Test func answersStatusAndAcknowledgesWatch() throws {
        let (c, _) = try channel()
        _ = try lines(c)
        try write(c, #"{"cmd":"status"}"# + "\n" + #"{"cmd":"watch","classes":["level","detection"]}"# + "\r\n")
        let out = try lines(c)
        #expect(out.count == 2)
        #expect(out[0].hasPrefix(#"{"class":"status","state":"idle""#))
        #expect(out[1] == #"{"class":"watch","classes":["detection","level"]}"#)
    }

    @Test func malformedLinesGetAnErrorAndTheConnectionStays() throws {
        let (c, _) = try channel()
        _ = try lines(c)
        try write(c, "not json\n{\"cmd\":\"fly\",\"id\":\"z\"}\n\n{\"cmd\":\"version\"}\n")
        let out = try lines(c)
        #expect(out == [
            #"{"class":"error","code":"not-json","message":"not valid JSON"}"#,
            #"{"class":"error","id":"z","code":"unknown-command","message":"unknown command 'fly' (watch, shake, noise, status, version)"}"#,
            #"{"class":"version","release":"0.1.0","proto":1}"#,
        ])
        #expect(c.isActive)
    }

    @Test func everyAnswerCarriesTheIdItWasAskedWith() throws {
        // version, status and watch answered without the id before.
        let (c, _) = try channel()
        _ = try lines(c)
        try write(c, #"{"cmd":"version","id":"v"}"# + "\n" + #"{"cmd":"status","id":"s"}"# + "\n"
                  + #"{"cmd":"watch","classes":["detection"],"id":"w"}"# + "\n")
        let out = try lines(c)
        #expect(out.count == 3)
        #expect(out[0] == #"{"class":"version","id":"v","release":"0.1.0","proto":1}"#)
        #expect(out[1].hasPrefix(#"{"class":"status","id":"s","state":"#))
        #expect(out[2] == #"{"class":"watch","id":"w","classes":["detection"]}"#)
    }

    @Test func aLineOverFourKilobytesClosesTheConnection() throws {
        let (c, _) = try channel()
        _ = try lines(c)
        try? write(c, String(repeating: "x", count: 5000))
        c.embeddedEventLoop.run()
        let out = try lines(c)
        #expect(out == [#"{"class":"error","code":"line-too-long","message":"line longer than 4096 bytes; closing the connection"}"#])
        #expect(!c.isActive)
    }

    @Test func aLongButLegalLineIsFine() throws {
        let (c, _) = try channel()
        _ = try lines(c)
        let id = String(repeating: "i", count: 100)
        try write(c, #"{"cmd":"version","pad":""# + String(repeating: " ", count: 3900) + #"","id":""# + id + "\"}\n")
        #expect(try lines(c).count == 1)
        #expect(c.isActive)
    }

    @Test func aLineOfExactlyTheLimitIsFineWithEitherLineEnd() throws {
        // 4096 bytes of line, then \n or \r\n: both are within the documented limit, also when
        // the \r arrives in a read of its own.
        let line = #"{"cmd":"version","pad":""# + String(repeating: " ", count: 4096 - 26) + #""}"#
        #expect(line.utf8.count == 4096)
        for carriageReturn in [false, true] {
            let (c, _) = try channel()
            _ = try lines(c)
            try? write(c, line + (carriageReturn ? "\r" : ""))
            try? write(c, "\n")
            c.embeddedEventLoop.run()
            let out = try lines(c)
            #expect(out.count == 1 && out[0].hasPrefix(#"{"class":"version""#), "with \\r: \(carriageReturn): \(out)")
            #expect(c.isActive)
        }
        let (c, _) = try channel()
        _ = try lines(c)
        try? write(c, line + "x\r\n")
        c.embeddedEventLoop.run()
        #expect(!c.isActive)
    }

    @Test func aDisconnectedClientsSessionsEnd() throws {
        let sessions = SessionHarness()
        let (c, _) = try channel(hub: sessions.hub)
        try write(c, #"{"cmd":"shake","seconds":10}"# + "\n")
        sessions.turn()
        #expect(sessions.sessionCount == 1)
        #expect(sessions.audioNeeded)
        try c.close().wait()
        sessions.turn()
        #expect(sessions.sessionCount == 0)
        #expect(!sessions.audioNeeded)
    }
}
