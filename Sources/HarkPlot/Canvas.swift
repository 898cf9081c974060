import CCairo
import Foundation
import HarkSystem

/// Why a picture could not be made or read.
public enum PlotError: Error, Equatable, CustomStringConvertible {
    /// The output name ends in neither `.png` nor `.svg`.
    case unknownImageType(String)
    /// cairo refused, with its own words.
    case cairo(path: String, detail: String)

    public var description: String {
        switch self {
        case .unknownImageType(let p): return "\(p): the picture's name must end in .png or .svg"
        case .cairo(let p, let d): return "\(p): \(d)"
        }
    }
}

/// A drawing surface, PNG or SVG by the output's name, that owns its cairo surface and context.
///
/// Coordinates are points from the top left. ``finish()`` writes the picture (an SVG is written
/// as it is drawn and completed there); a canvas that is not finished leaves no file behind.
public final class Canvas {
    public enum Kind: Sendable { case png, svg }

    public let width: Double
    public let height: Double
    public let path: String
    public let kind: Kind
    let surface: OpaquePointer
    let cr: OpaquePointer
    private let temporaryPath: String
    private var finished = false

    /// A text drawn, with the box it takes (for tests of what overlaps or overflows).
    public struct DrawnText: Sendable {
        public var text: String
        public var minX: Double, minY: Double, maxX: Double, maxY: Double
        public func overlaps(_ o: DrawnText) -> Bool {
            minX < o.maxX && o.minX < maxX && minY < o.maxY && o.minY < maxY
        }
    }
    /// Every text drawn so far, in order.
    public private(set) var texts: [DrawnText] = []

    /// How wide `s` is at `size` points.
    public func textWidth(_ s: String, size: Double, bold: Bool = false) -> Double {
        cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL)
        cairo_set_font_size(cr, size)
        var extents = cairo_text_extents_t()
        cairo_text_extents(cr, s, &extents)
        return extents.x_advance
    }

    public init(path: String, width: Int, height: Int) throws(PlotError) {
        let lower = path.lowercased()
        if lower.hasSuffix(".png") { kind = .png } else if lower.hasSuffix(".svg") { kind = .svg } else {
            throw .unknownImageType(path)
        }
        // Before any drawing: cairo would say only "error while writing to output stream".
        if let why = missingFolder(of: path) { throw .cairo(path: path, detail: why) }
        self.path = path
        self.width = Double(width)
        self.height = Double(height)
        temporaryPath = path + ".\(getpid()).partial"
        let s = kind == .png
            ? cairo_image_surface_create(CAIRO_FORMAT_RGB24, Int32(width), Int32(height))
            : cairo_svg_surface_create(temporaryPath, Double(width), Double(height))
        guard let s, cairo_surface_status(s) == CAIRO_STATUS_SUCCESS else {
            let detail = s.map { String(cString: cairo_status_to_string(cairo_surface_status($0))) } ?? "no surface"
            if let s { cairo_surface_destroy(s) }
            unlink(temporaryPath)
            throw .cairo(path: path, detail: detail)
        }
        surface = s
        cr = cairo_create(s)
        // A white page: a report carries it as it is.
        setColour(1, 1, 1)
        cairo_paint(cr)
    }

    deinit {
        cairo_destroy(cr)
        cairo_surface_destroy(surface)
        if !finished { unlink(temporaryPath) }
    }

    /// Writes the picture to ``path``.
    public func finish() throws(PlotError) {
        guard !finished else { return }
        cairo_surface_flush(surface)
        if kind == .png {
            let status = cairo_surface_write_to_png(surface, temporaryPath)
            guard status == CAIRO_STATUS_SUCCESS else { throw .cairo(path: path, detail: String(cString: cairo_status_to_string(status))) }
        } else {
            cairo_surface_finish(surface)
            let status = cairo_surface_status(surface)
            guard status == CAIRO_STATUS_SUCCESS else { throw .cairo(path: path, detail: String(cString: cairo_status_to_string(status))) }
        }
        guard rename(temporaryPath, path) == 0 else {
            throw .cairo(path: path, detail: String(cString: strerror(errno)))
        }
        finished = true
    }

    // MARK: - Drawing

    public func setColour(_ r: Double, _ g: Double, _ b: Double, alpha: Double = 1) {
        cairo_set_source_rgba(cr, r, g, b, alpha)
    }

    public func line(from a: (Double, Double), to b: (Double, Double), width: Double = 1, dash: [Double] = []) {
        cairo_set_line_width(cr, width)
        dash.withUnsafeBufferPointer { cairo_set_dash(cr, $0.baseAddress, Int32($0.count), 0) }
        cairo_move_to(cr, a.0, a.1)
        cairo_line_to(cr, b.0, b.1)
        cairo_stroke(cr)
        cairo_set_dash(cr, nil, 0, 0)
    }

    /// A polyline through `points`; nil breaks it (a level the meter could not give).
    public func polyline(_ points: [(Double, Double)?], width: Double = 1.5) {
        cairo_set_line_width(cr, width)
        cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND)
        var open = false
        for p in points {
            guard let p else { open = false; continue }
            if open { cairo_line_to(cr, p.0, p.1) } else { cairo_move_to(cr, p.0, p.1); open = true }
        }
        cairo_stroke(cr)
    }

    public func rectangle(x: Double, y: Double, width: Double, height: Double, fill: Bool = true) {
        cairo_rectangle(cr, x, y, width, height)
        if fill { cairo_fill(cr) } else { cairo_set_line_width(cr, 1); cairo_stroke(cr) }
    }

    public enum Anchor: Sendable { case left, centre, right }

    /// Text with its baseline at `y`; `rotated` turns it a quarter turn anticlockwise (axis titles).
    public func text(_ s: String, x: Double, y: Double, size: Double = 12, anchor: Anchor = .left, bold: Bool = false,
                     rotated: Bool = false) {
        cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL)
        cairo_set_font_size(cr, size)
        var extents = cairo_text_extents_t()
        cairo_text_extents(cr, s, &extents)
        let shift: Double
        switch anchor {
        case .left: shift = 0
        case .centre: shift = extents.x_advance / 2
        case .right: shift = extents.x_advance
        }
        // The box: the advance along the baseline, the font size across it.
        let along = (-shift, extents.x_advance - shift), across = (-size * 0.8, size * 0.25)
        texts.append(rotated
            ? DrawnText(text: s, minX: x + across.0, minY: y - along.1, maxX: x + across.1, maxY: y - along.0)
            : DrawnText(text: s, minX: x + along.0, minY: y + across.0, maxX: x + along.1, maxY: y + across.1))
        cairo_save(cr)
        cairo_translate(cr, x, y)
        if rotated { cairo_rotate(cr, -Double.pi / 2) }
        cairo_move_to(cr, -shift, 0)
        cairo_show_text(cr, s)
        cairo_restore(cr)
    }

    /// Draws an image of `columns` × `rows` cells, each coloured by `colour(column, row)` (row 0
    /// at the bottom), into the rectangle given.
    public func raster(x: Double, y: Double, width: Double, height: Double, columns: Int, rows: Int,
                       colour: (Int, Int) -> (UInt8, UInt8, UInt8)) {
        guard columns > 0, rows > 0, let image = cairo_image_surface_create(CAIRO_FORMAT_RGB24, Int32(columns), Int32(rows)) else { return }
        defer { cairo_surface_destroy(image) }
        cairo_surface_flush(image)
        let stride = Int(cairo_image_surface_get_stride(image))
        guard let data = cairo_image_surface_get_data(image) else { return }
        for r in 0..<rows {
            let line = data + (rows - 1 - r) * stride
            for c in 0..<columns {
                let (red, green, blue) = colour(c, r)
                // CAIRO_FORMAT_RGB24 is a native-endian 32-bit word 0x00RRGGBB.
                let word = UInt32(red) << 16 | UInt32(green) << 8 | UInt32(blue)
                UnsafeMutableRawPointer(line + 4 * c).storeBytes(of: word, as: UInt32.self)
            }
        }
        cairo_surface_mark_dirty(image)
        cairo_save(cr)
        cairo_rectangle(cr, x, y, width, height)
        cairo_clip(cr)
        cairo_translate(cr, x, y)
        cairo_scale(cr, width / Double(columns), height / Double(rows))
        cairo_set_source_surface(cr, image, 0, 0)
        // Cells stay cells when scaled up.
        cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST)
        cairo_paint(cr)
        cairo_restore(cr)
    }
}

/// A PNG read back as pixels (for checking what was drawn).
public struct PNGImage {
    public let width: Int
    public let height: Int
    private let pixels: [UInt32]

    public init(path: String) throws(PlotError) {
        guard let s = cairo_image_surface_create_from_png(path), cairo_surface_status(s) == CAIRO_STATUS_SUCCESS else {
            throw .cairo(path: path, detail: "not a PNG cairo can read")
        }
        defer { cairo_surface_destroy(s) }
        width = Int(cairo_image_surface_get_width(s))
        height = Int(cairo_image_surface_get_height(s))
        let stride = Int(cairo_image_surface_get_stride(s))
        let data = cairo_image_surface_get_data(s)!
        var p = [UInt32](repeating: 0, count: width * height)
        for y in 0..<height {
            for x in 0..<width { p[y * width + x] = UnsafeRawPointer(data + y * stride + 4 * x).load(as: UInt32.self) }
        }
        pixels = p
    }

    /// The pixel at (x, y) from the top left, as (red, green, blue).
    public func pixel(_ x: Int, _ y: Int) -> (red: Int, green: Int, blue: Int) {
        let w = pixels[y * width + x]
        return (Int(w >> 16 & 0xFF), Int(w >> 8 & 0xFF), Int(w & 0xFF))
    }
}
