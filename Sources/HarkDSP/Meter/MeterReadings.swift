/// Levels over a short period of a running measurement: what a meter's display shows, and what
/// `hark analyze` prints every interval. All levels in dB (see ``Decibels``); `nil` means no
/// level (digital silence).
public struct IntervalLevels: Sendable, Equatable {
    /// End of the period, in seconds since the measurement started.
    public var time: Double
    /// Length of the period in seconds.
    public var duration: Double
    /// F-time-weighted A level at the end of the period.
    public var LAF: Double?
    /// S-time-weighted A level at the end of the period.
    public var LAS: Double?
    /// A-weighted energy average over the period.
    public var LAeq: Double?
    /// Highest LAF within the period.
    public var LAFmax: Double?
    /// C-weighted true peak within the period.
    public var LCpeak: Double?

    public init(time: Double, duration: Double, LAF: Double?, LAS: Double?, LAeq: Double?, LAFmax: Double?, LCpeak: Double?) {
        (self.time, self.duration, self.LAF, self.LAS) = (time, duration, LAF, LAS)
        (self.LAeq, self.LAFmax, self.LCpeak) = (LAeq, LAFmax, LCpeak)
    }
}

/// The figures of a whole measurement: what a carriage-noise report carries.
public struct MeterReport: Sendable, Equatable {
    /// Measured time in seconds.
    public var duration: Double
    public var LAeq: Double?
    public var LCeq: Double?
    public var LZeq: Double?
    /// Sound exposure level: LAeq + 10 lg(T / 1 s).
    public var LAE: Double?
    public var LAFmax: Double?
    /// Lowest LAF, after the F averager has settled (see ``LevelMeter``).
    public var LAFmin: Double?
    public var LASmax: Double?
    public var LCpeak: Double?
    /// LAF exceeded 10 %, 50 %, 90 % of the time.
    public var LA10: Double?
    public var LA50: Double?
    public var LA90: Double?

    public init(duration: Double, LAeq: Double?, LCeq: Double?, LZeq: Double?, LAE: Double?, LAFmax: Double?,
                LAFmin: Double?, LASmax: Double?, LCpeak: Double?, LA10: Double?, LA50: Double?, LA90: Double?) {
        (self.duration, self.LAeq, self.LCeq, self.LZeq, self.LAE) = (duration, LAeq, LCeq, LZeq, LAE)
        (self.LAFmax, self.LAFmin, self.LASmax, self.LCpeak) = (LAFmax, LAFmin, LASmax, LCpeak)
        (self.LA10, self.LA50, self.LA90) = (LA10, LA50, LA90)
    }
}
