import FoundationEssentials
import Glibc
import HarkFFT

/// Reads a window's tones coherently across every symbol they sound in: complex bins turned
/// back by their keyed phases, not energies.
///
/// A grid frequency is a candidate in about half of a copy's six slots, each time with its own
/// keyed starting phase. Once that phase is taken off (and the capture clock's drift, one delay
/// per symbol, found as ``CoherentCopies`` finds it per copy), every symbol in which the tone
/// sounds carries the same complex value: the tone's amplitude times the path's gain at that
/// frequency. Two readings of that follow, and each is scored as its own alignment:
///
/// - **flat**: the path is a gain and a delay (a broadcast chain, a codec, a resampler, a
///   cable): the delay is found from all tones at once (an inverse FFT over the grid) and each
///   symbol's bin is projected onto the phase it implies. Against an energy, that is the
///   difference between coherent and square-law detection: at a tone 3 dB under its floor the
///   projection's deflection is some three times the energy's.
/// - **per tone**: the path is a room, whose gain and phase differ from tone to tone (a room
///   with RT60 0.5 s decorrelates within some 4 Hz, the grid is 10 Hz and more apart). Each
///   tone's gain is estimated from the sum of its other candidate symbols in the window, and
///   each symbol's bin is projected onto that estimate.
///
/// Everything that picks delays and gains sums both tones of every pair alike, so a pair's
/// value changes sign, and nothing else, when the key's coin for that pair is turned: the
/// score stays a Rademacher sum and the false-detection bound holds (docs/watermark.md).
final class CoherentSymbols {
    /// A projection is capped at this many times the floor's amplitude, and a tone's channel
    /// likewise, so that a host partial sitting on a tone cannot outweigh the rest (energies
    /// are capped at 6 likewise).
    static let cap: Float = 3
    /// The per-tone reading caps each symbol's bin at this many floor amplitudes.
    static let perToneCap: Float = 2
    /// The frame that reads a symbol is within half a hop of it; the ramps add a little.
    static let delayRange = 0.03
    /// Residual clock drift per symbol: scales are 0.05 % apart, so a true offset is within
    /// 0.025 % of one; 0.03 % of 0.4 s.
    static let driftRange = 0.0003 * WatermarkFormat.symbolDuration
    static let driftCoarseStep = 40e-6 / Double(WatermarkFormat.symbolsPerCopy)
    static let driftFineStep = 10e-6 / Double(WatermarkFormat.symbolsPerCopy)
    /// The last drift step, from the window's two halves: ± one fine step in steps this long.
    static let driftHalvesStep = 0.1e-6

    private let store: CoherentCopies
    private let binWidth: Double
    /// e^(−iφ) for every candidate tone's keyed phase, in ring order, side 0 then side 1.
    private let keyed: UnsafeMutablePointer<SIMD2<Float>>
    private let capacity: Int
    // One alignment's occurrences (a candidate tone in one symbol), in time order.
    private let occKept: UnsafeMutablePointer<Int32>
    private let occTime: UnsafeMutablePointer<Int32>
    private let occU: UnsafeMutablePointer<SIMD2<Float>>
    private let occOut: UnsafeMutablePointer<Int32>
    private let occSign: UnsafeMutablePointer<Float>
    // Per kept bin: its channel, how many symbols fed it, its last symbol, a phasor and its step
    // (``scanDelay(active:from:step:count:)`` reuses the last two per active tone instead).
    private let keptCount: Int
    private let channel: UnsafeMutablePointer<SIMD2<Float>>
    private let early: UnsafeMutablePointer<SIMD2<Float>>
    private let earlyTime: UnsafeMutablePointer<SIMD2<Float>>
    private let seen: UnsafeMutablePointer<Int32>
    private let lastTime: UnsafeMutablePointer<Int32>
    private let phasor: UnsafeMutablePointer<SIMD2<Float>>
    private let step: UnsafeMutablePointer<SIMD2<Float>>
    /// The kept bins the window's candidates fall on.
    private let active: UnsafeMutablePointer<Int32>
    // Scan terms: values, and phasors with their steps, real and imaginary parts apart (eight
    // terms at a time).
    private let termKept: UnsafeMutablePointer<Int32>
    /// Per kept bin and lag, its term in the coarse drift scan (−1: none yet).
    private let group: UnsafeMutablePointer<Int32>
    static let maxLag = WatermarkFormat.symbolsPerCopy + 1
    private let termLag: UnsafeMutablePointer<Int32>
    private let termRe: UnsafeMutablePointer<Float>
    private let termIm: UnsafeMutablePointer<Float>
    private let scanRe: UnsafeMutablePointer<Float>
    private let scanIm: UnsafeMutablePointer<Float>
    private let scanStepRe: UnsafeMutablePointer<Float>
    private let scanStepIm: UnsafeMutablePointer<Float>
    private var rotation: BinRotation
    private var stepRotation: BinRotation
    private let fft: RealFFT
    private let realPart: UnsafeMutablePointer<Float>
    /// The drift per symbol and the delay found for the last alignment, seconds.
    private(set) var lastDrift = 0.0
    private(set) var lastDelay = 0.0

    init(store: CoherentCopies, format: WatermarkFormat, binWidth: Double, maxSymbols: Int) throws {
        self.store = store
        self.binWidth = binWidth
        let S = WatermarkFormat.symbolsPerCopy, B = WatermarkFormat.bitsPerSymbol, P = WatermarkFormat.pairsPerBit
        let ringCount = S * WatermarkFormat.pairsPerSymbol
        keyed = .allocate(capacity: 2 * ringCount)
        for slot in 0..<S {
            for position in 0..<B {
                for pair in 0..<P {
                    let r = PairLayout.ringIndex(slot: slot, position: position, pair: pair)
                    for side in 0..<2 {
                        let phi = format.phase[slot][position][pair][side]
                        keyed[2 * r + side] = SIMD2(Float(cos(phi)), Float(-sin(phi)))
                    }
                }
            }
        }
        keptCount = max(1, store.bins.count)
        capacity = (max(keptCount, maxSymbols * 2 * WatermarkFormat.pairsPerSymbol) + 7) / 8 * 8
        occKept = .allocate(capacity: capacity)
        occTime = .allocate(capacity: capacity)
        occU = .allocate(capacity: capacity)
        occOut = .allocate(capacity: capacity)
        occSign = .allocate(capacity: capacity)
        channel = .allocate(capacity: keptCount)
        early = .allocate(capacity: keptCount)
        earlyTime = .allocate(capacity: keptCount)
        seen = .allocate(capacity: keptCount)
        seen.initialize(repeating: 0, count: keptCount)
        lastTime = .allocate(capacity: keptCount)
        phasor = .allocate(capacity: keptCount)
        step = .allocate(capacity: keptCount)
        active = .allocate(capacity: keptCount)
        termKept = .allocate(capacity: capacity)
        group = .allocate(capacity: keptCount * Self.maxLag)
        group.initialize(repeating: -1, count: keptCount * Self.maxLag)
        termLag = .allocate(capacity: capacity)
        termRe = .allocate(capacity: capacity)
        termIm = .allocate(capacity: capacity)
        scanRe = .allocate(capacity: capacity)
        scanIm = .allocate(capacity: capacity)
        scanStepRe = .allocate(capacity: capacity)
        scanStepIm = .allocate(capacity: capacity)
        let top = (store.bins.last ?? 0) + 1
        rotation = BinRotation(bins: top, binWidth: binWidth)
        stepRotation = BinRotation(bins: top, binWidth: binWidth)
        var size = 2
        while size < 2 * (top + 1) { size *= 2 }
        fft = try RealFFT(size: size)
        realPart = .allocate(capacity: size)
    }

    deinit {
        keyed.deallocate()
        for p in [occKept, occTime, occOut, seen, lastTime, active, termKept, termLag, group] { p.deallocate() }
        for p in [occU, channel, early, earlyTime, phasor, step] { p.deallocate() }
        for p in [occSign, termRe, termIm, scanRe, scanIm, scanStepRe, scanStepIm, realPart] { p.deallocate() }
    }

    var stateBytes: Int {
        capacity * 52 + keptCount * (52 + 4 * Self.maxLag) + fft.size * 16 + 2 * WatermarkFormat.symbolsPerCopy * WatermarkFormat.pairsPerSymbol * 8
    }

    @inline(__always)
    private func multiply(_ a: SIMD2<Float>, _ b: SIMD2<Float>) -> SIMD2<Float> {
        SIMD2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x)
    }

    /// `x` scaled down, phase kept, to magnitude `cap` where it is larger.
    @inline(__always)
    private func limit(_ x: SIMD2<Float>, to cap: Float) -> SIMD2<Float> {
        let m = (x.x * x.x + x.y * x.y).squareRoot()
        return m > cap ? x * (cap / m) : x
    }

    /// aⁿ by squaring: the scans raise a tone's rotation to lags of up to some 50 half symbols.
    @inline(__always)
    private func power(_ a: SIMD2<Float>, _ n: Int32) -> SIMD2<Float> {
        var p = SIMD2<Float>(1, 0), base = a, e = n
        while e > 0 {
            if e & 1 != 0 { p = multiply(p, base) }
            base = multiply(base, base)
            e >>= 1
        }
        return p
    }

    /// Pair values of one alignment read two ways from one gather and drift: every symbol
    /// projected on one delay and gain (flat), and on its own tone's channel (per tone).
    ///
    /// - Parameters:
    ///   - frames: the frame read for each symbol of the window, oldest first.
    ///   - slots: each of those symbols' slot.
    ///   - probes: the alignment's clock scale's probes, in ring order.
    ///   - driftCentre: how much later in its symbol each frame starts than the one before, as
    ///     the clock scale implies, seconds.
    ///   - out: the pair values, at ``PairLayout/valueIndex(slot:position:pair:)`` (zeroed first).
    ///   - perTone: where to put the per-tone reading's pair values, at the same indices
    ///     (zeroed first; see ``perToneValues(occurrences:active:into:)``).
    func pairValues(frames: [Int], slots: [Int], probes: UnsafeBufferPointer<(ToneEnergyFrame.Probe, ToneEnergyFrame.Probe)>,
                    driftCentre: Double, into out: UnsafeMutablePointer<Float>, perTone: UnsafeMutablePointer<Float>) {
        out.update(repeating: 0, count: PairLayout.valueCount)
        perTone.update(repeating: 0, count: PairLayout.valueCount)
        let n = gather(frames: frames, slots: slots, probes: probes)
        guard n > 0 else { return }
        var activeCount = 0
        for i in 0..<n { let j = Int(occKept[i]); seen[j] = 0 }
        for i in 0..<n {
            let j = Int(occKept[i])
            if seen[j] == 0 { active[activeCount] = Int32(j); activeCount += 1 }
            seen[j] += 1
        }
        // 1. The drift, coarsely: cross-spectra of each tone's successive candidate symbols.
        var drift = coarseDrift(occurrences: n, centre: driftCentre)
        // 2. Turn each symbol back by it, about the window's middle (so that the finer drift
        //    hardly moves the delay), then the drift finely from the window's two halves, each
        //    summed coherently: the cross-spectra above are products of two noisy bins and miss
        //    by microseconds per symbol, a radian at 6 kHz across a long window.
        let mid = Double(frames.count - 1) / 2
        turn(occurrences: n, drift: drift, mid: mid)
        let residual = halvesDrift(occurrences: n, active: activeCount, mid: mid)
        if residual != 0 { turn(occurrences: n, drift: residual, mid: mid) }
        drift += residual
        lastDrift = drift
        flatValues(occurrences: n, active: activeCount, into: out)
        // Last: it caps the occurrences in place.
        perToneValues(occurrences: n, active: activeCount, into: perTone)
    }

    /// The flat reading of the turned occurrences: each tone's channel, one delay and gain from
    /// all of them, and every occurrence projected on the phase they imply.
    private func flatValues(occurrences n: Int, active activeCount: Int, into out: UnsafeMutablePointer<Float>) {
        // 3. Each tone's channel: its symbols summed, re √symbols, capped.
        for a in 0..<activeCount { channel[Int(active[a])] = .zero }
        for i in 0..<n { channel[Int(occKept[i])] += occU[i] }
        for a in 0..<activeCount {
            let j = Int(active[a])
            channel[j] = limit(channel[j] / Float(seen[j]).squareRoot(), to: Self.cap)
        }
        // 4. The delay: an inverse FFT over the grid finds it to 1/(size · bin width), a scan
        //    between the transform's points (±half of one) to a sixteenth of that.
        let coarse = 1 / (Double(fft.size) * binWidth)
        let found = scanDelay(active: activeCount, from: coarseDelay(active: activeCount) - coarse / 2, step: coarse / 16, count: 17)
        lastDelay = found.delay
        let size = (found.sum.x * found.sum.x + found.sum.y * found.sum.y).squareRoot()
        guard size > 0 else { return }
        // 5. Project every symbol's bin on the phase the path implies there, arg g + ω·delay.
        let gain = SIMD2(Float(found.sum.x / size), Float(-found.sum.y / size))
        rotation.set(delay: found.delay)
        for a in 0..<activeCount {
            let j = Int(active[a])
            channel[j] = multiply(gain, rotation(store.bins[j]))
        }
        let scale = Float(2).squareRoot()
        for i in 0..<n {
            let v = multiply(occU[i], channel[Int(occKept[i])]).x * scale
            out[Int(occOut[i])] += occSign[i] * max(-Self.cap, min(Self.cap, v))
        }
    }

    /// The per-tone reading: each occurrence projected on its own tone's channel, estimated
    /// from the tone's other candidate symbols in the window (its value left out, so that its own
    /// power adds nothing whichever side it is on).
    ///
    /// A room gives every tone its own gain and phase, and holds them for minutes; with the
    /// keyed phase and the drift taken off, a tone that sounds carries the same complex value in
    /// every symbol it sounds in, whichever slot or copy. The estimate sums all of a tone's
    /// candidate symbols, sounding or not, both tones of every pair alike, so a pair's value
    /// turns its sign with the key's coin and nothing else, as the bound needs. Each value is
    /// capped at ``perToneCap`` floor amplitudes first, so that a host partial on a tone adds a
    /// bounded term. Before the default strength was raised (−10 dB then, a tone 7 dB under its
    /// floor) this estimate was mostly noise; at the transparent default it is not
    /// (docs/watermark.md, Detection, step 5). Caps the occurrences in place, so it runs last.
    private func perToneValues(occurrences n: Int, active activeCount: Int, into out: UnsafeMutablePointer<Float>) {
        for a in 0..<activeCount { channel[Int(active[a])] = .zero }
        for i in 0..<n {
            occU[i] = limit(occU[i], to: Self.perToneCap)
            channel[Int(occKept[i])] += occU[i]
        }
        for i in 0..<n {
            let x = occU[i]
            let others = channel[Int(occKept[i])] - x
            out[Int(occOut[i])] += occSign[i] * (x.x * others.x + x.y * others.y)
        }
    }

    /// Every candidate tone of every symbol, its keyed phase taken off; returns how many.
    private func gather(frames: [Int], slots: [Int], probes: UnsafeBufferPointer<(ToneEnergyFrame.Probe, ToneEnergyFrame.Probe)>) -> Int {
        let ringSize = store.ringSize
        var n = 0
        store.place.withUnsafeBufferPointer { place in
            for t in 0..<frames.count {
                let row = frames[t] % ringSize
                let slot = slots[t]
                for pair in 0..<WatermarkFormat.pairsPerBit {
                    for position in 0..<WatermarkFormat.bitsPerSymbol {
                        let r = PairLayout.ringIndex(slot: slot, position: position, pair: pair)
                        let p = probes[r]
                        let out = Int32(PairLayout.valueIndex(slot: slot, position: position, pair: pair))
                        for side in 0..<2 {
                            let bin = Int(side == 0 ? p.0.bin : p.1.bin)
                            guard bin >= 0, bin < place.count, n < capacity else { continue }
                            let j = place[bin]
                            guard j >= 0 else { continue }
                            occKept[n] = j
                            occTime[n] = Int32(t)
                            occU[n] = multiply(store.value(row, Int(j)), keyed[2 * r + side])
                            occOut[n] = out
                            occSign[n] = side == 1 ? 1 : -1
                            n += 1
                        }
                    }
                }
            }
        }
        return n
    }

    /// Turns every occurrence by e^(−iω·drift·(t − mid)): one table of rotations per symbol,
    /// each the one before advanced by the drift (the occurrences come in time order). Stepping
    /// each tone's phasor on from its previous symbol instead made chains of dependent products,
    /// a tenth of the detector's time.
    private func turn(occurrences n: Int, drift: Double, mid: Double) {
        guard n > 0 else { return }
        var now = occTime[0]
        rotation.set(delay: drift * (Double(now) - mid))
        stepRotation.set(delay: drift)
        var i = 0
        while i < n {
            let t = occTime[i]
            while now < t { rotation.advance(by: stepRotation); now += 1 }
            while i < n, occTime[i] == t {
                occU[i] = multiply(occU[i], rotation(store.bins[Int(occKept[i])]))
                i += 1
            }
        }
    }

    /// The drift that best lines up each tone's successive candidate symbols: Re Σ x_t·conj(x_s)
    /// e^(−iω·drift·(t − s)) over the scan, each cross-spectrum compressed to the square root of
    /// its magnitude so no host partial rules; coarse steps, then fine ones around the best.
    private func coarseDrift(occurrences n: Int, centre: Double) -> Double {
        for i in 0..<n { lastTime[Int(occKept[i])] = -1 }
        // Terms of the same tone and lag turn alike, so they are summed first: a long window's
        // 3 000 cross-spectra become some 800 terms.
        var terms = 0
        for i in 0..<n {
            let j = Int(occKept[i])
            let prev = Int(lastTime[j])
            lastTime[j] = Int32(i)
            guard prev >= 0 else { continue }
            let lag = occTime[i] - occTime[prev]
            guard lag > 0, lag < Self.maxLag else { continue }
            let a = occU[i], b = occU[prev]
            var cross = SIMD2(a.x * b.x + a.y * b.y, a.y * b.x - a.x * b.y)
            // An all-zero cross-spectrum stays zero without a branch (see CoherentCopies).
            let m = (cross.x * cross.x + cross.y * cross.y).squareRoot()
            cross /= (m + Float.leastNormalMagnitude).squareRoot()
            let key = j * Self.maxLag + Int(lag)
            var t = Int(group[key])
            if t < 0 {
                t = terms
                group[key] = Int32(t)
                termKept[t] = Int32(j)
                termLag[t] = lag
                termRe[t] = 0
                termIm[t] = 0
                terms += 1
            }
            termRe[t] += cross.x
            termIm[t] += cross.y
        }
        for t in 0..<terms { group[Int(termKept[t]) * Self.maxLag + Int(termLag[t])] = -1 }
        guard terms > 0 else { return centre }
        var drift = scan(terms: terms, from: centre - Self.driftRange, step: Self.driftCoarseStep,
                         count: Int((2 * Self.driftRange / Self.driftCoarseStep).rounded()) + 1)
        drift = scan(terms: terms, from: drift - Self.driftCoarseStep, step: Self.driftFineStep,
                     count: Int((2 * Self.driftCoarseStep / Self.driftFineStep).rounded()) + 1)
        return drift
    }

    /// The residual drift from the window's halves: per tone, the later half's sum against the
    /// earlier half's, lag their mean symbols' distance rounded to a half symbol.
    private func halvesDrift(occurrences n: Int, active activeCount: Int, mid: Double) -> Double {
        for a in 0..<activeCount { let j = Int(active[a]); channel[j] = .zero; early[j] = .zero; earlyTime[j] = .zero }
        // earlyTime: (Σ t, count) of the earlier half; step: the same for the later half.
        for a in 0..<activeCount { step[Int(active[a])] = .zero }
        for i in 0..<n {
            let j = Int(occKept[i]), t = Double(occTime[i])
            if t < mid {
                early[j] += occU[i]; earlyTime[j] += SIMD2(Float(t), 1)
            } else if t > mid {
                channel[j] += occU[i]; step[j] += SIMD2(Float(t), 1)
            }
        }
        var terms = 0
        for a in 0..<activeCount {
            let j = Int(active[a])
            guard earlyTime[j].y > 0, step[j].y > 0 else { continue }
            let distance = step[j].x / step[j].y - earlyTime[j].x / earlyTime[j].y
            let x = channel[j], y = early[j]
            termRe[terms] = x.x * y.x + x.y * y.y
            termIm[terms] = x.y * y.x - x.x * y.y
            termKept[terms] = Int32(j)
            termLag[terms] = Int32((2 * distance).rounded())
            terms += 1
        }
        guard terms > 0 else { return 0 }
        // Lags are in half symbols here.
        let steps = Int((Self.driftFineStep / Self.driftHalvesStep).rounded())
        return 2 * scan(terms: terms, from: -Self.driftFineStep / 2, step: Self.driftHalvesStep / 2, count: 2 * steps + 1)
    }

    /// Of `count` drifts from `start` by `stepSize`, the one that maximises Re Σ term·e^(−iω·drift·lag).
    private func scan(terms n: Int, from start: Double, step stepSize: Double, count: Int) -> Double {
        rotation.set(delay: start)
        stepRotation.set(delay: stepSize)
        let padded = (n + 7) / 8 * 8
        for t in 0..<padded {
            guard t < n else {
                scanRe[t] = 0; scanIm[t] = 0; scanStepRe[t] = 1; scanStepIm[t] = 0; termRe[t] = 0; termIm[t] = 0
                continue
            }
            let k = store.bins[Int(termKept[t])], lag = termLag[t]
            let p = lag >= 0 ? power(rotation(k), lag) : power(SIMD2(rotation(k).x, -rotation(k).y), -lag)
            let q = lag >= 0 ? power(stepRotation(k), lag) : power(SIMD2(stepRotation(k).x, -stepRotation(k).y), -lag)
            scanRe[t] = p.x; scanIm[t] = p.y; scanStepRe[t] = q.x; scanStepIm[t] = q.y
        }
        let m = PhasorScan.bestStep(terms: padded, count: count, termRe: termRe, termIm: termIm, phasorRe: scanRe,
                                    phasorIm: scanIm, stepRe: scanStepRe, stepIm: scanStepIm)
        return start + Double(m) * stepSize
    }

    /// The delay within ±``delayRange`` where |Σ g e^(−iωδ)| peaks, on the inverse FFT's grid.
    private func coarseDelay(active activeCount: Int) -> Double {
        // FFTW's c2r gives y_m = 2 Re D(−T_m) for spectrum g and 2 Im D(−T_m) for −i·g,
        // with D(δ) = Σ g e^(−iωδ) and T_m = m / (size · bin width).
        let spectrum = fft.spectrum, output = fft.input
        let size = fft.size
        for k in 0..<spectrum.count { spectrum[k] = .zero }
        for a in 0..<activeCount { let j = Int(active[a]); spectrum[store.bins[j]] = channel[j] }
        fft.inverse()
        let span = min(size / 2 - 1, Int(Self.delayRange * Double(size) * binWidth))
        for d in -span...span { realPart[d + span] = output[(d + size) % size] }
        // The inverse overwrote the spectrum.
        for k in 0..<spectrum.count { spectrum[k] = .zero }
        for a in 0..<activeCount { let j = Int(active[a]); let g = channel[j]; spectrum[store.bins[j]] = SIMD2(g.y, -g.x) }
        fft.inverse()
        var best = 0, bestPower: Float = -1
        for d in -span...span {
            let re = realPart[d + span], im = output[(d + size) % size]
            let p = re * re + im * im
            if p > bestPower { bestPower = p; best = d }
        }
        return -Double(best) / (Double(size) * binWidth)
    }

    /// D(δ) = Σ g e^(−iωδ) at `count` delays from `start` by `step`; the one of largest magnitude.
    private func scanDelay(active activeCount: Int, from start: Double, step stepSize: Double,
                           count: Int) -> (delay: Double, sum: SIMD2<Double>) {
        rotation.set(delay: start)
        stepRotation.set(delay: stepSize)
        for a in 0..<activeCount {
            let k = store.bins[Int(active[a])]
            phasor[a] = rotation(k)
            step[a] = stepRotation(k)
        }
        var best = (delay: start, sum: SIMD2<Double>.zero)
        var bestPower = -1.0
        for m in 0..<count {
            var d = SIMD2<Float>.zero
            for a in 0..<activeCount {
                d += multiply(channel[Int(active[a])], phasor[a])
                phasor[a] = multiply(phasor[a], step[a])
            }
            let power = Double(d.x * d.x + d.y * d.y)
            if power > bestPower { bestPower = power; best = (start + Double(m) * stepSize, SIMD2(Double(d.x), Double(d.y))) }
        }
        return best
    }
}
