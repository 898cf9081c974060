import BenchSupport
import Foundation

// `hark embed --live` measured as a playout runs it. Two parts, each a line of figures:
//  - speed: the same minutes of stereo music marked as a file (`hark embed`) and as a stream
//    (`hark embed --live --input - --output -`), side by side in one run: audio seconds per CPU
//    second of each process;
//  - soak: mono music fed in real time through ALSA's `file` plugin from a FIFO for --seconds,
//    captured, marked and played through the plugin, as on a card: the capture overruns, the
//    frames dropped because the embedder fell behind, the playback underruns, the process's CPU
//    share and peak memory, and the latency it states. Run through `tools/bench-live-embed`.

struct Options {
    var hark = ".build/release/hark"
    var data = "Benchmarks/.data"
    var minutes = 10
    var seconds = 60
}

func parseOptions() -> Options {
var options = Options()
var arguments = CommandLine.arguments.dropFirst()
while let a = arguments.popFirst() {
    switch a {
    case "--hark": options.hark = arguments.popFirst() ?? options.hark
    case "--data": options.data = arguments.popFirst() ?? options.data
    case "--minutes": options.minutes = Int(arguments.popFirst() ?? "") ?? options.minutes
    case "--seconds": options.seconds = Int(arguments.popFirst() ?? "") ?? options.seconds
    case "--help", "-h":
        print("usage: live-embed-bench [--hark PATH] [--data DIR] [--minutes N] [--seconds N]")
        print("  --minutes  stereo music marked for the speed figures (default 10)")
        print("  --seconds  length of the real-time soak through ALSA (default 60; 3600 for the issue's hour)")
        exit(0)
    default: fail("unknown argument \(a)")
    }
}
return options
}
let options = parseOptions()

let dir = NSTemporaryDirectory() + "hark-live-bench-\(getpid())"
try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: dir) }
try? FileManager.default.createDirectory(atPath: options.data, withIntermediateDirectories: true)

/// A generated music file of `seconds`, cached in the data folder.
func music(_ seconds: Int, channels: Int) -> String {
    let path = options.data + "/live-music-\(seconds)s-\(channels)ch.wav"
    if !FileManager.default.fileExists(atPath: path) {
        guard run(options.hark, ["generate", "music", path, "--duration", String(seconds), "--seed", "7", "--channels", String(channels)]) == 0 else {
            fail("hark generate failed")
        }
    }
    return path
}

/// Runs hark with `arguments`, standard input from `input` (nil: none) and output to /dev/null;
/// returns its CPU seconds (user and system, from the kernel's account of finished children).
func measure(_ arguments: [String], input: String? = nil) -> Double {
    func childrenCPU() -> Double {
        var u = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &u)
        return Double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + Double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6
    }
    let before = childrenCPU()
    let p = Process()
    p.executableURL = URL(fileURLWithPath: options.hark)
    p.arguments = arguments
    p.standardInput = input.flatMap { FileHandle(forReadingAtPath: $0) } ?? FileHandle.nullDevice
    p.standardOutput = FileHandle.nullDevice
    p.standardError = FileHandle.nullDevice
    do { try p.run() } catch { fail("cannot run \(options.hark): \(error)") }
    p.waitUntilExit()
    guard p.terminationStatus == 0 else { fail("hark \(arguments.joined(separator: " ")) failed") }
    return childrenCPU() - before
}

// MARK: speed, side by side

let seconds = options.minutes * 60
let stereo = music(seconds, channels: 2)
let raw = dir + "/music.raw"
FileManager.default.createFile(atPath: raw, contents: (try? Data(contentsOf: URL(fileURLWithPath: stereo)))?.dropFirst(44))
var fileCPU: [Double] = [], streamCPU: [Double] = []
for _ in 0..<2 {
    fileCPU.append(measure(["embed", stereo, dir + "/marked.wav", "--payload", "c0ffee42"]))
    streamCPU.append(measure(["embed", "--live", "--input", "-", "--output", "-", "--payload", "c0ffee42", "--status-interval", "0"], input: raw))
}
let fileBest = fileCPU.min()!, streamBest = streamCPU.min()!
print(String(format: "speed: %d s of stereo music at 48 kHz: hark embed (a file) %.2f s of CPU, %.0fx real time; hark embed --live (a stream) %.2f s, %.0fx real time (the better of two runs each, alternated)",
             seconds, fileBest, Double(seconds) / fileBest, streamBest, Double(seconds) / streamBest))

// MARK: soak through ALSA in real time

let mono = music(60, channels: 1)
let samples = (try? Data(contentsOf: URL(fileURLWithPath: mono)))?.dropFirst(44) ?? Data()
let fifo = dir + "/in.fifo", config = dir + "/live.conf"
guard mkfifo(fifo, 0o600) == 0 else { fail("mkfifo failed") }
try! """
    pcm.wavin { type file; slave { pcm { type null } }; file "/dev/null"; infile "\(fifo)"; format "raw" }
    pcm.in { type plug; slave { pcm "wavin"; format S16_LE; rate 48000; channels 1 } }
    pcm.wavout { type file; slave { pcm { type null } }; file "/dev/null"; format "raw" }
    pcm.out { type plug; slave { pcm "wavout"; format S16_LE; rate 48000; channels 1 } }
    """.write(toFile: config, atomically: true, encoding: .utf8)
let p = Process()
p.executableURL = URL(fileURLWithPath: options.hark)
p.arguments = ["embed", "--live", "--input", "in", "--output", "out", "--alsa-config", config, "--channels", "1",
               "--seconds", String(options.seconds), "--payload", "c0ffee42", "--status-interval", "0"]
let err = Pipe()
p.standardError = err
p.standardOutput = FileHandle.nullDevice
do { try p.run() } catch { fail("cannot run hark: \(error)") }
let fd = open(fifo, O_WRONLY)
guard fd >= 0 else { fail("cannot open the FIFO") }
signal(SIGPIPE, SIG_IGN)
// 20 ms at a time on the wall clock, the music over and over, then a second of silence.
let period = 960 * 2
let start = monotonic()
var written = 0
var peak = 0.0, cpu = 0.0, cpuAt = start
let total = (options.seconds + 1) * 48_000 * 2
while written < total {
    let n = min(period, total - written)
    let chunk = written < options.seconds * 96_000
        ? Data((0..<n).map { samples[samples.startIndex + (written + $0) % samples.count] })
        : Data(count: n)
    let done = chunk.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, n) }
    if done <= 0 { break }
    written += done
    if written % 96_000 < period {
        // Once a second of audio, while the process runs: it exits with the last second.
        peak = max(peak, memory(p.processIdentifier, "VmHWM"))
        let c = cpuSeconds(p.processIdentifier)
        if c >= cpu { (cpu, cpuAt) = (c, monotonic()) }
    }
    let due = start + Double(written) / 96_000
    let wait = due - monotonic()
    if wait > 0 { usleep(useconds_t(wait * 1e6)) }
}
close(fd)
let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
p.waitUntilExit()
let last = text.split(separator: "\n").last.map(String.init) ?? ""
print(String(format: "soak: %d s in real time through ALSA: %.2f %% of a core, peak %.1f MB; %@", options.seconds,
             100 * cpu / (cpuAt - start), peak, last.replacingOccurrences(of: "hark: ", with: "")))
