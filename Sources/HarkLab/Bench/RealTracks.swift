import FoundationEssentials
import Glibc
import HarkDSP
import HarkEngine
import HarkSoundFile
import HarkSimulation

/// Recorded music that Debian packages ship, as `signals/real-audio-tracks.tsv` lists it
/// (tools/learned/tracks.py): each track with the one use it may serve. The benches cut their
/// creatives and decoys from the "bench" tracks and read the "calibration" tracks as unmarked
/// audio; the "train" tracks are the sound embedder's and never reach a bench.
public struct RealTracks: Sendable {
    public struct Track: Sendable, Equatable {
        public var id: String
        public var package: String
        public var seconds: Double
        public var role: String
        /// A file's path, or an archive's path, `#` and its member.
        public var source: String
    }

    public enum Failure: Error, CustomStringConvertible {
        case unreadable(String)
        case missing(Track)
        case decode(Track, String)
        case none(String)
        public var description: String {
            switch self {
            case .unreadable(let p): return "\(p): cannot read the track list"
            case .missing(let t): return "\(t.source) is missing: apt-get install \(t.package) (tools/bench-learned installs the tracks' packages)"
            case .decode(let t, let m): return "\(t.source): cannot decode it (\(m))"
            case .none(let role): return "the track list has no \(role) tracks"
            }
        }
    }

    public let tracks: [Track]

    public init(path: String) throws {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw Failure.unreadable(path) }
        tracks = text.split(separator: "\n").compactMap { line in
            guard !line.hasPrefix("#"), !line.hasPrefix("id\t") else { return nil }
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard f.count >= 6, let seconds = Double(f[3]) else { return nil }
            return Track(id: f[0], package: f[1], seconds: seconds, role: f[4], source: f[5])
        }.sorted { $0.id < $1.id }
    }

    /// The tracks of one role, in the list's order (by id). The bench's creatives take every
    /// other one of its tracks and its decoys the rest (``creatives`` / ``decoys``): no decoy
    /// is ever a cut of a creative's own track.
    public func role(_ role: String) -> [Track] { tracks.filter { $0.role == role } }
    public var creatives: [Track] { role("bench").enumerated().filter { $0.offset % 2 == 0 }.map(\.element) }
    public var decoys: [Track] { role("bench").enumerated().filter { $0.offset % 2 == 1 }.map(\.element) }

    /// A track decoded to mono at `rate` through ffmpeg (an archive's member through unzip).
    public static func decode(_ t: Track, rate: Double, scratch: String) throws -> [Float] {
        guard let ffmpeg = Simulation.findExecutable("ffmpeg") else { throw Failure.decode(t, "ffmpeg is not installed") }
        var input = t.source
        let member = scratch + "/.track-\(getpid())"
        let wav = scratch + "/.track-\(getpid()).wav"
        defer { unlink(member); unlink(wav) }
        if let hash = t.source.firstIndex(of: "#") {
            let archive = String(t.source[..<hash]), name = String(t.source[t.source.index(after: hash)...])
            guard FileManager.default.fileExists(atPath: archive) else { throw Failure.missing(t) }
            guard let unzip = Simulation.findExecutable("unzip") else { throw Failure.decode(t, "unzip is not installed") }
            // unzip -p writes the member to its standard output; a shell sends it to a file.
            do { try Simulation.runProcess("/bin/sh", ["-c", "\"$0\" -p \"$1\" \"$2\" > \"$3\"", unzip, archive, name, member]) } catch {
                throw Failure.decode(t, "\(error)")
            }
            input = member
        } else if !FileManager.default.fileExists(atPath: input) {
            throw Failure.missing(t)
        }
        do { try Simulation.runProcess(ffmpeg, ["-v", "error", "-y", "-i", input, "-ac", "1", "-ar", String(Int(rate)), "-c:a", "pcm_f32le", wav]) } catch {
            throw Failure.decode(t, "\(error)")
        }
        let (x, _) = try WatermarkBench.readMono(wav)
        return x
    }
}
