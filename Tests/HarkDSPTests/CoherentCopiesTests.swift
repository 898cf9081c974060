import Foundation
import Testing
@testable import HarkDSP

/// `CoherentCopies` on synthetic spectra: unit-power complex noise in every bin, and for every
/// pair a tone on its side-1 bin (as strong as the noise unless told otherwise), whose phase
/// turns by ω·τ from one copy to the next (a capture clock 100 ppm fast turns it by ω · 240 µs).
@Suite struct CoherentCopiesTests {
    private struct Gaussian {
        var state: UInt64
        mutating func unit() -> Double {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return (Double(state >> 11) + 0.5) / Double(1 << 53)
        }
        mutating func complex(power: Double) -> SIMD2<Float> {
            let r = (-power * log(unit())).squareRoot(), a = 2 * Double.pi * unit()
            return SIMD2(Float(r * cos(a)), Float(r * sin(a)))
        }
    }

    private let S = WatermarkFormat.symbolsPerCopy
    private let pps = WatermarkFormat.pairsPerSymbol
    private let binWidth = 2.5
    private let delay = 240e-6

    /// Pair values of `copyCount` copies from `CoherentCopies` (told to scan around `centre`) and,
    /// for comparison, the same spectra's capped energies added copy by copy.
    /// `lastCopyNoise` scales the noise power of the newest copy (and the floor it reads).
    private func values(centre: Double, seed: UInt64, copyCount: Int = 2, tonePower: Double = 1,
                        lastCopyNoise: Double = 1) -> (coherent: [Float], energies: [Float], delay: Double) {
        let tones = ToneEnergyFrame(binWidth: binWidth, lowestFrequency: 300, highestFrequency: 6000)
        let bins = tones.lastBin + 1
        let format = WatermarkFormat(key: .demo)
        // In the detector's order (PairLayout), and for each slot the indices of its probes.
        var probes: [(ToneEnergyFrame.Probe, ToneEnergyFrame.Probe)] = []
        var ofSlot = [[Int]](repeating: [], count: S)
        for pair in 0..<WatermarkFormat.pairsPerBit {
            for slot in 0..<S {
                for position in 0..<WatermarkFormat.bitsPerSymbol {
                    let f = format.frequency[slot][position][pair]
                    ofSlot[slot].append(probes.count)
                    probes.append((tones.probe(at: f[0], spectrumBins: bins), tones.probe(at: f[1], spectrumBins: bins)))
                }
            }
        }
        let copies = CoherentCopies(probes: probes.flatMap { [$0.0, $0.1] }, ringSize: 32, binWidth: binWidth,
                                    termCapacity: 2 * S * pps)
        var rng = Gaussian(state: seed)
        // The median of unit-mean exponential power, as the detector's floor would read it.
        let quietFloors = [Float](repeating: Float(log(2.0)), count: bins)
        var frames: [Int] = []
        var energies = [Float](repeating: 0, count: S * pps)
        for slot in 0..<S {
            let phases = (0..<pps).map { _ in 2 * Double.pi * rng.unit() }
            for copy in 0..<copyCount {
                let noise = copy == copyCount - 1 ? lastCopyNoise : 1
                let floors = quietFloors.map { $0 * Float(noise) }
                var spectrum = (0..<bins).map { _ in rng.complex(power: noise) }
                for (i, p) in ofSlot[slot].enumerated() {
                    let k = Int(probes[p].1.bin)
                    let angle = phases[i] + 2 * Double.pi * Double(k) * binWidth * delay * Double(copy)
                    spectrum[k] += SIMD2(Float(cos(angle)), Float(sin(angle))) * Float(tonePower.squareRoot())
                }
                let frame = copy * S + slot
                frames.append(frame)   // slot-major, as pairValues(frames:) reads them
                spectrum.withUnsafeMutableBufferPointer { copies.store(frame: frame, spectrum: $0, floors: floors) }
                for p in ofSlot[slot] {
                    let e = { (k: Int32) in min((spectrum[Int(k)].x * spectrum[Int(k)].x + spectrum[Int(k)].y * spectrum[Int(k)].y) / floors[0],
                                                 ToneEnergyFrame.cap) }
                    energies[p] += e(probes[p].1.bin) - e(probes[p].0.bin)
                }
            }
        }
        // Padding lanes stay zero and count for nothing in the scores below.
        var out = [Float](repeating: 0, count: PairLayout.valueCount)
        probes.withUnsafeBufferPointer { p in
            out.withUnsafeMutableBufferPointer { copies.pairValues(frames: frames, counts: [Int](repeating: copyCount, count: S), probes: p, delayCentre: centre, into: $0.baseAddress!) }
        }
        return (out, energies, copies.lastDelay)
    }

    /// The score of the codeword that plays side 1 everywhere.
    private func score(_ v: [Float]) -> Double {
        Double(v.reduce(0, +)) / Double(v.reduce(0) { $0 + $1 * $1 }).squareRoot()
    }

    @Test func findsTheDelayAndBeatsAddingEnergies() {
        for seed: UInt64 in [1, 2, 3] {
            // The scan is centred 0.5 ms away from the true delay: it must find it (30 µs is
            // 0.18 turn at 6 kHz) ...
            let (coherent, energies, found) = values(centre: delay + 0.5e-3, seed: seed)
            #expect(abs(found - delay) <= 30e-6, "seed \(seed): delay \(found)")
            // ... and then score higher than the energies added (theory: by 10 % with tones as
            // strong as the noise, more for weaker ones).
            let (zc, ze) = (score(coherent), score(energies))
            #expect(zc > 1.03 * ze, "seed \(seed): coherent \(zc), energies \(ze)")
        }
    }

    @Test func everyPairOfCopiesHelpsFindTheDelay() {
        // Tones 8 dB under the noise: two copies' cross-spectra alone put the delay hundreds of
        // µs off for several seeds; with four copies, all six pairs of copies (three lags) agree
        // on it.
        var missesWithTwo = 0
        for seed: UInt64 in 1...12 {
            let two = values(centre: delay + 0.3e-3, seed: seed, copyCount: 2, tonePower: 0.15).delay
            let four = values(centre: delay + 0.3e-3, seed: seed, copyCount: 4, tonePower: 0.15).delay
            if abs(two - delay) > 100e-6 { missesWithTwo += 1 }
            #expect(abs(four - delay) <= 20e-6, "seed \(seed): four copies put the delay at \(four)")
        }
        #expect(missesWithTwo >= 3, "two copies missed only \(missesWithTwo) of 12: the case is too easy to show anything")
    }

    @Test func aLoudCopyDoesNotDrownTheQuietOne() {
        // The second copy's floor is 20 dB higher (the host loud at that moment). Entering re its
        // own floor it adds little, and it must not bury the first copy's tones either: the
        // score stays near that of the energies added copy by copy (6.1-6.9 against 7.4-8.4).
        // Added in raw amplitude over the sum of the floors, the tones would stand at 4 / 101 of
        // the noise instead of 1 / 1, and the score would fall near zero.
        for seed: UInt64 in [1, 2, 3] {
            let (coherent, energies, _) = values(centre: delay, seed: seed, lastCopyNoise: 100)
            let (zc, ze) = (score(coherent), score(energies))
            #expect(zc > 0.6 * ze, "seed \(seed): coherent \(zc), energies \(ze)")
        }
    }

    @Test func withoutTheRightDelayTheCopiesCancel() {
        // Outside the scan (2 ms away) the tones' phases disagree across 6 kHz and the
        // coherent sum is worse than adding energies: the delay is what makes it work.
        let (coherent, energies, _) = values(centre: delay + 2e-3, seed: 1)
        #expect(score(coherent) < score(energies))
    }
}
