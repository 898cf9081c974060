import FoundationEssentials
import Glibc

/// Shows how far a long analysis has got, on one rewritten terminal line. Silent unless the
/// writer is a terminal and the recording is long enough to be worth watching.
public final class ProgressReporter {
    /// Recordings shorter than this get no progress line.
    public static let minimumSeconds: Double = 60

    private let writer: LineWriter
    private let name: String
    private let total: Int64
    private let sampleRate: Double
    private let enabled: Bool
    private var lastDraw = 0.0
    private var drawn = false

    public init(writer: LineWriter, name: String, totalFrames: Int64?, sampleRate: Int) {
        self.writer = writer
        self.name = name
        total = totalFrames ?? 0
        self.sampleRate = Double(sampleRate)
        enabled = writer.isTerminal && Double(total) / Double(sampleRate) >= Self.minimumSeconds
    }

    /// Call with the frames read so far; redraws at most four times a second.
    public func update(_ frames: Int64) {
        guard enabled else { return }
        let now = Date().timeIntervalSinceReferenceDate
        guard now - lastDraw >= 0.25 else { return }
        lastDraw = now
        let percent = total > 0 ? min(100, Int(100 * Double(frames) / Double(total))) : 0
        let line = "\r\u{1B}[K\(name): \(percent)% (\(SummarySink.clock(Double(frames) / sampleRate)) of \(SummarySink.clock(Double(total) / sampleRate)))"
        try? writer.write(raw: line)
        drawn = true
    }

    /// Clears the progress line.
    public func finish() {
        if drawn { try? writer.write(raw: "\r\u{1B}[K") }
        drawn = false
    }
}
