/// Finds where one creative of a catalogue holds the same sound as another (a licensed song, a
/// jingle, a phrase): the other creative, the alignment and the blocks of ``SoundIndex``'s
/// ``SoundIndex/sharedBlockFrames`` where ``SoundIndex/sharedVotes`` of its landmarks around a
/// block fall on the other at one alignment (±1 frame, ±1 block).
///
/// Counted in flat arrays, by creative and then by alignment, because it runs for every creative
/// against every other when a catalogue is loaded: with a dictionary of (creative, alignment)
/// an index of 1 000 creatives took 15.3 s to build. One instance serves every creative of one
/// index in turn; not thread-safe.
struct SharedSoundSearch {
    /// Per other creative: its hits from the creative searched, and where they begin in `hit*`.
    private var perOther: [Int32]
    private var groupStart: [Int32]
    private var touched: [Int32] = []
    private struct Hit { var other: Int32; var alignment: Int32; var frame: Int32 }
    private var hits: [Hit] = []
    private var grouped: [Hit] = []
    private var voteKeys: [Int64] = []
    /// Hits per alignment (plus `offset`) of the group being read, and which are candidates.
    private var perAlignment: [Int32]
    private var candidate: [Bool]
    private let offset: Int

    /// - Parameters:
    ///   - creatives: creatives in the index.
    ///   - longest: the latest landmark frame of any of them.
    init(creatives: Int, longest: Int) {
        perOther = [Int32](repeating: 0, count: creatives)
        groupStart = [Int32](repeating: -1, count: creatives)
        offset = longest + 2
        perAlignment = [Int32](repeating: 0, count: 2 * longest + 5)
        candidate = [Bool](repeating: false, count: 2 * longest + 5)
    }

    typealias Span = (other: Int32, alignment: Int)

    /// The index being built, read by every worker and written by none: its entries (each
    /// hash's from `starts[hash]` to `starts[hash + 1]`) and every creative's peaks.
    struct Table: @unchecked Sendable {
        /// As ``SoundIndex`` holds them: frame in the low 16 bits, creative in the next 15.
        let entries: UnsafeBufferPointer<UInt32>
        let starts: UnsafeBufferPointer<Int32>
        let peakSets: UnsafeBufferPointer<PeakSet>

        func creative(_ i: Int) -> Int32 { Int32(entries[i] >> 16 & 0x7fff) }
        func frame(_ i: Int) -> Int32 { Int32(entries[i] & 0xffff) }
    }

    /// What one creative shares: the creatives it shares sound with, and its entries in the
    /// table that one of them holds too.
    struct Found {
        var related: Set<Int32> = []
        var entries: [Int] = []
    }

    /// The landmarks of creative `r` (`landmarks`, in frame and hash order) that another
    /// creative holds too: both their peaks, at an alignment where the two share sound, whether
    /// or not the other made a landmark of them.
    mutating func shared(by r: Int32, _ landmarks: [Landmark], in table: Table) -> Found {
        let spans = spans(of: r, landmarks, in: table)
        guard !spans.isEmpty else { return Found() }
        var found = Found()
        for others in spans.values { for o in others { found.related.insert(o.other) } }
        // Per span of the anchor's block, whether its creative holds the anchor (0: not yet read,
        // 1: it does, 2: it does not): a peak anchors up to ``SoundPrint/fanOut`` landmarks,
        // which lie side by side (landmarks are in frame and hash order, and a hash begins with
        // its anchor's bin).
        var anchor = (frame: -1, bin: -1)
        var holdsAnchor: [UInt8] = []
        for l in landmarks {
            // Its own entry lies among its hash's few (a common hash has none), looked for once the
            // landmark is found shared.
            let bucket = Int(table.starts[Int(l.hash)])..<Int(table.starts[Int(l.hash) + 1])
            guard !bucket.isEmpty, let blockSpans = spans[l.frame / SoundIndex.sharedBlockFrames] else { continue }
            let anchorBin = Int(l.hash >> 12), targetBin = anchorBin + Int((l.hash >> 6) & 0x3f) - 32
            let targetFrame = l.frame + Int(l.hash & 0x3f)
            if anchor != (l.frame, anchorBin) {
                anchor = (l.frame, anchorBin)
                holdsAnchor = [UInt8](repeating: 0, count: blockSpans.count)
            }
            for (j, span) in blockSpans.enumerated() {
                if holdsAnchor[j] == 0 {
                    holdsAnchor[j] = table.peakSets[Int(span.other)].holds(frame: l.frame - span.alignment, bin: anchorBin) ? 1 : 2
                }
                if holdsAnchor[j] == 1 && table.peakSets[Int(span.other)].holds(frame: targetFrame - span.alignment, bin: targetBin) {
                    if let i = bucket.first(where: { table.creative($0) == r && table.frame($0) == Int32(l.frame) }) { found.entries.append(i) }
                    break
                }
            }
        }
        return found
    }

    /// Per block of the creative `r` (whose landmarks are `landmarks`), the creatives that share
    /// its sound there and at what alignment.
    private mutating func spans(of r: Int32, _ landmarks: [Landmark], in table: Table) -> [Int: [Span]] {
        let starts = table.starts
        let threshold = Int32(SoundIndex.sharedVotes)
        // Every hit once, in the order the landmarks come (the index's buckets lie anywhere in
        // memory, so each is read once), then grouped by the other creative.
        var count = 0
        for l in landmarks {
            for i in Int(starts[Int(l.hash)])..<Int(starts[Int(l.hash) + 1]) where table.creative(i) != r {
                if count == hits.count { hits.append(Hit(other: 0, alignment: 0, frame: 0)) }
                hits[count] = Hit(other: table.creative(i), alignment: Int32(l.frame) - table.frame(i), frame: Int32(l.frame))
                count += 1
            }
        }
        for j in 0..<count {
            let o = Int(hits[j].other)
            if perOther[o] == 0 { touched.append(hits[j].other) }
            perOther[o] += 1
        }
        // A creative with fewer hits than the threshold shares nothing.
        var size: Int32 = 0
        for o in touched where perOther[Int(o)] >= threshold {
            groupStart[Int(o)] = size
            size += perOther[Int(o)]
        }
        guard size > 0 else { return reset([:]) }
        if grouped.count < Int(size) { grouped = [Hit](repeating: Hit(other: 0, alignment: 0, frame: 0), count: Int(size)) }
        var fill = groupStart
        for j in 0..<count {
            let o = Int(hits[j].other)
            guard fill[o] >= 0 else { continue }
            grouped[Int(fill[o])] = hits[j]
            fill[o] += 1
        }
        // Within each group, the alignments with the threshold's hits (±1) are candidates, and only
        // the hits at or beside a candidate are counted by block: few pairs of creatives share an
        // alignment by more than chance.
        voteKeys.removeAll(keepingCapacity: true)
        func key(_ other: Int32, _ alignment: Int, _ block: Int) -> Int64 {
            Int64(other) << 44 | Int64(block & 0xfffff) << 24 | Int64(alignment + 0x7fffff)
        }
        for o in touched where groupStart[Int(o)] >= 0 {
            let group = Int(groupStart[Int(o)])..<Int(groupStart[Int(o)] + perOther[Int(o)])
            for j in group { perAlignment[Int(grouped[j].alignment) + offset] += 1 }
            var any = false
            for j in group {
                let x = Int(grouped[j].alignment) + offset
                if perAlignment[x - 1] + perAlignment[x] + perAlignment[x + 1] >= threshold {
                    candidate[x] = true
                    any = true
                }
            }
            if any {
                for j in group {
                    let x = Int(grouped[j].alignment) + offset
                    if candidate[x - 1] || candidate[x] || candidate[x + 1] {
                        voteKeys.append(key(o, Int(grouped[j].alignment), Int(grouped[j].frame) / SoundIndex.sharedBlockFrames))
                    }
                }
            }
            for j in group {
                let x = Int(grouped[j].alignment) + offset
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
        func votes(_ k: Int64) -> Int32 {
            var (low, high) = (0, keys.count)
            while low < high {
                let mid = (low + high) / 2
                if keys[mid] < k { low = mid + 1 } else { high = mid }
            }
            return low < keys.count && keys[low] == k ? counts[low] : 0
        }
        // A block's votes count with its neighbours' (a shared phrase straddles blocks) and at the
        // neighbouring alignments (a peak a frame off).
        func total(_ k: Int64) -> Int32 {
            var t: Int32 = 0
            for db in [-1, 0, 1] as [Int64] { for da in [-1, 0, 1] as [Int64] { t += votes(k + db << 24 + da) } }
            return t
        }
        // Each (other, alignment) once a block: neighbouring keys name the same span.
        var spanKeys: [Int64] = []
        for k in keys where total(k) >= threshold {
            let block = (k >> 24) & 0xfffff
            for db in [-1, 0, 1] as [Int64] where block + db >= 0 { spanKeys.append(k + db << 24) }
        }
        spanKeys.sort()
        var spans: [Int: [Span]] = [:]
        for (n, k) in spanKeys.enumerated() where n == 0 || spanKeys[n - 1] != k {
            let other = Int32(truncatingIfNeeded: k >> 44), block = Int((k >> 24) & 0xfffff)
            spans[block, default: []].append((other, Int(k & 0xffffff) - 0x7fffff))
        }
        return reset(spans)
    }

    private mutating func reset(_ spans: [Int: [Span]]) -> [Int: [Span]] {
        for o in touched {
            perOther[Int(o)] = 0
            groupStart[Int(o)] = -1
        }
        touched.removeAll(keepingCapacity: true)
        return spans
    }
}
