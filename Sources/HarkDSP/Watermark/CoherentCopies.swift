import FoundationEssentials
import Glibc

/// Adds the copies of a symbol coherently: complex spectra, not energies.
///
/// A tone comes back in every copy with the same keyed phase, and a room, being linear and
/// time-invariant, turns it by the same angle each time; the host and the room's noise do not
/// repeat. So the spectra of one symbol's frames from successive copies can be added before
/// the energy is taken: the tone's amplitude adds up while the noise only adds in power. On
/// noise-like hosts, where each copy's tones stand barely over the floor, two copies added this
/// way scored more than three added as energies (pink noise through the bench's living room).
///
/// The one thing that changes between copies is the capture clock: an offset ε turns a tone at f
/// by 2π·f·ε·2.4 s per copy, 1.4 turns at 6 kHz for 100 ppm, far finer than the detector's
/// clock-scale steps. The turn is linear in frequency, so it is one delay τ per alignment,
/// found by scanning τ for the largest real part of the cross-spectra of each copy with the next
/// (all of them, not only the first two), turned back by e^(−iωτ) and summed over the
/// alignment's candidate tones. A tone's cross-spectrum has no phase of its own once turned back
/// (the frames are exactly a copy apart), so the real part, not the magnitude, is what the true τ
/// maximises; and with three or four copies every adjacent pair adds evidence where the first
/// two alone often missed (the bench's stadium with a catalogue, 10 s: 20.6 → 28.1 % detected,
/// together with each copy entering re its own floor, in ``pairValues``).
/// That scan treats both tones of every pair alike, so the score it leads to keeps its keyed
/// coins and its false-detection bound.
///
/// Keeps, for every frame, the complex bins any candidate tone can fall on (under any clock
/// scale), each divided by the square root of the floor there and stored as two bytes (0.6 MB at
/// any rate), in the same ring order as the detector's pair values.
final class CoherentCopies {
    /// The delay scan: ± this much around the clock scale's own delay (the scales are 0.05 %
    /// apart, so a true offset is within 0.025 % of one; 0.03 % of 2.4 s covers it), first in
    /// coarse steps, then in fine steps around the best, which leave at most 0.03 turn of error
    /// at 6 kHz.
    static let delayRange = 0.0003 * WatermarkFormat.copyDuration
    static let coarseStep = 40e-6
    /// A coherent energy is capped at this many times the copies, lower than a single frame's
    /// cap of 6 (``ToneEnergyFrame/cap``): a host partial that holds across copies adds up in
    /// the coherent sum as a tone does. Swept on the bench's hosts through the living room (SNR
    /// 10 and 0 dB, open and with a catalogue) and the stadium (signals/watermark-bench-weak.json,
    /// 1 280 trials): 2 → 846 detected, 3 → 866, 3.5 → 867, 4 → 864, 5 → 856, 6 → 844, 9 → 809.
    static let capPerCopy: Float = 4
    static let fineStep = 10e-6

    /// The bins kept (absolute indices, ascending), and for each spectrum bin its place among
    /// them (−1: not kept).
    let bins: [Int]
    let place: [Int32]
    /// A kept bin's value, re √floor, in units of 1/``quantum``: noise reads about ±16, the
    /// rounding adds noise 40 dB under it, and a tone up to 18 dB over the floor fits, beyond the
    /// cap of its coherent energy (4 per copy, 6 dB). Bytes rather than floats keep harkd in its
    /// memory budget.
    static let quantum: Float = 16
    /// The copy-to-copy delay found for the last alignment, seconds.
    private(set) var lastDelay = 0.0
    let ringSize: Int
    let binWidth: Double
    /// Every frame's kept bins, real and imaginary parts side by side (one cache line per read).
    private let spectra: UnsafeMutablePointer<SIMD2<Int8>>
    private let binCount: Int
    /// Scratch for one alignment's cross-spectrum terms, padded to whole SIMD vectors.
    private let capacity: Int
    private let termBin: UnsafeMutablePointer<Int32>
    private let termKept: UnsafeMutablePointer<Int32>
    private let termRe: UnsafeMutablePointer<Float>
    private let termIm: UnsafeMutablePointer<Float>
    private let phasorRe: UnsafeMutablePointer<Float>
    private let phasorIm: UnsafeMutablePointer<Float>
    private let stepRe: UnsafeMutablePointer<Float>
    private let stepIm: UnsafeMutablePointer<Float>
    /// e^(−iωτ) at one delay τ for every bin.
    private var rotation: BinRotation
    /// e^(−iω·step) for every bin, for the coarse and the fine step (so a scan needs no sines).
    private let coarseStepRotation: [SIMD2<Float>]
    private let fineStepRotation: [SIMD2<Float>]

    /// - Parameters:
    ///   - probes: every tone the detector reads, under every clock scale (their bins are kept).
    init(probes: [ToneEnergyFrame.Probe], ringSize: Int, binWidth: Double, termCapacity: Int) {
        bins = Array(Set(probes.filter { $0.bin >= 0 }.map { Int($0.bin) })).sorted()
        let top = (bins.last ?? 0) + 1
        var place = [Int32](repeating: -1, count: top)
        for (j, b) in bins.enumerated() { place[b] = Int32(j) }
        self.place = place
        binCount = bins.count
        self.ringSize = ringSize
        self.binWidth = binWidth
        spectra = .allocate(capacity: ringSize * max(1, binCount))
        spectra.initialize(repeating: .zero, count: ringSize * max(1, binCount))
        capacity = (termCapacity + 7) / 8 * 8
        termBin = .allocate(capacity: capacity)
        termKept = .allocate(capacity: capacity)
        termRe = .allocate(capacity: capacity)
        termIm = .allocate(capacity: capacity)
        phasorRe = .allocate(capacity: capacity)
        phasorIm = .allocate(capacity: capacity)
        stepRe = .allocate(capacity: capacity)
        stepIm = .allocate(capacity: capacity)
        rotation = BinRotation(bins: top, binWidth: binWidth)
        func stepRotation(_ step: Double) -> [SIMD2<Float>] {
            (0..<top).map { k in
                let a = -2 * Double.pi * binWidth * step * Double(k)
                return SIMD2(Float(cos(a)), Float(sin(a)))
            }
        }
        coarseStepRotation = stepRotation(Self.coarseStep)
        fineStepRotation = stepRotation(Self.fineStep)
    }

    deinit {
        spectra.deallocate()
        for p in [termRe, termIm, phasorRe, phasorIm, stepRe, stepIm] { p.deallocate() }
        termBin.deallocate()
        termKept.deallocate()
    }

    var stateBytes: Int {
        ringSize * binCount * 2 + capacity * 8 * 4 + place.count * 20 + binCount * 8
    }

    /// Stores frame `frame`'s kept bins (from a spectrum of bins 0…), each divided by the square
    /// root of its floor (`floors`: the frame's floor at every bin, as ``ToneEnergyFrame/floorAtBin``).
    func store(frame: Int, spectrum: UnsafeMutableBufferPointer<SIMD2<Float>>, floors: [Float]) {
        precondition(floors.count > (bins.last ?? 0))
        let row = spectra + (frame % ringSize) * binCount
        floors.withUnsafeBufferPointer { f in
            bins.withUnsafeBufferPointer { kept in
                // Four bins (eight values) at a time through the byte quantiser.
                @inline(__always) func scaled(_ j: Int) -> SIMD2<Float> {
                    let floor = f[kept[j]]
                    return floor > 0 ? spectrum[kept[j]] * (Self.quantum / floor.squareRoot()) : .zero
                }
                var j = 0
                while j + 4 <= binCount {
                    let a = scaled(j), b = scaled(j + 1), c = scaled(j + 2), d = scaled(j + 3)
                    let q = ByteQuantiser.bytes(SIMD8(a.x, a.y, b.x, b.y, c.x, c.y, d.x, d.y))
                    UnsafeMutableRawPointer(row + j).storeBytes(of: q, as: SIMD8<Int8>.self)
                    j += 4
                }
                for j in j..<binCount {
                    let v = scaled(j)
                    row[j] = SIMD2(ByteQuantiser.byte(v.x), ByteQuantiser.byte(v.y))
                }
            }
        }
    }

    /// Kept bin `j` of ring row `r`, re √floor.
    @inline(__always)
    func value(_ r: Int, _ j: Int) -> SIMD2<Float> {
        let q = spectra[r * binCount + j]
        return SIMD2(Float(q.x), Float(q.y)) / Self.quantum
    }

    /// Pair values (side 1 − side 0 of the normalised, capped energy) of one alignment with its
    /// copies added coherently.
    ///
    /// - Parameters:
    ///   - frames: for each slot, the frame of each of its copies, oldest first, slot after slot
    ///     (`counts[slot]` frames each). A window of any whole number of symbols holds one copy
    ///     more of some slots than of others.
    ///   - probes: the alignment's clock scale's probes, in ``PairLayout/ringIndex(slot:position:pair:)`` order.
    ///   - delayCentre: the copy-to-copy delay its clock scale implies, seconds.
    ///   - out: the pair values, at ``PairLayout/valueIndex(slot:position:pair:)`` (other entries untouched).
    func pairValues(frames: [Int], counts: [Int], probes: UnsafeBufferPointer<(ToneEnergyFrame.Probe, ToneEnergyFrame.Probe)>,
                    delayCentre: Double, into out: UnsafeMutablePointer<Float>) {
        let S = WatermarkFormat.symbolsPerCopy
        precondition(counts.count == S && counts.allSatisfy { $0 >= 1 } && frames.count == counts.reduce(0, +))
        // Ring rows, as `frames` (slot-major), for both passes below.
        let rows = frames.map { $0 % ringSize }
        var firstRow = [Int](repeating: 0, count: S)
        for slot in 1..<S { firstRow[slot] = firstRow[slot - 1] + counts[slot - 1] }
        var base = 0   // rows[base + c]: copy c of the slot in hand
        var copies = 1
        // Cross-spectra of each copy with the next at every candidate tone (the stored bins are
        // already divided by √floor), each compressed to the square root of its magnitude so no
        // single host partial rules, summed per tone. Copies two or three apart add nothing
        // measurable (one detection in 1 280 on the bench) for twice the work.
        var n = 0
        func addTerm(_ p: ToneEnergyFrame.Probe) {
            guard p.bin >= 0, Int(p.bin) < place.count, n < capacity else { return }
            let j = place[Int(p.bin)]
            guard j >= 0 else { return }
            termBin[n] = p.bin
            termKept[n] = j
            n += 1
        }
        for slot in 0..<S where counts[slot] > 1 {
            (base, copies) = (firstRow[slot], counts[slot])
            let first = n
            for pair in 0..<WatermarkFormat.pairsPerBit {
                for position in 0..<WatermarkFormat.bitsPerSymbol {
                    let p = probes[PairLayout.ringIndex(slot: slot, position: position, pair: pair)]
                    addTerm(p.0)
                    addTerm(p.1)
                }
            }
            crossSpectra(terms: first..<n, rows: rows, copies: base..<(base + copies))
        }
        // Padding terms count for nothing.
        while n % 8 != 0 { termBin[n] = 0; termRe[n] = 0; termIm[n] = 0; n += 1 }
        var delay = bestDelay(terms: n, from: delayCentre - Self.delayRange, through: delayCentre + Self.delayRange,
                              step: Self.coarseStep, stepRotation: coarseStepRotation)
        delay = bestDelay(terms: n, from: delay - Self.coarseStep, through: delay + Self.coarseStep,
                          step: Self.fineStep, stepRotation: fineStepRotation)
        lastDelay = delay
        rotation.set(delay: delay)
        // Coherent energies: |Σ_copies (X/√floor)·e^(−iωτ·copy)|² / copies. Each copy enters re
        // its own floor, so a copy whose floor is high (the host or the room's noise loud at that
        // moment) weighs less than under |Σ X|² / Σ floor; on the bench's living room at SNR
        // 0 dB that read 1-4 points better at 6 and 10 s, open and with a catalogue.
        for slot in 0..<S {
            (base, copies) = (firstRow[slot], counts[slot])
            let cap = Self.capPerCopy * Float(copies)
            let perCopy = 1 / Float(copies)
            func energy(_ p: ToneEnergyFrame.Probe) -> Float {
                guard p.bin >= 0, Int(p.bin) < place.count else { return 0 }
                let j = Int(place[Int(p.bin)])
                guard j >= 0 else { return 0 }
                let step = rotation(Int(p.bin))
                var c: Float = 1, s: Float = 0
                var yr: Float = 0, yi: Float = 0
                for copy in 0..<copies {
                    let x = value(rows[base + copy], j)
                    yr += x.x * c - x.y * s
                    yi += x.x * s + x.y * c
                    (c, s) = (c * step.x - s * step.y, c * step.y + s * step.x)
                }
                return min((yr * yr + yi * yi) * perCopy, cap)
            }
            for pair in 0..<WatermarkFormat.pairsPerBit {
                for position in 0..<WatermarkFormat.bitsPerSymbol {
                    let p = probes[PairLayout.ringIndex(slot: slot, position: position, pair: pair)]
                    out[PairLayout.valueIndex(slot: slot, position: position, pair: pair)] = energy(p.1) - energy(p.0)
                }
            }
        }
    }

    /// Each term's cross-spectra of successive copies (`rows[copies]`, oldest first), y · conj(x),
    /// each compressed to the square root of its magnitude, summed (into `termRe`, `termIm`).
    private func crossSpectra(terms: Range<Int>, rows: [Int], copies: Range<Int>) {
        // Added under the magnitude's square root, it changes no magnitude a term can have
        // (values are multiples of 1/quantum, so a non-zero one is at least 1/quantum²) and
        // keeps an all-zero cross-spectrum zero without a comparison.
        let tiny = Float.leastNormalMagnitude
        for t in terms {
            let j = Int(termKept[t])
            var sr: Float = 0, si: Float = 0
            for c in (copies.lowerBound + 1)..<copies.upperBound {
                let x = value(rows[c - 1], j), y = value(rows[c], j)
                let cr = y.x * x.x + y.y * x.y, ci = y.y * x.x - y.x * x.y
                let m = (cr * cr + ci * ci).squareRoot()
                let k = 1 / (m + tiny).squareRoot()
                sr += cr * k
                si += ci * k
            }
            termRe[t] = sr
            termIm[t] = si
        }
    }

    /// The delay on the grid `from`…`through` (by `step`) that maximises Re Σ term · e^(−iωτ).
    private func bestDelay(terms n: Int, from start: Double, through end: Double, step: Double,
                           stepRotation: [SIMD2<Float>]) -> Double {
        let steps = Int(((end - start) / step).rounded()) + 1
        rotation.set(delay: start)
        for j in 0..<n {
            let k = Int(termBin[j])
            let r = rotation(k), q = stepRotation[k]
            phasorRe[j] = r.x; phasorIm[j] = r.y
            stepRe[j] = q.x; stepIm[j] = q.y
        }
        let m = PhasorScan.bestStep(terms: n, count: steps, termRe: termRe, termIm: termIm, phasorRe: phasorRe,
                                    phasorIm: phasorIm, stepRe: stepRe, stepIm: stepIm)
        return start + Double(m) * step
    }
}
