import Foundation
import HarkDSP
import Testing
@testable import HarkEngine

/// The one driver alone: what files and harkd's capture share.
@Suite struct PipelineDriverTests {
    /// Every output of feeding `blocks` (interleaved samples, their format) in order, as text.
    private func outputs(_ driver: PipelineDriver, _ blocks: [([Float], PipelineDriver.Format)]) throws -> [String] {
        var out: [String] = []
        for (samples, format) in blocks {
            try samples.withUnsafeBufferPointer { b in
                try driver.feed(b, frames: samples.count / format.channels, format: format) { o in
                    switch o {
                    case .started(let f): out.append("started \(Int(f.rate)) \(f.channels)")
                    case .analysis(.level(_, let end), let f): out.append("level \(end) at \(Int(f.rate))")
                    case .analysis(.report(let m), _): out.append("report \(m.end)")
                    case .analysis(.detection(let d), _): out.append("detection \(d.payload.hex)")
                    case .cutShort(let m, let f): out.append("cut short \(m.end) at \(Int(f.rate)) \(f.channels)")
                    case .nonFinite(let n): out.append("non-finite \(n)")
                    case .mono(let block, _): out.append("mono \(block.count)")
                    }
                }
            }
        }
        return out
    }

    private func settings() -> AnalysisPipeline.Settings {
        var s = AnalysisPipeline.Settings(sampleRate: 48_000)
        s.levelInterval = 1
        s.reportInterval = 2
        s.bands = false
        return s
    }

    @Test func aChangeOfFormatCutsTheReportShortAndKeepsTheClock() throws {
        // A capture device that comes back at 16 kHz mono after 1.5 s at 48 kHz stereo: the
        // interval so far is reported cut short at 1.5 s, and the new pipeline's levels go on
        // from there on the same clock.
        let driver = PipelineDriver(settings: settings())
        let stereo = PipelineDriver.Format(rate: 48_000, channels: 2), mono = PipelineDriver.Format(rate: 16_000, channels: 1)
        let loud = tone(1000, level: -20, seconds: 1.5)
        let out = try outputs(driver, [(loud.flatMap { [$0, $0] }, stereo), (tone(1000, level: -20, seconds: 1.25, rate: 16_000), mono)])
        #expect(out.filter { !$0.hasPrefix("mono") } == [
            "started 48000 2", "level 1.0 at 48000", "cut short 1.5 at 48000 2", "started 16000 1", "level 2.5 at 16000",
        ], "\(out)")
        #expect(driver.time == 2.75)
    }

    @Test func aPauseKeepsTheClockAndNewSettingsStartAfresh() throws {
        var s = settings()
        s.startTime = 10
        let driver = PipelineDriver(settings: s)
        let f = PipelineDriver.Format(rate: 48_000, channels: 1)
        _ = try outputs(driver, [(tone(1000, level: -20, seconds: 0.5), f)])
        driver.pause()
        #expect(driver.pipeline == nil && driver.time == 10.5)
        s.levelInterval = 0.25
        driver.reconfigure(s)
        let out = try outputs(driver, [(tone(1000, level: -20, seconds: 0.5), f)])
        #expect(out.filter { $0.hasPrefix("level") || $0.hasPrefix("started") } == ["started 48000 1", "level 10.75 at 48000", "level 11.0 at 48000"],
                "\(out)")
    }

    @Test func nonFiniteSamplesAreToldBeforeTheyAreAnalysed() throws {
        let driver = PipelineDriver(settings: settings())
        var x = tone(1000, level: -20, seconds: 0.1)
        x[10] = .nan
        x[20] = .infinity
        let out = try outputs(driver, [(x, .init(rate: 48_000, channels: 1))])
        #expect(out == ["started 48000 1", "non-finite 2", "mono 4800"], "\(out)")
        #expect(driver.replacedSamples == 2)
    }

    @Test func aFileIsDrivenInBlocksAndFinished() throws {
        // A file's frames as its reader gives them, in blocks of at most 4 096: the same
        // levels and report however the reader splits them (to 10⁻⁹ dB: sums in another order).
        let x = tone(1000, level: -20, seconds: 2.5)
        func run(maxBlock: Int) throws -> [String] {
            let driver = try PipelineDriver(settings: settings(), format: .init(rate: 48_000, channels: 1))
            var out: [String] = []
            let frames = try driver.drive(ArraySource(x, maxBlock: maxBlock)) { o in
                switch o {
                case .level(let l, let end): out.append(String(format: "level %.3f %.9f", end, l.LAeq ?? -1))
                case .report(let m): out.append(String(format: "report %.3f %.9f", m.end, m.meter.LAeq ?? -1))
                case .detection: out.append("detection")
                }
            }
            #expect(frames == 120_000)
            return out
        }
        let whole = try run(maxBlock: .max), odd = try run(maxBlock: 1000)
        #expect(whole.count == 5 && whole == odd, "\(whole) \(odd)")
    }

    @Test func aRateThePipelineCannotAnalyseIsRefusedBeforeAnyAudio() {
        #expect(throws: RateOutOfRange.self) {
            _ = try PipelineDriver(settings: settings(), format: .init(rate: 4_000, channels: 1))
        }
    }
}
