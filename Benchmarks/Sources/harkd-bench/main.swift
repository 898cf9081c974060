import BenchSupport
import Foundation
import HarkClient

// harkd under load as a device would run it: continuous mode, 48 kHz mono, both analysers,
// fed in real time through ALSA's `file` plugin from a FIFO (no sound card needed), with a
// client watching detections (with --catalogue, listening for a catalogue's creatives by their
// sound too). Measures harkd's CPU share and peak resident memory over the
// run, and how long after the audio that completed a watermark the detection message reaches
// the client. Run through `tools/bench-daemon`.

struct Options {
    var hark = ".build/release/hark"
    var harkd = ".build/release/harkd"
    var data = "Benchmarks/.data"
    var seconds = 60
    /// With the spool and the MQTT uplink to a local Mosquitto, a report every 10 s.
    var delivery = false
    /// Creatives in a campaign catalogue harkd listens for by their sound too (0: none).
    var catalogue = 0
    /// With the catalogue: its songs' campaigns carry airing codes on this many channels, so
    /// harkd listens for each one's codes of the minutes around now on each (0: plain payloads).
    var airingChannels = 0
    /// With the catalogue: harkd's `sound-reading` (both, landmarks, learned); nil: its default.
    var soundReading: String?
}

func parseOptions() -> Options {
    var o = Options()
    var arguments = CommandLine.arguments.dropFirst()
    while let a = arguments.popFirst() {
        switch a {
        case "--hark": o.hark = arguments.popFirst() ?? o.hark
        case "--harkd": o.harkd = arguments.popFirst() ?? o.harkd
        case "--data": o.data = arguments.popFirst() ?? o.data
        case "--seconds": o.seconds = Int(arguments.popFirst() ?? "") ?? o.seconds
        case "--delivery": o.delivery = true
        case "--catalogue": o.catalogue = Int(arguments.popFirst() ?? "") ?? 100
        case "--airing-channels": o.airingChannels = Int(arguments.popFirst() ?? "") ?? 10
        case "--sound-reading": o.soundReading = arguments.popFirst()
        case "--help", "-h":
            print("usage: harkd-bench [--hark PATH] [--harkd PATH] [--data DIR] [--seconds N] [--delivery] [--catalogue N [--airing-channels C] [--sound-reading R]]")
            print("  --seconds  length of the real-time run, a multiple of 10 (default 60)")
            print("  --delivery with a spool and the MQTT uplink to a local Mosquitto (a report every 10 s)")
            print("  --catalogue N  with a campaign catalogue of N creatives: the run's segments as aired and")
            print("             30 s songs of their own, listened for by their sound too")
            print("  --airing-channels C  the songs' campaigns carry airing codes on C channels: harkd listens")
            print("             for each one's codes of now +/- 5 minutes on each (docs/watermark.md, Airing codes)")
            print("  --sound-reading R  which readings of the creatives listen: both, landmarks or learned")
            print("             (harkd's sound-reading; default: harkd's own), to measure what each costs")
            exit(0)
        default:
            FileHandle.standardError.write(Data("harkd-bench: unknown argument \(a)\n".utf8))
            exit(64)
        }
    }
    o.seconds = max(10, o.seconds / 10 * 10)
    return o
}

let options = parseOptions()
let rate = 48_000
let periodFrames = 960                   // 20 ms, harkd's default period
let segmentSeconds = 10


/// Payload of segment `i`: each is broadcast to watchers once, the first time it is verified.
func payload(_ i: Int) -> String { markedSegmentPayload(i) }

// MARK: - /proc figures of the harkd process



// MARK: - the run

signal(SIGPIPE, SIG_IGN)
try? FileManager.default.createDirectory(atPath: options.data, withIntermediateDirectories: true)
let audio = markedSegments(hark: options.hark, data: options.data, seconds: options.seconds)
let dir = NSTemporaryDirectory() + "harkd-bench-\(getpid())"
try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: dir) }
let fifo = dir + "/mic.fifo", socketPath = dir + "/hark.sock", log = dir + "/harkd.log"
guard mkfifo(fifo, 0o600) == 0 else { fail("mkfifo failed") }
do {
    try """
    pcm.mic { type file slave { pcm { type null } } file "/dev/null" infile "\(fifo)" format "raw" }
    pcm.default { type plug slave { pcm "mic"; format S16_LE; rate \(rate); channels 1 } }
    """.write(toFile: dir + "/alsa.conf", atomically: true, encoding: .utf8)
} catch { fail("\(error)") }

/// A catalogue of `count` creatives, made once in the data folder: the run's segments as they
/// leave the embedder, and 30 s songs of their own under payloads no segment has.
func catalogue(_ count: Int) -> String {
    let airing = options.airingChannels > 0 ? "-airing-\(options.airingChannels)" : ""
    let path = options.data + "/daemon-\(options.seconds)s-catalogue-\(count)\(airing).hark"
    if FileManager.default.fileExists(atPath: path) { return path }
    print("(making \(path) once: \(count) creatives)")
    let partial = path + ".partial"
    try? FileManager.default.removeItem(atPath: partial)
    let host = options.data + "/catalogue-host.wav", marked = options.data + "/catalogue-marked.wav"
    let segments = options.seconds / segmentSeconds
    for i in 0..<min(segments, count) {
        guard run(options.hark, ["generate", "music", host, "--duration", "10", "--seed", "\(100 + i)"]) == 0,
              run(options.hark, ["embed", host, marked, "--payload", payload(i), "--strength", "10", "--catalogue", partial]) == 0
        else { fail("could not add segment \(i + 1) to the catalogue") }
    }
    for j in 0..<max(0, count - segments) {
        guard run(options.hark, ["generate", "music", host, "--duration", "30", "--seed", "\(5_000 + j)"]) == 0,
              run(options.hark, ["catalogue", "add", partial, host, "--payload", String(format: "5e%06x", j)]
                  + (options.airingChannels > 0
                     ? ["--airing-key", String(format: "%064x", 0x5eed_0000 + j),
                        "--airing-channels", (1...options.airingChannels).map(String.init).joined(separator: ",")]
                     : [])) == 0
        else { fail("could not add song \(j + 1) to the catalogue") }
    }
    for f in [host, marked] { try? FileManager.default.removeItem(atPath: f) }
    guard rename(partial, path) == 0 else { fail("cannot move the catalogue into place") }
    return path
}

var broker: LocalBroker?
var configuration = ""
if options.delivery {
    let b = LocalBroker(dir: dir)
    broker = b
    configuration += "spool = \(dir)/spool.sqlite\nmqtt-url = mqtt://127.0.0.1:\(b.port)\nunit = bench\nreport-interval = 10\n"
}
if options.catalogue > 0 { configuration += "catalogue = \(catalogue(options.catalogue))\n" }
if let reading = options.soundReading { configuration += "sound-reading = \(reading)\n" }
var extra: [String] = []
if !configuration.isEmpty {
    try? configuration.write(toFile: dir + "/harkd.conf", atomically: true, encoding: .utf8)
    extra = ["--config", dir + "/harkd.conf"]
}
defer { broker?.stop() }

let harkd = Process()
harkd.executableURL = URL(fileURLWithPath: options.harkd)
harkd.arguments = ["--alsa-config", dir + "/alsa.conf", "--socket", socketPath, "--mode", "continuous",
                   "--rate", "\(rate)", "--channels", "1"] + extra
_ = FileManager.default.createFile(atPath: log, contents: nil)
harkd.standardError = FileHandle(forWritingAtPath: log)
do { try harkd.run() } catch { fail("cannot start harkd: \(error)") }
let pid = harkd.processIdentifier

var client: HarkConnection?
for _ in 0..<200 where client == nil {
    client = try? HarkConnection(path: socketPath, timeout: 1)
    if client == nil { usleep(50_000) }
}
guard let client else { fail("harkd did not come up; its log:\n" + ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")) }
do { try client.send(["cmd": "watch", "classes": ["detection"]]) } catch { fail("\(error)") }

// The reader: every detection with the monotonic time it arrived.
final class Arrivals: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [(at: Double, t: Double, payload: String)] = []
    func add(_ item: (Double, Double, String)) { lock.withLock { items.append(item) } }
    var all: [(at: Double, t: Double, payload: String)] { lock.withLock { items } }
}
let arrivals = Arrivals()
let clientBox = UncheckedBox(client)
let reader = Thread {
    while let m = try? clientBox.value.readMessage(timeout: nil) {
        let now = monotonic()
        if m.object["class"] as? String == "detection" {
            arrivals.add((now, m.object["t"] as? Double ?? -1, m.object["payload"] as? String ?? "?"))
        }
    }
}
reader.start()

// The feeder: one 20 ms period at a time on a real-time schedule, noting when each write
// returned (the moment harkd could have that audio).
let periodBytes = periodFrames * 2
let periods = audio.count / periodBytes
var written = [Double](repeating: 0, count: periods)
let fd = open(fifo, O_WRONLY)                // returns once harkd has opened the device
guard fd >= 0 else { fail("cannot open the FIFO") }
let start = monotonic()
let cpuAtStart = cpuSeconds(pid)
var late = 0
audio.withUnsafeBytes { bytes in
    for k in 0..<periods {
        let due = start + Double(k * periodFrames) / Double(rate)
        let wait = due - monotonic()
        if wait > 0 { usleep(useconds_t(wait * 1e6)) } else if wait < -0.01 { late += 1 }
        var off = 0
        while off < periodBytes {
            let n = write(fd, bytes.baseAddress! + k * periodBytes + off, periodBytes - off)
            if n <= 0 { fail("harkd stopped reading (write: \(String(cString: strerror(errno))))") }
            off += n
        }
        written[k] = monotonic()
    }
}
let end = monotonic()
let cpuUsed = cpuSeconds(pid) - cpuAtStart
// The figures harkd itself reports (overruns; the spool and the uplink with --delivery).
var finalStatus: [String: Any] = [:]
if let c = try? HarkConnection(path: socketPath, timeout: 2), (try? c.send(["cmd": "status"])) != nil {
    while let o = try? c.readObject(timeout: 2) {
        if o["class"] as? String == "status" { finalStatus = o; break }
    }
}
let peak = memory(pid, "VmHWM"), resident = memory(pid, "VmRSS")
let anonymous = memory(pid, "RssAnon"), fileBacked = memory(pid, "RssFile")
// A second of silence lets the last detection out; then stop harkd as systemd would.
let silence = [UInt8](repeating: 0, count: periodBytes)
for _ in 0..<50 { _ = write(fd, silence, periodBytes); usleep(20_000) }
kill(pid, SIGTERM)
close(fd)
harkd.waitUntilExit()

// MARK: - report

let wall = end - start
print("")
print("harkd, continuous mode, 48 kHz mono S16 through ALSA's file plugin, \(options.seconds) s in real time"
      + (options.catalogue > 0 ? ", a catalogue of \(options.catalogue) creatives" : ""))
print(String(format: "  CPU          %.2f %% of one core (%.2f s of CPU in %.1f s)", 100 * cpuUsed / wall, cpuUsed, wall))
print(String(format: "  memory       peak resident %.1f MB (VmHWM); at the end %.1f MB (VmRSS): %.1f MB private, %.1f MB mapped files (code and data of harkd and its libraries)",
             peak, resident, anonymous, fileBacked))
if late > 0 { print("  (the feeder fell more than 10 ms behind schedule \(late) times: the machine is busy)") }
print("  capture      \(finalStatus["overruns"] as? Int ?? -1) overrun(s), \(finalStatus["dropped"] as? Int ?? -1) frame(s) dropped")
if options.delivery {
    print("  delivery     spool \(finalStatus["spool"] as? String ?? "?"): \(finalStatus["spoolDelivered"] as? Int ?? 0) record(s) delivered, \(finalStatus["spoolPending"] as? Int ?? 0) pending; uplink \(finalStatus["uplink"] as? String ?? "?")")
}
print("")
print("  segment  payload    detection t   latency after the completing frame")
var latencies: [Double] = []
let got = arrivals.all
for i in 0..<(options.seconds / segmentSeconds) {
    let p = payload(i)
    guard let a = got.first(where: { $0.payload == p }) else {
        print(String(format: "  %7d  %@   not detected", i + 1, p))
        continue
    }
    // The period holding the last sample the detection needed.
    let lastSample = max(0, Int((a.t * Double(rate)).rounded()) - 1)
    let k = min(lastSample / periodFrames, periods - 1)
    let latency = a.at - written[k]
    latencies.append(latency)
    print(String(format: "  %7d  %@   %9.3f s   %7.1f ms", i + 1, p, a.t, latency * 1000))
}
let wrong = got.filter { d in !(0..<(options.seconds / segmentSeconds)).contains { payload($0) == d.payload } }
if !wrong.isEmpty { print("  wrong payloads: \(wrong.map(\.payload))") }
if !latencies.isEmpty {
    let sorted = latencies.sorted()
    print(String(format: "  latency: min %.1f ms, median %.1f ms, max %.1f ms over %d detections",
                 sorted.first! * 1000, sorted[sorted.count / 2] * 1000, sorted.last! * 1000, sorted.count))
}
print("  harkd exit status \(harkd.terminationStatus)")
