import FoundationEssentials
import Glibc
import HarkDSP

/// The embedder as a stage of a live chain (a playout, a PA desk): interleaved blocks in, the
/// same number of frames out, each frame marked and delayed by ``latencyFrames``.
///
/// The perceptual model must see half a frame ahead of each watermark sample, and the mark comes
/// a hop at a time (``WatermarkEmbedder/streamingLatency``), so the host waits that long: 53.3 ms
/// at 48 kHz (2 560 frames). The first ``latencyFrames``
/// frames out are silence, and ``finish(into:)`` delivers the last ones. The mark is made from
/// the channels' mean and added to every channel; where host plus mark would clip, the mark gives
/// way (``limitedSamples``), as in `hark embed`. One thread uses it.
public final class LiveEmbedding {
    public let sampleRate: Double
    public let channels: Int
    /// Frames from a host frame going in to the same frame coming out marked.
    public let latencyFrames: Int
    /// Seconds of that delay.
    public var latency: Double { Double(latencyFrames) / sampleRate }
    private let embedder: WatermarkEmbedder
    /// The host waiting for its mark (interleaved), then the mark (mono) waiting for its host.
    private var delayed: [Float]
    private var mark: [Float]
    private var mono: [Float] = []
    /// Samples whose mark was reduced to keep the output from clipping.
    public private(set) var limitedSamples = 0
    /// Host and mark energy (sums of squares, every channel) since ``takeLevels()`` was last called.
    private var hostEnergy = 0.0, markEnergy = 0.0, levelSamples = 0
    public private(set) var framesIn = 0

    public init(options: EmbedOptions, sampleRate: Double, channels: Int) throws {
        if let s = options.strength, !Embedding.strengthRange.contains(s) { throw EmbedError.strengthOutOfRange(s) }
        precondition(channels >= 1)
        let format = options.format
        embedder = try options.embedder(format: format, sampleRate: sampleRate)
        self.sampleRate = sampleRate
        self.channels = channels
        latencyFrames = embedder.streamingLatency
        delayed = [Float](repeating: 0, count: latencyFrames * channels)
        mark = [Float](repeating: 0, count: latencyFrames)
    }

    /// Takes `input` (interleaved, whole frames) and appends as many frames to `out`, marked.
    /// `ambient`, when given, is what the audience hears beside the programme at those frames
    /// (mono, scaled to the quietest seats): the mark follows the masking of the two together
    /// and is added to the programme alone. Options that say so (``EmbedOptions/hearsAmbient``)
    /// hold loud bands lower, as measured for that.
    public func process(_ input: UnsafeBufferPointer<Float>, ambient: UnsafeBufferPointer<Float>? = nil, into out: inout [Float]) {
        let frames = input.count / channels
        guard frames > 0 else { return }
        framesIn += frames
        mono.removeAll(keepingCapacity: true)
        for f in 0..<frames {
            var sum: Float = 0
            for c in 0..<channels { sum += input[f * channels + c] }
            mono.append(sum / Float(channels) + (ambient.map { f < $0.count ? $0[f] : 0 } ?? 0))
        }
        delayed.append(contentsOf: input.prefix(frames * channels))
        mono.withUnsafeBufferPointer { embedder.process($0, into: &mark) }
        // Never more than it has: with the delay below the mark is always there.
        emit(min(frames, mark.count), into: &out)
    }

    /// Delivers the frames still held (``latencyFrames``), marked; the stage takes no more input.
    public func finish(into out: inout [Float]) {
        embedder.finish(into: &mark)
        emit(min(mark.count, delayed.count / channels), into: &out)
    }

    private func emit(_ frames: Int, into out: inout [Float]) {
        out.reserveCapacity(out.count + frames * channels)
        for f in 0..<frames {
            let w = mark[f]
            for c in 0..<channels {
                let x = delayed[f * channels + c]
                var y = x + w
                if abs(y) > 0.999 {
                    // Never clip: give up as much of the mark as the host leaves room for.
                    y = abs(x) >= 0.999 ? x : max(-0.999, min(0.999, y))
                    limitedSamples += 1
                }
                out.append(y)
                hostEnergy += Double(x) * Double(x)
                markEnergy += Double(y - x) * Double(y - x)
            }
        }
        levelSamples += frames * channels
        mark.removeFirst(frames)
        delayed.removeFirst(frames * channels)
    }

    /// The host's level (dB re full scale, RMS) and the mark's level re the host (dB) over what
    /// went out since the last call; nil where there was nothing.
    public func takeLevels() -> (host: Double?, markReHost: Double?) {
        defer { (hostEnergy, markEnergy, levelSamples) = (0, 0, 0) }
        guard levelSamples > 0, hostEnergy > 0 else { return (nil, nil) }
        let host = 10 * log10(hostEnergy / Double(levelSamples))
        return (host, markEnergy > 0 ? 10 * log10(markEnergy / hostEnergy) : nil)
    }
}
