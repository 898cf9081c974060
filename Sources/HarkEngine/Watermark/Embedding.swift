import FoundationEssentials
import Glibc
import HarkSystem
import HarkDSP
import HarkSoundFile

/// What `hark embed` asks for.
public struct EmbedOptions: Sendable {
    public var payload: WatermarkPayload
    public var key: WatermarkKey
    /// Tone power re its share of the host's masking threshold, dB (``WatermarkEmbedder``);
    /// nil for the profile's transparent default. Above it the mark becomes audible.
    public var strength: Double?
    /// The band the tones use; the detector must be given the same.
    public var profile: WatermarkProfile
    /// A study's format (the lab's); nil, as `hark` always leaves it: the format on air for
    /// ``key`` and ``profile``.
    public var study: WatermarkFormat?
    /// Airing codes instead of ``payload``: each copy carries the code of its channel and the
    /// UTC minute it airs in (``AiringCode``).
    public var airing: AiringCoding?
    /// What the audience hears beside the programme (a stadium's crowd): it masks too, so the
    /// mark may follow the masking threshold of the two together. Nil: the programme alone.
    public var ambient: Ambient?
    /// Whether the embedder is handed the programme mixed with what the audience hears beside
    /// it (``ambient``, or a venue's microphone when live). Such a mark holds loud bands lower
    /// (``MaskingModel/LevelDiscrimination/crowd``), as it was measured.
    public var hearsAmbient: Bool

    /// An ambient recording and the gain that brings it to the level the quietest seats hear.
    public struct Ambient: Sendable {
        public var path: String
        /// dB applied to the recording: it must not claim more masking than the quietest
        /// seats get.
        public var gain: Double

        public init(path: String, gain: Double) {
            (self.path, self.gain) = (path, gain)
        }
    }

    public struct AiringCoding: Sendable {
        public var key: AiringKey
        public var channel: UInt16
        /// UTC (seconds since 1970) at which the first sample airs.
        public var startUTC: Double

        public init(key: AiringKey, channel: UInt16, startUTC: Double) {
            (self.key, self.channel, self.startUTC) = (key, channel, startUTC)
        }
    }

    public init(payload: WatermarkPayload, key: WatermarkKey, strength: Double? = nil, profile: WatermarkProfile = .tv,
                study: WatermarkFormat? = nil, airing: AiringCoding? = nil, ambient: Ambient? = nil) {
        self.ambient = ambient
        hearsAmbient = ambient != nil
        self.payload = payload
        self.key = key
        self.strength = strength
        self.profile = profile
        self.study = study
        self.airing = airing
    }

    /// The format these options mark with.
    public var format: WatermarkFormat { study ?? WatermarkFormat(key: key, profile: profile) }

    /// The embedder these options ask for.
    public func embedder(format: WatermarkFormat, sampleRate: Double) throws -> WatermarkEmbedder {
        let discrimination = hearsAmbient ? MaskingModel.LevelDiscrimination.crowd : nil
        guard let airing else {
            return try WatermarkEmbedder(format: format, payload: payload, sampleRate: sampleRate, strength: strength,
                                         levelDiscrimination: discrimination)
        }
        // Copies on UTC multiples of 2.4 s: each lies within one minute.
        let offset = AiringCode.copyOffset(firstSampleUTC: airing.startUTC)
        let origin = airing.startUTC - offset
        return try WatermarkEmbedder(format: format, sampleRate: sampleRate, strength: strength, copyOffset: offset,
                                     levelDiscrimination: discrimination) {
            AiringCode.payload(key: airing.key, channel: airing.channel, copy: $0, originUTC: origin)
        }
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
}

public enum EmbedError: Error, Equatable, CustomStringConvertible {
    case tooShort(path: String, seconds: Double)
    case silent(path: String)
    case strengthOutOfRange(Double)
    case ambientRate(path: String, rate: Int, expected: Int)

    public var description: String {
        switch self {
        case let .tooShort(p, s):
            return String(cFormat: "%@: %.2f s of audio; a watermark needs at least %.1f s to hold one complete payload",
                          p, s, Embedding.minimumDuration)
        case let .silent(p):
            return "\(p): the host is silent; the watermark follows the host's level, so there is nothing to carry it"
        case let .ambientRate(p, r, e):
            return "\(p): the ambient recording is at \(r) Hz; the programme is at \(e) Hz (resample it first)"
        case let .strengthOutOfRange(s):
            return String(cFormat: "strength %.1f dB is outside %.0f…%.0f dB (tone power re the host's masking threshold)",
                          s, Embedding.strengthRange.lowerBound, Embedding.strengthRange.upperBound)
        }
    }
}

/// `hark embed`: one pass over the host, writing host plus watermark in the input's own rate
/// and format. The watermark follows the host's masking threshold frame by frame
/// (``WatermarkEmbedder``, ``MaskingModel``); where host plus watermark would clip, the watermark
/// gives way. Memory is constant.
public enum Embedding {
    /// One copy (2.4 s) plus the alignment a detector needs.
    public static let minimumDuration = WatermarkFormat.copyDuration + WatermarkFormat.symbolDuration + 0.2
    /// Strengths `hark embed` accepts (dB re the masking threshold).
    public static let strengthRange = -20.0 ... 20.0
    /// A band holding less of the watermark's power than this (dB re the whole watermark) is
    /// not reported as the closest band: it holds only leakage from tones in other bands.
    public static let negligibleBand = -60.0

    public static func embed(input: String, output: String, options: EmbedOptions) throws -> EmbedResult {
        if let s = options.strength, !strengthRange.contains(s) { throw EmbedError.strengthOutOfRange(s) }
        let format = options.format
        let reader = try SoundFileReader(path: input)
        let outFormat = try reader.outputFormat.flatMap { f -> OutputFormat? in
            try OutputFormat.forPath(output, encoding: f.encoding == .vorbis ? nil : f.encoding)
        } ?? OutputFormat.forPath(output)
        let writer = try SoundFileWriter(path: output, sampleRate: reader.sampleRate, channels: reader.channels, format: outFormat)
        reader.close()
        let result: Pass
        do {
            result = try run(input: input, format: format, options: options, writer: writer)
            guard result.duration >= minimumDuration else { throw EmbedError.tooShort(path: input, seconds: result.duration) }
            guard result.hostEnergy > 0 else { throw EmbedError.silent(path: input) }
        } catch {
            writer.abandon()
            throw error
        }
        try writer.finish()
        return EmbedResult(ratio: result.markEnergy > 0 ? 10 * log10(result.markEnergy / result.hostEnergy) : -.infinity,
                           worstBand: result.worstBand ?? ("–", -.infinity), duration: result.duration,
                           limitedSamples: result.limited)
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

    /// Streams the host through the embedder and writes host + watermark.
    private static func run(input: String, format: WatermarkFormat, options: EmbedOptions,
                            writer: SoundFileWriter) throws -> Pass {
        let reader = try SoundFileReader(path: input)
        let channels = reader.channels
        let rate = Double(reader.sampleRate)
        let embedder = try options.embedder(format: format, sampleRate: rate)
        var ambient = try options.ambient.map { try AmbientFeed($0, rate: reader.sampleRate) }
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
            try out.withUnsafeBufferPointer { try writer.write($0) }
            mark.removeFirst(count)
            delayed.removeFirst(count * channels)
        }
        while case let mono = try blocks.next(), !mono.isEmpty {
            let n = mono.count
            total += n
            delayed.append(contentsOf: blocks.interleaved[0..<(n * channels)])
            if ambient != nil {
                // The mark follows what the audience hears; it is added to the programme alone.
                var heard = Array(mono)
                try ambient!.add(into: &heard)
                heard.withUnsafeBufferPointer { embedder.process($0, into: &mark) }
            } else {
                mono.withUnsafeBufferPointer { embedder.process($0, into: &mark) }
            }
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

/// An ambient recording read alongside the programme, sample for sample, scaled; silence once it
/// ends.
struct AmbientFeed {
    private var blocks: MonoBlockReader
    private var pending: [Float] = []
    private var ended = false
    private let scale: Float

    init(_ ambient: EmbedOptions.Ambient, rate: Int) throws {
        let reader = try SoundFileReader(path: ambient.path)
        guard reader.sampleRate == rate else { throw EmbedError.ambientRate(path: ambient.path, rate: reader.sampleRate, expected: rate) }
        blocks = MonoBlockReader(reader)
        scale = Float(pow(10, ambient.gain / 20))
    }

    /// Adds the next `x.count` ambient samples, scaled, to `x`.
    mutating func add(into x: inout [Float]) throws {
        while pending.count < x.count && !ended {
            let next = try blocks.next()
            if next.isEmpty { ended = true } else { pending += next }
        }
        let n = min(x.count, pending.count)
        for i in 0..<n { x[i] += scale * pending[i] }
        pending.removeFirst(n)
    }
}
