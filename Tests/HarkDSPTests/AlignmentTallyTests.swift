import Testing
@testable import HarkDSP

/// One creative's votes per alignment, against Swift's own `Dictionary` under the same random
/// votes added and taken away: deletions shift entries back and the table grows and shrinks,
/// and a wrong shift loses a count silently.
@Suite struct AlignmentTallyTests {
    @Test func agreesWithADictionaryThroughGrowthAndShrinking() {
        var tally = AlignmentTally()
        var reference: [Int32: Int32] = [:]
        var rng = SplitMix64(seed: 11)
        // Alignments near one another (probe runs collide, neighbours are scored) and some far
        // apart and negative; votes pile up for 20 000 steps, then mostly leave.
        for step in 0..<60_000 {
            let a = rng.next() % 5 == 0 ? Int32(truncatingIfNeeded: rng.next()) : Int32(rng.next() % 3_000) - 1_500
            let adding = step < 20_000 ? rng.next() % 4 != 0 : rng.next() % 4 == 0
            if adding {
                tally.add(a)
                reference[a, default: 0] += 1
            } else {
                // Mostly one of the near alignments, which mostly have votes while they pile up.
                let b = rng.next() % 5 == 0 ? a : Int32(rng.next() % 3_000) - 1_500
                tally.remove(b)
                if let c = reference[b] { reference[b] = c == 1 ? nil : c - 1 }
            }
            #expect(tally.count == reference.count)
            if step % 997 == 0 { expectSame(tally, reference) }
        }
        expectSame(tally, reference)
        // Emptied, it is empty, and takes votes again.
        for (a, c) in reference { for _ in 0..<c { tally.remove(a) } }
        #expect(tally.isEmpty)
        tally.add(7)
        #expect(tally[7] == 1 && tally.score(8) == 1 && tally.score(9) == 0)
    }

    @Test func scoresAnAlignmentWithItsTwoNeighbours() {
        var tally = AlignmentTally()
        for (a, n) in [(-1, 2), (0, 3), (1, 4), (3, 5), (Int32.max, 1), (Int32.min, 6)] as [(Int32, Int)] {
            for _ in 0..<n { tally.add(a) }
        }
        #expect(tally.score(0) == 9)
        #expect(tally.score(2) == 9)
        #expect(tally.score(-2) == 2)
        // The neighbours of the extremes wrap, as a frame counter's alignments never reach.
        #expect(tally.score(Int32.max) == 7)
    }

    private func expectSame(_ tally: AlignmentTally, _ reference: [Int32: Int32]) {
        #expect(reference.allSatisfy { tally[$0.key] == $0.value })
        for a in reference.keys.prefix(50) {
            let expected = Int(reference[a &- 1] ?? 0) + Int(reference[a] ?? 0) + Int(reference[a &+ 1] ?? 0)
            #expect(tally.score(a) == expected)
        }
        // The bulk reading: every alignment with votes, once, each with its score.
        var scores: [(alignment: Int, votes: Int)] = [(1, 1)]
        tally.scores(into: &scores)
        #expect(scores.map(\.alignment).sorted() == reference.keys.map(Int.init).sorted())
        #expect(scores.allSatisfy { $0.votes == tally.score(Int32($0.alignment)) })
    }
}
