import Foundation
import Testing
@testable import HarkFFT

@Suite struct RealFFTTests {
    @Test func sineLandsInItsBin() throws {
        let fft = try RealFFT(size: 1024)
        for n in 0..<1024 { fft.input[n] = Float(sin(2 * Double.pi * 37 * Double(n) / 1024)) }
        fft.forward()
        let power = UnsafeMutableBufferPointer<Double>.allocate(capacity: fft.binCount)
        defer { power.deallocate() }
        power.initialize(repeating: 0)
        fft.accumulatePower(into: power)
        let peak = power.indices.max { power[$0] < power[$1] }
        #expect(peak == 37)
        // An unwindowed sine of amplitude 1 on an exact bin has |X| = N/2.
        #expect(abs(power[37].squareRoot() - 512) < 0.01)
        #expect(power[36] < 1e-6 && power[38] < 1e-6)
        // sin has no real part at its bin: the imaginary part is −N/2.
        #expect(abs(fft.spectrum[37].y + 512) < 0.01 && abs(fft.spectrum[37].x) < 0.01)
    }

    @Test func inverseRestoresInputScaledBySize() throws {
        let fft = try RealFFT(size: 256)
        var original = [Float](repeating: 0, count: 256)
        var state: UInt64 = 12345
        for n in 0..<256 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            original[n] = Float(Int64(bitPattern: state >> 11) % 1000) / 1000
            fft.input[n] = original[n]
        }
        fft.forward()
        fft.inverse()
        for n in 0..<256 { #expect(abs(fft.input[n] / 256 - original[n]) < 1e-5) }
    }

    @Test func parsevalHolds() throws {
        let fft = try RealFFT(size: 512)
        var energy: Double = 0
        for n in 0..<512 {
            let x = Float(cos(Double(n) * 0.37) + 0.25 * sin(Double(n) * 2.1))
            fft.input[n] = x
            energy += Double(x * x)
        }
        fft.forward()
        var spectral: Double = 0
        for k in 0..<fft.binCount {
            let p = Double(fft.spectrum[k].x * fft.spectrum[k].x + fft.spectrum[k].y * fft.spectrum[k].y)
            spectral += (k == 0 || k == 256) ? p : 2 * p
        }
        #expect(abs(spectral / 512 - energy) / energy < 1e-5)
    }

    @Test func rejectsOddAndTinySizes() {
        #expect(throws: FFTError.invalidSize(7)) { try RealFFT(size: 7) }
        #expect(throws: FFTError.invalidSize(0)) { try RealFFT(size: 0) }
    }

    @Test func plansFromManyThreadsAtOnce() async throws {
        // The planner is serialised inside the wrapper; concurrent construction must not crash
        // and every instance must compute correctly.
        try await withThrowingTaskGroup(of: Float.self) { group in
            for i in 0..<16 {
                group.addTask {
                    let fft = try RealFFT(size: 64 << (i % 5))
                    fft.input.update(repeating: 1)
                    fft.forward()
                    return fft.spectrum[0].x / Float(fft.size)
                }
            }
            for try await dc in group { #expect(abs(dc - 1) < 1e-6) }
        }
    }
}

@Suite struct MeasuredPlanTests {
    @Test func measuredPlanComputesTheSameSpectrum() throws {
        let a = try RealFFT(size: 4096, planning: .estimate)
        let b = try RealFFT(size: 4096, planning: .measure)
        for n in 0..<4096 {
            let x = Float(sin(Double(n) * 0.3) + 0.5 * cos(Double(n) * 1.7))
            a.input[n] = x
            b.input[n] = x
        }
        a.forward()
        b.forward()
        for k in 0..<a.binCount {
            #expect(abs(a.spectrum[k].x - b.spectrum[k].x) < 2e-3 && abs(a.spectrum[k].y - b.spectrum[k].y) < 2e-3)
        }
    }
}
