import FoundationEssentials
import Glibc

/// Hark's decibel convention (see docs/meter.md).
///
/// Before calibration, 0 dB is the RMS value of a full-scale sine (AES17 "dBFS"): a full-scale
/// sine reads 0.00 dB and a full-scale square wave +3.01 dB. Peak levels use the same reference
/// (`20 lg(|x| / √½)`), so a full-scale sine *peaks* at +3.01 dB, just as a 94 dB SPL sine peaks
/// at 97 dB SPL. A calibration offset is added to every level.
public enum Decibels {
    /// Mean square of the reference: a full-scale sine has mean square ½.
    public static let referenceMeanSquare = 0.5

    /// `10 lg(ms / ½) + calibration`, or `nil` when `ms` is 0 (digital silence has no level).
    @inlinable
    public static func level(meanSquare ms: Double, calibration: Double = 0) -> Double? {
        guard ms > 0, ms.isFinite else { return nil }
        return 10 * log10(ms / referenceMeanSquare) + calibration
    }

    /// `20 lg(|x| / √½) + calibration`, or `nil` when `peak` is 0.
    @inlinable
    public static func peakLevel(_ peak: Double, calibration: Double = 0) -> Double? {
        guard peak > 0, peak.isFinite else { return nil }
        return 20 * log10(peak) + 10 * log10(1 / referenceMeanSquare) + calibration
    }

    /// Amplitude of a sine whose level is `db` (uncalibrated).
    public static func sineAmplitude(level db: Double) -> Double {
        (2 * referenceMeanSquare).squareRoot() * pow(10, db / 20)
    }

    /// RMS value of any signal whose level is `db` (uncalibrated).
    public static func rms(level db: Double) -> Double {
        referenceMeanSquare.squareRoot() * pow(10, db / 20)
    }
}
