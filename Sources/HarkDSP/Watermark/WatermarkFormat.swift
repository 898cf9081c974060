import Foundation

/// The layout of Hark's watermark: how a payload becomes tones in time and frequency
/// (docs/watermark.md explains the choices and their numbers).
///
/// - A **copy** of the payload lasts 2.4 s: 6 symbols of 0.4 s. Copies repeat back to back, so
///   any 2.8 s of marked audio holds every symbol of one copy (possibly the end of one copy and
///   the start of the next, which the detector reassembles).
/// - Each **symbol** carries 18 coded bits. Each coded bit owns 3 **tone pairs**; for each pair
///   the embedder plays the tone of side "1" or side "0". The 108 candidate frequencies of a
///   symbol are drawn by the key from a 20 Hz grid over 300 Hz – 6 kHz, at least 40 Hz apart.
/// - The payload (32 bits) plus a CRC-16 and a 6-bit tail is convolutionally coded (rate 1/2,
///   K = 7) into 108 coded bits, placed on the 6 × 18 symbol positions by a keyed permutation.
public struct WatermarkFormat: Sendable {
    public static let symbolDuration = 0.4
    public static let symbolsPerCopy = 6
    public static var copyDuration: Double { symbolDuration * Double(symbolsPerCopy) }
    public static let bitsPerSymbol = 18
    public static let pairsPerBit = 3
    public static let lowestFrequency = 300.0
    public static let highestFrequency = 6000.0
    public static let gridSpacing = 20.0
    /// Candidate frequencies of one symbol are at least this many grid steps apart.
    static let minimumSeparation = 2
    /// Each symbol's tones ramp up and down over this long (raised cosine).
    public static let rampDuration = 0.03
    static let infoBits = WatermarkPayload.bitCount + 16
    static let codedBits = 2 * (infoBits + ConvolutionalCode.memory)   // 108
    static var pairsPerSymbol: Int { bitsPerSymbol * pairsPerBit }       // 54

    public let key: WatermarkKey
    /// `frequency[slot][position][pair][side]` in Hz; side 1 is played for a coded 1.
    let frequency: [[[[Double]]]]
    /// Starting phase (radians) of every candidate tone, same indexing.
    let phase: [[[[Double]]]]
    /// For each coded bit, its (slot, position).
    let placement: [(slot: Int, position: Int)]

    public init(key: WatermarkKey) {
        self.key = key
        let grid = Array(stride(from: Self.lowestFrequency, to: Self.highestFrequency, by: Self.gridSpacing))
        var frequency: [[[[Double]]]] = []
        var phase: [[[[Double]]]] = []
        for slot in 0..<Self.symbolsPerCopy {
            var stream = KeyedStream(key: key.bytes, label: "tones/\(slot)")
            var chosen: [Int] = []
            for g in stream.permutation(grid.count) {
                if chosen.allSatisfy({ abs($0 - g) >= Self.minimumSeparation }) { chosen.append(g) }
                if chosen.count == 2 * Self.pairsPerSymbol { break }
            }
            precondition(chosen.count == 2 * Self.pairsPerSymbol, "the grid cannot hold a symbol's tones")
            var phases = KeyedStream(key: key.bytes, label: "phases/\(slot)")
            var f: [[[Double]]] = [], p: [[[Double]]] = []
            var next = 0
            for _ in 0..<Self.bitsPerSymbol {
                var fb: [[Double]] = [], pb: [[Double]] = []
                for _ in 0..<Self.pairsPerBit {
                    fb.append([grid[chosen[next]], grid[chosen[next + 1]]])
                    pb.append([2 * Double.pi * phases.nextUnit(), 2 * Double.pi * phases.nextUnit()])
                    next += 2
                }
                f.append(fb)
                p.append(pb)
            }
            frequency.append(f)
            phase.append(p)
        }
        self.frequency = frequency
        self.phase = phase
        var interleave = KeyedStream(key: key.bytes, label: "placement")
        let positions = interleave.permutation(Self.symbolsPerCopy * Self.bitsPerSymbol)
        placement = (0..<Self.codedBits).map { (positions[$0] / Self.bitsPerSymbol, positions[$0] % Self.bitsPerSymbol) }
    }

    /// The coded bit each (slot, position) carries for `payload`; positions no coded bit uses
    /// carry 0 (the detector knows them).
    func symbolBits(for payload: WatermarkPayload) -> [[Bool]] {
        var bits = [[Bool]](repeating: [Bool](repeating: false, count: Self.bitsPerSymbol), count: Self.symbolsPerCopy)
        for (i, b) in payload.codeword.enumerated() {
            let p = placement[i]
            bits[p.slot][p.position] = b
        }
        return bits
    }
}
