/// Finds where one creative of a catalogue holds the same sound as another (a licensed song, a
/// jingle, a phrase): the other creative, the alignment and the blocks of ``SoundIndex``'s
/// ``SoundIndex/sharedBlockFrames`` where ``SoundIndex/sharedVotes`` of its landmarks around a
/// block fall on the other at one alignment (±1 frame, ±1 block).
///
/// Counted in flat arrays, by creative and then by alignment, because it runs for every creative
/// against every other when a catalogue is loaded: with a dictionary of (creative, alignment)
/// an index of 1 000 creatives took 15.3 s to build. One instance serves every creative of one
/// index in turn; not thread-safe.
final class SharedSoundSearch {
    // Scratch memory that the search reuses for every creative, read and written through
    // pointers: these loops are most of the time a catalogue takes to load, and an array's
    // bounds, uniqueness and exclusivity checks were a third of it.
    /// Per other creative: its hits from the creative searched, where they begin in `grouped`
    /// (−1: too few to share anything), and the next free place there.
    private let perOther: UnsafeMutableBufferPointer<Int32>
    private let groupStart: UnsafeMutableBufferPointer<Int32>
    private let fill: UnsafeMutableBufferPointer<Int32>
    private var touched: [Int32] = []
    private struct Hit { var other: Int32; var alignment: Int32; var frame: Int32 }
    private var hits = UnsafeMutableBufferPointer<Hit>(start: nil, count: 0)
    private var grouped = UnsafeMutableBufferPointer<Hit>(start: nil, count: 0)
    private var voteKeys: [Int64] = []
    /// Hits per alignment (plus `offset`) of the group being read, and which are candidates.
    private let perAlignment: UnsafeMutableBufferPointer<Int32>
    private let candidate: UnsafeMutableBufferPointer<Bool>
    private let offset: Int
    /// Per landmark of the creative searched, its own entry in the table (−1: its hash is common
    /// and not indexed).
    private var ownEntry = UnsafeMutableBufferPointer<Int32>(start: nil, count: 0)
    private var holdsAnchor = UnsafeMutableBufferPointer<UInt8>(start: nil, count: 0)

    /// - Parameters:
    ///   - creatives: creatives in the index.
    ///   - longest: the latest landmark frame of any of them.
    init(creatives: Int, longest: Int) {
        perOther = .allocate(capacity: creatives)
        perOther.initialize(repeating: 0)
        groupStart = .allocate(capacity: creatives)
        groupStart.initialize(repeating: -1)
        fill = .allocate(capacity: creatives)
        fill.initialize(repeating: -1)
        offset = longest + 2
        perAlignment = .allocate(capacity: 2 * longest + 5)
        perAlignment.initialize(repeating: 0)
        candidate = .allocate(capacity: 2 * longest + 5)
        candidate.initialize(repeating: false)
    }

    deinit {
        for b in [perOther, groupStart, fill, perAlignment, ownEntry] { b.deallocate() }
        candidate.deallocate()
        holdsAnchor.deallocate()
        hits.deallocate()
        grouped.deallocate()
    }

    /// `buffer`, or a larger one in its place (its contents lost) when it holds fewer than `count`.
    private static func grown<T>(_ buffer: inout UnsafeMutableBufferPointer<T>, to count: Int, _ value: T) {
        guard buffer.count < count else { return }
        buffer.deallocate()
        buffer = .allocate(capacity: max(count, 2 * buffer.count))
        buffer.initialize(repeating: value)
    }

    typealias Span = (other: Int32, alignment: Int)

    /// The index being built, read by every worker and written by none: its entries (each
    /// hash's from `starts[hash]` to `starts[hash + 1]`) and every creative's peaks. Arrays, so
    /// Sendable as they are; each worker reads them through pointers of its own (``View``).
    struct Table: Sendable {
        /// As ``SoundIndex`` holds them: frame in the low 16 bits, creative in the next 15.
        let entries: [UInt32]
        let starts: [Int32]
        let peakSets: [PeakSet]

        /// Calls `body` with pointers into the arrays, valid for the call alone: the search reads
        /// millions of entries, and reads them through pointers, unchecked.
        func withView<R>(_ body: (View) -> R) -> R {
            entries.withUnsafeBufferPointer { e in
                starts.withUnsafeBufferPointer { s in
                    peakSets.withUnsafeBufferPointer { p in body(View(entries: e, starts: s, peakSets: p)) }
                }
            }
        }
    }

    /// A ``Table`` read through pointers, on one thread, for one call.
    struct View {
        let entries: UnsafeBufferPointer<UInt32>
        let starts: UnsafeBufferPointer<Int32>
        let peakSets: UnsafeBufferPointer<PeakSet>

        func creative(_ i: Int) -> Int32 { Int32(entries[i] >> 16 & 0x7fff) }
        func frame(_ i: Int) -> Int32 { Int32(entries[i] & 0xffff) }
        func bucket(_ hash: UInt32) -> Range<Int> { Int(starts[Int(hash)])..<Int(starts[Int(hash) &+ 1]) }
    }

    /// What one creative shares: the creatives it shares sound with, and its entries in the
    /// table that one of them holds too.
    struct Found {
        var related: Set<Int32> = []
        var entries: [Int] = []
        /// The same landmarks as indices into the creative's own (``SharedSound/landmarks``).
        var landmarks: [Int32] = []
    }

    /// The landmarks of creative `r` (`landmarks`, in frame and hash order) that another
    /// creative holds too: both their peaks, at an alignment where the two share sound, whether
    /// or not the other made a landmark of them.
    func shared(by r: Int32, _ landmarks: [Landmark], in table: Table) -> Found {
        table.withView { shared(by: r, landmarks, in: $0) }
    }

    private func shared(by r: Int32, _ landmarks: [Landmark], in table: View) -> Found {
        let spans = spans(of: r, landmarks, in: table)
        var found = Found()
        for block in spans { for o in block { found.related.insert(o.other) } }
        guard !found.related.isEmpty else { return found }
        // Per span of the anchor's block, whether its creative holds the anchor (0: not yet read,
        // 1: it does, 2: it does not): a peak anchors up to ``SoundPrint/fanOut`` landmarks,
        // which lie side by side (landmarks are in frame and hash order, and a hash begins with
        // its anchor's bin).
        var anchor = (frame: -1, bin: -1)
        Self.grown(&holdsAnchor, to: spans.reduce(0) { max($0, $1.count) }, 0)
        let (holdsAnchor, ownEntry) = (self.holdsAnchor, self.ownEntry)
        for (k, l) in landmarks.enumerated() {
            let block = l.frame / SoundIndex.sharedBlockFrames
            guard ownEntry[k] >= 0, !spans[block].isEmpty else { continue }
            let blockSpans = spans[block]
            let anchorBin = Int(l.hash >> 12), targetBin = anchorBin + Int((l.hash >> 6) & 0x3f) - 32
            let targetFrame = l.frame + Int(l.hash & 0x3f)
            if anchor != (l.frame, anchorBin) {
                anchor = (l.frame, anchorBin)
                UnsafeMutableBufferPointer(rebasing: holdsAnchor[..<blockSpans.count]).update(repeating: 0)
            }
            for (j, span) in blockSpans.enumerated() {
                if holdsAnchor[j] == 0 {
                    holdsAnchor[j] = table.peakSets[Int(span.other)].holds(frame: l.frame - span.alignment, bin: anchorBin) ? 1 : 2
                }
                if holdsAnchor[j] == 1 && table.peakSets[Int(span.other)].holds(frame: targetFrame - span.alignment, bin: targetBin) {
                    found.entries.append(Int(ownEntry[k]))
                    found.landmarks.append(Int32(k))
                    break
                }
            }
        }
        return found
    }

    /// Per block of the creative `r` (whose landmarks are `landmarks`), the creatives that share
    /// its sound there and at what alignment.
    private func spans(of r: Int32, _ landmarks: [Landmark], in table: View) -> [[Span]] {
        let threshold = Int32(SoundIndex.sharedVotes)
        // Each bucket's entries read once: every hit from another creative, and the landmark's
        // own entry on the way (``shared(by:_:in:)`` marks it). The hits are written through a
        // pointer, so they are counted first.
        Self.grown(&ownEntry, to: landmarks.count, -1)
        Self.grown(&hits, to: landmarks.reduce(0) { $0 + table.bucket($1.hash).count }, Hit(other: 0, alignment: 0, frame: 0))
        let (hits, ownEntry) = (self.hits, self.ownEntry)
        var count = 0
        for (k, l) in landmarks.enumerated() {
            ownEntry[k] = -1
            let frame = Int32(l.frame)
            for i in table.bucket(l.hash) {
                let other = table.creative(i), otherFrame = table.frame(i)
                if other != r {
                    hits[count] = Hit(other: other, alignment: frame &- otherFrame, frame: frame)
                    count &+= 1
                } else if otherFrame == frame && ownEntry[k] < 0 {
                    ownEntry[k] = Int32(i)
                }
            }
        }
        let (perOther, groupStart, fill) = (self.perOther, self.groupStart, self.fill)
        var touched = self.touched
        self.touched = []
        defer {
            for o in touched {
                perOther[Int(o)] = 0
                groupStart[Int(o)] = -1
                fill[Int(o)] = -1
            }
            touched.removeAll(keepingCapacity: true)
            self.touched = touched
        }
        for j in 0..<count {
            let o = Int(hits[j].other)
            if perOther[o] == 0 { touched.append(hits[j].other) }
            perOther[o] &+= 1
        }
        // A creative with fewer hits than the threshold shares nothing.
        var size: Int32 = 0
        for o in touched where perOther[Int(o)] >= threshold {
            groupStart[Int(o)] = size
            fill[Int(o)] = size
            size &+= perOther[Int(o)]
        }
        guard size > 0 else { return [] }
        Self.grown(&grouped, to: Int(size), Hit(other: 0, alignment: 0, frame: 0))
        let grouped = self.grouped
        for j in 0..<count {
            let o = Int(hits[j].other)
            let f = fill[o]
            guard f >= 0 else { continue }
            grouped[Int(f)] = hits[j]
            fill[o] = f &+ 1
        }
        // Within each group, the alignments with the threshold's hits (±1) are candidates, and only
        // the hits at or beside a candidate are counted by block: few pairs of creatives share an
        // alignment by more than chance.
        var voteKeys = self.voteKeys
        self.voteKeys = []
        voteKeys.removeAll(keepingCapacity: true)
        defer { self.voteKeys = voteKeys }
        func key(_ other: Int32, _ alignment: Int, _ block: Int) -> Int64 {
            Int64(other) << 44 | Int64(block & 0xfffff) << 24 | Int64(alignment + 0x7fffff)
        }
        let (perAlignment, candidate, offset) = (self.perAlignment, self.candidate, self.offset)
        for o in touched where groupStart[Int(o)] >= 0 {
            let group = Int(groupStart[Int(o)])..<Int(groupStart[Int(o)] &+ perOther[Int(o)])
            for j in group { perAlignment[Int(grouped[j].alignment) &+ offset] &+= 1 }
            var any = false
            for j in group {
                let x = Int(grouped[j].alignment) &+ offset
                if perAlignment[x &- 1] &+ perAlignment[x] &+ perAlignment[x &+ 1] >= threshold {
                    candidate[x] = true
                    any = true
                }
            }
            if any {
                for j in group {
                    let x = Int(grouped[j].alignment) &+ offset
                    if candidate[x &- 1] || candidate[x] || candidate[x &+ 1] {
                        voteKeys.append(key(o, Int(grouped[j].alignment), Int(grouped[j].frame) / SoundIndex.sharedBlockFrames))
                    }
                }
            }
            for j in group {
                let x = Int(grouped[j].alignment) &+ offset
                perAlignment[x] = 0
                candidate[x] = false
            }
        }
        // The votes of each key: the keys sorted, and counted in runs.
        voteKeys.sort()
        var keys: [Int64] = [], counts: [Int32] = []
        for k in voteKeys {
            if keys.last == k { counts[counts.count - 1] += 1 } else { keys.append(k); counts.append(1) }
        }
        // A block's votes count with its neighbours' (a shared phrase straddles blocks) and at the
        // neighbouring alignments (a peak a frame off): the keys from k + db·2²⁴ − 1 to
        // k + db·2²⁴ + 1 for db = −1, 0, 1, found by one cursor per db, since they grow with k.
        var spanKeys: [Int64] = []
        var cursors = [0, 0, 0]
        for k in keys {
            var total: Int32 = 0
            for c in 0..<3 {
                let low = k + Int64(c - 1) << 24 - 1, high = low + 2
                while cursors[c] < keys.count && keys[cursors[c]] < low { cursors[c] += 1 }
                var j = cursors[c]
                while j < keys.count && keys[j] <= high { total += counts[j]; j += 1 }
            }
            // Each (other, alignment) once a block: neighbouring keys name the same span.
            guard total >= threshold else { continue }
            let block = (k >> 24) & 0xfffff
            for db in [-1, 0, 1] as [Int64] where block + db >= 0 { spanKeys.append(k + db << 24) }
        }
        spanKeys.sort()
        var spans = [[Span]](repeating: [], count: (landmarks.last?.frame ?? 0) / SoundIndex.sharedBlockFrames + 1)
        for (n, k) in spanKeys.enumerated() where n == 0 || spanKeys[n - 1] != k {
            let other = Int32(truncatingIfNeeded: k >> 44), block = Int((k >> 24) & 0xfffff)
            // The block after the creative's last holds none of its landmarks.
            if block < spans.count { spans[block].append((other, Int(k & 0xffffff) - 0x7fffff)) }
        }
        return spans
    }
}
