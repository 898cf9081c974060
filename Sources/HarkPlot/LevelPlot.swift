import Foundation

/// What a measurement picture shows: levels over time, the spectrum over the whole, and (from
/// audio) a spectrogram, with watermark detections marked on the time axes.
public struct PlotData {
    /// One interval of the meter: its end time, its LAF at the end, its LAeq, its LCpeak.
    public struct Interval {
        public var time: Double
        public var duration: Double
        public var LAF: Double?
        public var LAeq: Double?
        public var LCpeak: Double?
        public init(time: Double, duration: Double, LAF: Double?, LAeq: Double?, LCpeak: Double?) {
            (self.time, self.duration, self.LAF, self.LAeq, self.LCpeak) = (time, duration, LAF, LAeq, LCpeak)
        }
    }

    /// A spectrogram's power, dB, `levels[column][row]` on `frequencies` (row 0 the lowest).
    public struct SpectrogramImage {
        public var frequencies: [Double]
        public var levels: [[Double]]
        public init(frequencies: [Double], levels: [[Double]]) { (self.frequencies, self.levels) = (frequencies, levels) }
    }

    public var title: String
    public var duration: Double
    /// "dB re full-scale sine", or "dB SPL" once calibrated.
    public var unit: String
    public var intervals: [Interval] = []
    /// The statistical levels drawn across the level panel, e.g. ("LA10", −22.1).
    public var statistics: [(label: String, level: Double)] = []
    public var bands: [(label: String, level: Double?)] = []
    public var detections: [(time: Double, label: String)] = []
    /// Whether the audio was searched for watermarks: with none found, the legend says so (a
    /// picture without marks does not tell "none heard" from "not looked for").
    public var watermarkSearched = false
    public var spectrogram: SpectrogramImage?

    public init(title: String, duration: Double, unit: String) {
        (self.title, self.duration, self.unit) = (title, duration, unit)
    }

    /// The energy average from the start to the end of each interval.
    public var runningLAeq: [Double?] {
        var energy = 0.0, time = 0.0
        return intervals.map { i in
            if let l = i.LAeq { energy += pow(10, l / 10) * i.duration; time += i.duration }
            return time > 0 && energy > 0 ? 10 * log10(energy / time) : nil
        }
    }
}

/// Draws ``PlotData`` on a ``Canvas``: axes with units and ticks, a legend, titles.
public enum LevelPlot {
    static let left = 78.0, right = 170.0, top = 48.0, gap = 64.0

    /// The panels' heights for a canvas `height` tall: two gaps (under the level and spectrum
    /// panels) and a third only when a spectrogram is drawn. (Three always left a blank band,
    /// some 110 px, under a picture drawn from a log.)
    static func panelHeights(canvasHeight height: Double, spectrogram: Bool) -> (levels: Double, spectrogram: Double, spectrum: Double) {
        let usable = height - top - (spectrogram ? 3 : 2) * gap
        let levels = usable * (spectrogram ? 0.42 : 0.62)
        let image = spectrogram ? usable * 0.30 : 0
        return (levels, image, usable - levels - image)
    }

    public static func draw(_ data: PlotData, on canvas: Canvas) {
        canvas.setColour(0, 0, 0)
        canvas.text(data.title, x: left, y: 28, size: 16, bold: true)
        let plotWidth = canvas.width - left - right
        let heights = panelHeights(canvasHeight: canvas.height, spectrogram: data.spectrogram != nil)
        var y = top
        drawLevels(data, on: canvas, x: left, y: y, width: plotWidth, height: heights.levels)
        y += heights.levels + gap
        if let s = data.spectrogram {
            drawSpectrogram(s, data: data, on: canvas, x: left, y: y, width: plotWidth, height: heights.spectrogram)
            y += heights.spectrogram + gap
        }
        drawSpectrum(data, on: canvas, x: left, y: y, width: plotWidth, height: heights.spectrum)
    }

    /// An axis title along a panel `height` tall: `long` when it fits, else `short`, else the
    /// font shrunk until it does. Returns whether `long` was drawn (else its unit must be said
    /// elsewhere).
    @discardableResult
    static func axisTitle(_ c: Canvas, long: String, short: String, x: Double, y: Double, height: Double) -> Bool {
        var size = 11.0
        var title = c.textWidth(long, size: size) <= height - 4 ? long : short
        while c.textWidth(title, size: size) > height - 4 && size > 6 { size -= 0.5 }
        if c.textWidth(title, size: size) > height - 4 { title = "dB" }
        c.text(title, x: x, y: y + height / 2, size: size, anchor: .centre, rotated: true)
        return title == long
    }

    /// Baselines for labels of `size` points in a column, each as near its wanted baseline as
    /// it can be, kept `spacing` apart and clear of `reserved` (top, bottom) spans, in the order
    /// given (top first).
    static func stack(_ wanted: [Double], spacing: Double, reserved: [(Double, Double)], size: Double) -> [Double] {
        var out: [Double] = []
        for w in wanted {
            var b = max(w, (out.last ?? -.infinity) + spacing)
            // A label's box runs from 0.8 × size above its baseline to 0.25 × size below.
            for (top, bottom) in reserved where b - 0.8 * size < bottom && b + 0.25 * size > top { b = bottom + 0.8 * size + 2 }
            out.append(b)
        }
        return out
    }

    /// The level axis of `values`: whole tens around them, at most some 90 dB under the top
    /// (digital silence reads −165 dB and would squash everything else into the top quarter),
    /// with a tick every 10 dB, or every 20 dB when more than 8 would crowd.
    static func levelAxis(_ values: [Double], fallback: (Double, Double) = (-80, 0)) -> (lo: Double, hi: Double, step: Double) {
        let finite = values.filter(\.isFinite)
        guard let top = finite.max() else { return (fallback.0, fallback.1, 10) }
        let floor = max(finite.min()!, top - 90)
        var (lo, hi) = range(finite.filter { $0 >= floor } + [floor], step: 10, fallback: fallback)
        let step = (hi - lo) / 10 > 8 ? 20.0 : 10
        lo = (lo / step).rounded(.down) * step
        hi = (hi / step).rounded(.up) * step
        return (lo, hi, step)
    }

    // MARK: - Panels

    static let colours: [(String, (Double, Double, Double))] = [
        ("LAF", (0.12, 0.35, 0.75)), ("LAeq, running", (0.85, 0.35, 0.1)), ("LCpeak", (0.45, 0.45, 0.45)),
    ]

    static func drawLevels(_ data: PlotData, on c: Canvas, x: Double, y: Double, width: Double, height: Double) {
        let running = data.runningLAeq
        var values = data.intervals.flatMap { [$0.LAF, $0.LCpeak] }.compactMap { $0 } + running.compactMap { $0 }
        values += data.statistics.map(\.level)
        let (lo, hi, step) = levelAxis(values)
        let duration = max(data.duration, data.intervals.last?.time ?? 0, 1e-3)
        func px(_ t: Double) -> Double { x + width * t / duration }
        // Levels under the axis (digital silence) run along its floor.
        func py(_ l: Double) -> Double { y + height * (1 - (max(lo, min(hi, l)) - lo) / (hi - lo)) }
        frame(c, x: x, y: y, width: width, height: height)
        yTicks(c, lo: lo, hi: hi, step: step, x: x, y: y, width: width, height: height, format: { String(format: "%.0f", $0) })
        timeTicks(c, duration: duration, x: x, y: y + height, width: width)
        let longTitle = axisTitle(c, long: "level (\(data.unit))", short: "level (dB)", x: x - 52, y: y, height: height)
        c.text("time (s)", x: x + width / 2, y: y + height + 34, size: 11, anchor: .centre)
        let series: [[Double?]] = [data.intervals.map(\.LAF), running, data.intervals.map(\.LCpeak)]
        for (k, s) in series.enumerated() {
            let (r, g, b) = colours[k].1
            c.setColour(r, g, b)
            c.polyline(zip(data.intervals, s).map { i, l in l.map { (px(i.time), py($0)) } }, width: k == 2 ? 1 : 1.6)
        }
        markDetections(data, on: c, x: x, y: y, width: width, height: height, duration: duration, labels: true)
        // Legend: the series that have data (a harkd noise session's levels carry no LAeq).
        var ly = y + 12
        for (k, (name, (r, g, b))) in colours.enumerated() where series[k].contains(where: { $0 != nil }) {
            c.setColour(r, g, b)
            c.line(from: (x + width + 8, ly - 4), to: (x + width + 30, ly - 4), width: 2)
            c.setColour(0, 0, 0)
            c.text(name, x: x + width + 36, y: ly, size: 11)
            ly += 16
        }
        if !data.detections.isEmpty || data.watermarkSearched {
            c.setColour(0.7, 0.1, 0.6)
            c.line(from: (x + width + 8, ly - 4), to: (x + width + 30, ly - 4), width: 2, dash: [3, 2])
            c.setColour(0, 0, 0)
            c.text(data.detections.isEmpty ? "watermark: none" : "watermark", x: x + width + 36, y: ly, size: 11)
            ly += 16
        }
        if !longTitle {
            // The axis had room for "level (dB)" only: the reference goes under the legend.
            c.text(data.unit, x: x + width + 8, y: ly, size: 10)
            ly += 14
        }
        // The statistical levels: dashed across the panel, labelled in the margin beside it,
        // where no curve runs; each label as near its line as the others and the legend allow,
        // a leader joining them.
        let statistics = data.statistics.sorted { $0.level > $1.level }
        let baselines = stack(statistics.map { py($0.level) + 4 }, spacing: 12, reserved: [(y, ly - 8)], size: 10)
        c.setColour(0.2, 0.6, 0.2)
        for ((label, level), baseline) in zip(statistics, baselines) {
            c.line(from: (x, py(level)), to: (x + width, py(level)), width: 0.8, dash: [5, 4])
            c.line(from: (x + width, py(level)), to: (x + width + 6, baseline - 4), width: 0.8)
            c.text("\(label) \(String(format: "%.1f", level))", x: x + width + 8, y: baseline, size: 10)
        }
    }

    static func drawSpectrogram(_ s: PlotData.SpectrogramImage, data: PlotData, on c: Canvas, x: Double, y: Double,
                                width: Double, height: Double) {
        let all = s.levels.flatMap { $0 }.filter(\.isFinite)
        let top = (all.max() ?? 0).rounded(.up)
        let floor = top - 80
        c.raster(x: x, y: y, width: width, height: height, columns: s.levels.count, rows: s.frequencies.count) { col, row in
            let l = s.levels[col][row]
            return colourMap(l.isFinite ? (l - floor) / (top - floor) : 0)
        }
        frame(c, x: x, y: y, width: width, height: height)
        let duration = max(data.duration, 1e-3)
        timeTicks(c, duration: duration, x: x, y: y + height, width: width)
        // Frequency ticks on the rows' (logarithmic) scale.
        if let f0 = s.frequencies.first, let f1 = s.frequencies.last, f1 > f0 {
            // Ticks at least 12 points apart: a short panel keeps every other one.
            var lastTick = Double.infinity
            for f in [50.0, 100, 200, 500, 1000, 2000, 5000, 10000, 20000] where f >= f0 && f <= f1 {
                let ty = y + height * (1 - log(f / f0) / log(f1 / f0))
                guard lastTick - ty >= 12 else { continue }
                lastTick = ty
                c.setColour(0, 0, 0)
                c.line(from: (x - 4, ty), to: (x, ty))
                c.text(f >= 1000 ? "\(Int(f / 1000))k" : "\(Int(f))", x: x - 7, y: ty + 4, size: 10, anchor: .right)
            }
        }
        c.setColour(0, 0, 0)
        axisTitle(c, long: "frequency (Hz)", short: "Hz", x: x - 52, y: y, height: height)
        c.text(String(format: "spectrogram, %.0f dB range", top - floor), x: x + width + 8, y: y + 12, size: 11)
        for k in 0...4 {
            let v = Double(k) / 4
            let (r, g, b) = colourMap(v)
            c.setColour(Double(r) / 255, Double(g) / 255, Double(b) / 255)
            c.rectangle(x: x + width + 8, y: y + 22 + Double(4 - k) * 16, width: 14, height: 14)
            c.setColour(0, 0, 0)
            c.text(String(format: "%.0f dB", floor + v * (top - floor)), x: x + width + 28, y: y + 33 + Double(4 - k) * 16, size: 10)
        }
        markDetections(data, on: c, x: x, y: y, width: width, height: height, duration: duration, labels: false)
    }

    static func drawSpectrum(_ data: PlotData, on c: Canvas, x: Double, y: Double, width: Double, height: Double) {
        let levels = data.bands.compactMap(\.level)
        let (lo, hi, step) = levelAxis(levels)
        frame(c, x: x, y: y, width: width, height: height)
        yTicks(c, lo: lo, hi: hi, step: step, x: x, y: y, width: width, height: height, format: { String(format: "%.0f", $0) })
        guard !data.bands.isEmpty else { return }
        let slot = width / Double(data.bands.count)
        for (i, band) in data.bands.enumerated() {
            let bx = x + Double(i) * slot
            if let l = band.level {
                let h = height * (max(lo, min(hi, l)) - lo) / (hi - lo)
                c.setColour(0.25, 0.45, 0.7)
                c.rectangle(x: bx + slot * 0.15, y: y + height - h, width: slot * 0.7, height: h)
            }
            if i % 3 == 0 {
                c.setColour(0, 0, 0)
                c.text(band.label, x: bx + slot / 2, y: y + height + 16, size: 10, anchor: .centre)
            }
        }
        c.setColour(0, 0, 0)
        axisTitle(c, long: "level (\(data.unit))", short: "level (dB)", x: x - 52, y: y, height: height)
        c.text("LZeq per 1/3-octave band (Hz), over the whole", x: x + width / 2, y: y + height + 34, size: 11, anchor: .centre)
    }

    // MARK: - Pieces

    static func markDetections(_ data: PlotData, on c: Canvas, x: Double, y: Double, width: Double, height: Double,
                               duration: Double, labels: Bool) {
        for d in data.detections where d.time >= 0 && d.time <= duration {
            let dx = x + width * d.time / duration
            c.setColour(0.7, 0.1, 0.6)
            c.line(from: (dx, y), to: (dx, y + height), width: 1.5, dash: [3, 2])
            if labels { c.text(d.label, x: dx + 3, y: y + 12, size: 10) }
        }
    }

    static func frame(_ c: Canvas, x: Double, y: Double, width: Double, height: Double) {
        c.setColour(0, 0, 0)
        c.rectangle(x: x, y: y, width: width, height: height, fill: false)
    }

    static func yTicks(_ c: Canvas, lo: Double, hi: Double, step: Double, x: Double, y: Double, width: Double, height: Double,
                       format: (Double) -> String) {
        var v = lo
        while v <= hi + 1e-9 {
            let ty = y + height * (1 - (v - lo) / (hi - lo))
            c.setColour(0.88, 0.88, 0.88)
            c.line(from: (x, ty), to: (x + width, ty), width: 0.6)
            c.setColour(0, 0, 0)
            c.text(format(v), x: x - 7, y: ty + 4, size: 10, anchor: .right)
            v += step
        }
    }

    static func timeTicks(_ c: Canvas, duration: Double, x: Double, y: Double, width: Double) {
        let step = niceStep(duration / 8)
        var t = 0.0
        c.setColour(0, 0, 0)
        while t <= duration + 1e-9 {
            let tx = x + width * t / duration
            c.line(from: (tx, y), to: (tx, y + 4))
            c.text(step < 1 ? String(format: "%.1f", t) : String(format: "%.0f", t), x: tx, y: y + 16, size: 10, anchor: .centre)
            t += step
        }
    }

    /// 1, 2 or 5 times a power of ten, at least `raw`.
    public static func niceStep(_ raw: Double) -> Double {
        guard raw > 0, raw.isFinite else { return 1 }
        let p = pow(10, (log10(raw)).rounded(.down))
        for m in [1.0, 2, 5, 10] where m * p >= raw { return m * p }
        return 10 * p
    }

    /// The axis range: whole `step`s around the values, at least two steps tall.
    static func range(_ values: [Double], step: Double, fallback: (Double, Double)) -> (Double, Double) {
        let finite = values.filter(\.isFinite)
        guard let lo = finite.min(), let hi = finite.max() else { return fallback }
        let a = ((lo - 2) / step).rounded(.down) * step
        var b = ((hi + 2) / step).rounded(.up) * step
        if b - a < 2 * step { b = a + 2 * step }
        return (a, b)
    }

    /// Black through blue, magenta and orange to pale yellow, for v in 0…1.
    static func colourMap(_ v: Double) -> (UInt8, UInt8, UInt8) {
        let stops: [(Double, Double, Double)] = [(0, 0, 0.02), (0.15, 0.05, 0.45), (0.6, 0.1, 0.5), (0.95, 0.45, 0.1), (1, 0.95, 0.65)]
        let x = max(0, min(1, v)) * Double(stops.count - 1)
        let i = min(stops.count - 2, Int(x)), f = x - Double(i)
        let a = stops[i], b = stops[i + 1]
        func mix(_ p: Double, _ q: Double) -> UInt8 { UInt8(max(0, min(255, (p + (q - p) * f) * 255))) }
        return (mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
    }
}
