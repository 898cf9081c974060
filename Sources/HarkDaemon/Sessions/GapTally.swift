import HarkCapture

/// The breaks in the audio behind one measurement, for its `warnings`.
struct GapTally: Equatable {
    var overruns = 0
    var droppedFrames = 0
    var reopenings = 0
    /// Captured samples that were not finite (NaN or infinity), measured as silence.
    var nonFinite = 0

    mutating func add(_ gap: CaptureGap) {
        switch gap {
        case .overrun: overruns += 1
        case .dropped(let n): droppedFrames += n
        case .reopened: reopenings += 1
        }
    }

    /// One sentence per kind of break; none when the audio was whole.
    func warnings(rate: Double) -> [String] {
        var w: [String] = []
        if overruns > 0 {
            w.append("audio missing: \(overruns) capture overrun(s), the device dropped audio")
        }
        if droppedFrames > 0 {
            let seconds = rate > 0 ? Double(droppedFrames) / rate : 0
            w.append("audio missing: \(droppedFrames) frames (\(String(cFormat: "%.3f", seconds)) s) dropped, analysis fell behind capture")
        }
        if reopenings > 0 {
            w.append("audio missing: the capture device was lost and reopened \(reopenings) time(s)")
        }
        if nonFinite > 0 {
            w.append("\(nonFinite) captured samples were not finite numbers (NaN or infinity) and were measured as silence")
        }
        return w
    }
}
