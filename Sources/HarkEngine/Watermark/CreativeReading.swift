import HarkDSP

/// A creative's readings as a catalogue keeps them: its landmarks (``SoundPrint``) and its
/// learned reading (``CreativeEmbeddings``), both from one pass over the file.
public enum CreativeReading {
    public static func read(_ source: AudioSource) throws -> SoundPrint {
        try readBoth(source).sound
    }

    public static func readBoth(_ source: AudioSource, embedder: SoundEmbedder? = nil) throws
        -> (sound: SoundPrint, embeddings: CreativeEmbeddings) {
        var samples: [Float] = []
        var blocks = MonoBlockReader(source)
        while case let mono = try blocks.next(), !mono.isEmpty { samples += mono }
        let rate = Double(source.sampleRate)
        let sound = try samples.withUnsafeBufferPointer { try SoundPrint.read($0, sampleRate: rate) }
        let e = try embedder ?? SoundEmbedder()
        let embeddings = samples.withUnsafeBufferPointer { CreativeEmbeddings(reading: $0, sampleRate: rate, embedder: e) }
        return (sound, embeddings)
    }
}

/// Which readings of the creatives' sound listen: both (the default), the landmarks alone or
/// the learned reading alone (`hark detect --sound-reading`, harkd's `sound-reading`).
public enum SoundReadingChoice: String, Sendable, CaseIterable {
    case both, landmarks, learned

    /// What listens unless told otherwise: the landmarks. Beside them and the mark, the
    /// learned reading at its calibrated threshold moves the real-music bench by one window of
    /// 48 either way (one more named within 3 s, one fewer within 6 s, at SNR 10 dB; no row at
    /// SNR 0 dB, clean or through MP3), and costs harkd with a catalogue of 100 about 0.6 % of
    /// a core and 7 MB: the difference between its 40 MB and not (docs/journal.md, 2026-12-03).
    public static let standard = SoundReadingChoice.landmarks
}

extension EmbeddingIndex {
    /// The learned readings of a catalogue's creatives that this build's network made, in
    /// order; a creative without one, or with one another network made (a catalogue written by
    /// another build), takes no rows and is heard by its landmarks alone. nil when none has one.
    public static func forCatalogue(_ embeddings: [CreativeEmbeddings?], model: SoundEmbedderModel = .builtIn)
        -> (index: EmbeddingIndex?, otherModel: Int) {
        let usable = embeddings.map { $0?.model == model.digest && $0?.dimensions == model.dimensions ? $0 : nil }
        let other = zip(embeddings, usable).filter { $0.0 != nil && $0.1 == nil }.count
        guard usable.contains(where: { $0 != nil }) else { return (nil, other) }
        // Every row is of this model and size now: the index cannot refuse them.
        return (try? EmbeddingIndex(embeddings: usable, model: model.digest), other)
    }
}
