import FoundationEssentials
import Glibc

/// A creative's band envelopes: its level in 16 bands from 300 Hz to 4 kHz every 32 ms, in
/// half-decibel steps below its loudest (one byte a band, 15 kB per 30 s).
///
/// Landmarks and peaks hang on the maxima of the spectrogram, and a held note has none of its
/// own in time: the loudest frame of a sustained chord is any of them, the more so in a
/// reverberant room. The envelopes keep how each band rises and falls, which a room smears but
/// does not move, so a candidate alignment can be confirmed on music whose peaks did not
/// survive (``SoundMatcher/envelopeEvidence(reference:alignment:)``).
public struct SoundEnvelope: Sendable, Equatable {
    public static let bands = 16
    /// Picker frames (16 ms) per row.
    public static let framesPerRow = 2
    /// Half-decibel steps below the creative's loudest band level that a byte holds.
    static let stepsPerDB: Float = 2

    /// Band levels, `bands` a row, rows in time order: 255 is the creative's loudest.
    public var levels: [UInt8]

    public init(levels: [UInt8] = []) {
        self.levels = levels
    }

    /// Rows held.
    public var rows: Int { levels.count / Self.bands }

    /// The first bin of each band (and the end of the last), on the picker's grid: equal
    /// steps of log frequency, so that a band holds a few partials of a note at any pitch.
    static let edges: [Int] = (0...bands).map { k in
        let low = Double(SpectralPeakPicker.lowestBin), high = Double(SpectralPeakPicker.highestBin + 1)
        return Int((low * pow(high / low, Double(k) / Double(bands))).rounded())
    }

    /// Adds the band levels (dB) of one spectrum row of the picker (its bins from
    /// ``SpectralPeakPicker/lowestBin``, in dB), the mean of each band's bins' levels, to `sums`.
    static func addBandLevels(_ row: UnsafeBufferPointer<Float>, to sums: inout [Float]) {
        for k in 0..<bands {
            let from = edges[k] - SpectralPeakPicker.lowestBin, to = edges[k + 1] - SpectralPeakPicker.lowestBin
            var sum: Float = 0
            for i in from..<to { sum += row[i] }
            sums[k] += sum / Float(to - from)
        }
    }

    /// Quantises rows of band levels (dB), `bands` a row.
    init(rows: [Float]) {
        let top = rows.max() ?? 0
        levels = rows.map { v in UInt8(clamping: Int(((v - top) * Self.stepsPerDB).rounded()) + 255) }
    }

    /// The band levels of a row, in dB below the creative's loudest.
    func row(_ i: Int) -> ArraySlice<UInt8> { levels[(i * Self.bands)..<((i + 1) * Self.bands)] }
}

/// Turns the picker's spectrum rows into envelope rows: the mean of each ``SoundEnvelope/framesPerRow``
/// frames' band levels, from frame 0.
struct EnvelopeRows {
    private var pending = [Float](repeating: 0, count: SoundEnvelope.bands)
    private var count = 0

    /// Takes the next frame's spectrum row; returns a row of band levels when one is complete.
    /// (Called for every frame of the input: it sums in place.)
    mutating func add(_ spectrum: UnsafeBufferPointer<Float>) -> [Float]? {
        SoundEnvelope.addBandLevels(spectrum, to: &pending)
        count += 1
        guard count == SoundEnvelope.framesPerRow else { return nil }
        let row = pending.map { $0 / Float(SoundEnvelope.framesPerRow) }
        for k in pending.indices { pending[k] = 0 }
        count = 0
        return row
    }
}
