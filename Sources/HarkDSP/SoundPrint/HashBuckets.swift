/// Where each landmark hash's entries lie in a ``SoundIndex``'s table, sized to what the table
/// holds. A start for every one of the 2²⁰ hashes is 4 MB, most of it empty buckets for a
/// catalogue of 100 creatives (a third of a million entries, a twelfth of harkd's memory with
/// such a catalogue). So hashes are grouped by their high bits into about a quarter as many
/// groups as entries, each group's start is kept, and each entry keeps its hash's low bits in
/// a byte: a lookup reads its group, a few entries on average, and keeps those whose low bits
/// are its own. From 2 million entries (several hundred creatives) the groups are single hashes
/// and no byte is kept: a lookup is direct, as a full table's.
struct HashBuckets: Sendable {
    /// Low bits of a hash below its group's (0–8).
    let lowBits: Int
    /// `groupStart[g]` is where group `g`'s entries begin; one more for the end.
    private let groupStart: [Int32]
    /// Per entry, its hash's low `lowBits` bits (empty when `lowBits` is 0).
    private let low: [UInt8]

    /// Entries a group holds on average, at most: a lookup's scan.
    static let entriesPerGroup = 4

    /// - Parameter starts: a start for every hash (a power of two of them) and one for the end,
    ///   as a counting sort leaves them (`starts[h]..<starts[h + 1]` are hash `h`'s entries, in
    ///   hash order).
    init(starts: [Int32]) {
        let hashes = starts.count - 1
        precondition(hashes > 0 && hashes & (hashes - 1) == 0, "a start for each of a power of two of hashes")
        let hashBits = hashes.trailingZeroBitCount
        let entries = Int(starts[hashes])
        // Groups: the power of two at or above entries / entriesPerGroup, within [2^(hashBits-8), 2^hashBits].
        var groupBits = hashBits - 8
        while groupBits < hashBits && 1 << groupBits < entries / Self.entriesPerGroup { groupBits += 1 }
        lowBits = hashBits - groupBits
        let groups = 1 << groupBits
        var groupStart = [Int32](repeating: 0, count: groups + 1)
        for g in 0...groups { groupStart[g] = starts[g << lowBits] }
        self.groupStart = groupStart
        guard lowBits > 0 else { low = []; return }
        let mask = (1 << lowBits) - 1
        var low = [UInt8](repeating: 0, count: entries)
        for h in 0..<hashes where starts[h] < starts[h + 1] {
            for i in Int(starts[h])..<Int(starts[h + 1]) { low[i] = UInt8(h & mask) }
        }
        self.low = low
    }

    /// The entries of one hash.
    @inline(__always)
    func range(of hash: UInt32) -> Range<Int> {
        let h = Int(hash)
        let g = h >> lowBits
        var i = Int(groupStart[g])
        let end = Int(groupStart[g + 1])
        guard lowBits > 0 else { return i..<end }
        // Within a group the entries are in hash order: skip the lower hashes, take this one's.
        let own = UInt8(h & ((1 << lowBits) - 1))
        while i < end && low[i] < own { i += 1 }
        var j = i
        while j < end && low[j] == own { j += 1 }
        return i..<j
    }

    /// Bytes held.
    var bytes: Int { groupStart.count * 4 + low.count }
}
