import Testing
@testable import HarkDSP

@Suite struct ChannelMixerTests {
    private func mixed(_ input: [Float], channels: Int, _ selection: ChannelMixer.Selection) -> ([Float], Int) {
        var mixer = ChannelMixer(channels: channels, selection: selection)
        let frames = input.count / channels
        var out = [Float](repeating: -99, count: frames)
        input.withUnsafeBufferPointer { i in out.withUnsafeMutableBufferPointer { mixer.mix(i, frames: frames, into: $0) } }
        return (out, mixer.replacedSamples)
    }

    @Test func averagesChannels() {
        #expect(mixed([1, 0, 0.5, 0.5, -1, 1], channels: 2, .average).0 == [0.5, 0.5, 0])
        #expect(mixed([0.3, 0.3, 0.3, 0.6, 0.6, 0.6], channels: 3, .average).0.map { ($0 * 1000).rounded() } == [300, 600])
    }

    @Test func selectsOneChannel() {
        #expect(mixed([1, 2, 3, 4, 5, 6], channels: 3, .channel(1)).0 == [2, 5])
        #expect(mixed([1, 2, 3], channels: 1, .channel(0)).0 == [1, 2, 3])
    }

    @Test func replacesNonFiniteSamplesAndCountsThem() {
        let (out, replaced) = mixed([0.5, .nan, .infinity, -0.25, -.infinity, 0.1], channels: 1, .average)
        #expect(out == [0.5, 0, 0, -0.25, 0, 0.1])
        #expect(replaced == 3)
        // A NaN in one channel poisons the average of that frame only.
        let (avg, n) = mixed([0.2, .nan, 0.4, 0.4], channels: 2, .average)
        #expect(avg == [0, 0.4] && n == 1)
    }

    @Test func clampsSamplesFarBeyondFullScaleAndCountsThem() {
        var mixer = ChannelMixer(channels: 1)
        let input: [Float] = [0.5, 1e38, -Float.greatestFiniteMagnitude, 9_999, -20_000, .nan]
        var out = [Float](repeating: 0, count: input.count)
        input.withUnsafeBufferPointer { i in out.withUnsafeMutableBufferPointer { mixer.mix(i, frames: input.count, into: $0) } }
        #expect(out == [0.5, 10_000, -10_000, 9_999, -10_000, 0])
        #expect(mixer.clampedSamples == 3 && mixer.replacedSamples == 1)
    }
}
