/// The votes a ``SoundMatcher`` has counted within its window, each once: a creative, the
/// creative's frame and the input's anchor frame that voted for it.
///
/// An open-addressing table of 64-bit words, probed linearly, with deletions that shift later
/// words back (no tombstones): the matcher inserts and removes every vote of a room, thousands a
/// second, and a `Set` of structs hashed with SipHash was a tenth of `hark detect`'s time with a
/// catalogue. Not thread-safe.
struct AnchorVoteSet {
    private var slots: [UInt64]
    private var mask: Int
    private var shift: UInt64
    private(set) var count = 0
    /// No vote packs to this: a creative's index is under ``SoundIndex/maxCreatives``
    /// (2¹⁵ − 1), so its 15 bits are never all ones.
    private static let empty = UInt64.max

    init() {
        slots = [UInt64](repeating: Self.empty, count: 1024)
        mask = 1023
        shift = 64 - 10
    }

    /// A vote as one word: the creative in the top 15 bits, its frame in the next 16, the input's
    /// anchor frame in the low 33 (4.4 years of 16 ms frames; a matcher reads 100 days at most,
    /// ``SoundMatcher/longestRun``).
    static func vote(creative: Int32, creativeFrame: Int, inputFrame: Int) -> UInt64 {
        UInt64(UInt32(bitPattern: creative) & 0x7fff) << 49 | UInt64(creativeFrame & 0xffff) << 33
            | UInt64(inputFrame & 0x1_ffff_ffff)
    }

    @inline(__always)
    private static func home(_ v: UInt64, _ shift: UInt64) -> Int { Int(truncatingIfNeeded: (v &* 0x9e37_79b9_7f4a_7c15) >> shift) }

    /// Adds `v`; false when it was there already.
    mutating func insert(_ v: UInt64) -> Bool {
        if 2 * (count + 1) > slots.count { grow() }
        let (mask, shift) = (self.mask, self.shift)
        let inserted = slots.withUnsafeMutableBufferPointer { slots -> Bool in
            var i = Self.home(v, shift)
            while slots[i] != Self.empty {
                if slots[i] == v { return false }
                i = (i &+ 1) & mask
            }
            slots[i] = v
            return true
        }
        if inserted { count += 1 }
        return inserted
    }

    /// Removes `v` if it is there.
    mutating func remove(_ v: UInt64) {
        let (mask, shift) = (self.mask, self.shift)
        let removed = slots.withUnsafeMutableBufferPointer { slots -> Bool in
            var i = Self.home(v, shift)
            while slots[i] != v {
                if slots[i] == Self.empty { return false }
                i = (i &+ 1) & mask
            }
            // Words after it that probed past its place move back into it, so that every word
            // stays reachable from its home without a tombstone.
            var j = i
            while true {
                j = (j &+ 1) & mask
                let w = slots[j]
                if w == Self.empty { break }
                let k = Self.home(w, shift)
                let staysPut = i <= j ? (i < k && k <= j) : (i < k || k <= j)
                if staysPut { continue }
                slots[i] = w
                i = j
            }
            slots[i] = Self.empty
            return true
        }
        if removed { count -= 1 }
    }

    private mutating func grow() {
        let old = slots
        slots = [UInt64](repeating: Self.empty, count: old.count * 2)
        mask = slots.count - 1
        shift -= 1
        count = 0
        for v in old where v != Self.empty { _ = insert(v) }
    }
}
