/// A ``SoundMatcher``'s votes within its window, per creative and alignment (input frame −
/// creative frame): each creative's own small table in an array, so that reading one creative's
/// alignments costs its keys, not the window's. With one table keyed by (creative, alignment),
/// each candidate's review scanned every key of the window, thousands on music; that was a
/// third of harkd's CPU with a catalogue of 100. Not thread-safe.
struct VoteCounts {
    private var perCreative: [[Int32: Int32]]

    init(creatives: Int) {
        perCreative = [[Int32: Int32]](repeating: [:], count: creatives)
    }

    /// A vote in the matcher's key: the creative in the high 32 bits, the alignment in the low.
    static func key(_ creative: Int32, _ alignment: Int) -> Int64 {
        Int64(creative) << 32 | Int64(UInt32(bitPattern: Int32(truncatingIfNeeded: alignment)))
    }

    static func creative(_ key: Int64) -> Int { Int(key >> 32) }
    static func alignment(_ key: Int64) -> Int { Int(Int32(truncatingIfNeeded: key)) }

    mutating func add(_ key: Int64) {
        perCreative[Self.creative(key)][Int32(truncatingIfNeeded: key), default: 0] += 1
    }

    mutating func remove(_ key: Int64) {
        let a = Int32(truncatingIfNeeded: key)
        let r = Self.creative(key)
        guard let c = perCreative[r][a] else { return }
        perCreative[r][a] = c <= 1 ? nil : c - 1
    }

    /// Votes at the key's alignment and its two neighbours (a peak may fall a frame either side).
    func score(_ key: Int64) -> Int {
        score(Self.creative(key), Self.alignment(key))
    }

    func score(_ creative: Int, _ alignment: Int) -> Int {
        let table = perCreative[creative]
        let a = Int32(truncatingIfNeeded: alignment)
        return Int(table[a &- 1] ?? 0) + Int(table[a] ?? 0) + Int(table[a &+ 1] ?? 0)
    }

    /// The alignments where `creative` has votes.
    func alignments(of creative: Int) -> Dictionary<Int32, Int32>.Keys { perCreative[creative].keys }

    /// The creatives with votes.
    var creativesWithVotes: [Int] { perCreative.indices.filter { !perCreative[$0].isEmpty } }
}
