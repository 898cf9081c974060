import ArgumentParser
import Foundation
import HarkDSP
import HarkSoundFile

/// Plays audio into a FIFO in real time as raw PCM: a simulated microphone for harkd through
/// ALSA's `file` plugin (docs/daemon.md, "Running without a sound card").
struct Feed: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write audio to a FIFO (or stdout) as raw 16-bit mono PCM, in real time.",
        discussion: """
        A stand-in microphone: point ALSA's file plugin's infile at the FIFO and harkd captures \
        this audio through the real ALSA path. Channels are averaged and the audio resampled to \
        --rate. Writes whole periods (--period-ms) on a real-time schedule. The audio plays on \
        like a broadcast while no one reads: when the reader closes the FIFO, feed waits for the \
        next one and resumes where the programme has got to.
        """)

    @Argument(help: "Input audio (any format hark reads).", completion: .audio) var input: String
    @Argument(help: ArgumentHelp("A FIFO (made with mkfifo), or - for stdout.", valueName: "output"), completion: .file()) var output: String

    @Option(parsing: .unconditional, help: ArgumentHelp("Output sample rate.", valueName: "Hz"))
    var rate = 48_000
    @Option(name: .customLong("period-ms"), help: ArgumentHelp("Write size; match the reader's ALSA period.", valueName: "ms"))
    var periodMs = 20.0
    @Option(help: ArgumentHelp("Multiple of real time.", valueName: "x"))
    var speed = 1.0
    @Flag(help: "Start again at the end, forever.")
    var loop = false
    @Option(help: ArgumentHelp("""
        Also write here an ALSA configuration whose default capture device reads the FIFO \
        (harkd --alsa-config PATH then hears this audio; harkd --capture-fifo does the same).
        """, valueName: "path"), completion: .file())
    var alsaConfig: String?

    func validate() throws {
        guard (8_000...192_000).contains(rate) else { throw ValidationError("--rate must be 8000 to 192000 Hz") }
        guard periodMs >= 1, periodMs <= 1_000 else { throw ValidationError("--period-ms must be 1 to 1000") }
        guard speed > 0, speed <= 1_000 else { throw ValidationError("--speed must be above 0 and at most 1000") }
    }

    func run() throws {
        var programme = try Programme(path: input, rate: rate, loop: loop)
        if let alsaConfig { try writeALSAConfiguration(alsaConfig) }
        let period = max(1, Int((periodMs / 1000 * Double(rate)).rounded()))
        let periodSeconds = Double(period) / Double(rate) / speed
        var chunk = [Int16](repeating: 0, count: period)
        let toStdout = output == "-"
        var fd = toStdout ? STDOUT_FILENO : try openFIFO()
        let start = monotonicSeconds()
        var produced = 0
        while programme.next(into: &chunk) {
            produced += 1
            let due = start + Double(produced - 1) * periodSeconds
            let wait = due - monotonicSeconds()
            if wait > 0 { usleep(useconds_t(wait * 1e6)) }
            if write(chunk, to: fd) { continue }
            guard !toStdout, errno == EPIPE else {
                if toStdout && errno == EPIPE { return }
                Diagnostics.error("\(output): \(String(cString: strerror(errno)))")
                throw ExitCode.failure
            }
            // The reader went away: wait for the next, then skip what played meanwhile.
            close(fd)
            fd = try openFIFO()
            let now = Int((monotonicSeconds() - start) / periodSeconds)
            while produced < now, programme.next(into: &chunk) { produced += 1 }
        }
        if !toStdout { close(fd) }
    }

    /// An ALSA configuration that captures from the FIFO as `default`.
    private func writeALSAConfiguration(_ path: String) throws {
        guard output != "-" else { throw ValidationError("--alsa-config needs a FIFO to feed, not standard output") }
        let fifo = output.hasPrefix("/") ? output : FileManager.default.currentDirectoryPath + "/" + output
        let text = """
            # Written by hark feed: the default capture device reads \(fifo) (docs/daemon.md).
            pcm.hark_fifo { type file slave { pcm { type null } } file "/dev/null" infile "\(fifo)" format "raw" }
            pcm.default { type plug slave { pcm "hark_fifo"; format S16_LE; rate \(rate); channels 1 } }

            """
        do { try text.write(toFile: path, atomically: true, encoding: .utf8) } catch {
            Diagnostics.error("\(path): cannot write the ALSA configuration: \(error.localizedDescription)")
            throw ExitCode.failure
        }
        Diagnostics.progress("\(path): harkd --alsa-config \(path) captures what this feeds")
    }

    private func openFIFO() throws -> Int32 {
        var st = stat()
        guard stat(output, &st) == 0, (st.st_mode & S_IFMT) == S_IFIFO else {
            throw ValidationError("\(output) is not a FIFO (make one with mkfifo, or use - for stdout)")
        }
        var fd: Int32
        repeat { fd = open(output, O_WRONLY) } while fd < 0 && errno == EINTR   // waits for a reader
        guard fd >= 0 else {
            Diagnostics.error("\(output): \(String(cString: strerror(errno)))")
            throw ExitCode.failure
        }
        return fd
    }

    /// Writes all of `samples` as little-endian bytes; false on an error (errno says which).
    private func write(_ samples: [Int16], to fd: Int32) -> Bool {
        samples.map { $0.littleEndian }.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += n
            }
            return true
        }
    }
}

/// Seconds on the monotonic clock.
func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

/// The input as a stream of 16-bit mono samples at the output rate, looped if asked.
private struct Programme {
    let path: String
    let rate: Int
    let loop: Bool
    private var reader: SoundFileReader
    private var mixer: ChannelMixer
    private var resampler: Resampler?
    private var interleaved: [Float]
    private var mono: [Float]
    private var pending: [Float] = []
    private var ended = false

    init(path: String, rate: Int, loop: Bool) throws {
        self.path = path
        self.rate = rate
        self.loop = loop
        do { reader = try SoundFileReader(path: path) } catch {
            Diagnostics.error(error.description)
            throw ExitCode.failure
        }
        mixer = ChannelMixer(channels: reader.channels)
        resampler = reader.sampleRate == rate ? nil : Resampler(from: Double(reader.sampleRate), to: Double(rate))
        interleaved = [Float](repeating: 0, count: 4096 * reader.channels)
        mono = [Float](repeating: 0, count: 4096)
    }

    /// Fills `out` with the next samples; false when the input is over (never when looping,
    /// unless the input holds no audio at all).
    mutating func next(into out: inout [Int16]) -> Bool {
        while pending.count < out.count && !ended { refill() }
        guard !pending.isEmpty else { return false }
        for i in out.indices {
            let x = i < pending.count ? pending[i] : 0
            out[i] = Int16(max(-32_768, min(32_767, (x * 32_768).rounded())))
        }
        pending.removeFirst(min(out.count, pending.count))
        return true
    }

    private mutating func refill() {
        var frames = 0
        do throws(SoundFileError) {
            let r = reader
            frames = try interleaved.withUnsafeMutableBufferPointer { b throws(SoundFileError) in try r.read(into: b) }
        } catch {
            Diagnostics.warning(error.description)
        }
        if frames == 0 {
            if loop, reader.framesRead > 0, let again = try? SoundFileReader(path: path) {
                reader = again
                return
            }
            ended = true
            resampler?.finish(into: &pending)
            return
        }
        interleaved.withUnsafeBufferPointer { b in mono.withUnsafeMutableBufferPointer { mixer.mix(b, frames: frames, into: $0) } }
        if let resampler {
            mono.withUnsafeBufferPointer { resampler.process(UnsafeBufferPointer(rebasing: $0[0..<frames]), into: &pending) }
        } else {
            pending += mono[0..<frames]
        }
    }
}
