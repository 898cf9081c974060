import FoundationEssentials
import Glibc

/// The mark read where the campaign's own sound says it is.
///
/// The blind search (``WatermarkDetector/process(_:)``) must find the mark's alignment from the
/// mark itself: at each hop it picks, among 1 026 alignments, the one whose candidate tones stand
/// highest, and scores every catalogue codeword there. When the mark is faint the strongest
/// alignment is often a wrong one, and each of the catalogue's codewords counts in the
/// false-detection bound. The creative's sound, once it names a campaign at a place in the
/// creative, says both which codeword to try and where the creative, and so its first copy of
/// the mark, began. A confirmation scores that one codeword at the alignments that place allows.
///
/// **Its bound.** The alignment is chosen as the search chooses it, by the evidence (the pair
/// energies summed, blind to which tone of a pair the key calls side 1), among those the sound's
/// place allows: each of the two frame phases around the symbol boundary it implies, the clock
/// scales and the window's length. The place comes from the sound reading, which knows nothing of the
/// key. So on audio without this key's mark every reading scored is a Rademacher sum in the
/// key's coins, as in the search, and P(score ≥ z) ≤ 3.18 P(η ≥ z) for each. A detector answers
/// at most ``confirmationsPerInterval`` confirmations in each ``confirmationInterval`` of its
/// input and scores ``readingsPerConfirmation`` readings for each, so over an hour
///
///     P(false confirmation) ≤ confirmations per hour × 8 × 3.18 P(η ≥ z) ≤ 10⁻⁶  at  z = ``confirmationThreshold``,
///
/// whatever the audio and whichever campaigns the caller asks for: the count is enforced here,
/// not left to the caller. (docs/watermark.md, "The mark at the sound's place".)
extension WatermarkDetector {
    /// How often a detector answers confirmations: at most ``confirmationsPerInterval`` in each
    /// half second of its input (the sound's three leading candidates, twice a second).
    public static let confirmationInterval = 0.5
    public static let confirmationsPerInterval = 3
    /// The frame phases a confirmation reads its place at (``confirmationAlignments(creativeStart:)``).
    static let framePhases = 2
    /// Readings scored per confirmation: at each frame phase, the readings of one place, as the
    /// search scores per hop (``appendReadings(strongest:multi:into:)``).
    static let readingsPerConfirmation = framePhases * readingsPerPlace

    /// The readings of one place, the most ``readingsPerPlace``: the alignment with the most
    /// evidence read as energies, flat (coherently across its symbols), and per tone (with the
    /// copies when there are some), and the strongest holding some slot twice, its copies added
    /// coherently. The search scores them at each hop and a confirmation at each frame phase:
    /// the false-detection bounds count what this appends.
    static func appendReadings(strongest: Alignment, multi: Alignment?, into readings: inout [Alignment]) {
        readings.append(strongest)
        var s = strongest
        s.reading = .flat
        readings.append(s)
        // Before the copies alone, which then reuse its copies reading.
        s.reading = multi.map { .perToneAndCopies(copies: $0) } ?? .perTone
        readings.append(s)
        if let multi { readings.append(multi) }
    }
    /// What ``appendReadings(strongest:multi:into:)`` appends at most (a test counts it).
    static let readingsPerPlace = 4
    /// Confirmations answered in an hour at most.
    public static let confirmationsPerHour = 3600 / confirmationInterval * Double(confirmationsPerInterval)
    /// The score a confirmation needs: 10⁻⁶ false confirmations per hour over every reading of
    /// every confirmation a detector answers (6.95, against 7.64 for the blind search with a
    /// catalogue of 100 and 9.65 without one).
    public static let confirmationThreshold = threshold(hypothesesPerHour: confirmationsPerHour * Double(readingsPerConfirmation))

    /// Scores `payload`'s codeword where a creative that began at `creativeStart` (stream
    /// seconds, as ``startTime``; its mark's first copy begins there) would put the mark now.
    ///
    /// Returns the detection if the best of its readings reaches ``confirmationThreshold``; nil
    /// if it does not, if fewer than one copy's symbols of the creative have been heard, or if
    /// this half second's confirmations are spent (then nothing is scored). Marks the detection
    /// ``WatermarkDetection/confirmedAtSound``; its confidence is one minus the bound above at its score.
    public func confirm(_ payload: WatermarkPayload, creativeStart: Double) -> WatermarkDetection? {
        let tick = Int(elapsed / Self.confirmationInterval)
        if tick != confirmationTick { (confirmationTick, confirmationsThisTick) = (tick, 0) }
        guard confirmationsThisTick < Self.confirmationsPerInterval, creativeStart.isFinite else { return nil }
        confirmationsThisTick += 1
        guard let best = confirmationScore(payload, creativeStart: creativeStart - startTime) else { return nil }
        highestConfirmationScore = max(highestConfirmationScore, best.score)
        guard best.score >= Self.confirmationThreshold, !outscoredByRival(payload, at: best) else { return nil }
        var d = detection(payload, score: best.score, candidate: best.alignment, newest: best.newest)
        let bound = Self.confirmationsPerHour * Double(Self.readingsPerConfirmation) * Self.tailBound(best.score)
        d.mark?.confidence = max(0, min(1, 1 - bound))
        d.mark?.confirmedAtSound = true
        return d
    }

    /// Whether another campaign this detector knows of (its catalogue, ``confirmationRivals``)
    /// scores as high as `payload` at the reading that confirmed it. Campaigns' payloads may
    /// differ in a few bits (numbered campaigns), and then their codewords share most of their
    /// coded bits: the mark of one, aired, confirms its neighbour nearly as well as itself. The
    /// search reports the best codeword of its catalogue; a confirmation must be the best too.
    /// (This only refuses, so the bound is untouched.)
    private func outscoredByRival(_ payload: WatermarkPayload, at best: (score: Double, alignment: Alignment, newest: Int)) -> Bool {
        guard catalogue != nil || !rivalPayloads.isEmpty else { return false }
        fill(best.alignment, newest: best.newest)
        _ = sumBits()
        let score = Self.signs(of: payload, format: format).withUnsafeBufferPointer { codewordSum($0.baseAddress!) }
        return [(catalogue ?? [], catalogueSigns), (rivalPayloads, rivalSigns)].contains { payloads, signs in
            signs.withUnsafeBufferPointer { signs in
                payloads.indices.contains { payloads[$0] != payload && codewordSum(signs.baseAddress! + $0 * Self.signVectors) >= score }
            }
        }
    }

    /// The best of the readings at the alignments `creativeStart` allows, scored with
    /// `payload`'s codeword, with no count kept (``confirm(_:creativeStart:)`` keeps it).
    func confirmationScore(_ payload: WatermarkPayload, creativeStart: Double) -> (score: Double, alignment: Alignment, newest: Int)? {
        let signs = Self.signs(of: payload, format: format)
        var best: (score: Double, alignment: Alignment, newest: Int)?
        var readings: [Alignment] = []
        for (strongest, multi, newest) in confirmationAlignments(creativeStart: creativeStart) {
            readings.removeAll(keepingCapacity: true)
            Self.appendReadings(strongest: strongest, multi: multi, into: &readings)
            for alignment in readings {
                fill(alignment, newest: newest)
                let energy = Double(sumBits())
                guard energy > 0 else { continue }
                let score = Double(signs.withUnsafeBufferPointer { codewordSum($0.baseAddress!) }) / energy.squareRoot()
                if score > (best?.score ?? -.infinity) { best = (score, alignment, newest) }
            }
        }
        return best
    }

    /// The alignments a creative that began at `creativeStart` allows at the newest frames, for
    /// each of the two frame phases around its symbols' boundaries: the strongest of at least
    /// one copy and the strongest holding some slot twice, chosen by their evidence as the
    /// search chooses (blind to the key's coins), and the frame they end at.
    ///
    /// Frames start every 50 ms and a symbol every 0.4 s from the creative's start, so a
    /// symbol begins within a hop of two frame phases. Both are read: the evidence, energies
    /// summed, often prefers the frame that straddles two symbols, while the flat reading needs
    /// the one that holds one symbol whole (a faint mark on music read 7.9 there and 1.4 at
    /// the other). Under each phase every clock scale is weighed, for every length from one
    /// copy to four that the creative (since its start) and the frames kept allow.
    func confirmationAlignments(creativeStart: Double) -> [(Alignment, Alignment?, newest: Int)] {
        let S = WatermarkFormat.symbolsPerCopy
        let latest = frameCount - 1
        let oldestKept = max(0, frameCount - ringSize + 1)
        let hopSeconds = Double(hopLength) / analysisRate
        // A hundredth of a hop of slack: 1.3 s / 50 ms is 25.999… in binary.
        let startFrame = Int((creativeStart / hopSeconds + 0.01).rounded(.down))
        var chosen: [(Alignment, Alignment?, newest: Int)] = []
        for phase in (0..<Self.framePhases).map({ startFrame + $0 }) {
            // The newest frame on this phase, and which symbol of the creative it holds.
            let newest = latest - ((latest - phase) % framesPerSymbol + framesPerSymbol) % framesPerSymbol
            guard newest >= phase else { continue }
            let symbol = (newest - phase) / framesPerSymbol
            let available = min(Self.maxCopies * S, symbol + 1, (newest - oldestKept) / framesPerSymbol + 1)
            guard available >= S else { continue }
            var strongest: Alignment?, strongestWeight = -Float.infinity
            var multi: Alignment?, multiWeight = -Float.infinity
            for scale in 0..<Self.clockScales.count {
                var alignment = Alignment(scale: scale, symbols: 0, newestSlot: symbol % S)
                var total: Float = 0
                for back in 0..<available {
                    total += evidence(slot: alignment.slot(back: back), frame: newest - back * framesPerSymbol, scale: scale)
                    guard back + 1 >= S else { continue }
                    alignment.symbols = back + 1
                    let weight = total / Float(back + 1).squareRoot()
                    if weight > strongestWeight { strongestWeight = weight; strongest = alignment }
                    if back + 1 >= Self.minimumCoherentSymbols, weight > multiWeight { multiWeight = weight; multi = alignment }
                }
            }
            multi?.reading = .copies
            if let strongest { chosen.append((strongest, multi, newest)) }
        }
        return chosen
    }
}
