import FoundationEssentials
import Glibc

/// The layout of Hark's watermark: how a payload becomes tones in time and frequency
/// (docs/watermark.md explains the choices and their numbers).
///
/// - A **copy** of the payload lasts 2.4 s: 6 symbols of 0.4 s. Copies repeat back to back, so
///   any 2.8 s of marked audio holds every symbol of one copy (possibly the end of one copy and
///   the start of the next, which the detector reassembles).
/// - Each **symbol** carries 18 coded bits. Each coded bit owns 4 **tone pairs**; for each pair
///   the embedder plays the tone of side "1" or side "0". The 144 candidate frequencies of a
///   symbol are drawn by the key from a grid that is densest where critical bands are widest
///   (``WatermarkProfile/grid``): 300 Hz – 6 kHz for TV audio, 600 Hz – 7.5 kHz for a stadium.
/// - The payload (32 bits) plus a CRC-16 and a 6-bit tail is convolutionally coded (rate 1/2,
///   K = 7) into 108 coded bits, placed on the 6 × 18 symbol positions by a keyed permutation.
///
/// Version 1 is the format on air, pinned by golden vectors. A study may lay out the tones
/// otherwise (``init(key:profile:version:tone:)``: the lab's format version 2 is one); the
/// copy, the symbols, the code and the placement stay, and no detector reads a study's format.
public struct WatermarkFormat: Sendable {
    /// The format on air.
    public static let onAir = 1

    public static let symbolDuration = 0.4
    public static let symbolsPerCopy = 6
    public static var copyDuration: Double { symbolDuration * Double(symbolsPerCopy) }
    public static let bitsPerSymbol = 18
    /// More pairs raise the ceiling a faded, noisy room leaves the score (√pairs), but each tone
    /// is weaker for the same −20 dB, which noise-like hosts feel first (docs/watermark.md): on
    /// the bench's living room 3 → 4 → 5 pairs per bit found 95.6 → 97.5 → 98.8 % of the marks at
    /// SNR 10 dB in 6 s, while 5 let broadcast noise hosts at 3 s fall to 28/32 (4: 32/32).
    public static let pairsPerBit = 4
    /// Grid points are rounded to multiples of this (at 48 kHz every one falls on a detector bin).
    public static let gridResolution = 10.0
    /// Zwicker's critical bandwidth at `f` Hz.
    static func criticalBandwidth(_ f: Double) -> Double { 25 + 75 * pow(1 + 1.4 * pow(f / 1000, 2), 0.69) }
    /// Each symbol's tones ramp up and down over this long (raised cosine).
    public static let rampDuration = 0.03
    static let infoBits = WatermarkPayload.bitCount + 16
    static let codedBits = 2 * (infoBits + ConvolutionalCode.memory)   // 108
    public static var pairsPerSymbol: Int { bitsPerSymbol * pairsPerBit }       // 72

    public let key: WatermarkKey
    /// The band the tones use: TV audio or a stadium's PA.
    public let profile: WatermarkProfile
    /// ``onAir`` (1), or the number of the study that laid out the tones.
    public let version: Int
    /// The frequencies this format's tones may take (``WatermarkProfile/grid``).
    public var grid: [Double] { profile.grid }
    /// `frequency[slot][position][pair][side]` in Hz; side 1 is played for a coded 1.
    private(set) var frequency: [[[[Double]]]]
    /// Starting phase (radians) of every candidate tone, same indexing.
    private(set) var phase: [[[[Double]]]]
    /// For each coded bit, its (slot, position).
    let placement: [(slot: Int, position: Int)]

    /// The format on air.
    public init(key: WatermarkKey, profile: WatermarkProfile = .tv) {
        let grid = profile.grid
        // A symbol's candidates are distinct grid points, neighbours allowed: 10 Hz is 4 bins
        // of the detector's 2.5 Hz, where a tone's leakage through the Hann window is under
        // −31 dB, and a symbol's 144 candidates need half of the 284 points (TV).
        precondition(grid.count >= 2 * Self.pairsPerSymbol, "the grid cannot hold a symbol's tones")
        // Each slot draws its 144 candidates and their phases from streams of its own, pair by
        // pair in the order the layout asks for them.
        var chosen: [Int] = [], phases: KeyedStream?, drawn = -1, next = 0
        self.init(key: key, profile: profile, layoutVersion: Self.onAir) { slot, _, _ in
            if slot != drawn {
                var stream = KeyedStream(key: key.bytes, label: "tones/\(slot)")
                chosen = Array(stream.permutation(grid.count).prefix(2 * Self.pairsPerSymbol))
                phases = KeyedStream(key: key.bytes, label: "phases/\(slot)")
                (drawn, next) = (slot, 0)
            }
            defer { next += 2 }
            return ([grid[chosen[next]], grid[chosen[next + 1]]], [2 * Double.pi * phases!.nextUnit(), 2 * Double.pi * phases!.nextUnit()])
        }
    }

    /// A format whose tones `tone` lays out: for each slot, position and pair (called in that
    /// order, slot by slot), the two sides' frequencies in Hz and starting phases in radians,
    /// side 0 first. The copy, symbols, code and placement are the format on air's. A study
    /// gives a `version` of its own: embedders play it, detectors refuse it by that number.
    public init(key: WatermarkKey, profile: WatermarkProfile, version: Int,
                tone: (_ slot: Int, _ position: Int, _ pair: Int) -> (frequency: [Double], phase: [Double])) {
        precondition(version != Self.onAir, "a study's format needs a version of its own")
        self.init(key: key, profile: profile, layoutVersion: version, tone: tone)
    }

    private init(key: WatermarkKey, profile: WatermarkProfile, layoutVersion version: Int,
                 tone: (_ slot: Int, _ position: Int, _ pair: Int) -> (frequency: [Double], phase: [Double])) {
        var frequency: [[[[Double]]]] = [], phase: [[[[Double]]]] = []
        for slot in 0..<Self.symbolsPerCopy {
            var f: [[[Double]]] = [], p: [[[Double]]] = []
            for position in 0..<Self.bitsPerSymbol {
                var fb: [[Double]] = [], pb: [[Double]] = []
                for pair in 0..<Self.pairsPerBit {
                    let t = tone(slot, position, pair)
                    precondition(t.frequency.count == 2 && t.phase.count == 2, "a pair has two sides")
                    fb.append(t.frequency)
                    pb.append(t.phase)
                }
                f.append(fb)
                p.append(pb)
            }
            frequency.append(f)
            phase.append(p)
        }
        self.key = key
        self.profile = profile
        self.version = version
        self.frequency = frequency
        self.phase = phase
        var interleave = KeyedStream(key: key.bytes, label: "placement")
        let positions = interleave.permutation(Self.symbolsPerCopy * Self.bitsPerSymbol)
        placement = (0..<Self.codedBits).map { (positions[$0] / Self.bitsPerSymbol, positions[$0] % Self.bitsPerSymbol) }
    }

    /// The same tones with the two sides of some pairs exchanged: what a key that drew the same
    /// frequencies but other coins would give. Nothing the detector does before scoring a
    /// codeword may depend on the sides (its false-detection bound rests on it); tests check this.
    func swappingSides(where swap: (_ slot: Int, _ position: Int, _ pair: Int) -> Bool) -> WatermarkFormat {
        var other = self
        for slot in frequency.indices {
            for position in frequency[slot].indices {
                for pair in frequency[slot][position].indices where swap(slot, position, pair) {
                    other.frequency[slot][position][pair].reverse()
                    other.phase[slot][position][pair].reverse()
                }
            }
        }
        return other
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
