import Foundation
import Testing
@testable import HarkDSP

@Suite struct SpectrogramTests {
    @Test func aToneShowsInItsBinAndOnlyWhileItSounds() throws {
        // 4 s at 48 kHz: silence for 2 s, then a full-scale 1 kHz sine; 8 columns.
        let rate = 48_000.0
        let samples = (0..<(4 * 48_000)).map { i -> Float in
            i < 2 * 48_000 ? 0 : Float(sin(2 * Double.pi * 1000 * Double(i) / rate))
        }
        let s = try Spectrogram(sampleRate: rate, columns: 8, totalFrames: samples.count)
        // In odd pieces, as a file reader hands them over.
        var i = 0
        while i < samples.count {
            let n = min(3001, samples.count - i)
            samples[i..<(i + n)].withUnsafeBufferPointer { s.process($0) }
            i += n
        }
        s.finish()
        let bin = Int((1000 / s.frequency(ofBin: 1)).rounded())
        #expect(abs(s.frequency(ofBin: bin) - 1000) < s.frequency(ofBin: 1) / 2)
        let fullScale = pow(Float(Spectrogram.frameLength) / 4, 2)
        for c in 0..<3 { #expect(s.power[c][bin] == 0, "column \(c)") }
        for c in 5..<8 {
            // A full-scale sine reads (N/4)² in its bin, within the Hann window's scalloping.
            let ratio = s.power[c][bin] / fullScale
            #expect(ratio > 0.4 && ratio < 1.05, "column \(c): \(ratio)")
            #expect(s.power[c][bin + 20] < s.power[c][bin] * 1e-6)
        }
    }

    @Test func audioShorterThanTheColumnsFillsThemAll() throws {
        let s = try Spectrogram(sampleRate: 48_000, columns: 100, totalFrames: 4096)
        let ones = [Float](repeating: 0.5, count: 4096)
        ones.withUnsafeBufferPointer { s.process($0) }
        s.finish()
        #expect(s.power.allSatisfy { $0[0] > 0 })
    }
}
