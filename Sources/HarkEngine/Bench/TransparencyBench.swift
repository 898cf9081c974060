import FoundationEssentials
import Glibc
import HarkSystem
import HarkDSP
import HarkSoundFile

/// The transparency bench, as defined in `signals/transparency-bench.json`: which hosts, which
/// profiles and strengths to grade.
public struct TransparencyDefinition: Codable, Sendable {
    public struct Host: Codable, Sendable {
        public var name: String
        /// A kind ``BenchHosts`` makes.
        public var kind: String
        public var count: Int
    }

    /// What a profile must reach at the default strength: the median and the worst host's ODG.
    public struct Target: Codable, Sendable {
        public var median: Double
        public var worst: Double
    }

    public var seed: UInt64
    public var hostSeconds: Double
    public var hosts: [Host]
    public var profiles: [WatermarkProfile]
    /// Strengths to grade (dB re the masking threshold); each profile's default when absent.
    public var strengths: [Double]?
    public var targets: [String: Target]?
    /// The format to mark with: the one on air unless a study asks for another
    /// (``WatermarkFormat/Version``).
    public var formatVersion: WatermarkFormat.Version?

    public static func load(path: String) throws -> TransparencyDefinition {
        try JSONDecoder().decode(TransparencyDefinition.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }
}

/// Grades a marked file against its host with PEAQ (ITU-R BS.1387, basic version), through
/// GstPEAQ's `peaq` program: found in `$PEAQ` or on `PATH`.
public struct PEAQGrader: Sendable {
    public enum Failure: Error, CustomStringConvertible {
        case missing
        case failed(String)
        public var description: String {
            switch self {
            case .missing:
                return """
                    peaq (GstPEAQ) was not found in $PEAQ or on PATH. It is LGPL and builds on Debian: \
                    apt-get install libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev gstreamer1.0-plugins-base \
                    gstreamer1.0-plugins-good gtk-doc-tools automake autoconf libtool pkg-config; \
                    then in a checkout of github.com/HSU-ANT/gstpeaq: ./autogen.sh && make && make install \
                    (or set PEAQ=src/peaq and GST_PLUGIN_PATH=src/.libs)
                    """
            case .failed(let m): return "peaq failed: \(m)"
            }
        }
    }

    public let executable: String

    public init() throws {
        if let p = ProcessInfo.processInfo.environment["PEAQ"], !p.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: p) else { throw Failure.missing }
            executable = p
        } else if let p = Simulation.findExecutable("peaq") {
            executable = p
        } else {
            throw Failure.missing
        }
    }

    /// The objective difference grade of `test` against `reference` (0 imperceptible … −4 very
    /// annoying). Both files must have the same rate, length and alignment.
    public func grade(reference: String, test: String) throws -> Double {
        let run = try Subprocess.run(executable, [reference, test])
        let text = String(decoding: run.standardOutput, as: UTF8.self)
        let message = String(decoding: run.standardError, as: UTF8.self)
        guard run.status == 0,
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Objective Difference Grade:") }),
              let value = Double(line.split(separator: ":").last!.trimmingWhitespace()), value.isFinite
        else {
            throw Failure.failed((message + text).trimmingWhitespace())
        }
        return value
    }
}

/// One host's grades.
public struct TransparencyRow: Sendable {
    public var host: String
    /// The host against itself with another dither: what the bench reads for no mark at all.
    public var baseline: Double
    /// Per column (profile × strength): the ODG and the mark's power re the host's, dB.
    public var grades: [(odg: Double, ratio: Double)]
}

public struct TransparencyReport: Sendable {
    public var columns: [(profile: WatermarkProfile, strength: Double)] = []
    public var rows: [TransparencyRow] = []
    public var targets: [String: TransparencyDefinition.Target] = [:]
    public var seconds = 0.0

    public func median(_ column: Int) -> Double {
        let v = rows.map { $0.grades[column].odg }.sorted()
        guard !v.isEmpty else { return .nan }
        return v.count % 2 == 1 ? v[v.count / 2] : (v[v.count / 2 - 1] + v[v.count / 2]) / 2
    }

    public func worst(_ column: Int) -> Double { rows.map { $0.grades[column].odg }.min() ?? .nan }
}

/// `hark bench transparency`: marks every host in every profile at every strength and grades
/// the marked file against its host with PEAQ.
///
/// Both files are graded as they would be delivered: 16-bit, each with its own TPDF dither.
/// GstPEAQ returns no grade (NaN) when a loud frame of the two files is identical, which a mark
/// that is silent where the host cannot cover it produces; the dither also keeps digital silence
/// from grading as infinitely sensitive. Each host is also graded against itself with another
/// dither (the baseline column): the best grade the bench can give.
public enum TransparencyBench {
    public static func run(_ d: TransparencyDefinition, workDirectory: String, log: (String) -> Void) throws -> TransparencyReport {
        let started = Date()
        let grader = try PEAQGrader()
        let hosts = try BenchHosts(directory: workDirectory + "/hosts")
        var report = TransparencyReport()
        report.targets = d.targets ?? [:]
        report.columns = d.profiles.flatMap { p in (d.strengths ?? [p.defaultStrength]).map { (p, $0) } }
        var rng = SplitMix64(seed: d.seed)
        for host in d.hosts {
            for index in 0..<host.count {
                let path = try hosts.bandLimitedFile(kind: host.kind, index: index, seconds: d.hostSeconds,
                                          seed: d.seed &* 31 &+ UInt64(index) &+ 1000)
                let payload = WatermarkPayload(UInt32(truncatingIfNeeded: rng.next()))
                let key = WatermarkKey(text: "transparency-\(rng.next() % 1000)")
                let reference = workDirectory + "/reference.wav", other = workDirectory + "/reference-2.wav"
                try deliver(path, to: reference, seed: 1)
                try deliver(path, to: other, seed: 2)
                var row = TransparencyRow(host: host.count > 1 ? "\(host.name) \(index + 1)" : host.name,
                                          baseline: try grader.grade(reference: reference, test: other), grades: [])
                for (profile, strength) in report.columns {
                    let marked = workDirectory + "/marked.wav", delivered = workDirectory + "/marked-16.wav"
                    let e = try Embedding.embed(input: path, output: marked,
                                                options: EmbedOptions(payload: payload, key: key, strength: strength, profile: profile,
                                                                      version: d.formatVersion ?? .v1))
                    try deliver(marked, to: delivered, seed: 3)
                    let odg = try grader.grade(reference: reference, test: delivered)
                    row.grades.append((odg, e.ratio))
                    log(String(cFormat: "%@, %@, %+g dB: ODG %.2f, mark %.1f dB re host", row.host, profile.rawValue, strength,
                               odg, e.ratio))
                }
                report.rows.append(row)
            }
        }
        report.seconds = Date().timeIntervalSince(started)
        return report
    }

    /// Writes `input` as 16-bit PCM with TPDF dither of ±1 LSB from its own random stream.
    static func deliver(_ input: String, to output: String, seed: UInt64) throws {
        let reader = try SoundFileReader(path: input)
        let writer = try SoundFileWriter(path: output, sampleRate: reader.sampleRate, channels: reader.channels,
                                         format: OutputFormat(container: .wav, encoding: .s16))
        var rng = SplitMix64(seed: seed)
        var buffer = [Float](repeating: 0, count: 4096 * reader.channels)
        while true {
            let frames = try buffer.withUnsafeMutableBufferPointer { try reader.read(into: $0) }
            guard frames > 0 else { break }
            let count = frames * reader.channels
            for i in 0..<count {
                let dither = (rng.nextUniform() - rng.nextUniform()) / 32768
                buffer[i] = Float(max(-1, min(32767.0 / 32768, Double(buffer[i]) + dither)))
            }
            try buffer.withUnsafeBufferPointer { try writer.write(UnsafeBufferPointer(rebasing: $0[0..<count])) }
        }
        try writer.finish()
    }

    /// The grades as a Markdown table, one column per profile and strength, with the median,
    /// the worst host and the targets.
    public static func table(_ r: TransparencyReport) -> String {
        let heads = r.columns.map { String(cFormat: "%@, %+g dB", $0.profile.rawValue, $0.strength) }
        var s = "| host | baseline | " + heads.joined(separator: " | ") + " |\n"
        s += "|---|---|" + heads.map { _ in "---|" }.joined() + "\n"
        for row in r.rows {
            s += "| \(row.host) | " + String(cFormat: "%.2f", row.baseline) + " | " + row.grades.map { String(cFormat: "%.2f (%.0f dB)", $0.odg, $0.ratio) }.joined(separator: " | ") + " |\n"
        }
        s += "| **median** | | " + r.columns.indices.map { String(cFormat: "**%.2f**", r.median($0)) }.joined(separator: " | ") + " |\n"
        s += "| **worst** | | " + r.columns.indices.map { String(cFormat: "**%.2f**", r.worst($0)) }.joined(separator: " | ") + " |\n"
        s += "\nEach cell: PEAQ ODG (basic version; 0 imperceptible, −1 perceptible but not annoying, −4 very annoying) "
        s += "and, in brackets, the mark's power re the host's over the whole file. Baseline: the host against itself "
        s += "with another dither.\n"
        for (i, c) in r.columns.enumerated() {
            guard let t = r.targets[c.profile.rawValue], c.strength == c.profile.defaultStrength else { continue }
            let met = r.median(i) >= t.median && r.worst(i) >= t.worst
            s += String(cFormat: "Target, %@ profile at the default strength: median ≥ %.1f, every host ≥ %.1f: %@.\n",
                        c.profile.rawValue, t.median, t.worst, met ? "met" : "not met")
        }
        s += String(cFormat: "Bench time: %.0f s.\n", r.seconds)
        return s
    }
}
