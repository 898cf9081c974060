import Foundation
import HarkFFT

/// Makes the watermark signal for a host, block by block: tones at the payload's frequencies,
/// each as loud as `level` times the host's RMS in the critical band around it, smoothed over
/// ±0.5 s. Quiet passages therefore get a quiet mark, silence gets none.
///
/// Feed the host (mono; mix channels first) with ``process(_:into:)``. Watermark sample `n`
/// belongs to host sample `n`, but it can only be computed once ``latency`` more host samples
/// have arrived (the smoothing looks ahead), so after `k` host samples `k − latency` watermark
/// samples exist; the caller keeps the host until its watermark arrives. ``finish(into:)``
/// delivers the rest. Memory is constant.
public final class WatermarkEmbedder {
    /// Analysis hop and smoothing of the host's band power.
    static let analysisHop = 0.02
    static let smoothingRadius = 25          // frames each side: ±0.5 s

    public let format: WatermarkFormat
    public let payload: WatermarkPayload
    public let sampleRate: Double
    /// Tone amplitude relative to the RMS of the host in the tone's critical band.
    public let level: Double
    /// A further gain per point of the format's ``WatermarkFormat/grid`` (all 1 unless the caller lowers the
    /// tones of some bands, as `hark embed` does where a band would come too close to the host).
    public let gridGains: [Double]
    /// How many host samples ahead of the watermark the embedder must see.
    public let latency: Int

    private let hop: Int
    private let window: [Float]
    private let fft: RealFFT
    private let grid: [Double]
    private let bandBins: [(lo: Int, hi: Int)]
    private let bandScale: Double
    private let symbolBits: [[Bool]]
    /// Index into `grid` of every active tone: [slot][tone].
    private let activeGrid: [[Int]]
    private let activeFrequency: [[Double]]
    private let activePhase: [[Double]]
    private let copyOffset: Double

    // Host history for analysis frames, and the band powers of recent frames.
    private var host: [Float] = []
    private var hostStart = 0          // absolute index of host[0]
    private var hostEnd = 0            // absolute samples received
    private var framesDone = 0         // frames whose band power is in `power`
    private var power: [[Float]]       // ring: [frame % ring][grid]
    private let ring: Int
    private var emitted = 0            // output samples produced
    private var finished = false

    /// - Parameters:
    ///   - level: tone amplitude re the host's critical-band RMS (linear); `hark embed` sets it
    ///     from the requested watermark-to-host ratio.
    ///   - gridGains: gain per grid point, applied on top of `level` (nil: 1 everywhere).
    ///   - copyOffset: seconds into the copy timeline at which the host starts (0: a copy begins
    ///     at the first sample).
    public init(format: WatermarkFormat, payload: WatermarkPayload, sampleRate: Double, level: Double,
                gridGains: [Double]? = nil, copyOffset: Double = 0) throws {
        precondition(gridGains == nil || gridGains!.count == format.grid.count)
        self.format = format
        self.payload = payload
        self.sampleRate = sampleRate
        self.level = level
        self.gridGains = gridGains ?? [Double](repeating: 1, count: format.grid.count)
        self.copyOffset = copyOffset
        hop = max(1, Int((Self.analysisHop * sampleRate).rounded()))
        let windowLength = 2 * hop
        var size = 256
        while size < windowLength { size *= 2 }
        fft = try RealFFT(size: size)
        window = (0..<windowLength).map { Float(0.5 - 0.5 * cos(2 * Double.pi * (Double($0) + 0.5) / Double(windowLength))) }
        let windowEnergy = window.reduce(0.0) { $0 + Double($1 * $1) }
        // Mean square of the band-limited host from one-sided bins: 2 Σ|X|² / (N Σw²).
        bandScale = 2 / (Double(size) * windowEnergy)
        grid = format.grid
        let binWidth = sampleRate / Double(size)
        bandBins = grid.map { f in
            let bw = WatermarkFormat.criticalBandwidth(f)
            return (max(1, Int(((f - bw / 2) / binWidth).rounded())), min(size / 2, Int(((f + bw / 2) / binWidth).rounded())))
        }
        symbolBits = format.symbolBits(for: payload)
        var ag: [[Int]] = [], af: [[Double]] = [], ap: [[Double]] = []
        for slot in 0..<WatermarkFormat.symbolsPerCopy {
            var g: [Int] = [], f: [Double] = [], p: [Double] = []
            for position in 0..<WatermarkFormat.bitsPerSymbol {
                let side = symbolBits[slot][position] ? 1 : 0
                for pair in 0..<WatermarkFormat.pairsPerBit {
                    let freq = format.frequency[slot][position][pair][side]
                    f.append(freq)
                    p.append(format.phase[slot][position][pair][side])
                    g.append(grid.firstIndex(of: freq)!)
                }
            }
            ag.append(g); af.append(f); ap.append(p)
        }
        activeGrid = ag
        activeFrequency = af
        activePhase = ap
        ring = 2 * Self.smoothingRadius + 4
        power = [[Float]](repeating: [Float](repeating: 0, count: grid.count), count: ring)
        latency = (Self.smoothingRadius + 2) * hop + hop
    }

    /// Adds host samples; appends the watermark samples that are now ready to `out`.
    public func process(_ samples: UnsafeBufferPointer<Float>, into out: inout [Float]) {
        precondition(!finished)
        host.append(contentsOf: samples)
        hostEnd += samples.count
        analyse(upTo: hostEnd)
        synthesise(upTo: hostEnd - latency, into: &out)
        trimHost()
    }

    /// Flushes the last ``latency`` samples of watermark (the host is taken as silent beyond
    /// its end).
    public func finish(into out: inout [Float]) {
        finished = true
        analyse(upTo: hostEnd + latency + 2 * hop)
        synthesise(upTo: hostEnd, into: &out)
    }

    /// Computes band powers for every frame whose window ends at or before `limit`
    /// (samples past `hostEnd` count as silence).
    private func analyse(upTo limit: Int) {
        let windowLength = window.count
        while true {
            let centre = framesDone * hop
            let start = centre - windowLength / 2
            guard start + windowLength <= limit else { return }
            let input = fft.input
            for i in 0..<fft.size { input[i] = 0 }
            for i in 0..<windowLength {
                let n = start + i
                if n >= hostStart && n < hostEnd { input[i] = host[n - hostStart] * window[i] }
            }
            fft.forward()
            let spectrum = fft.spectrum
            // Cumulative power so each band is two lookups.
            var cumulative = [Double](repeating: 0, count: fft.binCount + 1)
            for k in 0..<fft.binCount {
                let v = spectrum[k]
                cumulative[k + 1] = cumulative[k] + Double(v.x * v.x + v.y * v.y)
            }
            let slot = framesDone % ring
            for (g, b) in bandBins.enumerated() {
                power[slot][g] = Float((cumulative[b.hi + 1] - cumulative[b.lo]) * bandScale)
            }
            framesDone += 1
        }
    }

    /// Smoothed band power of grid frequency `g` around frame `m` (Hann weights over ±radius).
    private func smoothedPower(_ g: Int, frame m: Int) -> Double {
        let r = Self.smoothingRadius
        var sum = 0.0, weights = 0.0
        for i in -r...r {
            let f = m + i
            guard f >= 0, f < framesDone, f > framesDone - ring else { continue }
            let w = 0.5 + 0.5 * cos(Double.pi * Double(i) / Double(r + 1))
            sum += w * Double(power[f % ring][g])
            weights += w
        }
        return weights > 0 ? sum / weights : 0
    }

    private func synthesise(upTo limit: Int, into out: inout [Float]) {
        guard limit > emitted else { return }
        let fs = sampleRate
        let symbolSamples = WatermarkFormat.symbolDuration * fs
        let ramp = WatermarkFormat.rampDuration
        var n = emitted
        out.reserveCapacity(out.count + limit - n)
        while n < limit {
            // One stretch: within one symbol and one analysis-frame interval.
            let t = Double(n) / fs + copyOffset
            let symbol = Int((t / WatermarkFormat.symbolDuration).rounded(.down))
            let symbolStart = (Double(symbol) * WatermarkFormat.symbolDuration - copyOffset) * fs
            let symbolEnd = min(Double(limit), (symbolStart + symbolSamples).rounded(.up))
            let frame = n / hop
            let end = min(Int(symbolEnd), (frame + 1) * hop, limit)
            let count = max(1, end - n)
            let slot = ((symbol % WatermarkFormat.symbolsPerCopy) + WatermarkFormat.symbolsPerCopy) % WatermarkFormat.symbolsPerCopy
            var block = [Double](repeating: 0, count: count)
            for (i, g) in activeGrid[slot].enumerated() {
                let level = self.level * gridGains[g]
                let a0 = level * (2 * smoothedPower(g, frame: frame) / Double(WatermarkFormat.pairsPerBit)).squareRoot()
                let a1 = level * (2 * smoothedPower(g, frame: frame + 1) / Double(WatermarkFormat.pairsPerBit)).squareRoot()
                if a0 == 0 && a1 == 0 { continue }
                let omega = 2 * Double.pi * activeFrequency[slot][i] / fs
                // Absolute phase: 2π f t + φ, so a tone is continuous within its symbol.
                var theta = omega * (Double(n) - symbolStart) + activePhase[slot][i]
                    + 2 * Double.pi * activeFrequency[slot][i] * (symbolStart / fs)
                theta = theta.truncatingRemainder(dividingBy: 2 * Double.pi)
                var c = cos(theta), s = sin(theta)
                let cd = cos(omega), sd = sin(omega)
                for j in 0..<count {
                    let frac = Double(n + j - frame * hop) / Double(hop)
                    block[j] += (a0 + (a1 - a0) * frac) * s
                    (c, s) = (c * cd - s * sd, s * cd + c * sd)
                }
            }
            for j in 0..<count {
                let inSymbol = (Double(n + j) - symbolStart) / fs
                let envelope: Double
                if inSymbol < ramp {
                    envelope = 0.5 - 0.5 * cos(Double.pi * inSymbol / ramp)
                } else if inSymbol > WatermarkFormat.symbolDuration - ramp {
                    envelope = 0.5 - 0.5 * cos(Double.pi * (WatermarkFormat.symbolDuration - inSymbol) / ramp)
                } else {
                    envelope = 1
                }
                out.append(Float(block[j] * envelope))
            }
            n += count
        }
        emitted = n
    }

    /// Drops host samples no future analysis frame needs.
    private func trimHost() {
        let needed = (framesDone * hop) - window.count
        let drop = needed - hostStart
        if drop > 4 * hop {
            host.removeFirst(drop)
            hostStart += drop
        }
    }
}
