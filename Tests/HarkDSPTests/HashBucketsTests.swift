import Testing
@testable import HarkDSP

/// The grouped hash table against the full one it replaces: every hash's entries, for tables
/// small enough to group eight low bits, a catalogue of 100's size, and one large enough to be
/// direct.
@Suite struct HashBucketsTests {
    /// A full table's starts for `entries` landmarks of random hashes, some hashes crowded.
    static func starts(entries: Int, hashBits: Int, seed: UInt64) -> [Int32] {
        var state = seed
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        let buckets = 1 << hashBits
        var counts = [Int32](repeating: 0, count: buckets + 1)
        for k in 0..<entries {
            // One entry in eight on a few crowded hashes, as a chord's partials are.
            let h = k % 8 == 0 ? Int(next() % 16) * 977 % buckets : Int(next() % UInt64(buckets))
            counts[h + 1] += 1
        }
        for h in 0..<buckets { counts[h + 1] += counts[h] }
        return counts
    }

    @Test(arguments: [(0, 8), (300, 8), (40_000, 6), (340_000, 3), (2_100_000, 0)] as [(Int, Int)])
    func everyHashFindsItsEntriesAndNoOthers(entries: Int, lowBits: Int) {
        let hashBits = 20
        let full = Self.starts(entries: entries, hashBits: hashBits, seed: UInt64(entries) + 1)
        let grouped = HashBuckets(starts: full)
        #expect(grouped.lowBits == lowBits)
        var mismatches = 0
        for h in 0..<(1 << hashBits) where grouped.range(of: UInt32(h)) != Int(full[h])..<Int(full[h + 1]) {
            // An empty range may sit anywhere; a hash with entries must get exactly its own.
            if full[h] != full[h + 1] || !grouped.range(of: UInt32(h)).isEmpty { mismatches += 1 }
        }
        #expect(mismatches == 0)
    }

    @Test func aCatalogueOf100sTableTakesUnderAQuarterOfTheFullOne() {
        let full = Self.starts(entries: 340_000, hashBits: 20, seed: 7)
        let grouped = HashBuckets(starts: full)
        #expect(grouped.bytes * 4 < full.count * 4)
    }
}
