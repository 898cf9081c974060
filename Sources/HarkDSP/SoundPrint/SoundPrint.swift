import FoundationEssentials

/// The compact reading of a creative's sound that a catalogue keeps: its landmarks (hash and
/// frame), never its samples. About 5 bytes a landmark and a few hundred landmarks a second of
/// programme (docs/watermark.md, Sound reading, gives the figures).
public struct SoundPrint: Sendable, Equatable {
    /// Landmarks in frame order.
    public var landmarks: [Landmark]
    /// Every spectral peak of the creative (frame and bin, in frame order), kept or not in a
    /// landmark: what a candidate's peaks are confirmed against (``SoundMatcher``), and what
    /// tells, when two creatives share a music bed, which of one's landmarks the other's audio
    /// holds too, however each chose its landmarks (``SoundIndex``). 3 bytes each.
    public var peaks: [SpectralPeak]
    /// Seconds of audio read.
    public var duration: Double

    /// Frames are kept in 16 bits: 17 minutes, far beyond any advert.
    public static let maxDuration = 600.0

    /// The creative's band envelopes (empty in a reading of the first format, "HSP1").
    public var envelope: SoundEnvelope

    public init(landmarks: [Landmark], peaks: [SpectralPeak] = [], envelope: SoundEnvelope = SoundEnvelope(), duration: Double) {
        self.landmarks = landmarks
        self.peaks = peaks
        self.envelope = envelope
        self.duration = duration
    }

    /// The peaks a creative keeps a second: its most prominent, those likeliest to stand out
    /// of a room's noise. The room's side keeps every peak (``SoundPrintReader``), so a pair
    /// kept here is found there whenever both its peaks survive.
    public static let peaksPerSecond = 24
    /// Targets each kept anchor is paired with, nearest in time first.
    public static let fanOut = 8

    /// Reads mono samples from their start.
    public static func read(_ samples: UnsafeBufferPointer<Float>, sampleRate: Double) throws -> SoundPrint {
        let duration = Double(samples.count) / sampleRate
        guard duration <= maxDuration else { throw SoundPrintError.tooLong(seconds: duration) }
        var seen = Set<UInt64>()
        var landmarks: [Landmark] = []
        var all: [SpectralPeak] = []
        var envelope: [Float] = []
        // Read twice, the second time half a hop later: the room's frames fall anywhere between
        // the creative's, and a peak near a frame boundary lands in either.
        let half = Int((SpectralPeakPicker.hopDuration * sampleRate / 2).rounded())
        for shift in [0, half] where samples.count > shift {
            let reader = try SoundPrintReader(sampleRate: sampleRate)
            var peaks: [SpectralPeak] = []
            var rows = EnvelopeRows()
            reader.peaks(UnsafeBufferPointer(rebasing: samples[shift...]), spectrum: { spectrum in
                if shift == 0, let row = rows.add(spectrum) { envelope += row }
            }) { peaks.append($0) }
            if shift == 0 { all = peaks.map { SpectralPeak(frame: $0.frame, bin: $0.bin, level: 0) } }
            for l in pairs(thin(peaks, frameSeconds: reader.frameSeconds)) where seen.insert(UInt64(l.hash) << 32 | UInt64(l.frame)).inserted {
                landmarks.append(l)
            }
        }
        landmarks.sort { ($0.frame, $0.hash) < ($1.frame, $1.hash) }
        return SoundPrint(landmarks: landmarks, peaks: all, envelope: SoundEnvelope(rows: envelope), duration: duration)
    }

    /// Peaks a creative keeps in one frame: a transient across the band (a drum, a click) peaks
    /// in every few bins at once, and its landmarks are what every other transient makes too.
    public static let peaksPerFrame = 1000

    /// The most prominent ``peaksPerSecond`` of each second, at most ``peaksPerFrame`` of a
    /// frame, in frame order.
    static func thin(_ peaks: [SpectralPeak], frameSeconds: Double) -> [SpectralPeak] {
        let framesPerBlock = max(1, Int((1 / frameSeconds).rounded()))
        var kept: [SpectralPeak] = []
        var i = 0
        while i < peaks.count {
            let block = peaks[i].frame / framesPerBlock
            var j = i
            while j < peaks.count && peaks[j].frame / framesPerBlock == block { j += 1 }
            var perFrame: [Int: Int] = [:]
            kept += peaks[i..<j].sorted { $0.prominence > $1.prominence }.filter { p in
                perFrame[p.frame, default: 0] += 1
                return perFrame[p.frame]! <= peaksPerFrame
            }.prefix(peaksPerSecond)
            i = j
        }
        return kept.sorted { ($0.frame, $0.bin) < ($1.frame, $1.bin) }
    }

    /// Each peak paired with up to ``fanOut`` later peaks within the target zone.
    static func pairs(_ peaks: [SpectralPeak]) -> [Landmark] {
        var out: [Landmark] = []
        for (i, anchor) in peaks.enumerated() {
            var n = 0
            var j = i + 1
            while j < peaks.count && n < fanOut {
                let t = peaks[j]
                j += 1
                if t.frame == anchor.frame { continue }
                if t.frame - anchor.frame > LandmarkPairer.maxFrames { break }
                guard abs(t.bin - anchor.bin) <= LandmarkPairer.maxBins else { continue }
                out.append(Landmark(anchor: anchor, target: t))
                n += 1
            }
        }
        return out
    }

    // MARK: Bytes

    private static let magic: [UInt8] = Array("HSP1".utf8)
    private static let magic2: [UInt8] = Array("HSP2".utf8)

    /// "HSP2", the duration in milliseconds (UInt32), the landmark count (UInt32), each
    /// landmark as its 20-bit hash in 3 bytes and its frame in 2; then the peak count (UInt32)
    /// and each peak as its frame in 2 bytes and its bin in 1; then the envelope's row count
    /// (UInt32) and its rows, ``SoundEnvelope/bands`` bytes each. Little-endian. "HSP1" is the
    /// same without the envelope (read, never written).
    public var bytes: [UInt8] {
        var out = Self.magic2
        out.reserveCapacity(16 + 5 * landmarks.count + 3 * peaks.count)
        func put(_ v: UInt32, _ n: Int) { for i in 0..<n { out.append(UInt8(truncatingIfNeeded: v >> (8 * UInt32(i)))) } }
        put(UInt32((duration * 1000).rounded()), 4)
        put(UInt32(landmarks.count), 4)
        for l in landmarks {
            put(l.hash, 3)
            put(UInt32(l.frame), 2)
        }
        put(UInt32(peaks.count), 4)
        for p in peaks {
            put(UInt32(p.frame), 2)
            put(UInt32(p.bin), 1)
        }
        put(UInt32(envelope.rows), 4)
        out += envelope.levels
        return out
    }

    public init(bytes: [UInt8]) throws {
        guard bytes.count >= 12, Array(bytes[0..<4]) == Self.magic || Array(bytes[0..<4]) == Self.magic2 else {
            throw SoundPrintError.damaged("not a sound reading")
        }
        let hasEnvelope = Array(bytes[0..<4]) == Self.magic2
        func get(_ at: Int, _ n: Int) -> UInt32 { (0..<n).reduce(0) { $0 | UInt32(bytes[at + $1]) << (8 * UInt32($1)) } }
        let count = Int(get(8, 4))
        let peaksAt = 12 + 5 * count
        guard bytes.count >= peaksAt + 4 else {
            throw SoundPrintError.damaged("\(bytes.count) bytes for \(count) landmarks (at least \(peaksAt + 4) expected)")
        }
        let peakCount = Int(get(peaksAt, 4))
        let envelopeAt = peaksAt + 4 + 3 * peakCount
        var expected = envelopeAt
        var rows = 0
        if hasEnvelope {
            guard bytes.count >= envelopeAt + 4 else {
                throw SoundPrintError.damaged("\(bytes.count) bytes for \(count) landmarks and \(peakCount) peaks (at least \(envelopeAt + 4) expected)")
            }
            rows = Int(get(envelopeAt, 4))
            expected = envelopeAt + 4 + rows * SoundEnvelope.bands
        }
        guard bytes.count == expected else {
            throw SoundPrintError.damaged("\(bytes.count) bytes for \(count) landmarks, \(peakCount) peaks and \(rows) envelope rows (\(expected) expected)")
        }
        envelope = SoundEnvelope(levels: hasEnvelope ? Array(bytes[(envelopeAt + 4)...]) : [])
        duration = Double(get(4, 4)) / 1000
        landmarks = Self.landmarks(inBytes: bytes)
        peaks = (0..<peakCount).map { i in SpectralPeak(frame: Int(get(peaksAt + 4 + 3 * i, 2)), bin: Int(bytes[peaksAt + 6 + 3 * i]), level: 0) }
        guard zip(landmarks, landmarks.dropFirst()).allSatisfy({ $0.frame <= $1.frame }),
              zip(peaks, peaks.dropFirst()).allSatisfy({ $0.frame <= $1.frame }) else {
            throw SoundPrintError.damaged("landmarks or peaks out of order")
        }
    }
}

extension SoundPrint {
    /// The landmarks of bytes that ``init(bytes:)`` accepts, without the rest: what an index
    /// reads of a creative more than once. Bytes it would refuse give what fits in them.
    public static func landmarks(inBytes bytes: [UInt8]) -> [Landmark] {
        guard bytes.count >= 12 else { return [] }
        return bytes.withUnsafeBufferPointer { b in
            func get(_ at: Int, _ n: Int) -> UInt32 {
                var v: UInt32 = 0
                for i in 0..<n { v |= UInt32(b[at + i]) << (8 * UInt32(i)) }
                return v
            }
            let count = min(Int(get(8, 4)), (b.count - 12) / 5)
            return (0..<count).map { i in Landmark(hash: get(12 + 5 * i, 3), frame: Int(get(15 + 5 * i, 2))) }
        }
    }
}

/// Streams mono samples into landmarks: ``SpectralPeakPicker`` then ``LandmarkPairer``.
public final class SoundPrintReader {
    private let picker: SpectralPeakPicker
    private var pairer = LandmarkPairer()

    public init(sampleRate: Double) throws {
        picker = try SpectralPeakPicker(sampleRate: sampleRate)
    }

    /// Seconds per frame.
    public var frameSeconds: Double { picker.frameSeconds }

    public func process(_ samples: UnsafeBufferPointer<Float>, peak: (SpectralPeak) -> Void = { _ in },
                        spectrum: (UnsafeBufferPointer<Float>) -> Void = { _ in }, found: (Landmark) -> Void) {
        picker.process(samples, spectrum: spectrum) { p in
            peak(p)
            pairer.add(p, found: found)
        }
    }

    /// Every peak of a whole recording but its last 0.14 s. (Read on into silence, the end of a
    /// creative cut short is a click across the band, whose landmarks any drum or hi-hat in a
    /// room also makes: 10 minutes of unmarked music named one creative's end 10 times.)
    func peaks(_ samples: UnsafeBufferPointer<Float>, spectrum: (UnsafeBufferPointer<Float>) -> Void = { _ in }, found: (SpectralPeak) -> Void) {
        picker.process(samples, spectrum: spectrum, found: found)
    }
}
