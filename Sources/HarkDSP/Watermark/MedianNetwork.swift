/// Medians of 16 equal-length windows at once, without branches: a sorting network (Batcher's
/// odd–even merge sort over the next power of two, padded with −∞ and +∞), pruned to the
/// comparators the middle rank depends on, each one a vector min and max across the 16 windows.
///
/// The detector takes the median of 25 values for every 16-bin block of every frame (its noise
/// floor); a quickselect per window, whose comparisons the processor cannot predict, was the
/// largest single cost of detection.
struct MedianNetwork {
    /// Values per window.
    let count: Int
    /// The wire holding a window's first value (the values fill `count` wires from here).
    let firstInput: Int
    /// The padded width (a power of two) and where the median lands in it.
    private let width: Int
    private let rank: Int
    private let comparators: [(Int, Int)]

    init(count: Int) {
        precondition(count >= 1)
        self.count = count
        var width = 1
        while width < count { width *= 2 }
        self.width = width
        firstInput = (width - count) / 2
        rank = firstInput + count / 2
        // Batcher's odd–even merge sort: merges of sorted runs of length p, comparing elements
        // k apart that lie in the same merge of 2p.
        var all: [(Int, Int)] = []
        var p = 1
        while p < width {
            var k = p
            while k >= 1 {
                var j = k % p
                while j + k < width {
                    for i in 0..<min(k, width - j - k) where (i + j) / (2 * p) == (i + j + k) / (2 * p) {
                        all.append((i + j, i + j + k))
                    }
                    j += 2 * k
                }
                k /= 2
            }
            p *= 2
        }
        // Keep only the comparators whose outputs reach the median's wire.
        var needed = Set([rank])
        var kept: [(Int, Int)] = []
        for c in all.reversed() where needed.contains(c.0) || needed.contains(c.1) {
            kept.append(c)
            needed.insert(c.0)
            needed.insert(c.1)
        }
        comparators = kept.reversed()
    }

    /// Number of vectors `wires` must hold.
    var wireCount: Int { width }

    /// The medians of 16 windows. `wires[firstInput + i]` holds value `i` of every window
    /// (lane = window) for `i < count`; the other wires are padding, set here. The wires are
    /// reordered in the process.
    func medians(_ wires: UnsafeMutablePointer<SIMD16<Float>>) -> SIMD16<Float> {
        for i in 0..<firstInput { wires[i] = SIMD16(repeating: -.infinity) }
        for i in (firstInput + count)..<width { wires[i] = SIMD16(repeating: .infinity) }
        comparators.withUnsafeBufferPointer { network in
            for (a, b) in network {
                let x = wires[a], y = wires[b]
                let swap = y .< x
                wires[a] = x.replacing(with: y, where: swap)
                wires[b] = y.replacing(with: x, where: swap)
            }
        }
        return wires[rank]
    }
}
