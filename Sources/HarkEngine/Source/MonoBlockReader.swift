import HarkDSP
import HarkSoundFile

/// Reads interleaved audio in blocks of up to 4096 frames and mixes each block down to mono:
/// the loop every offline stage starts with. Its buffers are allocated once.
public struct MonoBlockReader {
    static let blockFrames = 4096
    private var mixer: ChannelMixer
    private let channels: Int
    private let read: (UnsafeMutableBufferPointer<Float>) throws -> Int
    /// The frames of the last block as read, channels interleaved.
    private(set) var interleaved: [Float]
    private var mono: [Float]

    init(channels: Int, selection: ChannelMixer.Selection = .average,
         read: @escaping (UnsafeMutableBufferPointer<Float>) throws -> Int) {
        mixer = ChannelMixer(channels: channels, selection: selection)
        self.channels = channels
        self.read = read
        interleaved = [Float](repeating: 0, count: Self.blockFrames * channels)
        mono = [Float](repeating: 0, count: Self.blockFrames)
    }

    public init(_ source: AudioSource, selection: ChannelMixer.Selection = .average) {
        self.init(channels: source.channels, selection: selection) { try source.read(into: $0) }
    }

    public init(_ reader: SoundFileReader) {
        self.init(channels: reader.channels) { try reader.read(into: $0) }
    }

    /// Samples that were not finite (read as 0) or beyond ±``ChannelMixer/sampleLimit``
    /// (clamped to it) so far.
    public var unusableSamples: Int { mixer.replacedSamples + mixer.clampedSamples }
    /// Samples that were not finite (NaN or infinity), read as 0, so far.
    public var replacedSamples: Int { mixer.replacedSamples }
    /// Samples beyond ±``ChannelMixer/sampleLimit``, clamped to it, so far.
    public var clampedSamples: Int { mixer.clampedSamples }

    /// The next block in mono, empty at the end of the input. Use it before the next call.
    public mutating func next() throws -> ArraySlice<Float> {
        let read = self.read
        let n = try interleaved.withUnsafeMutableBufferPointer { try read($0) }
        guard n > 0 else { return [] }
        interleaved.withUnsafeBufferPointer { i in mono.withUnsafeMutableBufferPointer { mixer.mix(i, frames: n, into: $0) } }
        return mono[0..<n]
    }
}
