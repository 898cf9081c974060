import ArgumentParser
import Foundation
import HarkDSP
import HarkEngine
import HarkSoundFile
import HarkSynthesis

struct Generate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a test signal to an audio file.",
        discussion: """
        KIND is one of: sine, sweep (logarithmic, --from → --to), white, pink, burst (tone \
        bursts of --burst seconds every --period), silence, calibrator (1 kHz), music (a \
        synthetic chord/melody/drum pattern, for watermark benches), cue (the Stadium Shake \
        cue: 4 s of music carrying --payload's mark, loud enough to cross a crowd; see \
        docs/watermark.md). --level is the \
        RMS level in dB re a full-scale sine (so a sine at 0 dB peaks at full scale; for bursts, \
        the level while the tone is on). The output type follows the name: .wav, .flac, .ogg, \
        .aiff, or .raw (headerless little-endian, for ALSA's file plugin). The same options and \
        --seed always give the same file.
        """)

    enum Kind: String, ExpressibleByArgument, CaseIterable {
        case sine, sweep, white, pink, burst, silence, calibrator, music, cue
    }

    @Argument(help: ArgumentHelp("What to generate.", valueName: "kind"))
    var kind: Kind

    @Argument(help: "Output file.", completion: .file())
    var output: String

    @Option(parsing: .unconditional, help: ArgumentHelp("Sample rate in Hz.", valueName: "Hz"))
    var rate = 48_000

    @Option(parsing: .unconditional, help: ArgumentHelp("Length in seconds.", valueName: "seconds"))
    var duration = 10.0

    @Option(parsing: .unconditional, help: ArgumentHelp("RMS level in dB re a full-scale sine.", valueName: "dB"))
    var level = -20.0

    @Option(help: ArgumentHelp("Seed for the noise generators.", valueName: "n"))
    var seed: UInt64 = 1

    @Option(parsing: .unconditional, help: ArgumentHelp("Tone frequency for sine and burst.", valueName: "Hz"))
    var frequency = 1000.0

    @Option(parsing: .unconditional, help: ArgumentHelp("Sweep start frequency.", valueName: "Hz"))
    var from = 20.0

    @Option(parsing: .unconditional, help: ArgumentHelp("Sweep end frequency (default 20 kHz, or 0.45 × the rate if lower).", valueName: "Hz"))
    var to: Double?

    private var sweepEnd: Double { to ?? min(20_000, 0.45 * Double(rate)) }

    @Option(parsing: .unconditional, help: ArgumentHelp("Length of each tone burst.", valueName: "seconds"))
    var burst = 0.2

    @Option(parsing: .unconditional, help: ArgumentHelp("Time from one burst's start to the next.", valueName: "seconds"))
    var period = 1.0

    @Option(help: ArgumentHelp("Channels (the signal is copied to each).", valueName: "n"))
    var channels = 1

    @Option(help: ArgumentHelp("Sample encoding: s16, s24, s32, f32, f64 or vorbis (default s16; vorbis for .ogg).",
                               valueName: "encoding"))
    var encoding: String?

    @Option(help: ArgumentHelp("For cue: the payload it carries (1 to 8 hex digits).", valueName: "hex"))
    var payload: String?

    @Option(parsing: .unconditional,
            help: ArgumentHelp("For cue: the mark's tone power re the music's masking threshold, dB (default \(Int(StadiumCue.defaultStrength)): audible, as a cue may be).", valueName: "dB"))
    var strength: Double?

    @OptionGroup(title: "For cue") var keys: KeyOptions

    func validate() throws {
        guard SoundFileError.sampleRates.contains(rate) else {
            throw ValidationError("--rate must be between 8000 and 192000 Hz")
        }
        guard duration.isFinite, duration > 0, duration <= 86_400 else {
            throw ValidationError("--duration must be between 0 and 86400 seconds")
        }
        guard level.isFinite, level <= 6, level >= -200 else {
            throw ValidationError("--level must be between -200 and +6 dB")
        }
        let nyquist = Double(rate) / 2
        var used: [(String, Double)] = []
        switch kind {
        case .sine, .burst: used = [("--frequency", frequency)]
        case .sweep: used = [("--from", from), ("--to", sweepEnd)]
        case .white, .pink, .silence, .calibrator, .music, .cue: used = []
        }
        for (name, f) in used {
            guard f.isFinite, f > 0, f < nyquist else {
                throw ValidationError("\(name) must be above 0 and below half the sample rate (\(Int(nyquist)) Hz)")
            }
        }
        guard burst.isFinite, period.isFinite, burst > 0, period >= burst else {
            throw ValidationError("--burst must be above 0 and no longer than --period")
        }
        guard SoundFileError.channelCounts.contains(channels) else {
            throw ValidationError("--channels must be between 1 and 8")
        }
        if let e = encoding, OutputFormat.Encoding(rawValue: e) == nil {
            throw ValidationError("--encoding must be one of s16, s24, s32, f32, f64, vorbis")
        }
        if kind == .cue {
            guard let payload else { throw ValidationError("a cue carries a payload: give --payload") }
            do { _ = try WatermarkPayload(hex: payload) } catch { throw ValidationError("--payload: \(error)") }
            if let strength, !(strength.isFinite && Embedding.strengthRange.contains(strength)) {
                throw ValidationError("--strength must be between -20 and 20 dB")
            }
        } else if payload != nil || strength != nil || keys.given {
            throw ValidationError("--payload, --strength, --key, --key-file and --profile are for cue")
        }
    }

    func run() throws {
        let sampleRate = Double(rate)
        var generator: SignalGenerator
        switch kind {
        case .sine:
            generator = SineGenerator(frequency: frequency, amplitude: Decibels.sineAmplitude(level: level), sampleRate: sampleRate)
        case .calibrator:
            generator = SineGenerator(frequency: 1000, amplitude: Decibels.sineAmplitude(level: level), sampleRate: sampleRate)
        case .sweep:
            generator = SweepGenerator(from: from, to: sweepEnd, duration: duration, amplitude: Decibels.sineAmplitude(level: level),
                                       sampleRate: sampleRate)
        case .white:
            generator = WhiteNoiseGenerator(rms: Decibels.rms(level: level), seed: seed)
        case .pink:
            generator = PinkNoiseGenerator(rms: Decibels.rms(level: level), sampleRate: sampleRate, seed: seed)
        case .burst:
            generator = ToneBurstGenerator(frequency: frequency, amplitude: Decibels.sineAmplitude(level: level),
                                           burst: burst, period: period, sampleRate: sampleRate)
        case .silence:
            generator = SilenceGenerator()
        case .music:
            generator = MusicGenerator(rms: Decibels.rms(level: level), sampleRate: sampleRate, seed: seed)
        case .cue:
            let samples = try StadiumCue.render(payload: try WatermarkPayload(hex: payload ?? ""), key: try keys.resolve(),
                                                profile: keys.profile ?? .stadium, strength: strength, sampleRate: sampleRate,
                                                rms: Decibels.rms(level: level), seed: seed)
            generator = SampleGenerator(samples)
        }
        let writer: SoundFileWriter
        do {
            let format = try OutputFormat.forPath(output, encoding: encoding.flatMap(OutputFormat.Encoding.init(rawValue:)))
            writer = try SoundFileWriter(path: output, sampleRate: rate, channels: channels, format: format)
        } catch {
            Diagnostics.error(error.description)
            throw ExitCode.failure
        }
        let total = kind == .cue ? Int((StadiumCue.duration * sampleRate).rounded()) : Int((duration * sampleRate).rounded())
        let block = 4096
        var mono = [Float](repeating: 0, count: block)
        var frames = [Float](repeating: 0, count: block * channels)
        var written = 0
        var peak: Float = 0
        var energy = 0.0
        do {
            while written < total {
                let n = min(block, total - written)
                mono.withUnsafeMutableBufferPointer { generator.render(into: UnsafeMutableBufferPointer(rebasing: $0[0..<n])) }
                for i in 0..<n {
                    let v = mono[i]
                    peak = max(peak, abs(v))
                    energy += Double(v) * Double(v)
                    for c in 0..<channels { frames[i * channels + c] = v }
                }
                try frames.withUnsafeBufferPointer { try writer.write(UnsafeBufferPointer(rebasing: $0[0..<(n * channels)])) }
                written += n
            }
            if writer.clippedSamples > 0 {
                writer.abandon()
                Diagnostics.error(String(format: "%@: %d samples would clip (peak %.2f dB re full scale); lower --level or use --encoding f32",
                                         output, writer.clippedSamples / channels, 20 * log10(Double(peak))))
                throw ExitCode.failure
            }
            try writer.finish()
        } catch let error as SoundFileError {
            Diagnostics.error(error.description)
            throw ExitCode.failure
        }
        let rms = Decibels.level(meanSquare: energy / Double(max(total, 1)))
        let peakText = peak > 0 ? String(format: "%.2f dBFS peak", 20 * log10(Double(peak))) : "silent"
        try LineWriter.report(writing: output).write(line: String(
            format: "wrote %@: %@, %.3f s, %d Hz, %d channel%@, %@; level %@ dB re full-scale sine, %@",
            output, kind.rawValue, Double(total) / sampleRate, rate, channels, channels == 1 ? "" : "s",
            writer.format.description, rms.map { String(format: "%.2f", $0) } ?? "–", peakText) + note)
    }

    /// What the "wrote" line's level does not say by itself.
    private var note: String {
        switch kind {
        case .burst: return String(format: " (the tone is at %.2f dB while on; the level is over the whole file)", level)
        case .cue:
            let profile = (keys.profile ?? .stadium).rawValue
            return "; marked in the \(profile) profile: hark detect --profile \(profile) finds it"
        default: return ""
        }
    }
}

/// Plays samples made beforehand, then silence.
private struct SampleGenerator: SignalGenerator {
    let samples: [Float]
    var next = 0

    init(_ samples: [Float]) { self.samples = samples }

    mutating func render(into out: UnsafeMutableBufferPointer<Float>) {
        for i in out.indices {
            out[i] = next < samples.count ? samples[next] : 0
            next += 1
        }
    }
}
