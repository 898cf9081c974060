/// Sample formats Hark asks ALSA for (little-endian).
public enum SampleFormat: String, Sendable, CaseIterable {
    case s16 = "S16"
    case s32 = "S32"
    case float = "FLOAT"

    var bytesPerSample: Int { self == .s16 ? 2 : 4 }
}

/// What to capture, as asked; the device may offer something near it (see ``NegotiatedFormat``).
public struct CaptureSettings: Sendable, Equatable {
    /// An ALSA PCM name, e.g. `default`, `hw:1,0`, `plughw:0`.
    public var device = "default"
    public var rate = 48_000
    public var channels = 1
    public var format = SampleFormat.s16
    /// Frames per period: how often the capture thread wakes (960 = 20 ms at 48 kHz).
    public var periodFrames = 960
    /// Frames in ALSA's ring: how long capture can stall before an overrun.
    public var bufferFrames = 9_600
    /// ALSA configuration text to use instead of the system's (`device` names a PCM defined in
    /// it). For tests and demos with the `file` plugin; nothing is read from disk.
    public var configuration: String?

    public init() {}
}

/// What the device agreed to.
public struct NegotiatedFormat: Sendable, Equatable {
    public var rate: Int
    public var channels: Int
    public var format: SampleFormat
    public var periodFrames: Int
    public var bufferFrames: Int
}
