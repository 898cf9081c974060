import CALSA
import FoundationEssentials
import Glibc

/// Why an ALSA operation failed, with ALSA's own code and words.
public enum ALSAError: Error, Equatable, CustomStringConvertible {
    /// The device could not be opened (absent, busy, no permission, bad name).
    case open(device: String, code: Int32, message: String)
    /// The device refused a hardware parameter.
    case configure(device: String, step: String, code: Int32, message: String)
    /// The ALSA configuration text given for the device did not parse.
    case configuration(code: Int32, message: String)
    /// Reading failed in a way recovery could not fix.
    case read(code: Int32, message: String)
    /// The device disappeared (unplugged, driver gone).
    case deviceLost(code: Int32, message: String)
    /// A playback device could not be opened, or refused a parameter.
    case openPlayback(device: String, code: Int32, message: String)
    case configurePlayback(device: String, step: String, code: Int32, message: String)
    /// Writing failed in a way recovery could not fix.
    case write(code: Int32, message: String)

    static func message(_ code: Int32) -> String { String(cString: snd_strerror(code)) }

    public var description: String {
        switch self {
        case let .open(d, c, m): return "cannot open capture device '\(d)': \(m) (\(c))"
        case let .configure(d, s, c, m): return "capture device '\(d)' refused \(s): \(m) (\(c))"
        case let .configuration(c, m): return "ALSA configuration does not parse: \(m) (\(c))"
        case let .read(c, m): return "capture failed: \(m) (\(c))"
        case let .deviceLost(c, m): return "capture device lost: \(m) (\(c))"
        case let .openPlayback(d, c, m): return "cannot open playback device '\(d)': \(m) (\(c))"
        case let .configurePlayback(d, s, c, m): return "playback device '\(d)' refused \(s): \(m) (\(c))"
        case let .write(c, m): return "playback failed: \(m) (\(c))"
        }
    }

    /// Errors that mean the device is gone rather than misbehaving.
    static func isLoss(_ code: Int32) -> Bool {
        code == -ENODEV || code == -EBADFD || code == -EIO || code == -ENXIO
    }
}
