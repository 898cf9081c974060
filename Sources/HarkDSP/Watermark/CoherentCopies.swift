import Foundation

/// Adds the copies of a symbol coherently: complex spectra, not energies.
///
/// A tone comes back in every copy with the same keyed phase, and a room, being linear and
/// time-invariant, turns it by the same angle each time; the host and the room's noise do not
/// repeat. So the spectra of one symbol's frames from successive copies can be added before
/// the energy is taken: the tone's amplitude adds up while the noise only adds in power, and on
/// noise-like hosts, where each copy's tones stand barely over the floor, two copies score as
/// much as three or four added as energies.
///
/// The one thing that changes between copies is the capture clock: an offset ε turns a tone at f
/// by 2π·f·ε·2.4 s per copy, 1.4 turns at 6 kHz for 100 ppm, far finer than the detector's
/// clock-scale steps. The turn is linear in frequency, so it is one delay τ per alignment,
/// found by scanning τ for the largest sum of the copies' cross-spectra over the alignment's
/// candidate tones. That scan treats both tones of every pair alike, so the score it leads to
/// keeps its keyed coins and its false-detection bound.
///
/// Keeps every frame's complex spectrum over the tone band (about 3.6 MB at any rate), in the
/// same ring order as the detector's pair values.
final class CoherentCopies {
    /// The delay scan: ± this much around the clock scale's own delay (the scales are 0.05 %
    /// apart, so a true offset is within 0.025 % of one; 0.03 % of 2.4 s covers it), first in
    /// coarse steps, then in fine steps around the best, which leave at most 0.03 turn of error
    /// at 6 kHz.
    static let delayRange = 0.0003 * WatermarkFormat.copyDuration
    static let coarseStep = 40e-6
    static let fineStep = 10e-6

    let firstBin: Int
    let binCount: Int
    /// The copy-to-copy delay found for the last alignment, seconds.
    private(set) var lastDelay = 0.0
    let blockCount: Int
    let ringSize: Int
    let binWidth: Double
    /// Every frame's bins, real and imaginary parts side by side (one cache line per read).
    private let spectra: UnsafeMutablePointer<SIMD2<Float>>
    private let floors: UnsafeMutablePointer<Float>
    /// Scratch for one alignment's cross-spectrum terms, padded to whole SIMD vectors.
    private let capacity: Int
    private let termBin: UnsafeMutablePointer<Int32>
    private let termRe: UnsafeMutablePointer<Float>
    private let termIm: UnsafeMutablePointer<Float>
    private let phasorRe: UnsafeMutablePointer<Float>
    private let phasorIm: UnsafeMutablePointer<Float>
    private let stepRe: UnsafeMutablePointer<Float>
    private let stepIm: UnsafeMutablePointer<Float>
    /// e^(−iωτ) at one delay τ, for bin firstBin + 64a + b as `coarse[a] · fine[b]`
    /// (see ``setRotations(delay:)``): 100 sines instead of one per bin.
    private var coarseRotation = [SIMD2<Double>](repeating: .zero, count: 0)
    private var fineRotation = [SIMD2<Double>](repeating: .zero, count: 64)
    /// e^(−iω·step) for every bin, for the coarse and the fine step (so a scan needs no sines).
    private let coarseStepRotation: [SIMD2<Float>]
    private let fineStepRotation: [SIMD2<Float>]

    init(firstBin: Int, lastBin: Int, blockCount: Int, ringSize: Int, binWidth: Double, termCapacity: Int) {
        self.firstBin = firstBin
        binCount = lastBin - firstBin + 1
        self.blockCount = blockCount
        self.ringSize = ringSize
        self.binWidth = binWidth
        spectra = .allocate(capacity: ringSize * binCount)
        floors = .allocate(capacity: ringSize * blockCount)
        spectra.initialize(repeating: .zero, count: ringSize * binCount)
        floors.initialize(repeating: 0, count: ringSize * blockCount)
        capacity = (termCapacity + 7) / 8 * 8
        termBin = .allocate(capacity: capacity)
        termRe = .allocate(capacity: capacity)
        termIm = .allocate(capacity: capacity)
        phasorRe = .allocate(capacity: capacity)
        phasorIm = .allocate(capacity: capacity)
        stepRe = .allocate(capacity: capacity)
        stepIm = .allocate(capacity: capacity)
        coarseRotation = [SIMD2<Double>](repeating: .zero, count: binCount / 64 + 1)
        func stepRotation(_ step: Double) -> [SIMD2<Float>] {
            (0..<(lastBin - firstBin + 1)).map { k in
                let a = -2 * Double.pi * binWidth * step * Double(k + firstBin)
                return SIMD2(Float(cos(a)), Float(sin(a)))
            }
        }
        coarseStepRotation = stepRotation(Self.coarseStep)
        fineStepRotation = stepRotation(Self.fineStep)
    }

    deinit {
        spectra.deallocate()
        for p in [floors, termRe, termIm, phasorRe, phasorIm, stepRe, stepIm] { p.deallocate() }
        termBin.deallocate()
    }

    var stateBytes: Int { ringSize * (2 * binCount + blockCount) * 4 + capacity * 7 * 4 + binCount * 16 }

    /// Stores frame `frame`'s spectrum (bins from 0) and block floors.
    func store(frame: Int, spectrum: UnsafeMutableBufferPointer<SIMD2<Float>>, blockFloors: [Float]) {
        let row = (frame % ringSize) * binCount
        let available = min(binCount, spectrum.count - firstBin)
        for k in 0..<available {
            let v = spectrum[firstBin + k]
            spectra[row + k] = v
        }
        let f = floors + (frame % ringSize) * blockCount
        for b in 0..<min(blockCount, blockFloors.count) { f[b] = blockFloors[b] }
    }

    /// Pair values (side 1 − side 0 of the normalised, capped energy) of one alignment with its
    /// copies added coherently.
    ///
    /// - Parameters:
    ///   - frames: for each slot, the frame of each copy, oldest first (`frames[slot * copies + copy]`).
    ///   - probes: the alignment's clock scale's probes, `pairsPerSymbol` per slot.
    ///   - delayCentre: the copy-to-copy delay its clock scale implies, seconds.
    ///   - out: `symbolsPerCopy × pairsPerSymbol` values.
    func pairValues(frames: [Int], copies: Int, probes: UnsafeBufferPointer<(ToneEnergyFrame.Probe, ToneEnergyFrame.Probe)>,
                    delayCentre: Double, into out: UnsafeMutablePointer<Float>) {
        let S = WatermarkFormat.symbolsPerCopy
        let pps = WatermarkFormat.pairsPerSymbol
        // Cross-spectra of the first two copies at every candidate tone, each normalised by its
        // floors and compressed (square root of its magnitude) so no single host partial rules.
        var n = 0
        func addTerm(_ p: ToneEnergyFrame.Probe, _ a: Int, _ b: Int) {
            let k = Int(p.bin) - firstBin
            guard p.bin >= 0, k >= 0, k < binCount, n < capacity else { return }
            let fa = ToneEnergyFrame.floor(p, blocks: floors + a * blockCount)
            let fb = ToneEnergyFrame.floor(p, blocks: floors + b * blockCount)
            guard fa > 0, fb > 0 else { return }
            let x = spectra[a * binCount + k], y = spectra[b * binCount + k]
            let (ar, ai, br, bi) = (x.x, x.y, y.x, y.y)
            // b · conj(a) / √(fa fb)
            let scale = 1 / (fa * fb).squareRoot()
            var cr = (br * ar + bi * ai) * scale, ci = (bi * ar - br * ai) * scale
            let m = (cr * cr + ci * ci).squareRoot()
            if m > 0 { let c = 1 / m.squareRoot(); cr *= c; ci *= c }
            termBin[n] = Int32(k)
            termRe[n] = cr
            termIm[n] = ci
            n += 1
        }
        for slot in 0..<S {
            let a = frames[slot * copies] % ringSize, b = frames[slot * copies + 1] % ringSize
            for i in 0..<pps {
                addTerm(probes[slot * pps + i].0, a, b)
                addTerm(probes[slot * pps + i].1, a, b)
            }
        }
        // Padding terms count for nothing.
        while n % 8 != 0 { termBin[n] = 0; termRe[n] = 0; termIm[n] = 0; n += 1 }
        var delay = bestDelay(terms: n, from: delayCentre - Self.delayRange, through: delayCentre + Self.delayRange,
                              step: Self.coarseStep, stepRotation: coarseStepRotation)
        delay = bestDelay(terms: n, from: delay - Self.coarseStep, through: delay + Self.coarseStep,
                          step: Self.fineStep, stepRotation: fineStepRotation)
        lastDelay = delay
        setRotations(delay: delay)
        // Coherent energies: Σ_copies X·e^(−iωτ·copy), over the sum of the copies' floors.
        let cap = ToneEnergyFrame.cap * Float(copies)
        var copyRows = [Int](repeating: 0, count: copies)
        for slot in 0..<S {
            for copy in 0..<copies { copyRows[copy] = frames[slot * copies + copy] % ringSize }
            func energy(_ p: ToneEnergyFrame.Probe) -> Float {
                let k = Int(p.bin) - firstBin
                guard p.bin >= 0, k >= 0, k < binCount else { return 0 }
                let step = rotation(k)
                var c: Float = 1, s: Float = 0
                var yr: Float = 0, yi: Float = 0, floor: Float = 0
                for copy in 0..<copies {
                    let r = copyRows[copy]
                    let x = spectra[r * binCount + k]
                    let (xr, xi) = (x.x, x.y)
                    yr += xr * c - xi * s
                    yi += xr * s + xi * c
                    floor += ToneEnergyFrame.floor(p, blocks: floors + r * blockCount)
                    (c, s) = (c * step.x - s * step.y, c * step.y + s * step.x)
                }
                let power = yr * yr + yi * yi
                return floor > 0 ? min(power / floor, cap) : (power > 0 ? cap : 0)
            }
            for i in 0..<pps {
                let pair = probes[slot * pps + i]
                out[slot * pps + i] = energy(pair.1) - energy(pair.0)
            }
        }
    }

    /// e^(−iωτ) at the delay of the last ``setRotations(delay:)``, for bin `firstBin + k`.
    @inline(__always)
    private func rotation(_ k: Int) -> SIMD2<Float> {
        let a = coarseRotation[k >> 6], b = fineRotation[k & 63]
        return SIMD2(Float(a.x * b.x - a.y * b.y), Float(a.x * b.y + a.y * b.x))
    }

    private func setRotations(delay: Double) {
        let w = -2 * Double.pi * binWidth * delay
        for a in coarseRotation.indices {
            let angle = w * Double(firstBin + 64 * a)
            coarseRotation[a] = SIMD2(cos(angle), sin(angle))
        }
        for b in 0..<64 { fineRotation[b] = SIMD2(cos(w * Double(b)), sin(w * Double(b))) }
    }

    /// The delay on the grid `from`…`through` (by `step`) that maximises |Σ term · e^(−iωτ)|.
    private func bestDelay(terms n: Int, from start: Double, through end: Double, step: Double,
                           stepRotation: [SIMD2<Float>]) -> Double {
        let steps = Int(((end - start) / step).rounded()) + 1
        setRotations(delay: start)
        for j in 0..<n {
            let k = Int(termBin[j])
            let r = rotation(k)
            phasorRe[j] = r.x; phasorIm[j] = r.y
            stepRe[j] = stepRotation[k].x; stepIm[j] = stepRotation[k].y
        }
        var best = start, bestPower: Float = -1
        let vectors = n / 8
        for m in 0..<steps {
            var sr = SIMD8<Float>.zero, si = SIMD8<Float>.zero
            for v in 0..<vectors {
                let o = v * 8
                let tr = UnsafeRawPointer(termRe + o).loadUnaligned(as: SIMD8<Float>.self)
                let ti = UnsafeRawPointer(termIm + o).loadUnaligned(as: SIMD8<Float>.self)
                let pr = UnsafeRawPointer(phasorRe + o).loadUnaligned(as: SIMD8<Float>.self)
                let pi = UnsafeRawPointer(phasorIm + o).loadUnaligned(as: SIMD8<Float>.self)
                let qr = UnsafeRawPointer(stepRe + o).loadUnaligned(as: SIMD8<Float>.self)
                let qi = UnsafeRawPointer(stepIm + o).loadUnaligned(as: SIMD8<Float>.self)
                sr += tr * pr - ti * pi
                si += tr * pi + ti * pr
                UnsafeMutableRawPointer(phasorRe + o).storeBytes(of: pr * qr - pi * qi, as: SIMD8<Float>.self)
                UnsafeMutableRawPointer(phasorIm + o).storeBytes(of: pr * qi + pi * qr, as: SIMD8<Float>.self)
            }
            let (r, i) = (sr.sum(), si.sum())
            let power = r * r + i * i
            if power > bestPower { bestPower = power; best = start + Double(m) * step }
        }
        return best
    }
}
