import FoundationEssentials
import Glibc
import HarkSystem
import HarkDSP
import HarkSoundFile

/// The result of measuring a recording of an acoustic calibrator.
public struct CalibrationResult: Sendable, Equatable {
    /// Decibels to add to Hark's digital levels to read dB SPL: `reference − measured`.
    public var offset: Double
    /// The tone's level in the recording, dB re full-scale sine.
    public var measured: Double
    /// The calibrator's stated level, dB SPL.
    public var reference: Double
    /// Seconds of steady tone the measurement used.
    public var duration: Double
    /// Spread of the F-weighted level over that time (max − min), dB.
    public var spread: Double
    /// Share of the recording's energy that lies in the calibrator's 1/3-octave band.
    public var toneShare: Double
}

/// Errors that make a recording useless for calibration.
public enum CalibrationError: Error, Equatable, CustomStringConvertible {
    case tooShort(path: String, seconds: Double)
    case notATone(path: String, frequency: Double, share: Double)
    case unsteady(path: String, spread: Double)

    public var description: String {
        switch self {
        case let .tooShort(p, s):
            return String(cFormat: "%@: %.2f s of audio; a calibration needs at least %.1f s of steady tone", p, s,
                          CalibrationAnalysis.minimumSeconds)
        case let .notATone(p, f, share):
            return String(cFormat: "%@: only %.0f %% of the energy is in the %g Hz band; this does not look like a recording of a %g Hz calibrator",
                          p, 100 * share, f, f)
        case let .unsteady(p, spread):
            return String(cFormat: "%@: the level varies by %.2f dB; hold the calibrator steady on the microphone and record again", p, spread)
        }
    }
}

/// Measures a recording of a sound calibrator (e.g. 94 dB SPL at 1 kHz) and derives the
/// calibration offset for ``LevelMeter``.
///
/// The first and last half second are left out (fitting the calibrator, switching it off).
/// The tone's level is its 1/3-octave band level, so background noise outside the band does
/// not bias it. The recording is refused if less than 90 % of its energy is in that band or
/// if the F-weighted level moves by more than 1 dB.
public enum CalibrationAnalysis {
    public static let minimumSeconds = 2.0
    /// Only the first two minutes are read: a calibrator tone does not change.
    public static let maximumSeconds = 120.0
    static let trim = 0.5
    static let minimumShare = 0.9
    static let maximumSpread = 1.0

    public static func measure(source: AudioSource, reference: Double, frequency: Double = 1000,
                               channel: Int? = nil) throws -> CalibrationResult {
        let rate = Double(source.sampleRate)
        if let c = channel, !(1...source.channels).contains(c) {
            throw SoundFileError.channelOutOfRange(path: source.name, channel: c, channels: source.channels)
        }
        var blocks = MonoBlockReader(source, selection: channel.map { .channel($0 - 1) } ?? .average)
        // Read everything once to know where the steady part ends; calibrator recordings are short.
        var samples: [Float] = []
        while case let mono = try blocks.next(), !mono.isEmpty {
            samples += mono
            if Double(samples.count) > rate * Self.maximumSeconds { break }
        }
        let trim = Int(Self.trim * rate)
        let usable = samples.count - 2 * trim
        guard Double(usable) >= Self.minimumSeconds * rate else {
            throw CalibrationError.tooShort(path: source.name, seconds: Double(samples.count) / rate)
        }
        let meter = LevelMeter(sampleRate: rate)
        let bands = try ThirdOctaveBands(sampleRate: rate)
        // The meter settles on the trimmed lead-in, then measures only the steady part.
        samples[0..<trim].withUnsafeBufferPointer { meter.process($0) }
        meter.restartMeasurement()
        samples[trim..<(trim + usable)].withUnsafeBufferPointer {
            meter.process($0)
            bands.process($0)
        }
        bands.finish()
        let report = meter.report()
        guard let band = bands.bands.indices.min(by: { abs(log(bands.bands[$0].center / frequency)) < abs(log(bands.bands[$1].center / frequency)) }),
              let bandLevel = bands.levels()[band], let total = report.LZeq else {
            throw CalibrationError.notATone(path: source.name, frequency: frequency, share: 0)
        }
        let share = pow(10, (bandLevel - total) / 10)
        guard share >= Self.minimumShare else {
            throw CalibrationError.notATone(path: source.name, frequency: frequency, share: share)
        }
        let spread = (report.LAFmax ?? 0) - (report.LAFmin ?? 0)
        guard spread <= Self.maximumSpread else { throw CalibrationError.unsteady(path: source.name, spread: spread) }
        return CalibrationResult(offset: reference - bandLevel, measured: bandLevel, reference: reference,
                                 duration: Double(usable) / rate, spread: spread, toneShare: share)
    }
}
