import FoundationEssentials
import Glibc

/// What a host masks from one moment to the next, at a finer time scale than ``MaskingModel``'s
/// 43 ms frames: the host's energy in short blocks (about 2.7 ms) in one band (the embedder
/// keeps one for each of six parts of the mark's band), with forward masking (an energy that
/// decays with a 10 ms time constant after the masker stops) and no pre-masking.
///
/// A frame's threshold is set by the host's energy over the whole frame; a mark that followed it
/// would start up to 20 ms before a drum hit and ring on into the silence after a word. The
/// embedder therefore scales the mark by `√(masker / frame energy)` wherever the masker falls
/// below the frame's mean energy (``gain(masker:frameEnergy:)``). On the bench's drums this took
/// the mark from 13–27 dB *above* the host just before the kicks to under it.
///
/// Backward masking is real (a few milliseconds before a loud onset) but weak, and PEAQ heard
/// what it lent: with the next two blocks' energy counted as masking the present (about 5 ms,
/// 8 ms with the gain's interpolation), drums and bass graded −0.92 at the TV default of the
/// time and −1.14 at −5 dB; with none, −0.61 and −0.82, every other host the same or better, for
/// the same mark power within 1 dB (docs/watermark.md, "Transparency").
public struct TemporalMasking {
    /// Block length in seconds (rounded to samples).
    static let blockSeconds = 0.00267
    /// Forward-masking time constant, seconds.
    static let forwardTau = 0.010

    public let blockLength: Int
    private let decay: Double
    private var filter: BiquadCascade
    private var pendingSum = 0.0
    private var pendingCount = 0
    /// Mean squares of the filtered host per block, from block `firstBlock` on.
    private var energies: [Double] = []
    private var firstBlock = 0
    private var tail = 0.0
    private var tailBlock = -1
    private var scratch: [Float] = []

    /// - Parameter band: the band whose energy masks the mark (Hz).
    public init(sampleRate: Double, band: ClosedRange<Double>) {
        blockLength = max(1, Int((Self.blockSeconds * sampleRate).rounded()))
        decay = exp(-Double(blockLength) / sampleRate / Self.forwardTau)
        filter = .bandPass(low: band.lowerBound, high: band.upperBound, order: 2, sampleRate: sampleRate)
    }

    /// Blocks whose energy is known.
    public var blocksDone: Int { firstBlock + energies.count }

    /// Adds host samples (silence: pass zeros).
    public mutating func append(_ samples: UnsafeBufferPointer<Float>) {
        // A non-finite sample would leave the filter's state non-finite for good. The filtered
        // copy goes into a buffer kept between calls: the embedder appends every block to six
        // parts, and a fresh array each time was six allocations a block.
        if scratch.count < samples.count { scratch = [Float](repeating: 0, count: samples.count) }
        scratch.withUnsafeMutableBufferPointer { buffer in
            let filtered = UnsafeMutableBufferPointer(rebasing: buffer[0..<samples.count])
            for i in samples.indices { filtered[i] = samples[i].isFinite ? samples[i] : 0 }
            filter.process(filtered)
            for x in filtered {
                pendingSum += Double(x) * Double(x)
                pendingCount += 1
                if pendingCount == blockLength {
                    energies.append(pendingSum / Double(blockLength))
                    pendingSum = 0
                    pendingCount = 0
                }
            }
        }
    }

    /// The host's mean energy of block `b` (0 before the first block).
    public func energy(_ b: Int) -> Double {
        guard b >= firstBlock else { return 0 }
        precondition(b < blocksDone, "block \(b) has not arrived")
        return energies[b - firstBlock]
    }

    /// The energy masking block `b`: the larger of the block's own and the decaying energy of
    /// the blocks before. Blocks must be asked for in order (each at least once), and need `b`
    /// to have arrived.
    public mutating func masker(_ b: Int) -> Double {
        while tailBlock < b {
            tailBlock += 1
            tail = max(energy(tailBlock), decay * tail)
        }
        return tail
    }

    /// Forgets blocks before `b`.
    public mutating func discard(before b: Int) {
        let drop = min(b - firstBlock, energies.count)
        guard drop > 64 else { return }
        energies.removeFirst(drop)
        firstBlock += drop
    }

    /// The amplitude gain for the mark where `masker` masks it, given the energy its frame's
    /// threshold was computed from: 1 where the host is at least as loud as its frame's mean,
    /// and 0 where the masker has fallen 100 dB under it (a decayed tail is never exactly 0).
    public static func gain(masker: Double, frameEnergy: Double) -> Double {
        guard frameEnergy > 0, masker > frameEnergy * 1e-10 else { return 0 }
        return min(1, (masker / frameEnergy).squareRoot())
    }
}
