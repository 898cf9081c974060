import Foundation
import Glibc
import HarkCapture
import HarkEngine
import HarkSystem
import Synchronization

/// `hark embed --live`: marks a stream as it plays, from an ALSA capture device to an ALSA
/// playback device, or from standard input to standard output (raw little-endian samples).
///
/// source → ``LiveEmbedding`` → sink, one block at a time on this thread; the capture runs on
/// its own (``CaptureSource``). Overruns, dropped frames and underruns are recovered, counted and
/// reported in the status line; SIGINT or SIGTERM stops it cleanly, the frames still held marked
/// and played.
enum LiveMarking {
    struct Settings {
        var input: String
        var output: String
        var rate: Int
        var channels: Int
        /// Frames per block read and written: the capture's period.
        var periodFrames: Int
        /// Periods the playback device buffers.
        var playbackPeriods: Int
        /// Stop after this many seconds of input (nil: when stopped, or at the input's end).
        var seconds: Double?
        /// Seconds between status lines (0: none).
        var statusInterval: Double
        /// ALSA configuration text instead of the system's (the file plugin in tests).
        var alsaConfiguration: String?
        /// A capture device for what the audience hears beside the programme, and the dB that
        /// brings it to the quietest seats.
        var ambient: String?
        var ambientGain = -6.0
    }

    static let stop = Atomic<Bool>(false)

    /// Standard output closed by its reader: the stream ends there.
    struct StreamClosed: Error {}

    /// The capture device could not be opened at the start.
    struct StartFailure: Error {
        let reason: String
    }

    /// What a run did, for its last line.
    struct Summary {
        var seconds = 0.0
        var latency = 0.0
        var overruns = 0, dropped = 0, underruns = 0, limited = 0
    }

    static func run(_ s: Settings, options: EmbedOptions) throws -> Summary {
        stop.store(false, ordering: .relaxed)
        signal(SIGINT) { _ in LiveMarking.stop.store(true, ordering: .relaxed) }
        signal(SIGTERM) { _ in LiveMarking.stop.store(true, ordering: .relaxed) }
        if s.input == "-" { return try runStream(s, options: options) }
        return try runALSA(s, options: options)
    }

    private static func settings(_ device: String, _ s: Settings, periods: Int) -> CaptureSettings {
        var c = CaptureSettings()
        c.device = device
        c.rate = s.rate
        c.channels = s.channels
        c.periodFrames = s.periodFrames
        c.bufferFrames = s.periodFrames * periods
        c.configuration = s.alsaConfiguration
        return c
    }

    private static func runALSA(_ s: Settings, options: EmbedOptions) throws -> Summary {
        // ALSA's own messages as warnings, not bare lines on standard error.
        ALSALog.route { Diagnostics.warning($0) }
        defer { ALSALog.reset() }
        let capture = CaptureSource(settings: settings(s.input, s, periods: 10), ringSeconds: 1, log: { Diagnostics.warning($0) })
        let playback = PlaybackSink(output: try PlaybackDevice(settings: settings(s.output, s, periods: s.playbackPeriods)))
        defer { playback.output.close() }
        let f = playback.output.negotiated
        guard f.rate == s.rate, f.channels == s.channels else {
            throw ALSAError.configurePlayback(device: s.output, step: "\(s.rate) Hz, \(s.channels) channel(s) (it offers \(f.rate) Hz, \(f.channels); use a plug device)",
                                              code: -EINVAL, message: "not offered")
        }
        let embedding = try LiveEmbedding(options: options, sampleRate: Double(s.rate), channels: s.channels)
        // The venue's microphone, mono, on its own capture thread: read as the programme is, a
        // block at a time; where it has fallen short, the programme's masking alone.
        var ambientSettings = settings(s.ambient ?? "", s, periods: 10)
        ambientSettings.channels = 1
        let ambient = s.ambient.map { _ in CaptureSource(settings: ambientSettings, ringSeconds: 1, log: { Diagnostics.warning("ambient: " + $0) }) }
        ambient?.start()
        defer { _ = ambient?.stop() }
        let ambientScale = Float(pow(10, s.ambientGain / 20))
        var heard = [Float](repeating: 0, count: s.periodFrames)
        // Under systemd (Type=notify): ready once both devices are open, alive while blocks flow.
        let notifier = SystemdNotifier()
        var watchdogDue = monotonicSeconds(), ready = false
        capture.start()
        defer { _ = capture.stop() }
        // A device that is not there at the start is an error (systemd restarts the unit); one
        // lost later is waited for, as harkd waits. (Opening it twice would not do: a FIFO
        // behind ALSA's file plugin loses what is written while the first opening holds it.)
        started: while !stop.load(ordering: .relaxed) {
            switch capture.state {
            case .capturing: break started
            case .deviceLost(let why): throw StartFailure(reason: why)
            case .idle, .opening: usleep(10_000)
            }
        }
        var block = [Float](repeating: 0, count: s.periodFrames * s.channels)
        var out: [Float] = []
        var summary = Summary(latency: embedding.latency + Double(s.periodFrames + f.bufferFrames) / Double(s.rate))
        var status = StatusLine(interval: s.statusInterval, summary: summary)
        let limit = s.seconds.map { Int(($0 * Double(s.rate)).rounded()) }
        var lost = false
        while !stop.load(ordering: .relaxed) {
            // Said once when the device goes and once when it is back, not every read.
            if case .deviceLost(let why) = capture.state {
                if !lost { Diagnostics.warning("capture device lost (\(why)); waiting for it, playing nothing meanwhile") }
                lost = true
            } else if lost, case .capturing = capture.state {
                Diagnostics.warning("capture device back; marking again")
                lost = false
            }
            let want = min(s.periodFrames, (limit ?? .max) - embedding.framesIn)
            guard want > 0 else { break }
            let (frames, channels, gap) = block.withUnsafeMutableBufferPointer {
                capture.read(into: UnsafeMutableBufferPointer(rebasing: $0[0..<(want * s.channels)]), timeout: 0.5)
            }
            if let gap { Diagnostics.warning("\(gap); the mark goes on from the next frame") }
            guard frames > 0, channels == s.channels else { continue }
            out.removeAll(keepingCapacity: true)
            var ambientFrames = 0
            if let ambient {
                let got = heard.withUnsafeMutableBufferPointer { ambient.read(into: UnsafeMutableBufferPointer(rebasing: $0[0..<frames]), timeout: 0) }
                ambientFrames = got.frames
                for i in 0..<ambientFrames { heard[i] *= ambientScale }
            }
            block.withUnsafeBufferPointer { b in
                heard.withUnsafeBufferPointer { a in
                    embedding.process(UnsafeBufferPointer(rebasing: b[0..<(frames * channels)]),
                                      ambient: ambient == nil ? nil : UnsafeBufferPointer(rebasing: a[0..<ambientFrames]), into: &out)
                }
            }
            try out.withUnsafeBufferPointer { try playback.write($0) }
            let c = capture.counters
            (summary.overruns, summary.dropped, summary.underruns) = (c.overruns, c.droppedFrames, playback.underruns)
            if let line = status.tick(embedding, summary) { notifier.notify("STATUS=" + line) }
            if !ready {
                notifier.notify("READY=1")
                ready = true
            }
            if let every = notifier.watchdogInterval, monotonicSeconds() >= watchdogDue {
                notifier.notify("WATCHDOG=1")
                watchdogDue = monotonicSeconds() + every
            }
        }
        notifier.notify("STOPPING=1")
        out.removeAll()
        embedding.finish(into: &out)
        try out.withUnsafeBufferPointer { try playback.write($0) }
        playback.output.drain()
        summary.seconds = Double(embedding.framesIn) / Double(s.rate)
        summary.limited = embedding.limitedSamples
        return summary
    }

    /// Standard input to standard output, 16-bit little-endian samples.
    private static func runStream(_ s: Settings, options: EmbedOptions) throws -> Summary {
        let embedding = try LiveEmbedding(options: options, sampleRate: Double(s.rate), channels: s.channels)
        let frameBytes = 2 * s.channels
        var bytes = [UInt8](repeating: 0, count: s.periodFrames * frameBytes)
        var pending = 0
        var samples: [Float] = [], out: [Float] = [], encoded: [UInt8] = []
        var summary = Summary(latency: embedding.latency)
        var status = StatusLine(interval: s.statusInterval, summary: summary)
        let limit = s.seconds.map { Int(($0 * Double(s.rate)).rounded()) }
        func emit() throws {
            out.withUnsafeBufferPointer { SampleEncoding.encode($0, as: .s16, into: &encoded) }
            var done = 0
            while done < encoded.count {
                let n = encoded.withUnsafeBytes { Glibc.write(1, $0.baseAddress! + done, encoded.count - done) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw StreamClosed() }
                done += n
            }
        }
        while !stop.load(ordering: .relaxed), limit.map({ embedding.framesIn < $0 }) ?? true {
            let n = bytes.withUnsafeMutableBytes { Glibc.read(0, $0.baseAddress! + pending, $0.count - pending) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            pending += n
            var frames = pending / frameBytes
            if let limit { frames = min(frames, limit - embedding.framesIn) }
            guard frames > 0 else { continue }
            let count = frames * s.channels
            if samples.count < count { samples = [Float](repeating: 0, count: count) }
            bytes.withUnsafeBytes { raw in
                samples.withUnsafeMutableBufferPointer { SampleEncoding.decode(raw.baseAddress!, .s16, count: count, into: $0) }
            }
            // The part of a frame read beyond these goes to the front for the next read.
            let used = frames * frameBytes
            bytes.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: $0.baseAddress! + used, byteCount: pending - used) }
            pending -= used
            out.removeAll(keepingCapacity: true)
            samples.withUnsafeBufferPointer { embedding.process(UnsafeBufferPointer(rebasing: $0[0..<count]), into: &out) }
            try emit()
            _ = status.tick(embedding, summary)
        }
        out.removeAll()
        embedding.finish(into: &out)
        try emit()
        summary.seconds = Double(embedding.framesIn) / Double(s.rate)
        summary.limited = embedding.limitedSamples
        return summary
    }

    /// A line on standard error every `interval` seconds of audio: the input's level, the
    /// mark's level re the host, and the faults so far.
    struct StatusLine {
        let interval: Double
        var summary: Summary
        private var next: Int?

        init(interval: Double, summary: Summary) {
            (self.interval, self.summary) = (interval, summary)
        }

        /// Prints the line when it is due, and returns it.
        mutating func tick(_ e: LiveEmbedding, _ s: Summary) -> String? {
            guard interval > 0 else { return nil }
            let step = Int(interval * e.sampleRate)
            if next == nil { next = step }
            guard e.framesIn >= next! else { return nil }
            next! += step
            let (host, mark) = e.takeLevels()
            let line = String(format: "live %.0f s: host %@ dBFS, mark %@ dB re host, latency %.1f ms, overruns %d, dropped %d, underruns %d",
                              Double(e.framesIn) / e.sampleRate, host.map { String(format: "%.1f", $0) } ?? "–",
                              mark.map { String(format: "%.1f", $0) } ?? "–", 1000 * s.latency, s.overruns, s.dropped, s.underruns)
            Diagnostics.progress(line)
            return line
        }
    }
}
