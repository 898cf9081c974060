/// Turns interleaved multi-channel frames into the mono signal the analysers take.
///
/// By default channels are averaged sample by sample: a sound reaching every channel alike
/// reads at its own level, whatever the channel count, while uncorrelated channels (separate
/// microphones) average down by up to 10 lg(N) dB. To measure one microphone of several,
/// select its channel.
///
/// Samples that are not finite numbers (a corrupt float file can hold NaN or ±∞) are replaced
/// by silence and counted, so they can be reported instead of poisoning every level. Finite
/// samples beyond ±``sampleLimit`` (+80 dB over full scale: no converter makes them, a float
/// file that lies does) are clamped to it and counted: squared, 1e38 overflows every sum.
public struct ChannelMixer: Sendable {
    public enum Selection: Sendable, Equatable {
        /// The mean of all channels.
        case average
        /// One channel, numbered from 0.
        case channel(Int)
    }

    public let channels: Int
    public let selection: Selection
    /// Non-finite input samples replaced by zero so far.
    public private(set) var replacedSamples = 0
    /// Finite samples beyond ±``sampleLimit`` clamped to it so far.
    public private(set) var clampedSamples = 0
    /// 10 000 × full scale, as the watermark detector's own limit.
    public static let sampleLimit: Float = 10_000

    public init(channels: Int, selection: Selection = .average) {
        precondition(channels >= 1)
        if case .channel(let c) = selection { precondition((0..<channels).contains(c)) }
        self.channels = channels
        self.selection = selection
    }

    /// Mixes `frames` interleaved frames from `input` into `output` (at least `frames` long).
    public mutating func mix(_ input: UnsafeBufferPointer<Float>, frames: Int, into output: UnsafeMutableBufferPointer<Float>) {
        precondition(input.count >= frames * channels && output.count >= frames)
        switch (selection, channels) {
        case (.average, 1), (.channel, 1):
            for i in 0..<frames { output[i] = input[i] }
        case (.channel(let c), _):
            for i in 0..<frames { output[i] = input[i * channels + c] }
        case (.average, _):
            let scale = 1 / Float(channels)
            for i in 0..<frames {
                var sum: Float = 0
                for c in 0..<channels { sum += input[i * channels + c] }
                output[i] = sum * scale
            }
        }
        // One pass to check, a second only if something is wrong.
        let limit = Self.sampleLimit
        var bad = false
        for i in 0..<frames where !(abs(output[i]) <= limit) { bad = true; break }
        if bad {
            for i in 0..<frames where !(abs(output[i]) <= limit) {
                if output[i].isFinite {
                    output[i] = output[i] < 0 ? -limit : limit
                    clampedSamples += 1
                } else {
                    output[i] = 0
                    replacedSamples += 1
                }
            }
        }
    }
}
