import Testing
@testable import HarkDSP

/// The matcher's set of counted votes, against Swift's own `Set` under the same random
/// inserts and removals: deletions shift words back, and a wrong shift loses a vote silently.
@Suite struct AnchorVoteSetTests {
    @Test func agreesWithSetThroughInsertsRemovalsAndGrowth() {
        var votes = AnchorVoteSet()
        var reference = Set<UInt64>()
        var rng = SplitMix64(seed: 7)
        // Few distinct values, so that inserts meet values already there, removals meet values
        // that are not, and probe runs collide; 30 000 of them make the table grow five times.
        var live: [UInt64] = []
        for step in 0..<60_000 {
            let creative = Int32(rng.next() % 40), frame = Int(rng.next() % 64), input = Int(rng.next() % 2_000)
            let v = AnchorVoteSet.vote(creative: creative, creativeFrame: frame, inputFrame: input)
            if step < 30_000 || rng.next() % 3 == 0 {
                let inserted = votes.insert(v)
                #expect(inserted == reference.insert(v).inserted)
                live.append(v)
            } else {
                let w = live.isEmpty || rng.next() % 4 == 0 ? v : live[Int(rng.next() % UInt64(live.count))]
                votes.remove(w)
                reference.remove(w)
            }
            #expect(votes.count == reference.count)
        }
        // Every value still there is found (inserting it again is refused), and no other is.
        for v in reference {
            let insertedAgain = votes.insert(v)
            #expect(!insertedAgain)
        }
        #expect(votes.count == reference.count)
    }

    @Test func packsEveryPartWithoutOverlap() {
        // The highest creative an index holds, at the last frames, is not the empty word.
        let a = AnchorVoteSet.vote(creative: Int32(SoundIndex.maxCreatives - 1), creativeFrame: 0xffff, inputFrame: 0x1_ffff_ffff)
        #expect(a != UInt64.max)
        let parts: [(Int32, Int, Int)] = [(1, 0, 0), (0, 1, 0), (0, 0, 1), (0, 0, 0x1_0000_0000), (0, 0x8000, 0), (0x4000, 0, 0)]
        let words = parts.map { AnchorVoteSet.vote(creative: $0.0, creativeFrame: $0.1, inputFrame: $0.2) }
        #expect(Set(words).count == parts.count)
        for (i, w) in words.enumerated() { for v in words[(i + 1)...] { #expect(w & v == 0) } }
    }
}
