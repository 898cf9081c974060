import HarkSoundFile

/// Where a file analysis gets its audio: interleaved `Float` frames in blocks. (harkd reads
/// ALSA through `CaptureSource`, whose reads carry gaps; both feed the same
/// ``AnalysisPipeline``.)
public protocol AudioSource: AnyObject {
    /// A name for messages and reports (the file's path).
    var name: String { get }
    var sampleRate: Int { get }
    var channels: Int { get }
    /// Frames the source expects to deliver, if it knows (files do).
    var expectedFrames: Int64? { get }
    /// A description of the format, e.g. "FLAC (Free Lossless Audio Codec), Signed 16 bit PCM".
    var formatDescription: String { get }
    /// Reads up to `buffer.count / channels` frames; returns how many; 0 at the end.
    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int
    /// Problems met so far that did not stop reading, as messages naming the source.
    var warnings: [String] { get }
}

/// An ``AudioSource`` over an audio file read through libsndfile.
public final class SoundFileSource: AudioSource {
    private let reader: SoundFileReader

    /// - Parameter raw: the layout of headerless samples (nil: the file says).
    public init(path: String, raw: RawLayout? = nil) throws(SoundFileError) {
        reader = try SoundFileReader(path: path, raw: raw)
    }

    public var name: String { reader.path }
    public var sampleRate: Int { reader.sampleRate }
    public var channels: Int { reader.channels }
    public var expectedFrames: Int64? { reader.declaredFrames > 0 ? reader.declaredFrames : nil }
    public var formatDescription: String { reader.formatDescription }
    public var warnings: [String] { reader.warnings.map(\.description) }

    public func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        try reader.read(into: buffer)
    }
}
