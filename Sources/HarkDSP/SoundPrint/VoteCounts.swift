/// A ``SoundMatcher``'s votes within its window, per creative and alignment (input frame −
/// creative frame): each creative's own small table in an array, so that reading one creative's
/// alignments costs its keys, not the window's. With one table keyed by (creative, alignment),
/// each candidate's review scanned every key of the window, thousands on music; that was a
/// third of harkd's CPU with a catalogue of 100. Not thread-safe.
struct VoteCounts {
    private var perCreative: [AlignmentTally]

    init(creatives: Int) {
        perCreative = [AlignmentTally](repeating: AlignmentTally(), count: creatives)
    }

    /// A vote in the matcher's key: the creative in the high 32 bits, the alignment in the low.
    static func key(_ creative: Int32, _ alignment: Int) -> Int64 {
        Int64(creative) << 32 | Int64(UInt32(bitPattern: Int32(truncatingIfNeeded: alignment)))
    }

    static func creative(_ key: Int64) -> Int { Int(key >> 32) }
    static func alignment(_ key: Int64) -> Int { Int(Int32(truncatingIfNeeded: key)) }

    mutating func add(_ key: Int64) {
        perCreative[Self.creative(key)].add(Int32(truncatingIfNeeded: key))
    }

    mutating func remove(_ key: Int64) {
        perCreative[Self.creative(key)].remove(Int32(truncatingIfNeeded: key))
    }

    /// Votes at the key's alignment and its two neighbours (a peak may fall a frame either side).
    func score(_ key: Int64) -> Int {
        score(Self.creative(key), Self.alignment(key))
    }

    func score(_ creative: Int, _ alignment: Int) -> Int {
        perCreative[creative].score(Int32(truncatingIfNeeded: alignment))
    }

    /// Every alignment where `creative` has votes, with its ``score(_:_:)``, into `out`, in no
    /// particular order.
    func scores(of creative: Int, into out: inout [(alignment: Int, votes: Int)]) {
        perCreative[creative].scores(into: &out)
    }

    /// The creatives with votes.
    var creativesWithVotes: [Int] { perCreative.indices.filter { !perCreative[$0].isEmpty } }
}
