import FoundationEssentials
import Glibc

/// A verified watermark: its payload passed the CRC and its score cleared the threshold.
public struct WatermarkDetection: Sendable, Equatable {
    public var payload: WatermarkPayload
    /// Seconds of input after which the detection was confirmed.
    public var time: Double
    /// Estimated start of the payload copy that completed it, in seconds of input.
    public var start: Double
    /// Standardised score: chip-weighted sum over √(sum of squares). Unmarked audio exceeds z
    /// with probability at most 3.18 P(η ≥ z), η standard normal, per candidate, whatever the
    /// audio (``WatermarkDetector/tailBound(_:)``, docs/watermark.md).
    public var score: Double
    /// 1 − (bound on the probability that an hour of unmarked audio produces a score this
    /// high), clamped to [0, 1].
    public var confidence: Double
    /// Whole copies of the payload within the symbols combined (1 when one copy sufficed; 14
    /// symbols count as 2).
    public var copies: Int
    /// Clock ratio the detector assumed (1 + drift).
    public var clockScale: Double
    /// Seconds of input where the audio the detector combined begins (the window ends at
    /// ``time``): the mark was heard somewhere in between, not necessarily all along.
    public var windowStart: Double

    public init(payload: WatermarkPayload, time: Double, start: Double, score: Double, confidence: Double,
                copies: Int, clockScale: Double, windowStart: Double? = nil) {
        (self.payload, self.time, self.start, self.score) = (payload, time, start, score)
        (self.confidence, self.copies, self.clockScale) = (confidence, copies, clockScale)
        self.windowStart = windowStart ?? start
    }
}
