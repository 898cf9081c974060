import CSoundModel
import FoundationEssentials

/// The sound embedder's network as trained (tools/learned/train.py): its front end (rate,
/// frame, window, mel matrix) and its layers, batch normalisation folded in. Read from the file
/// format of docs/sound-embedder.md: `HKSE`, a version, a JSON header, then the tensors.
public struct SoundEmbedderModel: Sendable {
    public struct Layer: Sendable, Decodable {
        public enum Kind: String, Sendable, Decodable { case conv, dense }
        public var kind: Kind
        public var `in`: Int
        public var out: Int
        public var kernel: Int?
        public var stride: Int?
        public var pad: Int?
        public var relu: Bool
    }

    struct Header: Decodable {
        struct Tensor: Decodable { var name: String; var shape: [Int] }
        var format: String
        var version: Int
        var rate: Double
        var nfft: Int
        var hop: Int
        var frames: Int
        var mels: Int
        var floor: Float
        var dim: Int
        var grid: Double
        var layers: [Layer]
        var tensors: [Tensor]
    }

    public let rate: Double
    public let fftSize: Int
    public let hop: Int
    public let frames: Int
    public let mels: Int
    public let floor: Float
    /// Dimensions of an embedding.
    public let dimensions: Int
    /// Seconds between embeddings, of a creative and of the room alike.
    public let grid: Double
    public let layers: [Layer]
    public let window: [Float]
    /// (fftSize / 2 + 1) × mels, row-major.
    public let mel: [Float]
    /// Per layer: weights (out × in, a convolution's `in` being in × kernel²) and biases.
    public let weights: [[Float]]
    public let biases: [[Float]]
    /// Embeddings of audio that is no creative (music, rooms with talkers, voices, babble,
    /// noise), rows of ``dimensions``: what every reference is read against beside the other
    /// creatives (``EmbeddingIndex``). Empty in a file without them.
    public let background: [Float]
    /// FNV-1a (64 bits) of the whole file, in hex: what a catalogue's embeddings name as the
    /// network that made them.
    public let digest: String

    /// Samples of one segment: frames of fftSize, hop apart.
    public var segmentSamples: Int { fftSize + (frames - 1) * hop }
    /// Samples at ``rate`` between embeddings.
    public var gridSamples: Int { Int((grid * rate).rounded()) }

    public enum Failure: Error, CustomStringConvertible, Equatable {
        case notAModel
        case version(Int)
        case header(String)
        case truncated(expected: Int, found: Int)
        case shape(String)

        public var description: String {
            switch self {
            case .notAModel: return "not a sound embedder's weights (no HKSE signature)"
            case .version(let v): return "sound embedder format version \(v); this build reads version 1"
            case .header(let m): return "the sound embedder's header does not decode: \(m)"
            case .truncated(let e, let f): return "the sound embedder's weights are cut short: \(e) bytes expected, \(f) found"
            case .shape(let m): return "the sound embedder's layers do not fit together: \(m)"
            }
        }
    }

    /// The weights file this build carries.
    public static var builtInBytes: UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: hark_sound_model_bytes(), count: hark_sound_model_size())
    }

    /// The network this build carries.
    public static let builtIn: SoundEmbedderModel = {
        do { return try SoundEmbedderModel(bytes: builtInBytes) } catch {
            preconditionFailure("the built-in sound embedder does not read: \(error)")
        }
    }()

    public init(bytes: UnsafeBufferPointer<UInt8>) throws(Failure) {
        guard bytes.count >= 12, Array(bytes[0..<4]) == Array("HKSE".utf8) else { throw .notAModel }
        func u32(_ at: Int) -> Int { (0..<4).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) } }
        let version = u32(4), length = u32(8)
        guard version == 1 else { throw .version(version) }
        guard bytes.count >= 12 + length else { throw .truncated(expected: 12 + length, found: bytes.count) }
        let header: Header
        do { header = try JSONDecoder().decode(Header.self, from: Data(bytes[12..<(12 + length)])) } catch {
            throw .header("\(error)")
        }
        guard header.format == "hark-sound-embedder" else { throw .header("format '\(header.format)'") }
        var offset = 12 + length
        var tensors: [String: [Float]] = [:]
        for t in header.tensors {
            let count = t.shape.reduce(1, *)
            guard bytes.count >= offset + 4 * count else { throw .truncated(expected: offset + 4 * count, found: bytes.count) }
            var values = [Float](repeating: 0, count: count)
            let source = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[offset..<(offset + 4 * count)]))
            values.withUnsafeMutableBytes { $0.copyMemory(from: source) }
            tensors[t.name] = values.map { Float(bitPattern: UInt32(littleEndian: $0.bitPattern)) }
            offset += 4 * count
        }
        rate = header.rate
        fftSize = header.nfft
        hop = header.hop
        frames = header.frames
        mels = header.mels
        floor = header.floor
        dimensions = header.dim
        grid = header.grid
        layers = header.layers
        guard let w = tensors["window"], w.count == fftSize else { throw .shape("window") }
        guard let m = tensors["mel"], m.count == (fftSize / 2 + 1) * mels else { throw .shape("mel matrix") }
        window = w
        mel = m
        var ws: [[Float]] = [], bs: [[Float]] = []
        var channels = 1, height = mels, width = frames, flat: Int?
        for (i, layer) in layers.enumerated() {
            guard let lw = tensors["layer\(i).weight"], let lb = tensors["layer\(i).bias"], lb.count == layer.out else {
                throw .shape("layer \(i) has no weights or biases")
            }
            switch layer.kind {
            case .conv:
                guard flat == nil, layer.in == channels, let k = layer.kernel, let s = layer.stride, let p = layer.pad,
                      lw.count == layer.out * layer.in * k * k else { throw .shape("convolution \(i)") }
                channels = layer.out
                height = (height + 2 * p - k) / s + 1
                width = (width + 2 * p - k) / s + 1
            case .dense:
                let inputs = flat ?? channels * height * width
                guard layer.in == inputs, lw.count == layer.out * layer.in else { throw .shape("dense layer \(i)") }
                flat = layer.out
            }
            ws.append(lw)
            bs.append(lb)
        }
        guard flat == dimensions else { throw .shape("the last layer gives \(flat ?? 0) values, not \(dimensions)") }
        weights = ws
        biases = bs
        background = tensors["background"] ?? []
        guard background.count % dimensions == 0 else { throw .shape("background bank") }
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
        let hex = String(h, radix: 16)
        digest = String(repeating: "0", count: 16 - hex.count) + hex
    }
}
