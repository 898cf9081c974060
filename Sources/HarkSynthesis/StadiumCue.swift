import HarkDSP

/// The Stadium Shake cue: a short phrase of music (``CueGenerator``) with a payload's mark in
/// it, made to be heard as part of the show and to carry the payload over a roaring crowd.
///
/// The mark is the watermark's own format, in the stadium profile unless asked otherwise, read
/// by the same detector under the same false-detection bound (a catalogue's, or the blind
/// search's): a cue is a marked host like any other, only louder. Its copies start with the
/// cue, so a detector hears one whole copy 2.4 s after the cue begins. At
/// ``defaultStrength`` the mark is well over what the music hides: audible, as a shimmer in the
/// phrase, which the cue may be (docs/watermark.md, "The Stadium Shake cue").
public enum StadiumCue {
    /// Tone power re the cue's masking threshold, dB: 3 dB over the lowest measured that the
    /// stadium bench heard in 99 % of cues within 4 s (+12 dB: 159 of 160; +15 dB: 160 of 160
    /// within 3 s; +10 dB: 151 of 160).
    public static let defaultStrength = 15.0
    public static var duration: Double { CueGenerator.duration }

    /// The cue's samples, mark included.
    /// - Parameters:
    ///   - rms: the music's RMS before the mark.
    ///   - seed: draws the phrase; any seed carries any payload.
    public static func render(payload: WatermarkPayload, key: WatermarkKey, profile: WatermarkProfile = .stadium,
                              strength: Double? = nil, sampleRate: Double, rms: Double, seed: UInt64) throws -> [Float] {
        var music = [Float](repeating: 0, count: Int((duration * sampleRate).rounded()))
        music.withUnsafeMutableBufferPointer { var g = CueGenerator(rms: rms, sampleRate: sampleRate, seed: seed); g.render(into: $0) }
        let embedder = try WatermarkEmbedder(format: WatermarkFormat(key: key, profile: profile), payload: payload,
                                             sampleRate: sampleRate, strength: strength ?? defaultStrength)
        var mark: [Float] = []
        music.withUnsafeBufferPointer { embedder.process($0, into: &mark) }
        embedder.finish(into: &mark)
        return zip(music, mark).map { max(-0.999, min(0.999, $0 + $1)) }
    }
}
