import HarkDSP
import Testing
import HarkEngine

/// What answers a shake, decided in the daemon: a fresh airing proved, never a recording.
@Suite struct ShakePolicyTests {
    private func detection(sound: Bool = false, stale: Bool = false, airingCoded: Bool = false, aired: Bool = false) -> WatermarkDetection {
        var d = WatermarkDetection(payload: WatermarkPayload(0xc0ffee42), time: 3, start: 0,
                                   mark: sound ? nil : .init(score: 9, confidence: 1, copies: 1, clockScale: 1), sound: sound ? .init(votes: 30) : nil)
        d.stale = stale
        d.airingCoded = airingCoded
        if aired { d.airing = Airing(campaign: d.payload, channel: 7, minute: 29_000_000) }
        return d
    }

    @Test func aFreshMarkOrSoundAnswersAndAStaleOneNever() {
        #expect(ShakePolicy.answers(detection()))
        #expect(ShakePolicy.answers(detection(sound: true)))
        #expect(!ShakePolicy.answers(detection(stale: true)))
        #expect(!ShakePolicy.answers(detection(sound: true, stale: true)))
    }

    @Test func anAiringCodedCampaignAnswersOnlyByItsFreshMark() {
        #expect(ShakePolicy.answers(detection(airingCoded: true, aired: true)))
        // Its sound alone is as much a recording as an airing; a code that was not read proves nothing.
        #expect(!ShakePolicy.answers(detection(sound: true, airingCoded: true)))
        #expect(!ShakePolicy.answers(detection(airingCoded: true)))
        #expect(!ShakePolicy.answers(detection(stale: true, airingCoded: true, aired: true)))
    }

    @Test func itsSoundAnswersWhenItStartedWithinAnAiringSlot() {
        var inSlot = detection(sound: true, airingCoded: true, aired: true)
        inSlot.airingSlot = AiringSlot(channel: 7, from: 1_740_000_000, until: 1_740_000_000)
        #expect(ShakePolicy.answers(inSlot))
        // A slot proves nothing against a stale mark: a recording of an earlier airing.
        inSlot.stale = true
        #expect(!ShakePolicy.answers(inSlot))
        // Its sound with an airing but no slot (none matched, no mark heard) does not answer.
        #expect(!ShakePolicy.answers(detection(sound: true, airingCoded: true, aired: true)))
    }
}
