import Foundation

/// A picture's data gathered message by message: level, report and detection objects of
/// `hark analyze --json` or of a harkd noise session, each read once as it comes.
public struct PlotLog {
    public private(set) var data: PlotData
    private var previous = 0.0
    private let logName: String
    private var named = false

    public init(name: String) {
        logName = (name as NSString).lastPathComponent
        data = PlotData(title: logName, duration: 0, unit: "dB re full-scale sine")
    }

    public mutating func add(_ object: [String: Any]) {
        // Titled by the audio the log measured (its lines' `file`), the log named beside it.
        if !named, let file = object["file"] as? String, !file.isEmpty {
            named = true
            data.title = "\((file as NSString).lastPathComponent) (log \(logName))" + data.title.dropFirst(logName.count)
        }
        switch object["class"] as? String {
        case "level":
            guard let t = object["t"] as? Double else { return }
            data.intervals.append(.init(time: t, duration: t - previous, LAF: object["LAF"] as? Double,
                                        LAeq: object["LAeq"] as? Double, LCpeak: object["LCpeak"] as? Double))
            previous = t
            data.duration = max(data.duration, t)
        case "detection":
            if let t = object["t"] as? Double, let p = object["payload"] as? String { data.detections.append((t, p)) }
        case "report":
            data.duration = object["duration"] as? Double ?? data.duration
            if let c = object["calibration"] as? Double, c != 0 { data.unit = "dB SPL" }
            data.statistics = ["LA10", "LA50", "LA90"].compactMap { k in (object[k] as? Double).map { (k, $0) } }
            if let bands = object["bands"] as? [String: Any] {
                data.bands = bands.keys.sorted { (Double($0) ?? 0) < (Double($1) ?? 0) }.map { ($0, bands[$0] as? Double) }
            }
            if let l = object["LAeq"] as? Double {
                data.title += String(format: ": LAeq %.1f %@, %.1f s", l, data.unit, data.duration)
            }
        default:
            return
        }
    }
}
