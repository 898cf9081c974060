import HarkDSP

/// The sound reading a catalogue keeps of a creative (``SoundPrint``), read from an audio file
/// with its channels averaged.
public enum CreativeReading {
    public static func read(_ source: AudioSource) throws -> SoundPrint {
        var samples: [Float] = []
        var blocks = MonoBlockReader(source)
        while case let mono = try blocks.next(), !mono.isEmpty { samples += mono }
        return try samples.withUnsafeBufferPointer { try SoundPrint.read($0, sampleRate: Double(source.sampleRate)) }
    }
}
