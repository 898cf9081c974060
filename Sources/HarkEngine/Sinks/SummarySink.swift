import FoundationEssentials
import Glibc
import HarkSystem
import HarkDSP

/// A readable summary of each report, for people at a terminal. Level events are skipped;
/// watermark detections are listed under the report they belong to.
public final class SummarySink: EventSink {
    public let writer: LineWriter
    private var detections: [WatermarkDetection] = []

    public init(writer: LineWriter) {
        self.writer = writer
    }

    public func receive(_ event: AnalysisEvent) throws {
        switch event {
        case .detection(let d): detections.append(d.detection)
        case .report(let r):
            try writer.write(raw: Self.render(r, detections: detections))
            detections = []
        case .level: break
        }
    }

    static func render(_ r: ReportEvent, detections: [WatermarkDetection] = []) -> String {
        let m = r.meter
        let unit = r.calibration == 0 ? "dB re full-scale sine, uncalibrated" : String(cFormat: "dB SPL, calibration %+.2f dB", r.calibration)
        func v(_ x: Double?) -> String { x.map { String(cFormat: "%7.2f", $0) } ?? "      –" }
        var out = "\(r.source)\n"
        out += "  \(r.format); \(r.sampleRate) Hz, \(r.channels) channel\(r.channels == 1 ? "" : "s") (\(r.channelUse)); "
        out += "\(Self.clock(m.duration))\n"
        out += "  levels in \(unit)\n"
        out += "    LAeq \(v(m.LAeq))    LCeq   \(v(m.LCeq))    LZeq   \(v(m.LZeq))    LAE  \(v(m.LAE))\n"
        out += "    LAFmax\(v(m.LAFmax))    LAFmin \(v(m.LAFmin))    LASmax \(v(m.LASmax))    LCpeak\(v(m.LCpeak))\n"
        out += "    LA10 \(v(m.LA10))    LA50   \(v(m.LA50))    LA90   \(v(m.LA90))\n"
        if !r.bands.isEmpty {
            out += "  1/3-octave bands, LZeq:\n"
            let cells = r.bands.map { String(repeating: " ", count: max(0, 6 - $0.label.count)) + $0.label + " Hz " + v($0.level) }
            for row in stride(from: 0, to: cells.count, by: 4) {
                out += "   " + cells[row..<min(row + 4, cells.count)].joined(separator: "   ") + "\n"
            }
        }
        for d in detections {
            let how = d.mark.map { String(cFormat: "copy from %.2f s, score %.1f", d.start, $0.score) } ?? "by its sound"
            out += String(cFormat: "  watermark: payload %@ at %.2f s (%@)\n", d.payload.hex, d.time, how)
        }
        for w in r.warnings { out += "  warning: \(w)\n" }
        return out
    }

    /// `h:mm:ss.sss` or `m:ss.sss`.
    static func clock(_ seconds: Double) -> String {
        let ms = Int((seconds * 1000).rounded())
        let h = ms / 3_600_000, m = (ms / 60_000) % 60, s = (ms / 1000) % 60, f = ms % 1000
        return h > 0 ? String(cFormat: "%d:%02d:%02d.%03d", h, m, s, f) : String(cFormat: "%d:%02d.%03d", m, s, f)
    }
}
