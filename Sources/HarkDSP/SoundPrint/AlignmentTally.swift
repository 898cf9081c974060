/// One creative's votes per alignment within a ``SoundMatcher``'s window: a count for each
/// alignment that has any.
///
/// An open-addressing table probed linearly, keys and counts side by side, deletions shifting
/// later entries back (no tombstones), as ``AnchorVoteSet``. A `[Int32: Int32]` hashed every
/// alignment with SipHash: each candidate's review reads every alignment's three neighbours,
/// and the dictionary's lookups and hashing were a sixth of harkd's CPU with a catalogue of 100.
/// Not thread-safe.
struct AlignmentTally {
    private var keys: [Int32]
    /// Zero marks an empty slot: a live entry has at least one vote.
    private var counts: [Int32]
    private var mask: Int
    private var shift: UInt32
    private(set) var count = 0

    private static let smallest = 16

    init() {
        keys = [Int32](repeating: 0, count: Self.smallest)
        counts = [Int32](repeating: 0, count: Self.smallest)
        mask = Self.smallest - 1
        shift = 32 - 4
    }

    var isEmpty: Bool { count == 0 }

    @inline(__always)
    private static func home(_ a: Int32, _ shift: UInt32) -> Int {
        Int(truncatingIfNeeded: (UInt32(bitPattern: a) &* 0x9e37_79b1) >> shift)
    }

    /// Votes at `a` in the table `keys` and `counts`; 0 when it has none.
    @inline(__always)
    private static func votes(_ a: Int32, keys: UnsafeBufferPointer<Int32>, counts: UnsafeBufferPointer<Int32>,
                              mask: Int, shift: UInt32) -> Int32 {
        var i = home(a, shift)
        while counts[i] != 0 {
            if keys[i] == a { return counts[i] }
            i = (i &+ 1) & mask
        }
        return 0
    }

    /// Votes at `a`; 0 when it has none.
    @inline(__always)
    subscript(_ a: Int32) -> Int32 {
        keys.withUnsafeBufferPointer { keys in
            counts.withUnsafeBufferPointer { counts in Self.votes(a, keys: keys, counts: counts, mask: mask, shift: shift) }
        }
    }

    /// Votes at `a` and its two neighbours (a peak may fall a frame either side).
    @inline(__always)
    func score(_ a: Int32) -> Int {
        Int(self[a &- 1]) + Int(self[a]) + Int(self[a &+ 1])
    }

    /// One more vote at `a`.
    mutating func add(_ a: Int32) {
        if 2 * (count + 1) > keys.count { resize(to: keys.count * 2) }
        let (mask, shift) = (self.mask, self.shift)
        let added = keys.withUnsafeMutableBufferPointer { keys in
            counts.withUnsafeMutableBufferPointer { counts -> Bool in
                var i = Self.home(a, shift)
                while counts[i] != 0 {
                    if keys[i] == a { counts[i] += 1; return false }
                    i = (i &+ 1) & mask
                }
                keys[i] = a
                counts[i] = 1
                return true
            }
        }
        if added { count += 1 }
    }

    /// One vote fewer at `a`, if it has any; the entry goes with its last vote.
    mutating func remove(_ a: Int32) {
        let (mask, shift) = (self.mask, self.shift)
        let emptied = keys.withUnsafeMutableBufferPointer { keys in
            counts.withUnsafeMutableBufferPointer { counts -> Bool in
                var i = Self.home(a, shift)
                while keys[i] != a || counts[i] == 0 {
                    if counts[i] == 0 { return false }
                    i = (i &+ 1) & mask
                }
                if counts[i] > 1 { counts[i] -= 1; return false }
                // Entries after it that probed past its place move back into it, so that every
                // entry stays reachable from its home without a tombstone.
                var j = i
                while true {
                    j = (j &+ 1) & mask
                    if counts[j] == 0 { break }
                    let k = Self.home(keys[j], shift)
                    let staysPut = i <= j ? (i < k && k <= j) : (i < k || k <= j)
                    if staysPut { continue }
                    keys[i] = keys[j]
                    counts[i] = counts[j]
                    i = j
                }
                counts[i] = 0
                return true
            }
        }
        guard emptied else { return }
        count -= 1
        // A burst of votes must not leave a long table for every later scan to walk.
        if keys.count > Self.smallest, 8 * count < keys.count { resize(to: keys.count / 2) }
    }

    /// Every alignment that has votes with its ``score(_:)``, into `out` (emptied first), in
    /// no particular order: one pass over the table, two lookups an entry. (Sorting the entries
    /// to read neighbours side by side took longer than the lookups.)
    func scores(into out: inout [(alignment: Int, votes: Int)]) {
        out.removeAll(keepingCapacity: true)
        keys.withUnsafeBufferPointer { keys in
            counts.withUnsafeBufferPointer { counts in
                let (mask, shift) = (self.mask, self.shift)
                for i in 0..<counts.count where counts[i] != 0 {
                    let a = keys[i]
                    let neighbours = Self.votes(a &- 1, keys: keys, counts: counts, mask: mask, shift: shift)
                        + Self.votes(a &+ 1, keys: keys, counts: counts, mask: mask, shift: shift)
                    out.append((Int(a), Int(counts[i]) + Int(neighbours)))
                }
            }
        }
    }

    private mutating func resize(to capacity: Int) {
        let (oldKeys, oldCounts) = (keys, counts)
        keys = [Int32](repeating: 0, count: capacity)
        counts = [Int32](repeating: 0, count: capacity)
        mask = capacity - 1
        shift = UInt32(32 - capacity.trailingZeroBitCount)
        keys.withUnsafeMutableBufferPointer { keys in
            counts.withUnsafeMutableBufferPointer { counts in
                for n in 0..<oldCounts.count where oldCounts[n] != 0 {
                    var i = Self.home(oldKeys[n], shift)
                    while counts[i] != 0 { i = (i &+ 1) & mask }
                    keys[i] = oldKeys[n]
                    counts[i] = oldCounts[n]
                }
            }
        }
    }
}
