/// A break in captured audio: the samples after it do not follow on from those before.
///
/// Analysers that carry state across samples (filters, a watermark detector's frame
/// alignment) must start afresh after one, and a measurement spanning one must say so.
public enum CaptureGap: Sendable, Equatable, CustomStringConvertible {
    /// The device overran (`-EPIPE`): it had audio the capture thread did not read in time.
    case overrun
    /// The consumer fell behind and the ring had no room for this many frames.
    case dropped(frames: Int)
    /// The device was lost and opened again.
    case reopened

    public var description: String {
        switch self {
        case .overrun: return "capture overrun (the device dropped audio)"
        case .dropped(let n): return "\(n) frames dropped (analysis fell behind capture)"
        case .reopened: return "capture device reopened"
        }
    }
}
