import FoundationEssentials
import Glibc
import HarkSystem
import HarkDSP
import HarkSoundFile
import HarkSynthesis
import HarkEngine

/// The acoustic path from a broadcast to a microphone, for test benches (`hark simulate`).
/// Stages run in this order; each is off unless set.
public struct AcousticPath: Sendable {
    public enum Noise: Sendable, Equatable {
        case pink, white
        /// Six simulated talkers.
        case babble
        /// Thirty talkers over a pink bed: a stadium crowd.
        case crowd
        /// A recording, looped as needed.
        case file(String)
    }

    /// A codec round trip through ffmpeg: `aac64`, `aac96`, `aac128`, `mp3_64`, `mp3_128`, `opus32`, `opus64`.
    public var codec: String?
    /// Loudspeaker pass band, Hz.
    public var speaker: ClosedRange<Double>?
    /// Reverberation time; needs `distance` and `volume`.
    public var rt60: Double?
    public var distance: Double = 2.7
    /// Room volume, m³ (54: a 5 × 4 × 2.7 m living room).
    public var volume: Double = 54
    public var noise: Noise?
    /// Noise power re the programme's power as received (after speaker and room), dB.
    public var snr: Double = 10
    /// Microphone pass band, Hz.
    public var mic: ClosedRange<Double>?
    /// Capture clock offset: the recording runs this many parts per million fast.
    public var driftPPM: Double = 0
    /// Output rate (default: the input's).
    public var rate: Int?
    public var gain: Double = 0
    /// Hard-clip at full scale (an overdriven microphone or converter).
    public var clip = false
    public var seed: UInt64 = 1

    public init() {}

    /// The stages this path applies, in order, for a person: "aac64, speaker 150–12000 Hz,
    /// room RT60 0.5 s at 2.7 m in 54 m³, babble at SNR 10 dB"; "unchanged" when none.
    public var stages: String {
        func hz(_ r: ClosedRange<Double>) -> String { "\(number(r.lowerBound))–\(number(r.upperBound)) Hz" }
        func number(_ v: Double) -> String { v == v.rounded() && abs(v) < 1e9 ? String(Int(v)) : String(cFormat: "%g", v) }
        var parts: [String] = []
        if let codec { parts.append(codec) }
        if let speaker { parts.append("speaker \(hz(speaker))") }
        if let rt60 { parts.append("room RT60 \(number(rt60)) s at \(number(distance)) m in \(number(volume)) m³") }
        if let noise {
            let name: String
            switch noise {
            case .pink: name = "pink noise"
            case .white: name = "white noise"
            case .babble: name = "babble"
            case .crowd: name = "crowd"
            case .file(let f): name = f.split(separator: "/").last.map(String.init) ?? f
            }
            parts.append("\(name) at SNR \(number(snr)) dB")
        }
        if let mic { parts.append("microphone \(hz(mic))") }
        if driftPPM != 0 { parts.append(String(cFormat: "clock %+g ppm", driftPPM)) }
        if gain != 0 { parts.append(String(cFormat: "gain %+g dB", gain)) }
        if clip { parts.append("clipped at full scale") }
        return parts.isEmpty ? "unchanged" : parts.joined(separator: ", ")
    }

    public static let codecs: [String: (ext: String, args: [String])] = [
        "aac64": ("m4a", ["-c:a", "aac", "-b:a", "64k"]),
        "aac96": ("m4a", ["-c:a", "aac", "-b:a", "96k"]),
        "aac128": ("m4a", ["-c:a", "aac", "-b:a", "128k"]),
        "mp3_64": ("mp3", ["-c:a", "libmp3lame", "-b:a", "64k"]),
        "mp3_128": ("mp3", ["-c:a", "libmp3lame", "-b:a", "128k"]),
        "opus32": ("opus", ["-c:a", "libopus", "-b:a", "32k"]),
        "opus64": ("opus", ["-c:a", "libopus", "-b:a", "64k"]),
    ]
}

public enum SimulationError: Error, CustomStringConvertible {
    case unknownCodec(String)
    case codecFailed(String)
    case silentProgramme(String)

    public var description: String {
        switch self {
        case .unknownCodec(let c):
            return "unknown codec '\(c)'; one of \(AcousticPath.codecs.keys.sorted().joined(separator: ", "))"
        case .codecFailed(let m): return "ffmpeg failed: \(m)"
        case .silentProgramme(let p): return "\(p): the programme is silent after the path, so --snr has nothing to refer to"
        }
    }
}

/// Runs an ``AcousticPath`` over a file (`hark simulate`). The output is one channel: what a
/// microphone records.
public enum Simulation {
    /// Simulates `path` from `input` to `output`; returns warnings (e.g. a codec skipped).
    public static func run(input: String, output: String, path: AcousticPath) throws -> [String] {
        var warnings: [String] = []
        var source = input
        var temporary: [String] = []
        defer { temporary.forEach { unlink($0) } }
        if let codec = path.codec {
            guard let spec = AcousticPath.codecs[codec] else { throw SimulationError.unknownCodec(codec) }
            if let ffmpeg = findExecutable("ffmpeg") {
                let probe = try SoundFileReader(path: input)
                let rate = probe.sampleRate
                probe.close()
                let base = FileManager.default.temporaryDirectory.appendingPathComponent("hark-codec-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
                let coded = base + "." + spec.ext, decoded = base + ".wav"
                temporary += [coded, decoded]
                try runProcess(ffmpeg, ["-v", "error", "-y", "-i", input] + spec.args + [coded])
                try runProcess(ffmpeg, ["-v", "error", "-y", "-i", coded, "-ar", String(rate), "-c:a", "pcm_f32le", decoded])
                source = decoded
            } else {
                warnings.append("ffmpeg is not installed; --codec \(codec) skipped")
            }
        }
        // Pass 1: the programme's power as received, for the noise level.
        var noiseRMS = 0.0
        if path.noise != nil {
            let power = try stream(source, path, noiseRMS: nil, writer: nil)
            guard power > 0 else { throw SimulationError.silentProgramme(input) }
            noiseRMS = (power * pow(10, -path.snr / 10)).squareRoot()
        }
        let probe = try SoundFileReader(path: source)
        let outRate = path.rate ?? probe.sampleRate
        probe.close()
        let format = try OutputFormat.forPath(output, encoding: output.lowercased().hasSuffix(".wav") ? .f32 : nil)
        let writer = try SoundFileWriter(path: output, sampleRate: outRate, channels: 1, format: format)
        do {
            _ = try stream(source, path, noiseRMS: noiseRMS, writer: writer)
            try writer.finish()
        } catch {
            writer.abandon()
            throw error
        }
        if writer.clippedSamples > 0 && !path.clip {
            warnings.append("\(output): \(writer.clippedSamples) samples exceeded full scale and were clipped by the output encoding")
        }
        return warnings
    }

    /// Streams the path; returns the programme's mean square after speaker and room.
    private static func stream(_ input: String, _ path: AcousticPath, noiseRMS: Double?, writer: SoundFileWriter?) throws -> Double {
        let reader = try SoundFileReader(path: input)
        let fs = Double(reader.sampleRate)
        var blocks = MonoBlockReader(reader)
        var speaker = path.speaker.map { BiquadCascade.bandPass(low: $0.lowerBound, high: $0.upperBound, sampleRate: fs) }
        var mic = path.mic.map { BiquadCascade.bandPass(low: $0.lowerBound, high: $0.upperBound, sampleRate: fs) }
        let room = try path.rt60.map {
            try FFTConvolver(impulseResponse: RoomImpulseResponse.synthesize(
                rt60: $0, distance: path.distance, volume: path.volume, sampleRate: fs, seed: path.seed))
        }
        var noise = try noiseRMS.flatMap { rms in try path.noise.map { try NoiseSource($0, rms: rms, sampleRate: fs, seed: path.seed &+ 1) } }
        let outRate = Double(path.rate ?? reader.sampleRate)
        let resampleRatio = outRate / fs * (1 + path.driftPPM * 1e-6)
        let resampler = abs(resampleRatio - 1) > 1e-12 ? Resampler(from: 1, to: resampleRatio) : nil
        let gain = Float(pow(10, path.gain / 20))
        var energy = 0.0, count = 0
        func finishBlock(_ block: inout [Float]) throws {
            if noise != nil { try noise!.add(into: &block) }
            if mic != nil { block.withUnsafeMutableBufferPointer { mic!.process($0) } }
            var out: [Float] = []
            if let r = resampler { block.withUnsafeBufferPointer { r.process($0, into: &out) } } else { out = block }
            for i in out.indices {
                var v = out[i] * gain
                if path.clip { v = max(-1, min(1, v)) }
                out[i] = v
            }
            try out.withUnsafeBufferPointer { try writer?.write($0) }
        }
        while case let mono = try blocks.next(), !mono.isEmpty {
            var block = Array(mono)
            if speaker != nil { block.withUnsafeMutableBufferPointer { speaker!.process($0) } }
            if let room {
                var convolved: [Float] = []
                block.withUnsafeBufferPointer { room.process($0, into: &convolved) }
                block = convolved
            }
            for v in block { energy += Double(v) * Double(v) }
            count += block.count
            if writer != nil { try finishBlock(&block) }
        }
        if let room {
            var rest: [Float] = []
            room.finish(into: &rest)
            for v in rest { energy += Double(v) * Double(v) }
            count += rest.count
            if writer != nil { try finishBlock(&rest) }
        }
        if let r = resampler, writer != nil {
            var tail: [Float] = []
            r.finish(into: &tail)
            for i in tail.indices { tail[i] = path.clip ? max(-1, min(1, tail[i] * gain)) : tail[i] * gain }
            try tail.withUnsafeBufferPointer { try writer?.write($0) }
        }
        return count > 0 ? energy / Double(count) : 0
    }

    public static func findExecutable(_ name: String) -> String? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let p = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return nil
    }

    public static func runProcess(_ executable: String, _ arguments: [String]) throws {
        let run = try Subprocess.run(executable, arguments, keepOutput: false)
        guard run.status == 0 else {
            throw SimulationError.codecFailed(String(decoding: run.standardError, as: UTF8.self).trimmingWhitespace())
        }
    }
}

/// Noise for the path, at a given RMS.
struct NoiseSource {
    private var generator: SignalGenerator?
    private var file: [Float] = []
    private var position = 0

    init(_ kind: AcousticPath.Noise, rms: Double, sampleRate fs: Double, seed: UInt64) throws {
        switch kind {
        case .pink: generator = PinkNoiseGenerator(rms: rms, sampleRate: fs, seed: seed)
        case .white: generator = WhiteNoiseGenerator(rms: rms, seed: seed)
        case .babble: generator = BabbleNoiseGenerator(talkers: 6, rms: rms, sampleRate: fs, seed: seed)
        case .crowd: generator = BabbleNoiseGenerator(talkers: 30, rms: rms, sampleRate: fs, seed: seed, bed: 0.5)
        case .file(let path):
            // Noise recordings for benches are short; read one whole, at this rate, and loop it.
            let reader = try SoundFileReader(path: path)
            var blocks = MonoBlockReader(reader)
            let resampler = reader.sampleRate == Int(fs) ? nil : Resampler(from: Double(reader.sampleRate), to: fs)
            while case let mono = try blocks.next(), !mono.isEmpty {
                if let r = resampler { mono.withUnsafeBufferPointer { r.process($0, into: &file) } } else { file += mono }
            }
            let ms = file.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(file.count, 1))
            guard ms > 0 else { throw SimulationError.silentProgramme(path) }
            let scale = Float(rms / ms.squareRoot())
            for i in file.indices { file[i] *= scale }
        }
    }

    mutating func add(into block: inout [Float]) throws {
        if var g = generator {
            var n = [Float](repeating: 0, count: block.count)
            n.withUnsafeMutableBufferPointer { g.render(into: $0) }
            generator = g
            for i in block.indices { block[i] += n[i] }
        } else {
            for i in block.indices {
                block[i] += file[position]
                position = (position + 1) % file.count
            }
        }
    }
}
