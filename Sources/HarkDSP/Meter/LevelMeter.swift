import FoundationEssentials
import Glibc

/// A sound level meter in the sense of IEC 61672-1, fed with blocks of mono samples.
///
/// It applies A, C and Z frequency weighting (``FrequencyWeighting``), F and S exponential time
/// weighting of the A-weighted signal (``TimeWeighting``) and C-weighted true-peak detection,
/// and keeps two sets of statistics: one for the whole measurement (``report()``), one for the
/// current short period (``takeInterval()``), which a caller ends at the sample it chooses.
///
/// Conventions (docs/meter.md has the numbers):
/// - levels are dB re the RMS of a full-scale sine, plus ``calibration``;
/// - the F and S averagers start at zero, like an instrument just switched on; LAFmin and the
///   LN percentiles ignore the first ``settlingTime`` while the F averager rises from zero
///   (maxima are tracked from the first sample: a burst at the very start must count);
/// - LN percentiles come from LAF sampled every ``statisticsPeriod`` (100 times a second);
/// - filtering runs in double precision; samples arrive as `Float`.
///
/// Memory is constant (about 100 KB, mostly the percentile histogram) however long it runs.
/// Not thread-safe: one meter belongs to one analysis thread.
public final class LevelMeter {
    /// How long LAFmin and the LN statistics wait for the F averager to settle from zero: 8τ,
    /// when it is within 0.002 dB of a steady level (4τ would still read 0.08 dB low).
    public static let settlingTime = 1.0
    /// Sampling period of LAF for LN percentiles.
    public static let statisticsPeriod = 0.01

    public let sampleRate: Double
    /// Decibels added to every level to turn digital levels into dB SPL.
    public var calibration: Double

    private var kernel: MeterKernel
    private let alphaFast: Double
    private let alphaSlow: Double
    private var fastA = 0.0
    private var slowA = 0.0

    private var total = LevelAccumulator()
    private var interval = LevelAccumulator()
    private var histogram = LevelHistogram()
    private var peak = TruePeakDetector()
    private var cWeighted: [Float] = []

    private let settlingSamples: Int
    private let statisticsSamples: Int
    /// Samples seen since the meter was created (the averagers' age).
    private var age = 0
    /// Samples until the next LAF sample for the percentiles.
    private var untilStatistic: Int

    /// Creates a meter for mono samples at `sampleRate` Hz (8 kHz – 192 kHz).
    public init(sampleRate: Double, calibration: Double = 0) {
        precondition(sampleRate >= 8_000 && sampleRate <= 192_000, "sample rate \(sampleRate) out of range")
        self.sampleRate = sampleRate
        self.calibration = calibration
        kernel = MeterKernel(sampleRate: sampleRate)
        alphaFast = TimeWeighting.fast.smoothingFactor(sampleRate: sampleRate)
        alphaSlow = TimeWeighting.slow.smoothingFactor(sampleRate: sampleRate)
        settlingSamples = Int((Self.settlingTime * sampleRate).rounded())
        statisticsSamples = max(1, Int((Self.statisticsPeriod * sampleRate).rounded()))
        untilStatistic = statisticsSamples
    }

    /// Feeds a block of mono samples.
    public func process(_ samples: UnsafeBufferPointer<Float>) {
        let count = samples.count
        guard count > 0, let input = samples.baseAddress else { return }
        if cWeighted.count < count { cWeighted = [Float](repeating: 0, count: count) }
        var block = LevelAccumulator()
        cWeighted.withUnsafeMutableBufferPointer { cOut in
            var done = 0
            while done < count {
                // Segments end where the percentile sampler or the settling boundary needs them.
                var n = min(count - done, untilStatistic)
                let settled = age >= settlingSamples
                if !settled { n = min(n, settlingSamples - age) }
                filterSegment(input + done, cOut.baseAddress! + done, n, trackMinimum: settled, into: &block)
                done += n
                age += n
                untilStatistic -= n
                if untilStatistic == 0 {
                    untilStatistic = statisticsSamples
                    if age >= settlingSamples { histogram.record(meanSquare: fastA) }
                }
            }
            let cBlock = UnsafeBufferPointer(start: cOut.baseAddress!, count: count)
            block.peakC = peak.scan(cBlock, floor: interval.peakC)
        }
        block.samples = count
        total.merge(block)
        interval.merge(block)
    }

    /// Feeds a block of mono samples.
    public func process(_ samples: [Float]) {
        samples.withUnsafeBufferPointer { process($0) }
    }

    /// Filters one segment (up to the next percentile sample or the settling boundary).
    @inline(__always)
    private func filterSegment(_ x: UnsafePointer<Float>, _ cOut: UnsafeMutablePointer<Float>, _ n: Int,
                               trackMinimum: Bool, into acc: inout LevelAccumulator) {
        var averages = (fast: fastA, slow: slowA)
        kernel.process(x, c: cOut, n, trackMinimum: trackMinimum, averages: &averages,
                       alphas: (alphaFast, alphaSlow), into: &acc)
        (fastA, slowA) = averages
    }

    /// The F-weighted A level now.
    public var LAF: Double? { Decibels.level(meanSquare: fastA, calibration: calibration) }
    /// The S-weighted A level now.
    public var LAS: Double? { Decibels.level(meanSquare: slowA, calibration: calibration) }

    /// Seconds measured since the meter started or ``restartMeasurement()`` was called.
    public var elapsed: Double { Double(total.samples) / sampleRate }

    /// Levels over the period since the last call (or the start), and starts a new period.
    public func takeInterval() -> IntervalLevels {
        let i = interval
        interval = LevelAccumulator()
        let n = Double(max(i.samples, 1))
        return IntervalLevels(
            time: elapsed,
            duration: Double(i.samples) / sampleRate,
            LAF: LAF,
            LAS: LAS,
            LAeq: i.samples > 0 ? Decibels.level(meanSquare: i.sumA / n, calibration: calibration) : nil,
            LAFmax: Decibels.level(meanSquare: i.maxFastA, calibration: calibration),
            LCpeak: Decibels.peakLevel(Double(i.peakC), calibration: calibration))
    }

    /// Releases the true peaks still held in the look-ahead; call once at the end of a stream.
    public func finish() {
        let p = peak.flush(floor: interval.peakC)
        total.peakC = max(total.peakC, p)
        interval.peakC = max(interval.peakC, p)
    }

    /// The figures of the whole measurement so far.
    public func report() -> MeterReport {
        let t = total
        let seconds = Double(t.samples) / sampleRate
        let n = Double(max(t.samples, 1))
        let laeq = t.samples > 0 ? Decibels.level(meanSquare: t.sumA / n, calibration: calibration) : nil
        let cal = calibration
        return MeterReport(
            duration: seconds,
            LAeq: laeq,
            LCeq: t.samples > 0 ? Decibels.level(meanSquare: t.sumC / n, calibration: cal) : nil,
            LZeq: t.samples > 0 ? Decibels.level(meanSquare: t.sumZ / n, calibration: cal) : nil,
            LAE: laeq.map { $0 + 10 * log10(seconds) },
            LAFmax: Decibels.level(meanSquare: t.maxFastA, calibration: cal),
            LAFmin: t.minFastA.isFinite ? Decibels.level(meanSquare: t.minFastA, calibration: cal) : nil,
            LASmax: Decibels.level(meanSquare: t.maxSlowA, calibration: cal),
            LCpeak: Decibels.peakLevel(Double(t.peakC), calibration: cal),
            LA10: histogram.exceeded(10).map { $0 + cal },
            LA50: histogram.exceeded(50).map { $0 + cal },
            LA90: histogram.exceeded(90).map { $0 + cal })
    }

    /// Starts a new measurement: statistics and percentiles restart, while the filters and the
    /// F/S averagers keep their state (a continuous meter does not go deaf between reports).
    public func restartMeasurement() {
        total = LevelAccumulator()
        interval = LevelAccumulator()
        histogram.reset()
    }
}
