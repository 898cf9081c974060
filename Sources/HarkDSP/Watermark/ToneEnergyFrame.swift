import FoundationEssentials
import Glibc

/// Normalised energy of narrow tones in one power spectrum: the power of the bin nearest a
/// frequency over the local noise floor, capped.
///
/// One bin, not the sum of its neighbours: the spectra are a whole symbol long, so a tone's
/// power sits in its nearest bin even when a clock offset moves it by a third of a bin, and the
/// neighbours would only add noise. The floor is the median power over ±60 Hz, computed on
/// blocks of 16 bins and interpolated between block centres (a median around every tone would
/// cost 50 times more). The cap keeps a host partial that happens to sit on a tone from
/// outweighing everything else.
struct ToneEnergyFrame {
    static let cap: Float = 6
    static let floorHalfWidth = 60.0
    static let blockBins = 16

    private(set) var power: [Float] = []
    /// The floor of every 16-bin block of the last spectrum loaded.
    private(set) var blockFloor: [Float] = []
    /// The floor at every bin of the last spectrum loaded, interpolated as a probe there reads it
    /// (0 outside the loaded bins).
    private(set) var floorAtBin: [Float] = []
    /// The normalised energy of every bin of the last spectrum loaded (0 outside the loaded bins).
    /// Computed once per bin: the nine clock scales' probes fall on the same bins over and over,
    /// and reading them through this table took the pair differences from 14 % of the
    /// detector's time to a few.
    private(set) var energy: [Float] = []
    /// Where each bin up to the last loaded reads its floor (built for the first spectrum's size).
    private var binProbes: [Probe] = []
    private let binWidth: Double
    let firstBin: Int
    let lastBin: Int
    private let halfWidthBins: Int
    private var scratch: [Float] = []
    /// The interior blocks' windows, all `halfWidthBins + 1` values long, go through this 16 at a time.
    private let network: MedianNetwork
    private var wires: [SIMD16<Float>]

    init(binWidth: Double, lowestFrequency: Double, highestFrequency: Double) {
        self.binWidth = binWidth
        halfWidthBins = max(4, Int((Self.floorHalfWidth / binWidth).rounded()))
        firstBin = max(1, Int(lowestFrequency / binWidth) - halfWidthBins - 2)
        lastBin = Int(highestFrequency / binWidth) + halfWidthBins + 2
        network = MedianNetwork(count: halfWidthBins + 1)
        wires = [SIMD16<Float>](repeating: .zero, count: network.wireCount)
    }

    /// Takes the power spectrum (bins 0…) and computes the floor.
    mutating func load(_ spectrum: UnsafeMutableBufferPointer<SIMD2<Float>>) {
        let top = min(lastBin, spectrum.count - 1)
        if power.count != spectrum.count { power = [Float](repeating: 0, count: spectrum.count) }
        let blocks = (top - firstBin) / Self.blockBins + 1
        if blockFloor.count != blocks { blockFloor = [Float](repeating: 0, count: blocks) }
        let (first, half) = (firstBin, halfWidthBins)
        power.withUnsafeMutableBufferPointer { pw in
            for k in first...top {
                let v = spectrum[k]
                pw[k] = v.x * v.x + v.y * v.y
            }
            if scratch.count < half + 1 { scratch = [Float](repeating: 0, count: half + 1) }
            // Every other bin of ±half: neighbours of a Hann-windowed spectrum are correlated, so
            // this halves the work and leaves the median almost unchanged. Blocks whose window
            // lies wholly inside the loaded bins (all but a few at each end) go through the
            // network 16 at a time; the others, with shorter windows, through selection.
            let centre0 = first + Self.blockBins / 2
            let interiorStart = min(blocks, max(0, (half - Self.blockBins / 2 + Self.blockBins - 1) / Self.blockBins))
            let span = top - centre0 - half
            let interiorEnd = max(interiorStart, span < 0 ? 0 : min(blocks, span / Self.blockBins + 1))
            let network = network
            blockFloor.withUnsafeMutableBufferPointer { floors in
                scratch.withUnsafeMutableBufferPointer { window in
                    func edge(_ b: Int) {
                        let centre = centre0 + b * Self.blockBins
                        let lo = max(first, centre - half), hi = min(top, centre + half)
                        var n = 0
                        for k in stride(from: lo, through: hi, by: 2) { window[n] = pw[k]; n += 1 }
                        floors[b] = Self.median(UnsafeMutableBufferPointer(rebasing: window[0..<n]))
                    }
                    for b in 0..<interiorStart { edge(b) }
                    for b in interiorEnd..<blocks { edge(b) }
                }
                wires.withUnsafeMutableBufferPointer { w in
                    let lanes = UnsafeMutableRawPointer(w.baseAddress! + network.firstInput).assumingMemoryBound(to: Float.self)
                    for start in stride(from: interiorStart, to: interiorEnd, by: 16) {
                        let group = start..<min(start + 16, interiorEnd)
                        for b in group {
                            let lo = centre0 + b * Self.blockBins - half
                            for i in 0..<network.count { lanes[i * 16 + b - start] = pw[lo + 2 * i] }
                        }
                        let medians = network.medians(w.baseAddress!)
                        for b in group { floors[b] = medians[b - start] }
                    }
                }
            }
        }
        if binProbes.count != top + 1 || energy.count != spectrum.count {
            binProbes = (0...top).map { probe(bin: $0, spectrumBins: spectrum.count) }
            floorAtBin = [Float](repeating: 0, count: spectrum.count)
            energy = [Float](repeating: 0, count: spectrum.count)
        }
        binProbes.withUnsafeBufferPointer { probes in
            blockFloor.withUnsafeBufferPointer { bf in
                floorAtBin.withUnsafeMutableBufferPointer { fl in
                    energy.withUnsafeMutableBufferPointer { en in
                        power.withUnsafeBufferPointer { pw in
                            for k in first...top {
                                let f = Self.floor(probes[k], blocks: bf.baseAddress!), e = pw[k]
                                fl[k] = f
                                en[k] = f <= 0 ? (e > 0 ? Self.cap : 0) : min(e / f, Self.cap)
                            }
                        }
                    }
                }
            }
        }
    }

    /// The median of `values` (reordered in place), by Hoare's selection: linear time, where
    /// sorting each window cost a quarter of the detector's time.
    static func median(_ v: UnsafeMutableBufferPointer<Float>) -> Float {
        let k = v.count / 2
        var lo = 0, hi = v.count - 1
        while lo < hi {
            let pivot = v[(lo + hi) / 2]
            var i = lo, j = hi
            while i <= j {
                while v[i] < pivot { i += 1 }
                while v[j] > pivot { j -= 1 }
                if i <= j { v.swapAt(i, j); i += 1; j -= 1 }
            }
            if k <= j { hi = j } else if k >= i { lo = i } else { break }
        }
        return v[k]
    }

    /// Where to read a tone: its centre bin and how to interpolate the floor there.
    struct Probe {
        var bin: Int32
        var block: Int32
        var next: Int32
        var frac: Float
    }

    /// Bytes held for the spectrum last loaded.
    var stateBytes: Int {
        (power.count + blockFloor.count + floorAtBin.count + energy.count + scratch.count) * 4
            + binProbes.count * MemoryLayout<Probe>.stride + wires.count * MemoryLayout<SIMD16<Float>>.stride
    }

    /// Number of 16-bin floor blocks for spectra of `spectrumBins` bins.
    func blockCount(spectrumBins: Int) -> Int {
        (min(lastBin, spectrumBins - 1) - firstBin) / Self.blockBins + 1
    }

    /// Precomputes the lookup for a tone at `frequency` Hz (the spectra's layout never changes).
    func probe(at frequency: Double, spectrumBins: Int) -> Probe {
        probe(bin: Int((frequency / binWidth).rounded()), spectrumBins: spectrumBins)
    }

    /// The lookup for bin `k` (bin −1 when it lies outside the loaded bins' range).
    func probe(bin k: Int, spectrumBins: Int) -> Probe {
        guard k >= firstBin, k < spectrumBins else { return Probe(bin: -1, block: 0, next: 0, frac: 0) }
        let blocks = blockCount(spectrumBins: spectrumBins)
        let position = Double(k - firstBin - Self.blockBins / 2) / Double(Self.blockBins)
        let i = max(0, min(blocks - 1, Int(position.rounded(.down))))
        let j = min(blocks - 1, i + 1)
        return Probe(bin: Int32(k), block: Int32(i), next: Int32(j), frac: Float(max(0, min(1, position - Double(i)))))
    }

    /// The floor at a probed tone, interpolated from a frame's block floors.
    @inline(__always)
    static func floor(_ p: Probe, blocks: UnsafePointer<Float>) -> Float {
        let a = blocks[Int(p.block)], b = blocks[Int(p.next)]
        return a + (b - a) * p.frac
    }

    /// For every pair of probed tones, side 1's normalised energy minus side 0's, in units of
    /// `unit` rounded to a byte (normalised energy: power over the floor, capped; 0 when there
    /// is no signal at all), and the two energies' sum. With `unit` ≥ cap / 127 every
    /// difference fits. The difference changes sign with the side the key calls 1, the sum
    /// does not.
    func pairDifferences(_ pairs: UnsafeBufferPointer<(Probe, Probe)>, unit: Float, into out: UnsafeMutablePointer<Int8>,
                         sums: UnsafeMutablePointer<Float>) {
        energy.withUnsafeBufferPointer { en in
            // Bin 0 is never loaded (its energy stays 0): where a probe has no bin (−1) it reads that.
            let scale = 1 / unit
            var i = 0
            while i + 8 <= pairs.count {
                var one = SIMD8<Float>(), zero = SIMD8<Float>()
                for l in 0..<8 {
                    one[l] = en[Int(max(0, pairs[i + l].1.bin))]
                    zero[l] = en[Int(max(0, pairs[i + l].0.bin))]
                }
                UnsafeMutableRawPointer(out + i).storeBytes(of: ByteQuantiser.bytes((one - zero) * scale), as: SIMD8<Int8>.self)
                UnsafeMutableRawPointer(sums + i).storeBytes(of: one + zero, as: SIMD8<Float>.self)
                i += 8
            }
            for i in i..<pairs.count {
                let one = en[Int(max(0, pairs[i].1.bin))], zero = en[Int(max(0, pairs[i].0.bin))]
                out[i] = ByteQuantiser.byte((one - zero) * scale)
                sums[i] = one + zero
            }
        }
    }
}
