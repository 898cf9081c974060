import Foundation
import HarkDSP
import HarkSoundFile

/// What `hark embed` asks for.
public struct EmbedOptions: Sendable {
    public var payload: WatermarkPayload
    public var key: WatermarkKey
    /// Watermark-to-host power ratio to aim for, dB (at most −20 by default).
    public var strength: Double
    /// The band the tones use; the detector must be given the same.
    public var profile: WatermarkProfile

    public init(payload: WatermarkPayload, key: WatermarkKey, strength: Double = -20, profile: WatermarkProfile = .tv) {
        self.payload = payload
        self.key = key
        self.strength = strength
        self.profile = profile
    }
}

/// What `hark embed` did.
public struct EmbedResult: Sendable {
    /// Watermark power over host power, whole file, dB.
    public var ratio: Double
    /// The 1/3-octave band where the watermark came closest to the host, and that ratio in dB.
    public var worstBand: (label: String, ratio: Double)
    public var duration: Double
    /// Samples where the watermark was reduced to keep the output from clipping.
    public var limitedSamples: Int
    /// Tone level chosen, dB re the host's critical-band RMS.
    public var toneLevel: Double
}

public enum EmbedError: Error, Equatable, CustomStringConvertible {
    case tooShort(path: String, seconds: Double)
    case silent(path: String)
    case strengthOutOfRange(Double)

    public var description: String {
        switch self {
        case let .tooShort(p, s):
            return String(format: "%@: %.2f s of audio; a watermark needs at least %.1f s to hold one complete payload",
                          p, s, Embedding.minimumDuration)
        case let .silent(p):
            return "\(p): the host is silent; the watermark follows the host's level, so there is nothing to carry it"
        case let .strengthOutOfRange(s):
            return String(format: "strength %.1f dB is outside −40…−10 dB (watermark power re host power)", s)
        }
    }
}

/// `hark embed`: two passes over the host. The first measures how loud the watermark would be
/// at a reference tone level, overall and in every 1/3-octave band; the second writes the host
/// plus the watermark in the input's own rate and format, each band as loud as the requested
/// strength asks while staying at least 3 dB under the host (``BandLevelPlan``). Memory is constant.
public enum Embedding {
    /// One copy (2.4 s) plus the alignment a detector needs.
    public static let minimumDuration = WatermarkFormat.copyDuration + WatermarkFormat.symbolDuration + 0.2
    /// No 1/3-octave band may carry a watermark closer than this to the host.
    public static let bandMargin = -3.0
    /// A band holding less of the watermark's power than this (dB) is not held to the margin:
    /// it is leakage from tones in other bands, some 90 dB under the host (below 16-bit
    /// quantisation), and a host with nothing at 16 kHz would otherwise set the level everywhere.
    public static let negligibleBand = -60.0
    /// The loudest tone allowed, re the host's critical-band RMS.
    public static let maximumToneLevel = -6.0
    static let referenceLevel = 0.1          // −20 dB, for the measuring pass

    public static func embed(input: String, output: String, options: EmbedOptions) throws -> EmbedResult {
        guard (-40.0 ... -10.0).contains(options.strength) else { throw EmbedError.strengthOutOfRange(options.strength) }
        let format = WatermarkFormat(key: options.key, profile: options.profile)

        // Pass 1: measure at the reference level.
        let probe = try run(input: input, format: format, options: options, level: referenceLevel, gridGains: nil, writer: nil)
        guard probe.duration >= minimumDuration else { throw EmbedError.tooShort(path: input, seconds: probe.duration) }
        guard probe.hostEnergy > 0, probe.markEnergy > 0, probe.worstBand != nil else { throw EmbedError.silent(path: input) }
        // Reach the strength, but keep every band under the host and every tone under the cap.
        var plan = BandLevelPlan(bands: probe.bands.map { ($0.host, $0.mark) },
                                 overallRatio: 10 * log10(probe.markEnergy / probe.hostEnergy), strength: options.strength,
                                 margin: bandMargin, maximumGain: maximumToneLevel - 20 * log10(referenceLevel))

        // Pass 2: write. A tone near a band edge leaks a little into the next band, so a band
        // can land slightly over its margin; it is then lowered by the excess and written again.
        for attempt in 1...3 {
            let reader = try SoundFileReader(path: input)
            let outFormat = try reader.outputFormat.flatMap { f -> OutputFormat? in
                try OutputFormat.forPath(output, encoding: f.encoding == .vorbis ? nil : f.encoding)
            } ?? OutputFormat.forPath(output)
            let writer = try SoundFileWriter(path: output, sampleRate: reader.sampleRate, channels: reader.channels, format: outFormat)
            reader.close()
            let result: Pass
            do {
                result = try run(input: input, format: format, options: options, level: referenceLevel,
                                 gridGains: gridGains(plan, bands: probe.bands, grid: format.grid), writer: writer)
            } catch {
                writer.abandon()
                throw error
            }
            let excess = result.bands.map { b -> Double in
                guard let m = b.mark, let h = b.host else { return 0 }
                return max(0, m - h - bandMargin)
            }
            if attempt < 3, excess.contains(where: { $0 > 0.05 }) {
                writer.abandon()
                for i in plan.bandGains.indices { plan.bandGains[i] -= excess[i] + (excess[i] > 0 ? 0.1 : 0) }
                continue
            }
            try writer.finish()
            return EmbedResult(ratio: 10 * log10(result.markEnergy / result.hostEnergy),
                               worstBand: result.worstBand ?? ("–", -.infinity), duration: result.duration,
                               limitedSamples: result.limited, toneLevel: 20 * log10(referenceLevel) + plan.commonGain)
        }
        preconditionFailure("the last attempt always returns")
    }

    /// Each grid point's gain (linear): that of the 1/3-octave band holding it.
    private static func gridGains(_ plan: BandLevelPlan, bands: [(band: ThirdOctaveBands.Band, host: Double?, mark: Double?)],
                                  grid: [Double]) -> [Double] {
        grid.map { f in
            guard let i = bands.firstIndex(where: { f >= $0.band.lower && f < $0.band.upper }) else { return 0 }
            return pow(10, plan.bandGains[i] / 20)
        }
    }

    private struct Pass {
        var duration = 0.0
        var hostEnergy = 0.0     // summed over channels
        var markEnergy = 0.0
        var worstBand: (label: String, ratio: Double)?
        /// Host and watermark level (dB) per 1/3-octave band.
        var bands: [(band: ThirdOctaveBands.Band, host: Double?, mark: Double?)] = []
        var limited = 0
    }

    /// Streams the host through the embedder; writes host + watermark when `writer` is given.
    private static func run(input: String, format: WatermarkFormat, options: EmbedOptions, level: Double,
                            gridGains: [Double]?, writer: SoundFileWriter?) throws -> Pass {
        let reader = try SoundFileReader(path: input)
        let channels = reader.channels
        let rate = Double(reader.sampleRate)
        let embedder = try WatermarkEmbedder(format: format, payload: options.payload, sampleRate: rate, level: level,
                                             gridGains: gridGains)
        let hostBands = try ThirdOctaveBands(sampleRate: rate)
        let markBands = try ThirdOctaveBands(sampleRate: rate)
        var blocks = MonoBlockReader(reader)
        var mark: [Float] = []
        // The host waits `latency` samples for its watermark.
        var delayed: [Float] = []
        var pass = Pass()
        var total = 0
        func emit(_ count: Int) throws {
            // Adds the first `count` watermark samples to the first `count` delayed host frames.
            guard count > 0 else { return }
            var out = [Float](repeating: 0, count: count * channels)
            var hostMono = [Float](repeating: 0, count: count)
            for i in 0..<count {
                let w = mark[i]
                var used = w
                for c in 0..<channels {
                    let x = delayed[i * channels + c]
                    var y = x + w
                    if abs(y) > 0.999 {
                        // Never clip: give up as much of the watermark as the host leaves room for.
                        y = abs(x) >= 0.999 ? x : max(-0.999, min(0.999, y))
                        used = y - x
                        pass.limited += 1
                    }
                    out[i * channels + c] = y
                    pass.hostEnergy += Double(x) * Double(x)
                    pass.markEnergy += Double(used) * Double(used)
                    hostMono[i] += x / Float(channels)
                }
                mark[i] = used
            }
            hostMono.withUnsafeBufferPointer { hostBands.process($0) }
            mark.withUnsafeBufferPointer { markBands.process(UnsafeBufferPointer(rebasing: $0[0..<count])) }
            try out.withUnsafeBufferPointer { try writer?.write($0) }
            mark.removeFirst(count)
            delayed.removeFirst(count * channels)
        }
        while case let mono = try blocks.next(), !mono.isEmpty {
            let n = mono.count
            total += n
            delayed.append(contentsOf: blocks.interleaved[0..<(n * channels)])
            mono.withUnsafeBufferPointer { embedder.process($0, into: &mark) }
            try emit(min(mark.count, delayed.count / channels))
        }
        embedder.finish(into: &mark)
        try emit(min(mark.count, delayed.count / channels))
        hostBands.finish()
        markBands.finish()
        pass.duration = Double(total) / rate
        let markLevels = markBands.levels()
        let markTotal = 10 * log10(markLevels.reduce(0.0) { $0 + ($1.map { pow(10, $0 / 10) } ?? 0) })
        for (band, (h, level)) in zip(hostBands.bands, zip(hostBands.levels(), markLevels)) {
            // Leakage far from every tone is not held to the margin (it is taken as no watermark).
            let m = level.flatMap { $0 - markTotal >= negligibleBand ? $0 : nil }
            pass.bands.append((band, h, m))
            guard let h, let m else { continue }
            if pass.worstBand == nil || m - h > pass.worstBand!.ratio { pass.worstBand = (band.label, m - h) }
        }
        return pass
    }
}
