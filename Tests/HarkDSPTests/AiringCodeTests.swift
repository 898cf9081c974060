import Foundation
import Testing
@testable import HarkDSP
import HarkSynthesis

/// Airing codes: the keyed function pinned by outside vectors, the schedule a device listens
/// for, and a mark whose payload changes at a minute, read back minute by minute.
@Suite struct AiringCodeTests {
    static let rate = 48_000.0
    static let key = try! AiringKey(bytes: Array(0..<32))

    private func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// RFC 4231, test cases 1, 2 and 6 (a key longer than a block).
    @Test func hmacMatchesRFC4231() {
        #expect(hex(SHA256.hmac(key: [UInt8](repeating: 0x0b, count: 20), message: Array("Hi There".utf8)))
            == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        #expect(hex(SHA256.hmac(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8)))
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(hex(SHA256.hmac(key: [UInt8](repeating: 0xaa, count: 131),
                                message: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)))
            == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    /// The code as docs/watermark.md defines it, computed by another implementation (Python's
    /// hmac module): a playout and a device built by others must agree with these.
    @Test func codesArePinned() {
        #expect(AiringCode.payload(key: Self.key, channel: 7, minute: 29_000_000).hex == "719cd9c4")
        #expect(AiringCode.payload(key: Self.key, channel: 7, minute: 29_000_001).hex == "4f2c2e1f")
        #expect(AiringCode.payload(key: Self.key, channel: 8, minute: 29_000_000).hex == "95916122")
    }

    @Test func keysAreParsedAndChecked() throws {
        #expect(try AiringKey(hex: Self.key.hex) == Self.key)
        #expect(throws: AiringKey.ParseError.length(8)) { try AiringKey(hex: "0011223344556677") }
        #expect(throws: AiringKey.ParseError.notHex) { try AiringKey(hex: String(repeating: "zz", count: 16)) }
        #expect(throws: AiringKey.ParseError.notHex) { try AiringKey(hex: String(repeating: "a", count: 33)) }
    }

    @Test func minutesAndCopyTimelineAgree() {
        // 60 s is 25 copies: a timeline on UTC multiples of 2.4 s changes minute between copies.
        let minuteStart = 29_000_000.0 * 60
        #expect(AiringCode.copyOffset(firstSampleUTC: minuteStart) == 0)
        #expect(abs(AiringCode.copyOffset(firstSampleUTC: minuteStart + 3.0) - 0.6) < 1e-6)
        let origin = minuteStart - 12  // copy 0 starts 12 s (5 copies) before the minute
        #expect(AiringCode.minute(atUTC: origin + 4 * WatermarkFormat.copyDuration) == 28_999_999)
        #expect(AiringCode.minute(atUTC: origin + 5 * WatermarkFormat.copyDuration) == 29_000_000)
        #expect(AiringCode.minute(atUTC: origin + 29 * WatermarkFormat.copyDuration) == 29_000_000)
        #expect(AiringCode.minute(atUTC: origin + 30 * WatermarkFormat.copyDuration) == 29_000_001)
    }

    @Test func scheduleListsEveryFreshCodeAndFindsPastOnes() throws {
        let other = try AiringKey(bytes: Array(100..<132))
        let schedule = AiringSchedule(campaigns: [
            AiringCampaign(campaign: WatermarkPayload(0xC0FFEE01), key: Self.key, channels: [1, 2, 3]),
            AiringCampaign(campaign: WatermarkPayload(0xC0FFEE02), key: other, channels: [1]),
        ], window: 5)
        #expect(schedule.codesPerMinute == 4 * 11)
        let now: Int64 = 29_000_000
        let codes = schedule.codes(around: now)
        #expect(codes.count == 44)
        let code = AiringCode.payload(key: Self.key, channel: 2, minute: now - 5)
        #expect(codes[code] == Airing(campaign: WatermarkPayload(0xC0FFEE01), channel: 2, minute: now - 5))
        #expect(codes[AiringCode.payload(key: Self.key, channel: 2, minute: now - 6)] == nil)
        #expect(codes[AiringCode.payload(key: Self.key, channel: 4, minute: now)] == nil)
        // A code that is also a campaign's static payload names neither.
        #expect(schedule.codes(around: now, reserved: [code])[code] == nil)
        // Twenty minutes old: not fresh, found in the past hour, not in the past ten minutes.
        let old = AiringCode.payload(key: other, channel: 1, minute: now - 20)
        #expect(codes[old] == nil)
        #expect(schedule.pastAiring(of: old, before: now, horizon: 60) == Airing(campaign: WatermarkPayload(0xC0FFEE02), channel: 1, minute: now - 20))
        #expect(schedule.pastAiring(of: old, before: now, horizon: 10) == nil)
        #expect(schedule.pastAiring(of: code, before: now, horizon: 60) == nil)
    }

    /// A mark whose payload changes at a minute: each minute's code is read where it aired, by a
    /// detector whose list is replaced with the next minute's codes as the minute turns.
    /// A replaced catalogue holds exactly the new payloads, each with its own codeword's signs,
    /// whether the list turns by a minute, grows to the capacity, shrinks or is replaced whole;
    /// and the signs' array never grows past the room the capacity reserved.
    @Test func aReplacedCatalogueHoldsEachNewPayloadWithItsOwnSigns() throws {
        let format = WatermarkFormat(key: .demo)
        let minute: Int64 = 29_000_000
        func codes(_ minutes: ClosedRange<Int64>, channels: ClosedRange<UInt16> = 1...3) -> [WatermarkPayload] {
            minutes.flatMap { m in channels.map { AiringCode.payload(key: Self.key, channel: $0, minute: m) } }
        }
        let listed = [WatermarkPayload(0xc0ffee01), WatermarkPayload(0xc0ffee02)]
        let detector = try WatermarkDetector(format: format, sampleRate: Self.rate, catalogue: listed, capacity: 40)
        let room = detector.catalogueSigns.capacity
        #expect(room >= 40 * WatermarkDetector.signVectors)
        let lists: [[WatermarkPayload]] = [
            listed + codes((minute - 5)...(minute + 5)),              // 35: the first list
            listed + codes((minute - 4)...(minute + 6)),              // a minute on: 3 codes out, 3 in
            listed + codes((minute - 3)...(minute + 6)),              // shorter: 3 out
            listed + codes((minute - 3)...(minute + 8)) + listed,     // longer, a duplicate given
            [listed[1]] + codes((minute + 100)...(minute + 105)),     // nearly all new
            [],
            listed,
        ]
        for list in lists {
            detector.replaceCatalogue(list)
            let held = try #require(detector.catalogue)
            #expect(held.count == Set(list).count && Set(held) == Set(list))
            #expect(detector.catalogueSigns.count == held.count * WatermarkDetector.signVectors)
            for (i, p) in held.enumerated() {
                let row = Array(detector.catalogueSigns[(i * WatermarkDetector.signVectors)..<((i + 1) * WatermarkDetector.signVectors)])
                #expect(row == WatermarkDetector.signs(of: p, format: format), "\(p)")
            }
            #expect(detector.catalogueSigns.capacity == room)
        }
    }

    @Test func theCodeChangesAtTheMinuteAndIsReadEitherSide() throws {
        let format = WatermarkFormat(key: .demo)
        let minute: Int64 = 29_000_000
        let start = Double(minute) * 60 - 14.4  // 14.4 s (6 copies) before the minute
        let origin = start - AiringCode.copyOffset(firstSampleUTC: start)
        let embedder = try WatermarkEmbedder(format: format, sampleRate: Self.rate, copyOffset: AiringCode.copyOffset(firstSampleUTC: start)) {
            AiringCode.payload(key: Self.key, channel: 3, copy: $0, originUTC: origin)
        }
        var host = [Float](repeating: 0, count: Int(28.8 * Self.rate))
        host.withUnsafeMutableBufferPointer { var g = PinkNoiseGenerator(rms: 0.1, sampleRate: Self.rate, seed: 5); g.render(into: $0) }
        var mark: [Float] = []
        host.withUnsafeBufferPointer { embedder.process($0, into: &mark) }
        embedder.finish(into: &mark)
        let y = zip(host, mark).map(+)

        let before = AiringCode.payload(key: Self.key, channel: 3, minute: minute - 1)
        let after = AiringCode.payload(key: Self.key, channel: 3, minute: minute)
        let decoys = (0..<98).map { AiringCode.payload(key: Self.key, channel: 4, minute: minute - 50 + Int64($0)) }
        let detector = try WatermarkDetector(format: format, sampleRate: Self.rate, catalogue: [before] + decoys, capacity: 100)
        var found: [(time: Double, payload: WatermarkPayload)] = []
        var i = 0
        var replaced = false
        while i < y.count {
            let n = min(4800, y.count - i)
            found += y[i..<(i + n)].withUnsafeBufferPointer { detector.process($0) }.map { ($0.time, $0.payload) }
            i += n
            if !replaced, Double(i) / Self.rate >= 14.4 {
                detector.replaceCatalogue([after] + decoys)
                replaced = true
            }
        }
        #expect(found.contains { $0.payload == before && $0.time <= 14.5 })
        #expect(found.contains { $0.payload == after && $0.time > 14.4 })
        #expect(found.allSatisfy { $0.payload == before || $0.payload == after })
        #expect(detector.threshold == WatermarkDetector.threshold(payloads: 100))
    }

    @Test func aSlotHoldsACreativeStartedWithinItGiveOrTakeItsTolerance() {
        let exact = AiringSlot(channel: 7, from: 1_000, until: 1_000, tolerance: 30)
        let planned = AiringSlot(channel: 9, from: 2_000, until: 2_600, tolerance: 0)
        #expect(exact.holds(creativeStart: 970) && exact.holds(creativeStart: 1_030) && !exact.holds(creativeStart: 1_030.5))
        #expect(planned.holds(creativeStart: 2_300) && !planned.holds(creativeStart: 1_999))
        let campaign = AiringCampaign(campaign: WatermarkPayload(1), key: try! AiringKey(bytes: Array(0..<16)), channels: [7, 9],
                                      slots: [planned, exact, AiringSlot(channel: 7, from: 1_040, until: 1_040, tolerance: 30)])
        #expect(campaign.slots.map(\.from) == [1_000, 1_040, 2_000], "kept by start")
        // Where two hold it, the nearer start is the airing.
        #expect(campaign.slots.slot(holding: 1_025)?.from == 1_040 && campaign.slots.slot(holding: 1_015)?.from == 1_000)
        let schedule = AiringSchedule(campaigns: [campaign])
        #expect(schedule.slot(of: WatermarkPayload(1), creativeStart: 2_100)?.channel == 9)
        #expect(schedule.slot(of: WatermarkPayload(1), creativeStart: 1_500) == nil && schedule.slot(of: WatermarkPayload(2), creativeStart: 1_000) == nil)
    }
}
