import FoundationEssentials
import Glibc
import HarkFFT

/// Finds Hark watermarks in a stream of mono samples pushed in blocks of any size.
///
/// Every 50 ms it analyses the last 0.4 s, one symbol's length (a 2.5 Hz-resolution spectrum),
/// measures the power of every candidate tone against its local noise floor, and keeps the
/// tone-pair differences (side 1 − side 0) of recent frames. It then weighs each alignment ending
/// now (the last 6 to 24 symbols, one to four copies of the payload; which of the 6 slots the
/// newest symbol is; clock-scale hypotheses covering ±0.2 %) by how far its candidate tones'
/// energies stand above the rest, which does not depend on which tone of a pair the key calls
/// side 1. Four alignments are scored: the one with the most evidence, read from its symbols'
/// pair values added, and again with every symbol's bins projected on one delay and gain
/// (``CoherentSymbols``, what reads a transparent mark through a flat path); the one with the
/// most among those holding some slot twice, its copies added coherently (``CoherentCopies``);
/// and the sum of those copies' values and the strongest alignment's with each bin projected on
/// its own tone's channel (two readings of what a room leaves of the mark, each scaled to unit
/// norm). Each is decoded (Viterbi, CRC-16); a decoded payload is reported only
/// if the standardised score of its whole codeword reaches ``threshold``, which bounds false
/// detections on unmarked audio to 10⁻⁶ per hour. Because the choice is blind to the key's
/// sides, that bound counts four scored alignments per hop, not every alignment tried.
///
/// Given a **catalogue** (the campaigns known to be on air), it instead scores each catalogue
/// payload's codeword directly and reports only those. The same 10⁻⁶-per-hour bound then runs
/// over N payloads instead of 2³², so the threshold drops (9.65 → 7.64 for N = 100, 7.02 for
/// N = 1) and weaker or shorter captures are heard.
///
/// Told where a creative began by its sound, it also confirms one campaign's codeword there
/// (``confirm(_:creativeStart:)``), at a threshold of its own (6.95).
///
/// Memory is constant (2.2 MB at 48 kHz with the TV profile, 2.6 MB with the stadium's, the
/// coherent readings' scratch included, plus 448 bytes per catalogue entry: `tools/bench --quick`).
/// Not thread-safe.
public final class WatermarkDetector {
    /// One symbol: a frame that spans a whole symbol catches all of a tone's energy (a 0.32 s
    /// frame caught less and read 13 % lower scores on the bench's rooms and 35 % on noise hosts).
    public static let frameDuration = WatermarkFormat.symbolDuration
    public static let hopDuration = 0.05
    public static let maxCopies = 4
    /// The shortest window added coherently: 7 symbols hold one slot twice. (From 12, whole
    /// copies, the living room at SNR 0 dB read one trial more in 160: the same.)
    static let minimumCoherentSymbols = 7
    /// Clock-offset hypotheses, as 1 + offset.
    public static let clockScales: [Double] = stride(from: -0.002, through: 0.002, by: 0.0005).map { 1 + $0 }
    /// Alignments scored per hop: the readings of one place (``appendReadings(strongest:multi:into:)``),
    /// at most ``readingsPerPlace``.
    static let scoredPerHop = readingsPerPlace
    /// Alignments scored per hour of audio. Only the scored ones count: which they are is chosen
    /// without looking at the key's sides, so on unmarked audio each is a fixed alignment as far
    /// as the keyed coins are concerned (docs/watermark.md, False detections).
    public static let candidatesPerHour: Double = 3600 / hopDuration * Double(scoredPerHop)
    /// Score needed to report any of the 2³² payloads: P(false detection per hour) ≤
    /// candidates × 2³² × ``tailBound(_:)`` ≤ 10⁻⁶.
    public static let threshold: Double = threshold(payloads: pow(2, Double(WatermarkPayload.bitCount)))
    /// The most payloads a catalogue may hold (beyond a few thousand the threshold gains little).
    public static let maxCatalogue = 4096
    /// The most payloads a detector listens for at once: a catalogue's, or the airing codes
    /// valid at one minute (``AiringSchedule/codesPerMinute``; 11 000 for 100 campaigns on 10
    /// channels ±5 minutes). 448 bytes each.
    public static let maxPayloads = 16_384
    /// Bentkus and Dzindzalieta's optimal constant, 1 / (4 P(η ≥ √2)) for a standard normal η.
    static let rademacherGaussianConstant = 1 / (2 * erfc(1.0 as Double))

    /// A bound on the probability that one codeword scores `z` or more at one alignment on
    /// unmarked audio, whatever the audio: the score is a Rademacher sum Σ εᵢaᵢ with Σ aᵢ² = 1
    /// (the keyed coins), and for those P(Σ εᵢaᵢ ≥ z) ≤ c·P(η ≥ z) with c ≈ 3.18 (Bentkus &
    /// Dzindzalieta, Bernoulli 21, 2015), sharper than Hoeffding's e^(−z²/2) by a factor of
    /// about 7 at z = 10 and so 0.2 lower in threshold.
    public static func tailBound(_ z: Double) -> Double {
        rademacherGaussianConstant * erfc(z / 2.0.squareRoot()) / 2
    }

    /// Score that keeps false detections at or under 10⁻⁶ per hour when any of `payloads`
    /// codewords may be reported.
    public static func threshold(payloads: Double) -> Double {
        threshold(hypothesesPerHour: candidatesPerHour * max(1, payloads))
    }

    /// Score that keeps false detections at or under 10⁻⁶ per hour when `hypothesesPerHour`
    /// (codeword, alignment) pairs are scored in an hour, each chosen blind to the key's coins.
    static func threshold(hypothesesPerHour: Double) -> Double {
        let budget = 1e-6 / max(1, hypothesesPerHour)
        var lo = 0.0, hi = 40.0
        for _ in 0..<80 {
            let mid = (lo + hi) / 2
            if tailBound(mid) > budget { lo = mid } else { hi = mid }
        }
        return hi
    }

    /// Score this detector needs: ``threshold`` without a catalogue, lower with one.
    public let threshold: Double
    /// Payloads this detector is limited to (nil: any payload whose CRC matches).
    public private(set) var catalogue: [WatermarkPayload]?
    /// Whether, beside the catalogue, marks of any other payload are decoded too, at the blind
    /// search's own ``threshold`` (9.65) and bound, and reported as
    /// ``WatermarkDetection/unlisted``: an airing code of a minute no longer listened for, a
    /// recording replayed (``AiringSchedule``). Decoding runs only where no catalogue codeword
    /// scored and some codeword could reach the blind threshold.
    public var decodesUnlisted = false
    /// How many payloads ``threshold`` was set for: the catalogue's size, or more when it is
    /// replaced as time goes on (``replaceCatalogue(_:)``).
    public let catalogueCapacity: Int
    /// Per catalogue entry, ±1 for every (slot, position) of its codeword, padded with zeros to
    /// whole SIMD vectors: `signVectors` vectors per entry, back to back.
    private(set) var catalogueSigns: [SIMD16<Float>]
    /// The campaigns of ``confirmationRivals`` that the catalogue does not hold, each once, and
    /// their signs as ``catalogueSigns`` holds the catalogue's.
    private(set) var rivalPayloads: [WatermarkPayload] = []
    private(set) var rivalSigns: [SIMD16<Float>] = []
    /// Campaigns beside the catalogue's that a confirmation at the sound's place must outscore
    /// (``confirm(_:creativeStart:)``): those the sound's catalogue names.
    public var confirmationRivals: [WatermarkPayload] = [] {
        didSet { indexRivals() }
    }

    /// The rivals the catalogue does not hold, and their signs.
    private func indexRivals() {
        var seen = Set(catalogue ?? [])
        rivalPayloads = confirmationRivals.filter { seen.insert($0).inserted }
        rivalSigns = Self.signs(of: rivalPayloads, format: format)
    }
    static let signVectors = PairLayout.vectors
    /// Scratch, allocated once: one alignment's pair values (in ``PairLayout``, padding zero),
    /// and (for ``match(_:newest:)``) its per-bit sums as SIMD vectors padded like the signs.
    private let values = WatermarkDetector.zeroedPairValues()
    /// The per-tone reading's pair values, computed with the flat reading's (they share its
    /// gather and drift), for the flat alignment and hop in ``perToneFor``.
    private let perToneValues = WatermarkDetector.zeroedPairValues()
    private var perToneFor: Kept?
    /// The copies reading's pair values for the alignment and hop in ``copiesFor``: the combined
    /// reading and the copies alone both use them at every hop.
    private let copiesValues = WatermarkDetector.zeroedPairValues()
    private var copiesFor: Kept?
    /// Which alignment, at which hop, a kept reading's values belong to.
    private struct Kept: Equatable {
        var alignment: Alignment
        var newest: Int
    }

    private static func zeroedPairValues() -> UnsafeMutablePointer<Float> {
        let p = UnsafeMutablePointer<Float>.allocate(capacity: PairLayout.valueCount)
        p.initialize(repeating: 0, count: PairLayout.valueCount)
        return p
    }
    let bitSums: UnsafeMutablePointer<SIMD16<Float>> = {
        let p = UnsafeMutablePointer<SIMD16<Float>>.allocate(capacity: WatermarkDetector.signVectors)
        p.initialize(repeating: .zero, count: WatermarkDetector.signVectors)
        return p
    }()
    public let format: WatermarkFormat
    public let sampleRate: Double

    /// The input, its rate lowered to what the band needs (``analysisDecimation``).
    private var decimator: Decimator
    /// The rate frames are read at, and their length and hop in samples of that rate.
    let analysisRate: Double
    private let frameLength: Int
    let hopLength: Int
    /// Input samples taken so far.
    private var inputCount = 0
    /// Input samples per analysed sample.
    var analysisFactor: Int { decimator.factor }
    private let fft: RealFFT
    private let window: [Float]
    private var tones: ToneEnergyFrame
    private let coherent: CoherentCopies
    private let symbols: CoherentSymbols
    private var samples: [Float] = []
    private var samplesStart = 0          // absolute index of samples[0]
    private var nextFrameStart = 0        // absolute index where the next frame begins
    private(set) var frameCount = 0
    /// Pair differences per frame, `ringSize` rows of `entrySize` values
    /// ([scale] then ``PairLayout/ringIndex(slot:position:pair:)``), one allocation for the detector's life. Kept
    /// as bytes in units of ``pairUnit`` (a pair lies within ±cap): the rounding adds noise
    /// 40 dB under a pair's own on unmarked audio, and a quarter of the floats' memory keeps
    /// harkd in its budget. Scores do not depend on the unit.
    private let ring: UnsafeMutablePointer<Int8>
    /// Per frame, scale and slot, how far the slot's candidate tones stand above the frame's
    /// mean (``evidence(slot:frame:scale:)``): `ringSize` rows of scales × slots.
    private let evidenceRing: UnsafeMutablePointer<Float>
    /// Scratch: the newest frame's pair energy sums, in ring order.
    private let pairSums: UnsafeMutablePointer<Float>
    static let pairUnit = ToneEnergyFrame.cap / 127
    let ringSize: Int
    let framesPerSymbol: Int
    /// Side-0 and side-1 probes of every pair, for every scale, in ring order.
    private var probes: [(ToneEnergyFrame.Probe, ToneEnergyFrame.Probe)] = []

    private static var valuesPerScale: Int { WatermarkFormat.symbolsPerCopy * WatermarkFormat.pairsPerSymbol }
    /// Each ring entry: the pair values of every scale.
    private static var entrySize: Int { clockScales.count * valuesPerScale }
    private static var evidencePerFrame: Int { clockScales.count * WatermarkFormat.symbolsPerCopy }

    /// - Parameters:
    ///   - catalogue: report only these payloads, at the lower threshold their number allows
    ///     (nil or empty: any payload). Duplicates are ignored; at most ``maxPayloads``.
    ///   - capacity: the most payloads the catalogue will hold when it is replaced
    ///     (``replaceCatalogue(_:)``): the threshold is set for this many. Nil: the catalogue's size.
    ///   - startTime: stream seconds of the first sample (``startTime``).
    public init(format: WatermarkFormat, sampleRate: Double,
                catalogue: [WatermarkPayload]? = nil, capacity: Int? = nil, startTime: Double = 0) throws {
        guard sampleRate >= 8_000, sampleRate.isFinite else { throw WatermarkDetectorError.rateTooLow(sampleRate) }
        guard format.version == WatermarkFormat.onAir else { throw WatermarkDetectorError.unreadableVersion(format.version) }
        let unique = Self.unique(catalogue ?? [])
        let capacity = max(capacity ?? 0, unique.count)
        precondition(capacity <= Self.maxPayloads, "a detector listens for at most \(Self.maxPayloads) payloads")
        self.catalogue = capacity == 0 ? nil : unique
        catalogueCapacity = capacity
        threshold = capacity == 0 ? Self.threshold : Self.threshold(payloads: Double(capacity))
        catalogueSigns = Self.signs(of: unique, format: format)
        // Room for the catalogue it may be given (``replaceCatalogue(_:)``), so that a longer
        // list never makes the signs' array grow by doubling, with the old one beside it.
        if capacity > unique.count { catalogueSigns.reserveCapacity(capacity * Self.signVectors) }
        self.format = format
        self.sampleRate = sampleRate
        self.startTime = startTime
        // An even length, transformed without zero padding: 2.5 Hz bins, so every point of the
        // 10 Hz grid falls on a bin (at 44.1 and 48 kHz exactly), and FFTW is nearly as quick for
        // 2^a·3^b·5^c·7^d as for a power of two. Read at a rate lowered to what the band needs:
        // the same bins from a third of the samples at 48 kHz (TV), where the frame's transform
        // had been a fifth of the detector's time.
        let inputLength = Int((Self.frameDuration * sampleRate / 2).rounded()) * 2
        let inputHop = Int((Self.hopDuration * sampleRate).rounded())
        let maxScale = Self.clockScales.max()!, minScale = Self.clockScales.min()!
        let highest = min(format.profile.band.upperBound * maxScale, 0.49 * sampleRate)
        let binWidth = sampleRate / Double(inputLength)
        let lowest = format.profile.band.lowerBound * minScale
        tones = ToneEnergyFrame(binWidth: binWidth, lowestFrequency: lowest, highestFrequency: highest)
        // The highest bin any reading looks at: the floor reaches past the top tone.
        let top = tones.lastBin
        let factor = Self.analysisDecimation(sampleRate: sampleRate, frameLength: inputLength, hopLength: inputHop,
                                             highestFrequency: Double(top + 1) * binWidth)
        decimator = Decimator(factor: factor, passband: Double(top + 1) * binWidth / sampleRate)
        analysisRate = sampleRate / Double(factor)
        let length = inputLength / factor
        frameLength = length
        hopLength = inputHop / factor
        let size = length
        fft = try RealFFT(size: size)
        window = (0..<length).map { Float(0.5 - 0.5 * cos(2 * Double.pi * (Double($0) + 0.5) / Double(length))) }
        framesPerSymbol = Int((WatermarkFormat.symbolDuration / Self.hopDuration).rounded())
        ringSize = (Self.maxCopies * WatermarkFormat.symbolsPerCopy) * framesPerSymbol + 1
        ring = .allocate(capacity: ringSize * Self.entrySize)
        ring.initialize(repeating: 0, count: ringSize * Self.entrySize)
        evidenceRing = .allocate(capacity: ringSize * Self.evidencePerFrame)
        evidenceRing.initialize(repeating: 0, count: ringSize * Self.evidencePerFrame)
        pairSums = .allocate(capacity: Self.entrySize)
        pairSums.initialize(repeating: 0, count: Self.entrySize)
        for scale in Self.clockScales {
            for pair in 0..<WatermarkFormat.pairsPerBit {
                for slot in 0..<WatermarkFormat.symbolsPerCopy {
                    for position in 0..<WatermarkFormat.bitsPerSymbol {
                        let f = format.frequency[slot][position][pair]
                        probes.append((tones.probe(at: f[0] * scale, spectrumBins: size / 2 + 1),
                                       tones.probe(at: f[1] * scale, spectrumBins: size / 2 + 1)))
                    }
                }
            }
        }
        coherent = CoherentCopies(probes: probes.flatMap { [$0.0, $0.1] }, ringSize: ringSize, binWidth: binWidth,
                                  termCapacity: 2 * WatermarkFormat.symbolsPerCopy * WatermarkFormat.pairsPerSymbol)
        symbols = try CoherentSymbols(store: coherent, format: format, binWidth: binWidth,
                                      maxSymbols: Self.maxCopies * WatermarkFormat.symbolsPerCopy)
    }

    /// ±1 for every (slot, position) of `payload`'s codeword, padded with zeros to whole SIMD
    /// vectors (``signVectors`` of them), in the order of ``bitSums``.
    /// Every payload's ``signs(of:format:)`` one after another, in an array of exactly that
    /// size: built by appending, 11 000 airing codes' signs (4.9 MB) kept up to as much again
    /// in spare capacity.
    static func signs(of payloads: [WatermarkPayload], format: WatermarkFormat) -> [SIMD16<Float>] {
        var all: [SIMD16<Float>] = []
        all.reserveCapacity(payloads.count * signVectors)
        for p in payloads { all += signs(of: p, format: format) }
        return all
    }

    static func signs(of payload: WatermarkPayload, format: WatermarkFormat) -> [SIMD16<Float>] {
        var signs = format.symbolBits(for: payload).flatMap { $0.map { $0 ? Float(1) : -1 } }
        signs += [Float](repeating: 0, count: signVectors * 16 - signs.count)
        return (0..<signVectors).map { SIMD16<Float>(signs[($0 * 16)..<($0 * 16 + 16)]) }
    }

    /// The whole factor the input's rate is lowered by before frames are read: the largest that
    /// keeps `highestFrequency` clear of aliases with a transition of at least a tenth of the new
    /// rate (a filter of 73 taps at 48 kHz for the TV profile) and divides the frame and the hop
    /// exactly, so that bins stay 2.5 Hz wide and frames end where they did. A frame then holds
    /// the input as it was the filter's delay earlier (36 samples, 0.75 ms, at 48 kHz), which
    /// no reading notices: the coherent ones find their own delays. At 48 kHz: 3 for the TV
    /// profile (tones to 6 kHz), 2 for the stadium's (7.5 kHz); at 44.1 kHz 3 and 1.
    static func analysisDecimation(sampleRate: Double, frameLength: Int, hopLength: Int, highestFrequency: Double) -> Int {
        var best = 1
        for factor in 2...8 where frameLength % factor == 0 && hopLength % factor == 0 && (frameLength / factor) % 2 == 0 {
            let rate = sampleRate / Double(factor)
            if rate - 2 * highestFrequency >= 0.1 * rate { best = factor }
        }
        return best
    }

    /// The highest score of any codeword the decoder returned so far, whether or not its CRC
    /// matched (with a catalogue: of the best catalogue codeword at each alignment checked). On
    /// unmarked audio this shows how close chance came to ``threshold`` (without a catalogue the
    /// set it ranges over is 2¹⁶ times larger than the valid payloads, so it errs high).
    public private(set) var highestDecodedScore: Double = 0
    /// The highest score a confirmation at the sound's alignment reached so far (``confirm(_:creativeStart:)``).
    public internal(set) var highestConfirmationScore = -Double.infinity
    /// The confirmations asked in the current ``confirmationInterval``, and which interval that is.
    var confirmationTick = -1
    var confirmationsThisTick = 0
    /// Samples that were not finite (read as 0) or beyond ±``sampleLimit`` (clamped to it).
    /// Powers of larger values overflow single precision and turn the floors into NaN.
    public private(set) var unusableSamples = 0
    /// The largest magnitude a sample is read with: 80 dB over full scale.
    public static let sampleLimit: Float = 10_000

    /// Bytes held by the detector's buffers (for the 10 MB budget).
    public var stateBytes: Int {
        ringSize * Self.entrySize + ringSize * Self.evidencePerFrame * 4 + Self.entrySize * 4
            + samples.capacity * 4 + decimator.stateBytes + fft.size * 12
            + probes.count * MemoryLayout<(ToneEnergyFrame.Probe, ToneEnergyFrame.Probe)>.stride
            + catalogueSigns.count * MemoryLayout<SIMD16<Float>>.stride + coherent.stateBytes + symbols.stateBytes
            + 3 * PairLayout.valueCount * 4
            + tones.stateBytes
    }

    deinit {
        ring.deallocate()
        evidenceRing.deallocate()
        pairSums.deallocate()
        values.deallocate()
        perToneValues.deallocate()
        copiesValues.deallocate()
        bitSums.deallocate()
    }

    /// The pair values of frame `frame` (which must still be in the ring).
    @inline(__always)
    private func row(_ frame: Int) -> UnsafeMutablePointer<Int8> {
        ring + (frame % ringSize) * Self.entrySize
    }

    /// Seconds of input consumed so far.
    public var elapsed: Double { Double(inputCount) / sampleRate }

    /// Stream seconds of the first sample: a detection's times, and the creative start a
    /// confirmation is given, are on the stream's clock, so that a detector started part-way
    /// through a stream (after a gap) needs no one to shift what it says.
    public let startTime: Double

    /// Adds samples; returns the detections they complete: the strongest confirmation of each
    /// hop (every 50 ms) at which one clears the threshold. A mark that plays is confirmed at
    /// hop after hop; which of those are news is the pipeline's question (``AiringMemory``).
    public func process(_ block: UnsafeBufferPointer<Float>) -> [WatermarkDetection] {
        // A long block goes in by pieces, so the sample buffer stays under a second whatever
        // the caller pushes.
        var found: [WatermarkDetection] = []
        var start = 0
        while start < block.count {
            let n = min(4 * hopLength * decimator.factor, block.count - start)
            found += take(UnsafeBufferPointer(rebasing: block[start..<(start + n)]))
            start += n
        }
        return found
    }

    private func take(_ block: UnsafeBufferPointer<Float>) -> [WatermarkDetection] {
        let limit = Self.sampleLimit
        inputCount += block.count
        if block.contains(where: { !($0.magnitude <= limit) }) {
            var clean = [Float]()
            clean.reserveCapacity(block.count)
            for x in block {
                if x.magnitude <= limit {
                    clean.append(x)
                } else {
                    unusableSamples += 1
                    clean.append(x.isFinite ? (x < 0 ? -limit : limit) : 0)
                }
            }
            clean.withUnsafeBufferPointer { decimator.process($0, into: &samples) }
        } else {
            decimator.process(block, into: &samples)
        }
        var found: [WatermarkDetection] = []
        while nextFrameStart + frameLength <= samplesStart + samples.count {
            analyseFrame(at: nextFrameStart - samplesStart)
            if let d = search() { found.append(d) }
            nextFrameStart += hopLength
            frameCount += 1
        }
        let drop = nextFrameStart - samplesStart
        if drop > 8 * hopLength {
            samples.removeFirst(drop)
            samplesStart += drop
        }
        return found
    }

    private func analyseFrame(at offset: Int) {
        let input = fft.input
        samples.withUnsafeBufferPointer { s in
            window.withUnsafeBufferPointer { w in
                precondition(offset + frameLength <= s.count && w.count == frameLength)
                let from = s.baseAddress! + offset, by = w.baseAddress!
                for i in 0..<frameLength { input[i] = from[i] * by[i] }
            }
        }
        fft.forward()
        tones.load(fft.spectrum)
        coherent.store(frame: frameCount, spectrum: fft.spectrum, floors: tones.floorAtBin)
        probes.withUnsafeBufferPointer { tones.pairDifferences($0, unit: Self.pairUnit, into: row(frameCount), sums: pairSums) }
        storeEvidence()
    }

    /// Turns the newest frame's pair energy sums into each slot's evidence: its pairs' sums, less
    /// what the frame's average pair would give them. At the true alignment a slot's 144
    /// candidates hold all of its symbol's 72 tones; any candidate set holds a quarter of the
    /// tones sounding by chance, which the mean removes.
    private func storeEvidence() {
        let S = WatermarkFormat.symbolsPerCopy
        let evidence = evidenceRing + (frameCount % ringSize) * Self.evidencePerFrame
        for scale in 0..<Self.clockScales.count {
            let sums = pairSums + scale * Self.valuesPerScale
            let slots = evidence + scale * S
            var total: Float = 0
            for slot in 0..<S {
                var t: Float = 0
                for pair in 0..<WatermarkFormat.pairsPerBit {
                    let start = PairLayout.ringIndex(slot: slot, position: 0, pair: pair)
                    for i in 0..<WatermarkFormat.bitsPerSymbol { t += sums[start + i] }
                }
                slots[slot] = t
                total += t
            }
            let perPair = total / Float(Self.valuesPerScale)
            for slot in 0..<S { slots[slot] -= Float(WatermarkFormat.pairsPerSymbol) * perPair }
        }
    }

    /// How far the candidate tones of `slot` stood above the frame's average at `frame`, under
    /// clock scale `scale`: the sum of its pairs' two normalised energies, less the mean pair's.
    /// The same whichever side of each pair the key calls 1.
    @inline(__always)
    func evidence(slot: Int, frame: Int, scale: Int) -> Float {
        evidenceRing[(frame % ringSize) * Self.evidencePerFrame + scale * WatermarkFormat.symbolsPerCopy + slot]
    }

    /// How an alignment's pair values are read.
    enum Reading: Equatable {
        /// Each frame's tone energies, summed over its symbols.
        case energies
        /// Each slot's copies added coherently (``CoherentCopies``).
        case copies
        /// Every symbol projected on one delay and gain (``CoherentSymbols``, flat).
        case flat
        /// Every symbol projected on its own tone's channel (``CoherentSymbols``, per tone).
        /// Scored alone only while no window holds a slot twice; otherwise as part of the next.
        case perTone
        /// The per-tone reading's values plus those of `copies` (an alignment read as
        /// ``copies``), each scaled to unit norm. The two estimate each tone's room channel from
        /// different symbols (all of a tone's candidates in the window; one slot's copies), so
        /// their noise is partly independent while the mark adds in both. Each is the key's
        /// coins times values that do not depend on them, and the norms do not either, so the sum
        /// is too: the false-detection bound holds as for any other reading.
        indirect case perToneAndCopies(copies: Alignment)
    }

    /// One way the newest frames may line up with the watermark: the last `symbols` symbols, the
    /// newest of them slot `newestSlot`, under clock scale `scale`.
    struct Alignment: Equatable {
        var scale: Int
        /// Whole symbols combined, one copy's worth (6) up to ``maxCopies`` copies' (24).
        var symbols: Int
        var newestSlot: Int
        /// How its pair values are read.
        var reading = Reading.energies
        /// Whether its copies are added coherently (``CoherentCopies``) rather than as energies.
        var coherent: Bool { reading == .copies }

        /// The slot of the symbol `back` symbols before the newest.
        func slot(back: Int) -> Int {
            let S = WatermarkFormat.symbolsPerCopy
            return ((newestSlot - back) % S + S) % S
        }
    }

    /// The alignments the last hop scored (the most evidence, as energies, flat, and per tone
    /// with the copies; the one with the most among those holding some slot twice, its copies
    /// alone), for tests.
    private(set) var lastScored: [Alignment] = []
    /// Scratch for ``fill(_:newest:)``: a coherent alignment's copies per slot and their frames.
    private var coherentCounts = [Int](repeating: 0, count: WatermarkFormat.symbolsPerCopy)
    private var coherentFrames: [Int] = []
    private var symbolFrames: [Int] = []
    private var symbolSlots: [Int] = []

    /// Weighs every alignment ending at the newest frame and scores the ones chosen.
    ///
    /// An alignment spans any whole number of symbols from one copy's 6 to four copies' 24, not
    /// only whole copies: 6 s of audio hold 14 symbols, two copies only 12. Since only the
    /// alignments scored count in the false-detection bound, trying every length costs no
    /// threshold.
    ///
    /// The choice reads only the evidence (energy sums, blind to the key's sides), never the
    /// pair values, so on unmarked audio the keyed coins are as fair at the chosen alignments as
    /// at fixed ones, and the false-detection bound counts four alignments per hop. Choosing by
    /// the bound over codewords would count every alignment a hop could score (378), and its
    /// higher threshold would cost detections (docs/watermark-research.md has the runs).
    private func search() -> WatermarkDetection? {
        let S = WatermarkFormat.symbolsPerCopy
        let newest = frameCount
        var strongest: Alignment?, strongestEvidence = -Float.infinity
        var strongestMulti: Alignment?, strongestMultiEvidence = -Float.infinity
        for scale in 0..<Self.clockScales.count {
            for newestSlot in 0..<S {
                // Longer windows hold the shorter ones, so the evidence grows one symbol at a
                // time. Its noise grows as √symbols.
                var total: Float = 0
                var alignment = Alignment(scale: scale, symbols: 0, newestSlot: newestSlot)
                for back in 0..<(Self.maxCopies * S) {
                    let frame = newest - back * framesPerSymbol
                    guard frame >= 0 else { break }
                    total += evidence(slot: alignment.slot(back: back), frame: frame, scale: scale)
                    guard back + 1 >= S else { continue }
                    alignment.symbols = back + 1
                    let weight = total / Float(back + 1).squareRoot()
                    if weight > strongestEvidence { strongestEvidence = weight; strongest = alignment }
                    if back + 1 >= Self.minimumCoherentSymbols, weight > strongestMultiEvidence {
                        strongestMultiEvidence = weight; strongestMulti = alignment
                    }
                }
            }
        }
        strongestMulti?.reading = .copies
        // Refilled in place: this runs 20 times a second.
        lastScored.removeAll(keepingCapacity: true)
        if let strongest { Self.appendReadings(strongest: strongest, multi: strongestMulti, into: &lastScored) }
        var best: WatermarkDetection?
        for alignment in lastScored {
            fill(alignment, newest: newest)
            // An alignment that no codeword could lift over the threshold is not worth decoding.
            guard Double(bound()) >= threshold else { continue }
            var found = catalogue == nil ? decode(alignment, newest: newest) : match(alignment, newest: newest)
            if found == nil, decodesUnlisted, let catalogue, Double(bound()) >= Self.threshold,
               var d = decode(alignment, newest: newest), !catalogue.contains(d.payload) {
                d.mark?.unlisted = true
                found = d
            }
            if let d = found, let m = d.mark, m.score > (best?.mark?.score ?? -1) { best = d }
        }
        return best
    }

    /// Alignment `c`'s pair values at the newest frame, for tests.
    func pairValues(_ c: Alignment) -> [Float] {
        fill(c, newest: frameCount - 1)
        return Array(UnsafeBufferPointer(start: values, count: PairLayout.valueCount))
    }

    /// Puts alignment `c`'s pair values into ``values``: summed over its symbols (one keyed coin
    /// per pair, shared by all copies), or from its copies added coherently.
    func fill(_ c: Alignment, newest: Int) {
        let S = WatermarkFormat.symbolsPerCopy
        let pps = WatermarkFormat.pairsPerSymbol
        if case .perToneAndCopies(let copies) = c.reading {
            fill(copies, newest: newest)
            var tone = c
            tone.reading = .perTone
            fill(tone, newest: newest)
            let toneNorm = Self.norm(values), copiesNorm = Self.norm(copiesValues)
            let a: Float = toneNorm > 0 ? 1 / toneNorm : 0, b: Float = copiesNorm > 0 ? 1 / copiesNorm : 0
            for i in 0..<PairLayout.valueCount { values[i] = a * values[i] + b * copiesValues[i] }
            return
        }
        if c.reading == .perTone {
            var flat = c
            flat.reading = .flat
            if perToneFor != Kept(alignment: flat, newest: newest) { fill(flat, newest: newest) }
            values.update(from: perToneValues, count: PairLayout.valueCount)
            return
        }
        if c.reading == .flat {
            symbolFrames.removeAll(keepingCapacity: true)
            symbolSlots.removeAll(keepingCapacity: true)
            for back in stride(from: c.symbols - 1, through: 0, by: -1) {
                symbolFrames.append(newest - back * framesPerSymbol)
                symbolSlots.append(c.slot(back: back))
            }
            let interval = Double(framesPerSymbol * hopLength) / analysisRate
            let centre = interval - WatermarkFormat.symbolDuration / Self.clockScales[c.scale]
            probes.withUnsafeBufferPointer { all in
                let slice = UnsafeBufferPointer(rebasing: all[(c.scale * S * pps)..<((c.scale + 1) * S * pps)])
                symbols.pairValues(frames: symbolFrames, slots: symbolSlots, probes: slice, driftCentre: centre, into: values,
                                   perTone: perToneValues)
            }
            perToneFor = Kept(alignment: c, newest: newest)
            return
        }
        if c.coherent {
            if copiesFor == Kept(alignment: c, newest: newest) {
                values.update(from: copiesValues, count: PairLayout.valueCount)
                return
            }
            // Each slot's frames, oldest first, slot after slot; refilled in place, as this runs
            // at every hop.
            coherentCounts.withUnsafeMutableBufferPointer { counts in
                for slot in 0..<S { counts[slot] = 0 }
                for back in 0..<c.symbols { counts[c.slot(back: back)] += 1 }
            }
            coherentFrames.removeAll(keepingCapacity: true)
            for slot in 0..<S {
                let newestBack = ((c.newestSlot - slot) % S + S) % S
                for copy in stride(from: coherentCounts[slot] - 1, through: 0, by: -1) {
                    coherentFrames.append(newest - (newestBack + copy * S) * framesPerSymbol)
                }
            }
            // Frames a copy apart are this far apart in capture time; a tone f·scale turns by
            // 2π·f·scale·(that − 2.4 s / scale) between them, since f·2.4 s is whole.
            let interval = Double(S * framesPerSymbol * hopLength) / analysisRate
            let centre = interval - WatermarkFormat.copyDuration / Self.clockScales[c.scale]
            // Every pair's entry is written; the padding lanes are never written, so stay zero.
            probes.withUnsafeBufferPointer { all in
                let slice = UnsafeBufferPointer(rebasing: all[(c.scale * S * pps)..<((c.scale + 1) * S * pps)])
                coherent.pairValues(frames: coherentFrames, counts: coherentCounts, probes: slice, delayCentre: centre, into: values)
            }
            copiesValues.update(from: values, count: PairLayout.valueCount)
            copiesFor = Kept(alignment: c, newest: newest)
            return
        }
        let base = c.scale * Self.valuesPerScale
        values.update(repeating: 0, count: PairLayout.valueCount)
        for back in 0..<c.symbols {
            addSlot(c.slot(back: back), from: row(newest - back * framesPerSymbol) + base)
        }
    }

    /// Adds one slot's pair values from a ring row (at its scale) into ``values``: 18 bytes per
    /// pair rank, taken as one 16-lane vector and two more (a scalar loop took 15 % longer).
    @inline(__always)
    private func addSlot(_ slot: Int, from r: UnsafeMutablePointer<Int8>) {
        for pair in 0..<WatermarkFormat.pairsPerBit {
            let v = values + PairLayout.valueIndex(slot: slot, position: 0, pair: pair)
            let x = r + PairLayout.ringIndex(slot: slot, position: 0, pair: pair)
            let head = SIMD16<Float>(UnsafeRawPointer(x).loadUnaligned(as: SIMD16<Int8>.self))
            let sum = UnsafeRawPointer(v).loadUnaligned(as: SIMD16<Float>.self) + head
            UnsafeMutableRawPointer(v).storeBytes(of: sum, as: SIMD16<Float>.self)
            for i in 16..<WatermarkFormat.bitsPerSymbol { v[i] += Float(x[i]) }
        }
    }

    private static func norm(_ v: UnsafeMutablePointer<Float>) -> Float {
        var sum: Float = 0
        for i in 0..<PairLayout.valueCount { sum += v[i] * v[i] }
        return sum.squareRoot()
    }

    /// Sums each coded bit's pairs of ``values`` into ``bitSums`` (in ``PairLayout`` they are
    /// whole vectors apart, and the padding lanes stay zero, as the catalogue signs' do);
    /// returns the sum of the pairs' squares.
    func sumBits() -> Float {
        let raw = UnsafeRawPointer(values)
        var squares = SIMD16<Float>.zero
        for k in 0..<PairLayout.vectors {
            var sum = SIMD16<Float>.zero
            for pair in 0..<WatermarkFormat.pairsPerBit {
                let x = raw.loadUnaligned(fromByteOffset: (pair * PairLayout.stride + 16 * k) * 4, as: SIMD16<Float>.self)
                sum += x
                squares += x * x
            }
            bitSums[k] = sum
        }
        return squares.sum()
    }

    /// Σ sign × bit sum for one codeword's signs (``signVectors`` vectors from `signs`) against
    /// the bit sums in ``bitSums``: its score's numerator.
    @inline(__always)
    func codewordSum(_ signs: UnsafePointer<SIMD16<Float>>) -> Float {
        var acc = SIMD16<Float>.zero
        for v in 0..<Self.signVectors { acc += signs[v] * bitSums[v] }
        return acc.sum()
    }

    /// The best score any codeword could reach with the pair values in ``values`` (see ``search()``).
    private func bound() -> Float {
        let energy = sumBits()
        var total = SIMD16<Float>.zero
        for k in 0..<PairLayout.vectors { total += bitSums[k].replacing(with: -bitSums[k], where: bitSums[k] .< 0) }
        return energy > 0 ? total.sum() / energy.squareRoot() : 0
    }

    /// Decodes the pair values in ``values`` (Viterbi, CRC-16) and scores the codeword found.
    private func decode(_ c: Alignment, newest: Int) -> WatermarkDetection? {
        let S = WatermarkFormat.symbolsPerCopy
        var soft = [Float](repeating: 0, count: WatermarkFormat.codedBits)
        for (i, p) in format.placement.enumerated() {
            soft[i] = (0..<WatermarkFormat.pairsPerBit).reduce(0) {
                $0 + values[PairLayout.valueIndex(slot: p.slot, position: p.position, pair: $1)]
            }
        }
        let info = ConvolutionalCode.decode(soft, count: WatermarkFormat.infoBits)
        let payload = WatermarkPayload(bits: Array(info.prefix(32)))
        let crcMatches = CRC16.checksum(Array(info.prefix(32))) == payload.crcValue(from: Array(info.suffix(16)))
        // Score the codeword exactly as decoded (payload and check bits), CRC or not.
        let coded = ConvolutionalCode.encode(info)
        var bits = [[Bool]](repeating: [Bool](repeating: false, count: WatermarkFormat.bitsPerSymbol), count: S)
        for (i, b) in coded.enumerated() { bits[format.placement[i].slot][format.placement[i].position] = b }
        var numerator: Double = 0, energy: Double = 0
        for slot in 0..<S {
            for position in 0..<WatermarkFormat.bitsPerSymbol {
                let sign: Double = bits[slot][position] ? 1 : -1
                for pair in 0..<WatermarkFormat.pairsPerBit {
                    let v = Double(values[PairLayout.valueIndex(slot: slot, position: position, pair: pair)])
                    numerator += sign * v
                    energy += v * v
                }
            }
        }
        guard energy > 0 else { return nil }
        let score = numerator / energy.squareRoot()
        highestDecodedScore = max(highestDecodedScore, score)
        // Beside a catalogue (``decodesUnlisted``) a decoded payload faces the blind bound.
        guard crcMatches, score >= (catalogue == nil ? threshold : Self.threshold) else { return nil }
        return detection(payload, score: score, candidate: c, newest: newest, blind: true)
    }

    /// Scores every catalogue payload's codeword against the pair values in ``values``; the
    /// best one if it reaches the threshold.
    private func match(_ c: Alignment, newest: Int) -> WatermarkDetection? {
        let energy = Double(sumBits())
        guard energy > 0, let catalogue else { return nil }
        // The best catalogue codeword: the largest Σ sign × bit sum (16 lanes at a time).
        var bestIndex = 0, bestNumerator = -Float.infinity
        catalogueSigns.withUnsafeBufferPointer { signs in
            for i in 0..<catalogue.count {
                let n = codewordSum(signs.baseAddress! + i * Self.signVectors)
                if n > bestNumerator { bestNumerator = n; bestIndex = i }
            }
        }
        let score = Double(bestNumerator) / energy.squareRoot()
        highestDecodedScore = max(highestDecodedScore, score)
        guard score >= threshold else { return nil }
        return detection(catalogue[bestIndex], score: score, candidate: c, newest: newest)
    }

    /// Listens for `payloads` from now on, at the threshold set when the detector was made: the
    /// airing codes of a new minute (``AiringSchedule``). What the detector has heard stays;
    /// a detector made without a catalogue keeps listening for any payload.
    ///
    /// The lists of successive minutes share all but a minute's codes, so the entries that stay
    /// keep their place and their signs, and only the new payloads' signs are made, in the
    /// places the old ones leave: the signs are not held twice while the list turns (4.9 MB for
    /// 11 000 codes), nor all made again. The catalogue's order is then not `payloads`' order;
    /// nothing reads it in order (the best codeword is the best wherever it stands).
    public func replaceCatalogue(_ payloads: [WatermarkPayload]) {
        guard var entries = catalogue else { return }
        let unique = Self.unique(payloads)
        precondition(unique.count <= catalogueCapacity, "the detector's threshold was set for \(catalogueCapacity) payloads")
        catalogue = nil                       // so that `entries` and the signs are the only references
        var signs = catalogueSigns
        catalogueSigns = []
        let wanted = Set(unique), held = Set(entries)
        var free = entries.indices.filter { !wanted.contains(entries[$0]) }
        let V = Self.signVectors
        for p in unique where !held.contains(p) {
            let row = Self.signs(of: p, format: format)
            if let i = free.popLast() {
                entries[i] = p
                signs.replaceSubrange((i * V)..<((i + 1) * V), with: row)
            } else {
                entries.append(p)
                signs += row
            }
        }
        // Fewer payloads than before: the last entries fill the places left free, back to front.
        for i in free.sorted(by: >) {
            let last = entries.count - 1
            if i != last {
                entries[i] = entries[last]
                for v in 0..<V { signs[i * V + v] = signs[last * V + v] }
            }
            entries.removeLast()
            signs.removeLast(V)
        }
        catalogue = entries
        catalogueSigns = signs
        indexRivals()
    }

    private static func unique(_ payloads: [WatermarkPayload]) -> [WatermarkPayload] {
        var seen = Set<WatermarkPayload>()
        return payloads.filter { seen.insert($0).inserted }
    }

    func detection(_ payload: WatermarkPayload, score: Double, candidate c: Alignment, newest: Int, blind: Bool = false) -> WatermarkDetection {
        let end = Double(newest * hopLength + frameLength) / analysisRate
        // The window's oldest symbol is slot `oldest` of a copy that began `oldest` symbols
        // earlier; a frame centred on its symbol starts (symbol − frame) / 2 into it.
        let oldest = c.slot(back: c.symbols - 1)
        let firstFrame = newest - (c.symbols - 1) * framesPerSymbol
        let start = Double(firstFrame * hopLength) / analysisRate - (WatermarkFormat.symbolDuration - Self.frameDuration) / 2
            - Double(oldest) * WatermarkFormat.symbolDuration
        let payloads = catalogue == nil || blind ? pow(2, Double(WatermarkPayload.bitCount)) : Double(catalogueCapacity)
        let bound = Self.candidatesPerHour * payloads * Self.tailBound(score)
        let mark = WatermarkDetection.Mark(score: score, confidence: max(0, min(1, 1 - bound)),
                                           copies: max(1, c.symbols / WatermarkFormat.symbolsPerCopy), clockScale: Self.clockScales[c.scale])
        return WatermarkDetection(payload: payload, time: startTime + end, start: startTime + start, mark: mark,
                                  windowStart: startTime + Double(firstFrame * hopLength) / analysisRate)
    }
}

extension WatermarkPayload {
    /// The CRC value carried by 16 decoded check bits.
    func crcValue(from bits: [Bool]) -> UInt16 {
        bits.reduce(UInt16(0)) { $0 << 1 | ($1 ? 1 : 0) }
    }
}

/// Why a detector could not be made.
public enum WatermarkDetectorError: Error, Equatable, CustomStringConvertible {
    case rateTooLow(Double)
    /// A format version this detector cannot read: a study's (``WatermarkFormat/init(key:profile:version:tone:)``).
    case unreadableVersion(Int)

    public var description: String {
        switch self {
        case .rateTooLow(let r): return "the watermark detector needs audio at 8 kHz or more, not \(Int(r)) Hz"
        case .unreadableVersion(let v): return "the watermark detector reads format version 1; version \(v) is a study and has no detector"
        }
    }
}
