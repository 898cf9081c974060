import FoundationEssentials
import Glibc
import HarkFFT

/// Makes the watermark signal for a host, block by block: the payload's tones, each as loud as
/// the host's masking threshold allows (``MaskingModel``), frame by frame, so the mark stays
/// under what the host hides: quiet passages get a quiet mark, a tonal host a much quieter one
/// than a noisy host, and silence or a pause the host cannot cover none at all.
///
/// The tones sounding in one symbol share the threshold of each critical band they fall in: a
/// tone gets the threshold at its frequency divided by the number of the symbol's tones within
/// half a Bark of it, times ``strength`` (dB re that share; 0 puts the mark at the threshold;
/// each profile's ``WatermarkProfile/defaultStrength`` is the transparent one).
///
/// Feed the host (mono; mix channels first) with ``process(_:into:)``. Watermark sample `n`
/// belongs to host sample `n`, but it can only be computed once ``latency`` more host samples
/// have arrived (the analysis looks ahead half a frame), so after `k` host samples
/// `k − latency` watermark samples exist; the caller keeps the host until its watermark
/// arrives. ``finish(into:)`` delivers the rest. Memory is constant.
public final class WatermarkEmbedder {
    public let format: WatermarkFormat
    /// The payload of the first copy (of every copy unless the payload changes by copy).
    public let payload: WatermarkPayload
    public let sampleRate: Double
    /// Tone power re the tone's share of the masking threshold, dB.
    public let strength: Double
    /// How loud bands' thresholds are lowered (nil: not at all).
    public var levelDiscrimination: MaskingModel.LevelDiscrimination? { model.levelDiscrimination }
    /// How many host samples ahead of the watermark the embedder must see.
    public let latency: Int
    /// The delay at which a caller that hands on as many samples as it gives never waits for
    /// the mark: ``latency`` plus one analysis hop, since the mark comes a frame's hop at a time.
    public var streamingLatency: Int { latency + hop }

    private let model: MaskingModel
    /// The short-time envelope of each part of the band (``TemporalBand``); each tone follows
    /// its own part's.
    private var temporal: [TemporalBand]
    private let hop: Int
    private let gain: Double
    /// The payload of each copy, by its index on the copy timeline (copy 0 begins
    /// ``copyOffset`` seconds before the first host sample).
    private let payloadOfCopy: (Int) -> WatermarkPayload
    /// The tones of the copy being synthesised, and that copy's index.
    private var active: ActiveTones
    private var activeCopy = 0
    private let copyOffset: Double
    private let temporalParts: [(tones: ClosedRange<Double>, filter: ClosedRange<Double>)]

    // Host history for analysis frames, and the thresholds of recent frames.
    private var host: [Float] = []
    private var hostStart = 0          // absolute index of host[0]
    private var hostEnd = 0            // absolute samples received
    private var framesDone = 0         // frames whose threshold is in `thresholds`
    private var thresholds: [[Double]] // ring: [frame % ring][partition]
    private let ring = 4
    private var frame: [Float]
    // Scratch for one stretch of synthesis, a row per part: the tones, then the gains.
    private var partTones: [Double] = []
    private var partGains: [Double] = []
    private var emitted = 0            // output samples produced
    private var finished = false

    /// - Parameters:
    ///   - strength: tone power re its share of the host's masking threshold, dB; nil for the
    ///     profile's ``WatermarkProfile/defaultStrength``, the transparent level measured with
    ///     PEAQ. Higher values trade audibility for robustness (docs/watermark.md has the cost
    ///     of each).
    ///   - copyOffset: seconds into the copy timeline at which the host starts (0: a copy begins
    ///     at the first sample).
    ///   - levelDiscrimination: lowers the threshold of loud bands (``MaskingModel/LevelDiscrimination``);
    ///     nil (the default) for the model every profile's default strength was measured with.
    public convenience init(format: WatermarkFormat, payload: WatermarkPayload, sampleRate: Double,
                            strength: Double? = nil, copyOffset: Double = 0,
                            levelDiscrimination: MaskingModel.LevelDiscrimination? = nil) throws {
        try self.init(format: format, payloadOfCopy: { _ in payload }, sampleRate: sampleRate, strength: strength,
                      copyOffset: copyOffset, temporalParts: TemporalBand.partCount, levelDiscrimination: levelDiscrimination)
    }

    /// A mark whose payload changes from copy to copy: `payloadOfCopy(k)` is the payload of
    /// copy `k` of the copy timeline, whose copy 0 begins `copyOffset` seconds before the
    /// first host sample (an airing code, ``AiringCode``, changes it every 25 copies, a minute).
    /// Each symbol fades in and out (``WatermarkFormat/rampDuration``), so a payload changes
    /// between two copies without a click.
    public convenience init(format: WatermarkFormat, sampleRate: Double, strength: Double? = nil, copyOffset: Double = 0,
                            levelDiscrimination: MaskingModel.LevelDiscrimination? = nil,
                            payloadOfCopy: @escaping (Int) -> WatermarkPayload) throws {
        try self.init(format: format, payloadOfCopy: payloadOfCopy, sampleRate: sampleRate, strength: strength,
                      copyOffset: copyOffset, temporalParts: TemporalBand.partCount, levelDiscrimination: levelDiscrimination)
    }

    /// `temporalParts`: how many parts of the band follow their own envelope (tests compare
    /// the one envelope the embedder used to have with the default).
    convenience init(format: WatermarkFormat, payload: WatermarkPayload, sampleRate: Double,
                     strength: Double?, copyOffset: Double, temporalParts: Int) throws {
        try self.init(format: format, payloadOfCopy: { _ in payload }, sampleRate: sampleRate, strength: strength,
                      copyOffset: copyOffset, temporalParts: temporalParts)
    }

    private init(format: WatermarkFormat, payloadOfCopy: @escaping (Int) -> WatermarkPayload, sampleRate: Double,
                 strength: Double?, copyOffset: Double, temporalParts: Int,
                 levelDiscrimination: MaskingModel.LevelDiscrimination? = nil) throws {
        self.format = format
        self.payloadOfCopy = payloadOfCopy
        self.sampleRate = sampleRate
        let strength = strength ?? format.profile.defaultStrength
        self.strength = strength
        self.copyOffset = copyOffset
        let model = try MaskingModel(sampleRate: sampleRate, levelDiscrimination: levelDiscrimination)
        self.model = model
        hop = model.hop
        gain = pow(10, strength / 10)
        thresholds = [[Double]](repeating: [Double](repeating: 0, count: model.partitionCount), count: ring)
        frame = [Float](repeating: 0, count: model.frameLength)
        let grid = format.grid
        let parts = TemporalBand.parts(of: grid.first!...grid.last!, count: temporalParts, sampleRate: sampleRate)
        self.temporalParts = parts
        let ring = self.ring
        temporal = parts.map { TemporalBand(sampleRate: sampleRate, band: $0.filter, ring: ring) }
        activeCopy = Self.copy(ofSymbol: Self.symbol(at: copyOffset))
        let first = payloadOfCopy(activeCopy)
        payload = first
        active = ActiveTones(payload: first, format: format, model: model, parts: parts)
        latency = model.frameLength / 2 + 2 * hop
    }

    /// The tones `slot` plays for the first copy's payload: frequency, masking partition, and
    /// the share of that partition's threshold each may use.
    func tones(slot: Int) -> [(frequency: Double, partition: Int, share: Double)] {
        active.frequency[slot].indices.map { (active.frequency[slot][$0], active.partition[slot][$0], active.share[slot][$0]) }
    }

    /// The symbol of the copy timeline that time `t` (seconds on it) falls in.
    private static func symbol(at t: Double) -> Int { Int((t / WatermarkFormat.symbolDuration).rounded(.down)) }

    /// The copy that symbol `symbol` of the timeline belongs to (symbols before the origin
    /// belong to negative copies).
    private static func copy(ofSymbol symbol: Int) -> Int {
        let S = WatermarkFormat.symbolsPerCopy
        return symbol >= 0 ? symbol / S : -((-symbol + S - 1) / S)
    }

    /// Adds host samples; appends the watermark samples that are now ready to `out`.
    public func process(_ samples: UnsafeBufferPointer<Float>, into out: inout [Float]) {
        precondition(!finished)
        host.append(contentsOf: samples)
        hostEnd += samples.count
        for k in temporal.indices { temporal[k].masking.append(samples) }
        analyse(upTo: hostEnd, emitting: hostEnd - latency, into: &out)
        trimHost()
    }

    /// Flushes the last ``latency`` samples of watermark (the host is taken as silent beyond
    /// its end).
    public func finish(into out: inout [Float]) {
        finished = true
        let silence = [Float](repeating: 0, count: latency + 4 * hop)
        silence.withUnsafeBufferPointer { s in for k in temporal.indices { temporal[k].masking.append(s) } }
        analyse(upTo: hostEnd + latency + 2 * hop, emitting: hostEnd, into: &out)
    }

    /// Analyses every frame whose window ends at or before `limit` (samples past `hostEnd`
    /// count as silence), and after each one synthesises the watermark samples it completes,
    /// up to `emit`: the thresholds are kept for the last few frames only.
    private func analyse(upTo limit: Int, emitting emit: Int, into out: inout [Float]) {
        let length = frame.count
        while true {
            let start = framesDone * hop - length / 2
            guard start + length <= limit else { return }
            for i in 0..<length {
                let n = start + i
                frame[i] = n >= hostStart && n < hostEnd ? host[n - hostStart] : 0
            }
            frame.withUnsafeBufferPointer { model.analyse($0) }
            // Into the ring's own rows: no array is allocated per frame.
            let row = framesDone % ring
            for p in 0..<model.partitionCount { thresholds[row][p] = model.threshold[p] }
            for k in temporal.indices { temporal[k].frameEnergy[framesDone % ring] = windowedEnergy(temporal[k].masking, from: start, length: length) }
            framesDone += 1
            // Sample n needs frames n / hop and n / hop + 1, and its temporal gain the frames
            // around the next block's centre.
            synthesise(upTo: min(emit, (framesDone - 2) * hop), into: &out)
        }
    }

    /// The Hann-weighted mean of a part's band energy over a frame's window, from its temporal
    /// blocks: what the frame's threshold scales with.
    private func windowedEnergy(_ temporal: TemporalMasking, from start: Int, length: Int) -> Double {
        let b = temporal.blockLength
        var sum = 0.0, weights = 0.0
        var block = max(0, start / b)
        while block * b + b / 2 < start + length, block < temporal.blocksDone {
            let centre = Double(block * b + b / 2 - start) / Double(length)
            if centre >= 0 {
                let w = 0.5 - 0.5 * cos(2 * Double.pi * centre)
                sum += w * w * temporal.energy(block)
                weights += w * w
            }
            block += 1
        }
        return weights > 0 ? sum / weights : 0
    }

    /// The temporal gain of `part` at the centre of block `b` (``TemporalMasking``).
    private func blockGain(_ part: inout TemporalBand, _ b: Int) -> Double {
        let length = part.masking.blockLength
        let centre = Double(b * length + length / 2)
        let m = Int(centre) / hop
        let frac = (centre - Double(m * hop)) / Double(hop)
        guard m + 1 < framesDone else { return 0 }
        let e0 = part.frameEnergy[m % ring], e1 = part.frameEnergy[(m + 1) % ring]
        return TemporalMasking.gain(masker: part.masking.masker(b), frameEnergy: e0 + (e1 - e0) * frac)
    }

    /// The temporal gains of part `k` at samples `start ..< start + out.count`, interpolated
    /// between block centres. Samples must be asked for in order.
    private func temporalGains(_ k: Int, from start: Int, into out: UnsafeMutableBufferPointer<Double>) {
        // The part is taken out of the array while it works: one exclusive access, not one a sample.
        var part = temporal[k]
        let length = part.masking.blockLength
        for j in out.indices {
            let n = start + j
            let b = max(0, (n - length / 2) / length)
            while part.gainBlock < b + 1 {
                part.gainBlock += 1
                let next = part.gainBlock >= 0 ? blockGain(&part, part.gainBlock) : 0
                part.gains = (part.gains.1, next)
            }
            let frac = max(0, min(1, Double(n - (b * length + length / 2)) / Double(length)))
            out[j] = part.gains.0 + (part.gains.1 - part.gains.0) * frac
        }
        temporal[k] = part
    }

    /// The amplitude tone `i` of `slot` may have at frame `m`.
    private func amplitude(slot: Int, tone i: Int, frame m: Int) -> Double {
        guard m < framesDone else { return 0 }
        let power = thresholds[m % ring][active.partition[slot][i]] * active.share[slot][i] * gain
        return (2 * power).squareRoot()
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
            let copy = Self.copy(ofSymbol: symbol)
            if copy != activeCopy {
                activeCopy = copy
                let p = payloadOfCopy(copy)
                if p != active.payload { active = ActiveTones(payload: p, format: format, model: model, parts: temporalParts) }
            }
            // Each part's tones summed in a row of their own, then weighted by its envelope.
            let parts = temporal.count
            if partTones.count < parts * count {
                partTones = [Double](repeating: 0, count: parts * count)
                partGains = partTones
            }
            partTones.withUnsafeMutableBufferPointer { block in
                block.update(repeating: 0)
                for i in active.frequency[slot].indices {
                    let a0 = amplitude(slot: slot, tone: i, frame: frame)
                    let a1 = amplitude(slot: slot, tone: i, frame: frame + 1)
                    if a0 == 0 && a1 == 0 { continue }
                    let omega = 2 * Double.pi * active.frequency[slot][i] / fs
                    // Absolute phase: 2π f t + φ, so a tone is continuous within its symbol.
                    var theta = omega * (Double(n) - symbolStart) + active.phase[slot][i]
                        + 2 * Double.pi * active.frequency[slot][i] * (symbolStart / fs)
                    theta = theta.truncatingRemainder(dividingBy: 2 * Double.pi)
                    var c = cos(theta), s = sin(theta)
                    let cd = cos(omega), sd = sin(omega)
                    let row = active.temporal[slot][i] * count
                    for j in 0..<count {
                        let frac = Double(n + j - frame * hop) / Double(hop)
                        block[row + j] += (a0 + (a1 - a0) * frac) * s
                        (c, s) = (c * cd - s * sd, s * cd + c * sd)
                    }
                }
            }
            partGains.withUnsafeMutableBufferPointer { g in
                for k in 0..<parts { temporalGains(k, from: n, into: UnsafeMutableBufferPointer(rebasing: g[(k * count)..<((k + 1) * count)])) }
            }
            // The rows are read through pointers: array subscripts here, six a sample, carried
            // exclusivity checks.
            partTones.withUnsafeBufferPointer { tones in
                partGains.withUnsafeBufferPointer { gains in
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
                        var v = 0.0
                        for k in 0..<parts { v += tones[k * count + j] * gains[k * count + j] }
                        out.append(Float(v * envelope))
                    }
                }
            }
            n += count
        }
        emitted = n
        // Frames still to come read blocks from half a frame before the next frame's centre.
        for k in temporal.indices {
            temporal[k].masking.discard(before: (emitted - frame.count) / temporal[k].masking.blockLength - 2)
        }
    }

    /// Drops host samples no future analysis frame needs.
    private func trimHost() {
        let needed = framesDone * hop - frame.count
        let drop = needed - hostStart
        if drop > 4 * hop {
            host.removeFirst(drop)
            hostStart += drop
        }
    }
}

/// The tones one payload sounds in each slot of a copy.
private struct ActiveTones {
    let payload: WatermarkPayload
    let frequency: [[Double]]
    let phase: [[Double]]
    /// Per slot and tone: the masking partition and the share of its threshold the tone may use.
    let partition: [[Int]]
    let share: [[Double]]
    /// Per slot and tone: the index of its part of the band (``TemporalBand``).
    let temporal: [[Int]]

    init(payload: WatermarkPayload, format: WatermarkFormat, model: MaskingModel,
         parts: [(tones: ClosedRange<Double>, filter: ClosedRange<Double>)]) {
        self.payload = payload
        let symbolBits = format.symbolBits(for: payload)
        var af: [[Double]] = [], ap: [[Double]] = [], apart: [[Int]] = [], ashare: [[Double]] = []
        for slot in 0..<WatermarkFormat.symbolsPerCopy {
            var f: [Double] = [], p: [Double] = []
            for position in 0..<WatermarkFormat.bitsPerSymbol {
                let side = symbolBits[slot][position] ? 1 : 0
                for pair in 0..<WatermarkFormat.pairsPerBit {
                    f.append(format.frequency[slot][position][pair][side])
                    p.append(format.phase[slot][position][pair][side])
                }
            }
            let barks = f.map(MaskingModel.bark)
            af.append(f)
            ap.append(p)
            apart.append(f.map { model.partition(of: $0) })
            ashare.append(barks.map { z in 1 / Double(barks.filter { abs($0 - z) <= 0.5 }.count) })
        }
        frequency = af
        phase = ap
        partition = apart
        share = ashare
        temporal = af.map { slot in slot.map { f in parts.lastIndex { $0.tones.lowerBound <= f } ?? 0 } }
    }
}

/// One part of the mark's band, with its own ``TemporalMasking``: a kick drum's decay must not
/// lend its masking to a 5 kHz tone, nor a hi-hat to a 400 Hz one.
///
/// With one envelope for the whole band, every tone followed the loudest part of the host (a
/// 400 Hz tone held its level after the kick under it had decayed, as long as a cymbal kept the
/// envelope up), and PEAQ graded the bench's drums and bass −0.82 at −5 dB: −0.12 with 3 parts,
/// −0.11 with 6. Speech improved too (−0.63 → −0.44 at −5 dB with 3 parts; at −2.5 dB −0.84
/// with 3, −0.81 with 6 and with 12), for the same mark power (docs/watermark.md, "Level").
struct TemporalBand {
    /// Parts the band is cut into, equal on the Bark scale (about 2.5 Bark each for TV).
    static let partCount = 6

    var masking: TemporalMasking
    /// Ring: the part's energy each frame's threshold came from.
    var frameEnergy: [Double]
    var gainBlock = -2         // block of gains.1; gains.0 is the block before
    var gains = (0.0, 0.0)

    init(sampleRate: Double, band: ClosedRange<Double>, ring: Int) {
        masking = TemporalMasking(sampleRate: sampleRate, band: band)
        frameEnergy = [Double](repeating: 0, count: ring)
    }

    /// `count` parts of `tones`, equal on the Bark scale: the tones each holds, and the band its
    /// filter passes (0.8 × its lowest tone … 1.2 × its highest, as the whole band's was).
    static func parts(of tones: ClosedRange<Double>, count: Int, sampleRate: Double)
        -> [(tones: ClosedRange<Double>, filter: ClosedRange<Double>)] {
        let z0 = MaskingModel.bark(tones.lowerBound), z1 = MaskingModel.bark(tones.upperBound)
        func frequency(_ z: Double) -> Double {
            var lo = 0.0, hi = sampleRate / 2
            for _ in 0..<60 { let mid = (lo + hi) / 2; if MaskingModel.bark(mid) < z { lo = mid } else { hi = mid } }
            return (lo + hi) / 2
        }
        var edges = (0...count).map { frequency(z0 + (z1 - z0) * Double($0) / Double(count)) }
        edges[0] = tones.lowerBound; edges[count] = tones.upperBound
        return (0..<count).map { k in
            (edges[k]...edges[k + 1], (0.8 * edges[k])...min(1.2 * edges[k + 1], 0.45 * sampleRate))
        }
    }
}
