import FoundationEssentials
import Glibc
import HarkDSP
import HarkEngine
import HarkSoundFile
import HarkSystem
import HarkSimulation

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
    /// The format to mark with: the one on air (1) unless a study asks for another
    /// (``FormatVersionTwo``).
    public var formatVersion: Int?

    /// The study's format for a mark, nil for the format on air.
    func study(key: WatermarkKey, profile: WatermarkProfile) -> WatermarkFormat? {
        formatVersion.flatMap { FormatVersionTwo.study(version: $0, key: key, profile: profile) }
    }
    /// How many payload-and-key draws mark each host (1 when absent). A mark's audibility on a
    /// host depends on which tones its payload and key sound, so a default is transparent only
    /// if every campaign's mark is: each host is graded by its median and its worst draw.
    public var draws: Int?
    /// A crowd heard beside the programme (a stadium): each host is marked with it as a masker
    /// (``EmbedOptions/ambient``) and graded twice, on the programme alone and as heard with
    /// the crowd. Nil: the programme alone, marked under its own masking.
    public var crowd: Crowd?

    public struct Crowd: Codable, Sendable {
        /// The crowd's level re the programme (RMS, dB) where the quietest seats are: what the
        /// mark is shaped under and graded with.
        public var level: Double
    }

    /// A definitions file that decodes but cannot be run.
    public enum Invalid: Error, CustomStringConvertible {
        case draws(Int)
        case formatVersion(Int)
        public var description: String {
            switch self {
            case .draws(let n): return "draws must be at least 1, not \(n)"
            case .formatVersion(let v): return "formatVersion must be 1 or 2, not \(v)"
            }
        }
    }

    public static func load(path: String) throws -> TransparencyDefinition {
        let d = try DefinitionsFile.load(TransparencyDefinition.self, path: path)
        if let n = d.draws, n < 1 { throw Invalid.draws(n) }
        if let v = d.formatVersion, !FormatVersionTwo.versions.contains(v) { throw Invalid.formatVersion(v) }
        return d
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

    /// Seconds after which a grade is taken for a stall: one of 30 s takes about a second, but
    /// GstPEAQ now and then stops at the start of a run, doing nothing, and is then run again.
    static let timeLimit = 120.0
    static let attempts = 3

    /// The objective difference grade of `test` against `reference` (0 imperceptible … −4 very
    /// annoying). Both files must have the same rate, length and alignment.
    public func grade(reference: String, test: String) throws -> Double {
        var run = try Subprocess.run(executable, [reference, test], timeLimit: Self.timeLimit)
        for _ in 1..<Self.attempts where run.timedOut {
            run = try Subprocess.run(executable, [reference, test], timeLimit: Self.timeLimit)
        }
        if run.timedOut {
            throw Failure.failed(String(cFormat: "no grade within %.0f s in %d attempts", Self.timeLimit, Self.attempts))
        }
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

/// One host's grades in one column (profile × strength): one per draw of payload and key.
public struct TransparencyGrade: Sendable {
    /// The ODG of each draw.
    public var odgs: [Double]
    /// The mark's power re the host's over the whole file, dB, for each draw.
    public var ratios: [Double]

    public init(odgs: [Double], ratios: [Double]) {
        self.odgs = odgs
        self.ratios = ratios
    }

    public var median: Double { odgs.median }
    public var worst: Double { odgs.min() ?? .nan }
    public var ratio: Double { ratios.median }
}

/// One host's grades.
public struct TransparencyRow: Sendable {
    public var host: String
    /// The host against itself with another dither: what the bench reads for no mark at all.
    public var baseline: Double
    /// One per column (profile × strength).
    public var grades: [TransparencyGrade]
}

extension [Double] {
    /// The middle value (the mean of the two middle ones for an even count); NaN when empty.
    fileprivate var median: Double {
        let v = sorted()
        guard !v.isEmpty else { return .nan }
        return v.count % 2 == 1 ? v[v.count / 2] : (v[v.count / 2 - 1] + v[v.count / 2]) / 2
    }
}

public struct TransparencyReport: Sendable {
    public var columns: [(profile: WatermarkProfile, strength: Double)] = []
    /// With a crowd, whether each column grades the programme as heard with it (true) or alone.
    public var asHeard: [Bool] = []
    public var rows: [TransparencyRow] = []
    public var targets: [String: TransparencyDefinition.Target] = [:]
    public var seconds = 0.0

    /// The median over hosts of each host's median draw: the typical host and campaign.
    public func median(_ column: Int) -> Double { rows.map { $0.grades[column].median }.median }

    /// The worst draw on the worst host: what the target for every host is held to.
    public func worst(_ column: Int) -> Double { rows.map { $0.grades[column].worst }.min() ?? .nan }

    /// How many draws marked each host.
    public var draws: Int { rows.first?.grades.first?.odgs.count ?? 0 }
}

/// `hark-lab bench transparency`: marks every host in every profile at every strength and grades
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
        if d.crowd != nil {
            report.columns = report.columns.flatMap { [$0, $0] }
            report.asHeard = report.columns.indices.map { $0 % 2 == 1 }
        }
        let marks = draws(seed: d.seed, hosts: d.hosts.reduce(0) { $0 + $1.count }, count: d.draws ?? 1)
        var hostNumber = 0
        for host in d.hosts {
            for index in 0..<host.count {
                let path = try hosts.bandLimitedFile(kind: host.kind, index: index, seconds: d.hostSeconds,
                                          seed: d.seed &* 31 &+ UInt64(index) &+ 1000)
                let hostMarks = marks[hostNumber]
                hostNumber += 1
                let reference = workDirectory + "/reference.wav", other = workDirectory + "/reference-2.wav"
                try deliver(path, to: reference, seed: 1)
                try deliver(path, to: other, seed: 2)
                var row = TransparencyRow(host: host.count > 1 ? "\(host.name) \(index + 1)" : host.name,
                                          baseline: try grader.grade(reference: reference, test: other), grades: [])
                // The crowd as the quietest seats hear it, and the host heard with it.
                var crowd: (file: String, samples: [Float])?
                let heardReference = workDirectory + "/reference-heard.wav"
                if let c = d.crowd {
                    let (x, rate) = try WatermarkBench.readMono(path)
                    let raw = try hosts.file(kind: "crowd", index: 0, seconds: d.hostSeconds, seed: d.seed &+ 700)
                    var (y, _) = try WatermarkBench.readMono(raw)
                    let power = { (v: [Float]) in v.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, v.count)) }
                    let scale = Float((power(x) / power(y)).squareRoot() * pow(10, c.level / 20))
                    y = (0..<x.count).map { $0 < y.count ? scale * y[$0] : 0 }
                    let file = workDirectory + "/crowd.wav"
                    try BenchHosts.writeMono(y[...], rate: rate, to: file)
                    crowd = (file, y)
                    try BenchHosts.writeMono(zip(x, y).map(+)[...], rate: rate, to: workDirectory + "/host-heard.wav")
                    try deliver(workDirectory + "/host-heard.wav", to: heardReference, seed: 1)
                }
                for (column, (profile, strength)) in report.columns.enumerated() {
                    let heard = report.asHeard.isEmpty ? false : report.asHeard[column]
                    var grade = TransparencyGrade(odgs: [], ratios: [])
                    for (draw, mark) in hostMarks.enumerated() {
                        let marked = workDirectory + "/marked.wav", delivered = workDirectory + "/marked-16.wav"
                        let e = try Embedding.embed(input: path, output: marked,
                                                    options: EmbedOptions(payload: mark.payload, key: mark.key, strength: strength,
                                                                          profile: profile, study: d.study(key: mark.key, profile: profile),
                                                                          ambient: crowd.map { EmbedOptions.Ambient(path: $0.file, gain: 0) }))
                        if heard, let crowd {
                            let (m, rate) = try WatermarkBench.readMono(marked)
                            try BenchHosts.writeMono(zip(m, crowd.samples).map(+)[...], rate: rate, to: workDirectory + "/marked-heard.wav")
                            try deliver(workDirectory + "/marked-heard.wav", to: delivered, seed: 3)
                        } else {
                            try deliver(marked, to: delivered, seed: 3)
                        }
                        let odg = try grader.grade(reference: heard ? heardReference : reference, test: delivered)
                        grade.odgs.append(odg)
                        grade.ratios.append(e.ratio)
                        log(String(cFormat: "%@, %@, %+g dB%@, draw %d: ODG %.2f, mark %.1f dB re host", row.host, profile.rawValue,
                                   strength, crowd == nil ? "" : heard ? ", as heard" : ", programme alone", draw + 1, odg, e.ratio))
                    }
                    row.grades.append(grade)
                }
                report.rows.append(row)
            }
        }
        report.seconds = Date().timeIntervalSince(started)
        return report
    }

    /// The payload and key of each draw, for each host in order. The first draw of every host
    /// is the one the bench has always drawn (so one draw reads what it read before); the others
    /// come from a stream of their own per host.
    static func draws(seed: UInt64, hosts: Int, count: Int) -> [[(payload: WatermarkPayload, key: WatermarkKey)]] {
        var first = SplitMix64(seed: seed)
        return (0..<hosts).map { host in
            var more = SplitMix64(seed: seed ^ (0xD1B5_4A32_D192_ED03 &* UInt64(host + 1)))
            return (0..<max(1, count)).map { draw in
                func next() -> UInt64 { draw == 0 ? first.next() : more.next() }
                let payload = WatermarkPayload(UInt32(truncatingIfNeeded: next()))
                return (payload, WatermarkKey(text: "transparency-\(next() % 1000)"))
            }
        }
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
        let heads = r.columns.enumerated().map { i, c in
            String(cFormat: "%@, %+g dB", c.profile.rawValue, c.strength) + (r.asHeard.isEmpty ? "" : r.asHeard[i] ? ", as heard" : ", programme alone")
        }
        let several = r.draws > 1
        var s = "| host | baseline | " + heads.joined(separator: " | ") + " |\n"
        s += "|---|---|" + heads.map { _ in "---|" }.joined() + "\n"
        for row in r.rows {
            let cells = row.grades.map { g in
                several ? String(cFormat: "%.2f / %.2f (%.0f dB)", g.median, g.worst, g.ratio)
                        : String(cFormat: "%.2f (%.0f dB)", g.median, g.ratio)
            }
            s += "| \(row.host) | " + String(cFormat: "%.2f", row.baseline) + " | " + cells.joined(separator: " | ") + " |\n"
        }
        s += "| **median** | | " + r.columns.indices.map { String(cFormat: "**%.2f**", r.median($0)) }.joined(separator: " | ") + " |\n"
        s += "| **worst** | | " + r.columns.indices.map { String(cFormat: "**%.2f**", r.worst($0)) }.joined(separator: " | ") + " |\n"
        s += "\nEach cell: PEAQ ODG (basic version; 0 imperceptible, −1 perceptible but not annoying, −4 very annoying) "
        if several {
            s += String(cFormat: "over %d draws of payload and key, the host's median / worst draw, ", r.draws)
        }
        s += "and, in brackets, the mark's power re the host's over the whole file"
        s += several ? " (median draw)" : ""
        s += ". Baseline: the host against itself with another dither."
        s += several ? " Median: over hosts, of each host's median draw; worst: the worst draw on any host.\n" : "\n"
        for (i, c) in r.columns.enumerated() {
            guard let t = r.targets[c.profile.rawValue], c.strength == c.profile.defaultStrength || !r.asHeard.isEmpty else { continue }
            let met = r.median(i) >= t.median && r.worst(i) >= t.worst
            let view = r.asHeard.isEmpty ? "" : r.asHeard[i] ? ", as heard" : ", programme alone"
            let strength = c.strength == c.profile.defaultStrength ? "the default strength" : String(cFormat: "%+g dB", c.strength)
            s += String(cFormat: "Target, %@ profile at %@%@: median ≥ %.1f, every host ≥ %.1f: %@.\n",
                        c.profile.rawValue, strength, view, t.median, t.worst, met ? "met" : "not met")
        }
        s += String(cFormat: "Bench time: %.0f s.\n", r.seconds)
        return s
    }
}
