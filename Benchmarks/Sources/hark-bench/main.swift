import Foundation
import HarkDSP

func cpuSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

let rate = 48_000.0
var pink = PinkNoiseGenerator(rms: 0.1, sampleRate: rate, seed: 1)
var signal = [Float](repeating: 0, count: Int(rate * 60))
signal.withUnsafeMutableBufferPointer { pink.render(into: $0) }
func run(_ name: String, _ signal: [Float]) {
let meter = LevelMeter(sampleRate: rate)
let t0 = cpuSeconds()
var audio = 0.0
while cpuSeconds() - t0 < 5 {
    signal.withUnsafeBufferPointer { buf in
        var i = 0
        while i < buf.count {
            let n = min(4096, buf.count - i)
            meter.process(UnsafeBufferPointer(rebasing: buf[i..<(i + n)]))
            i += n
        }
    }
    audio += 60
}
let cpu = cpuSeconds() - t0
print("meter \(name): \(Int(audio / cpu))x real time")
}
run("pink", signal)
var sine = SineGenerator(frequency: 1000, amplitude: 0.9, sampleRate: rate)
signal.withUnsafeMutableBufferPointer { sine.render(into: $0) }
run("tone", signal)
do {
    let bands = try ThirdOctaveBands(sampleRate: rate, planning: .measure)
    let t0 = cpuSeconds()
    var audio = 0.0
    while cpuSeconds() - t0 < 3 {
        signal.withUnsafeBufferPointer { bands.process($0) }
        audio += 60
    }
    print("bands: \(Int(audio / (cpuSeconds() - t0)))x real time")
}
