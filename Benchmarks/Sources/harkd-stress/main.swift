import BenchSupport
import Foundation
import HarkClient
import HarkDSP
import HarkSystem

// harkd under attack and over time, as a device runs it (continuous mode, 48 kHz mono, both
// analysers, fed in real time through ALSA's file plugin from a FIFO), while a probe client asks
// for `status` every 50 ms and times the answer:
//   1. fuzz: a hostile client sends random, mutated, deeply nested and over-long lines;
//   2. sessions: one connection asks for 1 000 noise sessions;
//   3. clients: 1 002 connections at once (reading watchers, idle ones, watchers that never
//      read) while 10 000 more connect and disconnect;
//   4. deaf: 1 000 clients of another harkd watch levels every 0.05 s and pipeline 950 `status`
//      commands, never reading; its resident memory before, at most, and a minute after they left;
//   5. soak: a third harkd fed at 30× real time, a shake every 10 s of audio, its resident
//      memory sampled as it goes.
// Run through `tools/bench-stress`.

struct Options {
    var hark = ".build/release/hark"
    var harkd = ".build/release/harkd"
    var data = "Benchmarks/.data"
    var fuzzLines = 100_000
    var soakHours = 1.0
}

func parseOptions() -> Options {
    var o = Options()
    var arguments = CommandLine.arguments.dropFirst()
    while let a = arguments.popFirst() {
        switch a {
        case "--hark": o.hark = arguments.popFirst() ?? o.hark
        case "--harkd": o.harkd = arguments.popFirst() ?? o.harkd
        case "--data": o.data = arguments.popFirst() ?? o.data
        case "--fuzz-lines": o.fuzzLines = Int(arguments.popFirst() ?? "") ?? o.fuzzLines
        case "--soak-hours": o.soakHours = Double(arguments.popFirst() ?? "") ?? o.soakHours
        case "--help", "-h":
            print("usage: harkd-stress [--hark PATH] [--harkd PATH] [--data DIR] [--fuzz-lines N] [--soak-hours H]")
            print("  --fuzz-lines  hostile lines sent (default 100000)")
            print("  --soak-hours  hours of audio in the soak, fed at 30x real time (default 1)")
            exit(0)
        default: fail("unknown argument \(a)")
        }
    }
    return o
}

let options = parseOptions()
signal(SIGPIPE, SIG_IGN)
var limit = rlimit()
getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
limit.rlim_cur = limit.rlim_max
setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
try? FileManager.default.createDirectory(atPath: options.data, withIntermediateDirectories: true)
let audio = markedSegments(hark: options.hark, data: options.data, seconds: 60)

extension SplitMix64 {
    /// Deterministic, so every run sends the same lines.
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}


/// One harkd, its FIFO microphone and a feeder looping `audio` at `speed` × real time.
final class Daemon: @unchecked Sendable {
    let dir: String, socket: String, process: Process
    private let stopFeeding = Locked(false)

    init(name: String, speed: Double, configuration: String? = nil) {
        dir = NSTemporaryDirectory() + "harkd-stress-\(getpid())-\(name)"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        socket = dir + "/hark.sock"
        let fifo = dir + "/mic.fifo"
        guard mkfifo(fifo, 0o600) == 0 else { fail("mkfifo failed") }
        try? """
        pcm.mic { type file slave { pcm { type null } } file "/dev/null" infile "\(fifo)" format "raw" }
        pcm.default { type plug slave { pcm "mic"; format S16_LE; rate 48000; channels 1 } }
        """.write(toFile: dir + "/alsa.conf", atomically: true, encoding: .utf8)
        process = Process()
        process.executableURL = URL(fileURLWithPath: options.harkd)
        process.arguments = ["--alsa-config", dir + "/alsa.conf", "--socket", socket, "--mode", "continuous"]
        if let configuration {
            try? configuration.write(toFile: dir + "/harkd.conf", atomically: true, encoding: .utf8)
            process.arguments! += ["--config", dir + "/harkd.conf"]
        }
        _ = FileManager.default.createFile(atPath: dir + "/harkd.log", contents: nil)
        process.standardError = FileHandle(forWritingAtPath: dir + "/harkd.log")
        do { try process.run() } catch { fail("cannot start harkd: \(error)") }
        let stop = stopFeeding
        Thread {
            let fd = open(fifo, O_WRONLY)
            guard fd >= 0 else { return }
            defer { close(fd) }
            let period = 1920
            let start = monotonic()
            var k = 0
            audio.withUnsafeBytes { bytes in
                let periods = bytes.count / period
                while !stop.with({ $0 }) {
                    if write(fd, bytes.baseAddress! + (k % periods) * period, period) <= 0 { return }
                    k += 1
                    let ahead = Double(k) * 0.02 / speed - (monotonic() - start)
                    if ahead > 0 { usleep(useconds_t(ahead * 1e6)) }
                }
            }
        }.start()
        for _ in 0..<200 {
            if let c = try? HarkConnection(path: socket, timeout: 1) { _ = c; return }
            usleep(50_000)
        }
        fail("harkd did not come up")
    }

    var pid: pid_t { process.processIdentifier }
    var openFiles: Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1 }

    func status() -> [String: Any] {
        guard let c = try? HarkConnection(path: socket, timeout: 2), (try? c.send(["cmd": "status"])) != nil else { return [:] }
        while let o = try? c.readObject(timeout: 2) { if o["class"] as? String == "status" { return o } }
        return [:]
    }

    func stop() {
        stopFeeding.with { $0 = true }
        kill(pid, SIGTERM)
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: dir)
    }
}

/// Asks for `status` every 50 ms and keeps the round-trip times, by phase.
final class Probe: @unchecked Sendable {
    let times = Locked([String: [Double]]())
    let phase = Locked("start")
    let peakMemory = Locked(0.0)
    private let running = Locked(true)

    init(_ daemon: Daemon) {
        let box = UncheckedBox(try? HarkConnection(path: daemon.socket, timeout: 5))
        let pid = daemon.pid
        Thread { [self] in
            guard let c = box.value else { return }
            while running.with({ $0 }) {
                let t0 = monotonic()
                guard (try? c.send(["cmd": "status", "id": "probe"])) != nil else { return }
                while let o = try? c.readObject(timeout: 5), o["class"] as? String != "status" {}
                let dt = monotonic() - t0
                let p = phase.with { $0 }
                times.with { $0[p, default: []].append(dt) }
                let m = memory(pid, "VmRSS")
                peakMemory.with { $0 = max($0, m) }
                usleep(50_000)
            }
        }.start()
    }

    func stop() { running.with { $0 = false } }

    func summary(_ p: String) -> String {
        let t = (times.with { $0[p] } ?? []).sorted()
        guard !t.isEmpty else { return "no answers" }
        return String(format: "status answered in median %.1f ms, p99 %.1f ms, max %.1f ms (%d asks)",
                      t[t.count / 2] * 1000, t[min(t.count - 1, t.count * 99 / 100)] * 1000, t.last! * 1000, t.count)
    }
}

func rawConnect(_ path: String) -> Int32? { UnixSocketAddress.connectStream(path) }

func sendLine(_ fd: Int32, _ text: String) -> Bool {
    var bytes = Array(text.utf8)
    if bytes.isEmpty { return true }
    return bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress, $0.count) } > 0
}

// MARK: - 1. fuzz

func fuzzLine(_ rng: inout SplitMix64) -> [UInt8] {
    let valid = [#"{"cmd":"status"}"#, #"{"cmd":"version","id":"x"}"#, #"{"cmd":"watch","classes":["level"]}"#,
                 #"{"cmd":"shake","seconds":6,"id":"a"}"#, #"{"cmd":"noise","seconds":1}"#, #"{"cmd":"watch","classes":[]}"#]
    // One line in 2 000 is over-long: harkd closes the connection on it, and the lines after it
    // in flight are never read.
    if rng.below(2_000) == 0 { return Array(repeating: UInt8(ascii: "a"), count: 4_097 + rng.below(4_000)) }
    switch rng.below(10) {
    case 0, 1:                                  // random bytes, invalid UTF-8 included
        return (0..<(1 + rng.below(200))).map { _ in UInt8(truncatingIfNeeded: rng.next()) }.filter { $0 != 10 }
    case 2:                                     // nesting, up to the line limit
        let k = 1 + rng.below(2_000)
        return Array((String(repeating: "[", count: k) + String(repeating: "]", count: k)).utf8)
    case 3:                                     // numbers JSON cannot hold
        let n = ["1e999999", "-1e999999", "1e-400", "99999999999999999999999999", "-0", "NaN", "0x10", "1." + String(repeating: "9", count: 300)]
        return Array(#"{"cmd":"shake","seconds":\#(n[rng.below(n.count)])}"#.utf8)
    case 4, 5, 6, 7:                               // valid commands, mutated
        var b = Array(valid[rng.below(valid.count)].utf8)
        for _ in 0..<(1 + rng.below(4)) {
            let i = rng.below(b.count)
            switch rng.below(3) {
            case 0: b[i] = UInt8(truncatingIfNeeded: rng.next()) == 10 ? 32 : UInt8(truncatingIfNeeded: rng.next() | 1)
            case 1: b.remove(at: i)
            default: b.insert(UInt8(32 + rng.below(95)), at: i)
            }
            if b.isEmpty { b = [32] }
        }
        return b.filter { $0 != 10 }
    default:
        return Array(valid[rng.below(2)].utf8)
    }
}

print("harkd under stress: continuous mode, 48 kHz mono through ALSA's file plugin, fed in real time")
let daemon = Daemon(name: "live", speed: 1)
let probe = Probe(daemon)
let baselineFiles = daemon.openFiles
sleep(2)
probe.phase.with { $0 = "idle" }
sleep(3)

probe.phase.with { $0 = "fuzz" }
var rng = SplitMix64(seed: 7)
var sent = 0, reconnects = 0
let answers = Locked(0)
let fuzzStart = monotonic()
var fd: Int32 = -1
while sent < options.fuzzLines {
    if fd < 0 {
        guard let f = rawConnect(daemon.socket) else { fail("harkd stopped accepting during the fuzz") }
        fd = f
        reconnects += 1
        // Drain what harkd answers so this client is not dropped as never reading.
        let box = UncheckedBox(fd)
        Thread {
            var buf = [UInt8](repeating: 0, count: 65_536)
            while true {
                let n = read(box.value, &buf, buf.count)
                if n <= 0 { return }
                let lines = buf[0..<n].reduce(0) { $0 + ($1 == 10 ? 1 : 0) }
                answers.with { $0 += lines }
            }
        }.start()
    }
    var batch: [UInt8] = []
    for _ in 0..<100 { batch += fuzzLine(&rng) + [10]; sent += 1 }
    let ok = batch.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } > 0
    if !ok { shutdown(fd, Int32(SHUT_RDWR)); close(fd); fd = -1 }
}
// Until harkd has answered what it read.
var lastCount = -1
while answers.with({ $0 }) != lastCount { lastCount = answers.with { $0 }; usleep(500_000) }
if fd >= 0 { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
let fuzzSeconds = monotonic() - fuzzStart
let afterFuzz = daemon.status()
guard !afterFuzz.isEmpty else { fail("harkd did not answer after the fuzz") }
print(String(format: "  fuzz      %d lines sent in %.1f s over %d connections (harkd closes one on an over-long line, unread lines with it), %d answer lines; harkd alive; RSS %.1f MB; %@",
             sent, fuzzSeconds, reconnects, answers.with { $0 }, memory(daemon.pid, "VmRSS"), probe.summary("fuzz")))

// MARK: - 1b. lines that pass every limit but cost work

// Four clients, each sending for 10 s lines within the 4 KiB limit that cost the decoder the
// most: 1 351 empty objects, 2 000 numbers eight levels down, nothing but newlines. Before the
// parser bounded a line's values, another client's status then took p50 105 ms, p99 318 ms,
// max 407 ms (four such clients: max 526 ms). Target: p99 ≤ 10 ms, max ≤ 50 ms.
probe.phase.with { $0 = "hostile" }
let costly = [
    #"{"cmd":"status","x":["# + Array(repeating: "{}", count: 1_351).joined(separator: ",") + "]}",
    #"{"cmd":"status","x":[[[[[[["# + (0..<2_000).map { String($0 % 10) }.joined(separator: ",") + "]]]]]]]}",
    String(repeating: "\n", count: 4_000),
    #"{"cmd":"status","x":["# + Array(repeating: "{}", count: 1_351).joined(separator: ",") + "]}",
]
let hostileDone = Locked(0)
let hostileSent = Locked(0)
for line in costly {
    Thread {
        guard let fd = rawConnect(daemon.socket) else { hostileDone.with { $0 += 1 }; return }
        let reader = Thread {
            var buf = [UInt8](repeating: 0, count: 65_536)
            while read(fd, &buf, buf.count) > 0 {}
        }
        reader.start()
        let end = monotonic() + 10
        let bytes = Array((line.hasSuffix("\n") ? line : line + "\n").utf8)
        while monotonic() < end {
            guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) > 0 else { break }
            hostileSent.with { $0 += 1 }
        }
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
        hostileDone.with { $0 += 1 }
    }.start()
}
while hostileDone.with({ $0 }) < costly.count { usleep(100_000) }
print(String(format: "  hostile   4 clients, 10 s of lines that cost work (%d sent); %@",
             hostileSent.with { $0 }, probe.summary("hostile")))

// MARK: - 2. sessions

probe.phase.with { $0 = "sessions" }
let droppedBefore = afterFuzz["dropped"] as? Int ?? -1
var greedy: HarkConnection? = try! HarkConnection(path: daemon.socket, timeout: 5)
for i in 0..<1_000 { try? greedy!.send(["cmd": "noise", "seconds": 3600, "id": "n\(i)"]) }
var refused = 0
while let o = try? greedy!.readObject(timeout: 2) {
    if o["class"] as? String == "error", (o["message"] as? String ?? "").contains("too many sessions") { refused += 1 }
    if refused == 996 { break }
}
let sessionsMemory = memory(daemon.pid, "VmRSS")
let duringSessions = daemon.status()
greedy = nil      // closing the connection ends its sessions
sleep(2)
let droppedAfter = daemon.status()["dropped"] as? Int ?? -1
print(String(format: "  sessions  1000 asked on one connection: %d refused with an error, %d running; RSS %.1f MB; frames dropped %d → %d; %@",
             refused, duringSessions["sessions"] as? Int ?? -1, sessionsMemory, droppedBefore, droppedAfter, probe.summary("sessions")))

// MARK: - 3. a thousand clients

probe.phase.with { $0 = "clients" }
let reading = (0..<334).compactMap { _ in rawConnect(daemon.socket) }
let idle = (0..<334).compactMap { _ in rawConnect(daemon.socket) }
let deaf = (0..<334).compactMap { _ in rawConnect(daemon.socket) }
for f in reading { _ = sendLine(f, #"{"cmd":"watch","classes":["detection"]}"# + "\n") }
for f in deaf { _ = sendLine(f, #"{"cmd":"watch","classes":["detection","level","report","status"]}"# + "\n") }
let detectionsSeen = Locked([Int32: Set<String>]())
let readingDone = Locked(false)
let readingBox = UncheckedBox(reading)
Thread {
    var fds = readingBox.value.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
    var pending = [Int32: [UInt8]]()
    var buf = [UInt8](repeating: 0, count: 65_536)
    while !readingDone.with({ $0 }) {
        guard poll(&fds, nfds_t(fds.count), 100) > 0 else { continue }
        for i in fds.indices where fds[i].revents != 0 {
            let n = read(fds[i].fd, &buf, buf.count)
            if n <= 0 { fds[i].events = 0; continue }
            pending[fds[i].fd, default: []] += buf[0..<n]
            while let nl = pending[fds[i].fd]!.firstIndex(of: 10) {
                let line = String(decoding: pending[fds[i].fd]![..<nl], as: UTF8.self)
                pending[fds[i].fd]!.removeSubrange(...nl)
                if line.contains(#""class":"detection""#), let r = line.range(of: #""payload":""#) {
                    let payload = String(line[r.upperBound...].prefix(8))
                    let key = fds[i].fd
                    _ = detectionsSeen.with { $0[key, default: []].insert(payload) }
                }
            }
        }
    }
}.start()
let churnStart = monotonic()
var churned = 0
let churnDeadline = monotonic() + 40
while churned < 10_000, monotonic() < churnDeadline {
    guard let f = rawConnect(daemon.socket) else { usleep(1_000); continue }
    if churned % 2 == 0 { _ = sendLine(f, #"{"cmd":"status"}"# + "\n") }
    close(f)
    churned += 1
}
let churnSeconds = monotonic() - churnStart
// At least two whole 10 s segments while all 750 are connected.
sleep(max(0, UInt32(25 - Int(churnSeconds))))
let clientsStatus = daemon.status()
let clientsMemory = memory(daemon.pid, "VmRSS")
readingDone.with { $0 = true }
usleep(200_000)
let seen = detectionsSeen.with { $0 }
let payloadsPerWatcher = reading.map { seen[$0]?.count ?? 0 }
let union = seen.values.reduce(into: Set<String>()) { $0.formUnion($1) }
let everyone = reading.allSatisfy { (seen[$0] ?? []) == union }
for f in reading + idle + deaf { close(f) }
sleep(2)
let filesAfter = daemon.openFiles
print(String(format: "  clients   %d connected (334 reading watchers, 334 idle, 334 watchers that never read) while %d connected and left in %.1f s;",
             reading.count + idle.count + deaf.count, churned, churnSeconds))
print(String(format: "            %@ payloads heard by every reading watcher: %@ (per watcher %d–%d); harkd had %d clients; RSS %.1f MB;",
             "\(union.count)", everyone ? "yes" : "NO", payloadsPerWatcher.min() ?? 0, payloadsPerWatcher.max() ?? 0,
             clientsStatus["clients"] as? Int ?? -1, clientsMemory))
print("            open files \(baselineFiles) before, \(filesAfter) after; \(probe.summary("clients"))")
let final = daemon.status()
print("  capture   \(final["overruns"] as? Int ?? -1) overrun(s), \(final["dropped"] as? Int ?? -1) frame(s) dropped over the whole run; peak RSS \(String(format: "%.1f", probe.peakMemory.with { $0 })) MB")
probe.stop()
daemon.stop()

// MARK: - 4. clients that never read

// Before the output budget, with 950 commands each: RSS 27 → 827 MB, and 783 MB after every
// client had gone. Target: all clients' unsent output ≤ 64 MB; RSS within 10 MB of its start a
// minute after they leave. With 950 commands a client passes its own bound at once; with 300 it
// stays under it for a while, and all of them together meet the 64 MB.
func deafClients(commands: Int) {
    let daemon = Daemon(name: "deaf", speed: 1, configuration: "level-interval = 0.05\n")
    sleep(3)
    let start = memory(daemon.pid, "VmRSS")
    let pipelined = Array(([#"{"cmd":"watch","classes":["level"]}"#] + Array(repeating: #"{"cmd":"status"}"#, count: commands))
        .joined(separator: "\n").utf8) + [10]
    var clients: [Int32] = []
    for _ in 0..<1_000 {
        guard let f = rawConnect(daemon.socket) else { continue }
        _ = fcntl(f, F_SETFL, fcntl(f, F_GETFL) | O_NONBLOCK)
        _ = pipelined.withUnsafeBytes { send(f, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        clients.append(f)
    }
    var peak = start, heldPeak = 0, connected: [Int] = []
    for _ in 0..<30 {
        sleep(1)
        peak = max(peak, memory(daemon.pid, "VmRSS"))
        let st = daemon.status()
        heldPeak = max(heldPeak, st["outputHeld"] as? Int ?? -1)
        connected.append((st["clients"] as? Int ?? 1) - 1)
    }
    for f in clients { close(f) }
    sleep(60)
    let after = memory(daemon.pid, "VmRSS")
    daemon.stop()
    print(String(format: "  deaf      %d clients watching levels every 0.05 s with %d status commands each, never reading: RSS %.1f MB before, at most %.1f MB; unsent output at most %.1f MB (budget 64 MB); connected after 1 s %d, after 30 s %d; a minute after they left RSS %.1f MB (%+.1f MB)",
                 clients.count, commands, start, peak, Double(heldPeak) / 1_048_576, connected.first ?? -1, connected.last ?? -1,
                 after, after - start))
}
deafClients(commands: 950)
deafClients(commands: 300)

// MARK: - 5. soak

let soak = Daemon(name: "soak", speed: 30)
let soakSeconds = options.soakHours * 3600 / 30
let shaker = try! HarkConnection(path: soak.socket, timeout: 5)
var shakes = 0, heard = 0
var samples: [(t: Double, rss: Double)] = []
let soakStart = monotonic()
var nextSample = soakStart
while monotonic() - soakStart < soakSeconds {
    try? shaker.send(["cmd": "shake", "seconds": 6, "id": "s\(shakes)"])
    shakes += 1
    while let o = try? shaker.readObject(timeout: 10) {
        if o["class"] as? String == "shake" { if o["result"] as? String == "detected" { heard += 1 }; break }
        if o["class"] as? String == "error" { break }
    }
    // The next shake 10 s of audio after this one began.
    let next = soakStart + Double(shakes) * 10 / 30
    if next > monotonic() { usleep(useconds_t((next - monotonic()) * 1e6)) }
    if monotonic() >= nextSample {
        samples.append((monotonic() - soakStart, memory(soak.pid, "VmRSS")))
        nextSample += 5
    }
}
let soakStatus = soak.status()
soak.stop()
let warm = samples.first { $0.t >= 20 } ?? samples.first!
let later = samples.filter { $0.t >= warm.t }
print(String(format: "  soak      %.1f h of audio at 30× (%.0f s), a shake every 10 s: %d shakes, %d heard; RSS after warm-up %.1f MB, then %.1f–%.1f MB (spread %.2f MB); %d overrun(s), %d dropped",
             options.soakHours, soakSeconds, shakes, heard, warm.rss, later.map(\.rss).min()!, later.map(\.rss).max()!,
             later.map(\.rss).max()! - later.map(\.rss).min()!, soakStatus["overruns"] as? Int ?? -1, soakStatus["dropped"] as? Int ?? -1))
