import Foundation
import HarkCatalogue
import HarkDSP
import HarkSynthesis

// Hark's performance benchmarks. Every figure in one run, side by side, so ratios compare
// like with like on the same machine at the same time. Run through `tools/bench`.
//
// Figures are audio seconds processed per CPU second ("× real time") on one thread, and for
// `hark analyze` also wall time and peak resident memory of the process.

struct Options {
    var hark = ".build/release/hark"
    var data = "Benchmarks/.data"
    var seconds = 4.0          // CPU seconds per in-process measurement
    var longFile = true
}

func parseOptions() -> Options {
var options = Options()
var arguments = CommandLine.arguments.dropFirst()
while let a = arguments.popFirst() {
    switch a {
    case "--hark": options.hark = arguments.popFirst() ?? options.hark
    case "--data": options.data = arguments.popFirst() ?? options.data
    case "--seconds": options.seconds = Double(arguments.popFirst() ?? "") ?? options.seconds
    case "--quick": options.longFile = false
    case "--help", "-h":
        print("usage: hark-bench [--hark PATH] [--data DIR] [--seconds CPU-SECONDS] [--quick]")
        print("  --quick  skip the one-hour `hark analyze` measurement")
        exit(0)
    default:
        FileHandle.standardError.write("hark-bench: unknown argument \(a)\n".data(using: .utf8)!)
        exit(64)
    }
}
return options
}
let options = parseOptions()

func threadCPU() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

/// Runs `body` over `audioSeconds` of audio repeatedly for at least `options.seconds` of CPU;
/// returns audio seconds per CPU second.
func throughput(audioSeconds: Double, _ body: () -> Void) -> Double {
    body()   // warm caches and lazy allocations
    let start = threadCPU()
    var audio = 0.0
    repeat {
        body()
        audio += audioSeconds
    } while threadCPU() - start < options.seconds
    return audio / (threadCPU() - start)
}

func row(_ name: String, _ value: String) {
    print(name.padding(toLength: max(58, name.count + 1), withPad: " ", startingAt: 0) + value)
}

let cpuName = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
    .split(separator: "\n").first { $0.hasPrefix("model name") }?
    .split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "unknown CPU"
print("Hark benchmarks: \(cpuName), \(ProcessInfo.processInfo.activeProcessorCount) cores, one thread used")
print("× real time = audio seconds processed per CPU second")
print("")
// MARK: - hark analyze on a one-hour file

struct ChildUsage {
    var status: Int32
    var wall: Double
    var cpu: Double
    var maxRSSMegabytes: Double
}

/// Peak resident memory of a running process, from /proc (VmHWM, in MB).
///
/// Not `ru_maxrss` from wait4: glibc's posix_spawn shares the parent's memory until exec, and
/// Linux carries that high-water mark into the child's ru_maxrss, so it would report the
/// benchmark's own footprint. VmHWM belongs to the image after exec.
func peakRSS(of pid: pid_t) -> Double? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
          let kB = Double(line.split(separator: " ").dropFirst().first ?? "") else { return nil }
    return kB / 1024
}

/// Spawns `path args` with stdout to /dev/null and measures it.
func measure(_ path: String, _ args: [String]) -> ChildUsage {
    var actions: posix_spawn_file_actions_t = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    let argv = ([path] + args).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let start = Date()
    let rc = posix_spawn(&pid, path, &actions, nil, argv, environ)
    posix_spawn_file_actions_destroy(&actions)
    guard rc == 0 else { return ChildUsage(status: -1, wall: 0, cpu: 0, maxRSSMegabytes: 0) }
    var status: Int32 = 0
    var usage = rusage()
    var peak = 0.0
    // Poll the peak until the child exits; VmHWM only grows, so the last reading is the peak
    // up to 20 ms before exit (memory is constant by then in a streaming analysis).
    while wait4(pid, &status, WNOHANG, &usage) == 0 {
        if let p = peakRSS(of: pid) { peak = max(peak, p) }
        usleep(20_000)
    }
    let wall = Date().timeIntervalSince(start)
    let cpu = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) * 1e-6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) * 1e-6
    return ChildUsage(status: status, wall: wall, cpu: cpu, maxRSSMegabytes: peak)
}

if options.longFile {
    print("hark analyze, as a separate process (stdout to /dev/null):")
    let file = options.data + "/pink-1h-48k.flac"
    if !FileManager.default.fileExists(atPath: file) {
        print("\n(generating \(file) once: one hour of pink noise, 48 kHz 16-bit FLAC)")
        let g = measure(options.hark, ["generate", "pink", file, "--duration", "3600", "--level", "-30", "--seed", "1"])
        guard g.status == 0 else { print("generation failed"); exit(1) }
    }
    print("")
    for (label, args) in [("hark analyze (summary)", ["analyze", file]),
                          ("hark analyze --json (3600 level lines)", ["analyze", "--json", file])] {
        let u = measure(options.hark, args)
        guard u.status == 0 else { print("\(label): exit status \(u.status)"); exit(1) }
        row("\(label), 1 h 48 kHz FLAC",
            String(format: "%6.0f× real time (wall %.1f s, CPU %.1f s), peak RSS %.1f MB", 3600 / u.wall, u.wall, u.cpu, u.maxRSSMegabytes))
    }
}

// MARK: - in-process throughput

let rate = 48_000.0
let minute = Int(rate * 60)
func render<G: SignalGenerator>(_ g: inout G, _ count: Int) -> [Float] {
    var out = [Float](repeating: 0, count: count)
    out.withUnsafeMutableBufferPointer { g.render(into: $0) }
    return out
}
var pinkGen = PinkNoiseGenerator(rms: 0.05, sampleRate: rate, seed: 1)
let pink = render(&pinkGen, minute)
var toneGen = SineGenerator(frequency: 1000, amplitude: 0.9, sampleRate: rate)
let tone = render(&toneGen, minute)

func meterRun(_ signal: [Float]) -> () -> Void {
    let meter = LevelMeter(sampleRate: rate)
    return {
        signal.withUnsafeBufferPointer { buf in
            var i = 0
            while i < buf.count {
                let n = min(4096, buf.count - i)
                meter.process(UnsafeBufferPointer(rebasing: buf[i..<(i + n)]))
                i += n
            }
        }
    }
}

print("\nIn process:")
row("LevelMeter, 48 kHz mono pink noise", String(format: "%6.0f× real time", throughput(audioSeconds: 60, meterRun(pink))))
row("LevelMeter, 48 kHz mono 1 kHz tone at −1 dBFS (worst case)", String(format: "%6.0f× real time", throughput(audioSeconds: 60, meterRun(tone))))
for measured in [false, true] {
    let bands = try ThirdOctaveBands(sampleRate: rate, planning: measured ? .measure : .estimate)
    let speed = throughput(audioSeconds: 60) { pink.withUnsafeBufferPointer { bands.process($0) } }
    row("ThirdOctaveBands, 48 kHz, \(measured ? "FFTW_MEASURE " : "FFTW_ESTIMATE") plan", String(format: "%6.0f× real time", speed))
}


// MARK: - watermark detection

do {
    var musicGen = MusicGenerator(rms: 0.1, sampleRate: rate, seed: 3)
    let music = render(&musicGen, minute)
    // A catalogue of 100 payloads (the marked one among them) beside open decoding, same signals.
    let catalogue = (1...99).map { WatermarkPayload(UInt32($0) &* 0x9E37_79B9) } + [WatermarkPayload(0x1A2B3C4D)]
    for profile in WatermarkProfile.allCases {
        let format = WatermarkFormat(key: .demo, profile: profile)
        var mark: [Float] = []
        // Embedding: the masking model and the tones, one minute of music per run.
        let embedSpeed = throughput(audioSeconds: 60) {
            let embedder = try! WatermarkEmbedder(format: format, payload: WatermarkPayload(0x1A2B3C4D), sampleRate: rate)
            mark.removeAll(keepingCapacity: true)
            music.withUnsafeBufferPointer { buf in
                var i = 0
                while i < buf.count {
                    let n = min(4096, buf.count - i)
                    embedder.process(UnsafeBufferPointer(rebasing: buf[i..<(i + n)]), into: &mark)
                    i += n
                }
            }
            embedder.finish(into: &mark)
        }
        row("WatermarkEmbedder, 48 kHz, \(profile.rawValue) profile, music", String(format: "%6.0f× real time", embedSpeed))
        let marked = zip(music, mark).map(+)
        var cases: [(String, [Float], [WatermarkPayload]?)] = [("unmarked pink noise", pink, nil), ("marked music", marked, nil)]
        cases += [("unmarked pink, catalogue of 100", pink, catalogue), ("marked music, catalogue of 100", marked, catalogue)]
        for (name, signal, list) in cases {
            var detections = 0
            var stateBytes = 0
            let speed = throughput(audioSeconds: 60) {
                let detector = try! WatermarkDetector(format: format, sampleRate: rate, catalogue: list)
                signal.withUnsafeBufferPointer { buf in
                    var i = 0
                    while i < buf.count {
                        let n = min(4096, buf.count - i)
                        detections += detector.process(UnsafeBufferPointer(rebasing: buf[i..<(i + n)])).count
                        i += n
                    }
                }
                stateBytes = detector.stateBytes
            }
            row("WatermarkDetector, 48 kHz, \(profile.rawValue) profile, \(name)",
                String(format: "%6.0f× real time, state %.1f MB", speed, Double(stateBytes) / 1_000_000))
        }
    }
}


// MARK: - the creative's sound

do {
    // Creatives of 30 s: other songs (their styles drawn from the seed), read at 16 kHz (a
    // reading does not depend on the rate it was read at).
    func creative(_ seed: UInt64) -> [Float] {
        var g = MusicGenerator(rms: 0.1, sampleRate: 16_000, seed: seed, style: .drawn(seed: seed))
        var x = [Float](repeating: 0, count: 30 * 16_000)
        x.withUnsafeMutableBufferPointer { g.render(into: $0) }
        return x
    }
    func reading(_ x: [Float], rate: Double) -> SoundPrint {
        x.withUnsafeBufferPointer { try! SoundPrint.read($0, sampleRate: rate) }
    }
    let first = creative(1)
    let readSpeed = throughput(audioSeconds: 30) { _ = reading(first, rate: 16_000) }
    row("SoundPrint.read, a 30 s creative at 16 kHz", String(format: "%6.0f× real time", readSpeed))
    var prints = [reading(first, rate: 16_000)] + (2...100).map { reading(creative(UInt64($0)), rate: 16_000) }
    let bytes = prints.map { Double($0.bytes.count) }
    row("a 30 s creative's reading (100 songs)", String(format: "%6.1f kB mean, %.1f kB most", bytes.reduce(0, +) / 100 / 1000,
                                                         (bytes.max() ?? 0) / 1000))
    // The index a catalogue of 100 (and of 1 000: each song ten times over, transposed by 3 to
    // 27 bins, so the copies share little) becomes when it is loaded, shared sound found.
    func indexTime(_ p: [SoundPrint]) -> String {
        let start = Date()
        let index = SoundIndex(prints: p)
        return String(format: "%6.3f s (%d landmarks held, %d shared, %d common)", Date().timeIntervalSince(start),
                      index.count, index.sharedCount, index.commonCount)
    }
    row("SoundIndex of 100 creatives (built on load)", indexTime(prints))
    let thousand = (0..<10).flatMap { k in prints.map { p in
        SoundPrint(landmarks: p.landmarks.compactMap { l in
                       let bin = Int(l.hash >> 12) + 3 * k
                       return bin > SpectralPeakPicker.highestBin ? nil : Landmark(hash: UInt32(bin) << 12 | (l.hash & 0xfff), frame: l.frame)
                   },
                   peaks: p.peaks.map { SpectralPeak(frame: $0.frame, bin: $0.bin + 3 * k, level: 0) },
                   duration: p.duration)
    } }
    row("SoundIndex of 1 000 creatives (built on load)", indexTime(thousand))
    // A catalogue file of 1 000 loaded as harkd loads it: read, each reading checked, indexed
    // one creative at a time; first without what the creatives share (as a file of format
    // version 2, or one changed without `hark`), then with it, kept as `hark` keeps it.
    let cataloguePath = options.data + "/bench-catalogue-1000.sqlite"
    try? FileManager.default.removeItem(atPath: cataloguePath)
    let catalogue = try! CampaignCatalogue.openForWriting(cataloguePath)
    for (i, p) in thousand.enumerated() { try! catalogue.add(Campaign(payload: WatermarkPayload(UInt32(i)), sound: p)) }
    func load() -> (total: Double, read: Double, reused: Bool) {
        let loadStart = Date()
        let loaded = try! CampaignCatalogue.readForListening(cataloguePath)
        let readTime = Date().timeIntervalSince(loadStart)
        let index = SoundIndex(readings: loaded.readings, sharing: loaded.sharing)
        return (Date().timeIntervalSince(loadStart), readTime, index.reusedSharing)
    }
    let searching = load()
    let keepStart = Date()
    try! catalogue.keepSharedSound()
    let keepTime = Date().timeIntervalSince(keepStart)
    let kept = load()
    guard !searching.reused, kept.reused else { print("the catalogue's shared sound was not kept"); exit(1) }
    row("a catalogue of 1 000 loaded (read, checked, indexed)",
        String(format: "%6.3f s (of which read and checked %.3f s); with what its creatives share kept in it: %.3f s (%.3f s); keeping it when written: %.3f s",
               searching.total, searching.read, kept.total, kept.read, keepTime))
    try? FileManager.default.removeItem(atPath: cataloguePath)
    // `hark detect` as a user runs it, on ten minutes of music none of the catalogue holds: with
    // a catalogue file of the 100 songs (the mark for their payloads, the sound for the songs),
    // and with the same payloads alone (the mark alone). CPU time of the process, the catalogue
    // read and indexed included.
    let music = options.data + "/music-10min-48k.wav"
    if !FileManager.default.fileExists(atPath: music) {
        let g = measure(options.hark, ["generate", "music", music, "--duration", "600", "--seed", "7"])
        guard g.status == 0 else { print("generating \(music) failed"); exit(1) }
    }
    let hundredPath = options.data + "/bench-catalogue-100.sqlite"
    try? FileManager.default.removeItem(atPath: hundredPath)
    let hundred = try! CampaignCatalogue.openForWriting(hundredPath)
    for (i, p) in prints.enumerated() { try! hundred.add(Campaign(payload: WatermarkPayload(UInt32(0x5e00_0000 + i)), sound: p)) }
    // As `hark catalogue add` leaves it.
    try! hundred.keepSharedSound()
    let payloads = (0..<prints.count).map { String(format: "%08x", 0x5e00_0000 + $0) }.joined(separator: ",")
    // Exit status 2: nothing found, as on unmarked music it should be.
    let withSound = measure(options.hark, ["detect", music, "--catalogue", hundredPath])
    let markAlone = measure(options.hark, ["detect", music, "--catalogue", payloads])
    try? FileManager.default.removeItem(atPath: hundredPath)
    guard withSound.status >> 8 == 2, markAlone.status >> 8 == 2 else {
        print("hark detect: exit status \(withSound.status >> 8) and \(markAlone.status >> 8), expected 2 (nothing found)")
        exit(1)
    }
    // Its readers run side by side on the machine's cores (AnalysisPipeline.Settings.concurrentReadings),
    // so the wall clock is what a user waits and the CPU time what one core would take.
    row("hark detect, 10 min of music, a catalogue of 100 (mark and sound)",
        String(format: "%6.0f× real time by the wall clock (wall %.2f s, CPU %.2f s: %.0f× a CPU second); the same 100 payloads, mark alone: %.0f× (CPU %.2f s)",
               600 / withSound.wall, withSound.wall, withSound.cpu, 600 / withSound.cpu, 600 / markAlone.cpu, markAlone.cpu))
    // Listening at the capture rate: the 48 kHz master of the first creative among 100.
    var g = MusicGenerator(rms: 0.1, sampleRate: rate, seed: 1, style: .drawn(seed: 1))
    var master = [Float](repeating: 0, count: Int(60 * rate))
    master.withUnsafeMutableBufferPointer { g.render(into: $0) }
    prints[0] = reading(Array(master.prefix(Int(30 * rate))), rate: rate)
    let index = SoundIndex(prints: prints)
    // Under noise as loud as itself, the creative is a candidate over and over at a few votes,
    // and each time its peaks and envelopes are read at 25 alignments: the matcher's worst case.
    let pinkRMS = (pink.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(pink.count)).squareRoot()
    let noisy = zip(master, pink).map { $0 + $1 * Float(0.1 / pinkRMS) }
    for (name, signal) in [("unmarked pink noise", pink), ("the creative itself", master), ("the creative under pink noise at SNR 0 dB", noisy)] {
        let speed = throughput(audioSeconds: 60) {
            let matcher = try! SoundMatcher(index: index, sampleRate: rate)
            signal.withUnsafeBufferPointer { buf in
                var i = 0
                while i < buf.count {
                    let n = min(4096, buf.count - i)
                    _ = matcher.process(UnsafeBufferPointer(rebasing: buf[i..<(i + n)]))
                    i += n
                }
            }
        }
        row("SoundMatcher, 48 kHz, 100 creatives, \(name)", String(format: "%6.0f× real time", speed))
    }
}
