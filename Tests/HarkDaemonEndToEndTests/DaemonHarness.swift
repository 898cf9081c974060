import Foundation
import HarkClient

/// Binaries SwiftPM built next to the test bundle.
func builtExecutable(_ name: String) -> URL {
    var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = dir.appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        dir = dir.deletingLastPathComponent()
    }
    fatalError("\(name) not found near \(CommandLine.arguments[0])")
}

/// The `hark` that makes the tests' fixtures (signals, marked creatives, catalogues, simulated
/// rooms): the one in `$HARK_FIXTURE_BIN` when it is set, else the one beside the tests. Under
/// ThreadSanitizer the subject is harkd and its threads, and the clients the tests run stay
/// sanitized; the same sources built plainly make the same files ten times faster (a 24 s clip
/// marked and read in 0.5 s of CPU against 4.6 s), so tools/test points this at the plain build.
func fixtureExecutable(_ name: String) -> URL {
    if let dir = ProcessInfo.processInfo.environment["HARK_FIXTURE_BIN"], !dir.isEmpty {
        let url = URL(fileURLWithPath: dir).appendingPathComponent(name)
        precondition(FileManager.default.isExecutableFile(atPath: url.path), "HARK_FIXTURE_BIN has no \(name): \(dir)")
        return url
    }
    return builtExecutable(name)
}

/// Runs `hark` with arguments to make a fixture (``fixtureExecutable(_:)``); returns stdout.
@discardableResult
func hark(_ arguments: [String]) throws -> String {
    let p = Process()
    p.executableURL = fixtureExecutable("hark")
    p.arguments = arguments
    let out = Pipe()
    p.standardOutput = out
    p.standardError = FileHandle.nullDevice
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
}

/// Runs one of the built executables to its end: its status, stdout and stderr.
func runBuilt(_ name: String, _ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
    let p = Process()
    p.executableURL = builtExecutable(name)
    p.arguments = arguments
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    try p.run()
    // Both pipes drained at once, so neither side can fill and stall the other.
    let errorText = Locked("")
    let done = DispatchSemaphore(value: 0)
    Thread {
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        errorText.with { $0 = text }
        done.signal()
    }.start()
    let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    p.waitUntilExit()
    done.wait()
    return (p.terminationStatus, text, errorText.with { $0 })
}

/// A value behind a lock, for the tests' threads.
final class Locked<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T
    init(_ v: T) { value = v }
    func with<R>(_ body: (inout T) -> R) -> R { lock.withLock { body(&value) } }
}

/// A temporary folder holding a FIFO that ALSA's file plugin reads as the microphone, the ALSA
/// configuration that says so, and a running harkd.
final class DaemonHarness: @unchecked Sendable {
    let dir: String
    let fifo: String
    let socket: String
    let log: String
    private var process: Process?
    private var feeder: Thread?
    private let stopFeeding = StopFlag()

    init() throws {
        Glibc.signal(SIGPIPE, SIG_IGN)
        dir = NSTemporaryDirectory() + "hark-e2e-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        fifo = dir + "/mic.fifo"
        socket = dir + "/hark.sock"
        log = dir + "/harkd.log"
        guard mkfifo(fifo, 0o600) == 0 else { throw POSIXError(.EIO) }
        try """
        pcm.wavin { type file slave { pcm { type null } } file "/dev/null" infile "\(fifo)" format "raw" }
        pcm.wavin_plug { type plug slave { pcm "wavin"; format S16_LE; rate 48000; channels 1 } }
        pcm.default { type asym capture.pcm "wavin_plug" playback.pcm { type null } }
        """.write(toFile: dir + "/alsa.conf", atomically: true, encoding: .utf8)
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// A mono 48 kHz S16 raw file made by hark from `source` (any audio file).
    func raw(from source: String, name: String) throws -> String {
        let path = dir + "/" + name
        try hark(["simulate", source, path])
        return path
    }

    /// The first line of every configuration the harness writes, unless a test lets harkd drop
    /// audio (a test's own lines follow and may set it again). The feed runs at several times
    /// real time, and harkd built with ThreadSanitizer, on a machine busy with other tests,
    /// analyses slower than that (measured with three busy loops beside it: 9 and 23 s of audio
    /// dropped by the default 2 s ring within 20 s of a 24 s feed at 4×, and a detection
    /// missed). A device's microphone runs at real time; this one's audio waits in the ring, up
    /// to a minute of it, instead of being dropped.
    static let ringLine = "ring-seconds = 60\n"

    /// Starts harkd on the FIFO with `extra` arguments and waits for its socket.
    /// - Parameter configByEnvironment: name the file in `$HARKD_CONFIG` rather than `--config`.
    /// - Parameter descriptorLimit: run harkd with this limit on open files, soft and hard.
    /// - Parameter dropsWhenBehind: harkd's own ring (2 s): what it cannot analyse in time is
    ///   dropped and its audio time still runs at the feed's pace, for tests that count reports
    ///   made per second of audio rather than read every frame (``ringLine``).
    func start(_ extra: [String] = [], config: String? = nil, configByEnvironment: Bool = false, descriptorLimit: Int? = nil,
               dropsWhenBehind: Bool = false) throws {
        var args = ["--alsa-config", dir + "/alsa.conf", "--socket", socket]
        let ring = dropsWhenBehind ? "" : Self.ringLine
        if let config {
            try (ring + config).write(toFile: dir + "/harkd.conf", atomically: true, encoding: .utf8)
            if !configByEnvironment { args += ["--config", dir + "/harkd.conf"] }
        }
        let p = Process()
        p.executableURL = builtExecutable("harkd")
        p.arguments = args + extra
        if let limit = descriptorLimit {
            p.arguments = ["-c", "ulimit -n \(limit) && exec \"$0\" \"$@\"", builtExecutable("harkd").path] + args + extra
            p.executableURL = URL(fileURLWithPath: "/bin/sh")
        }
        // Hermetic: never the machine's /etc/hark/harkd.conf.
        if config == nil { try ring.write(toFile: dir + "/harkd.conf", atomically: true, encoding: .utf8) }
        p.environment = ProcessInfo.processInfo.environment.merging(["HARKD_CONFIG": dir + "/harkd.conf"]) { $1 }
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        p.standardError = FileHandle(forWritingAtPath: log)
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        process = p
        let deadline = Date(timeIntervalSinceNow: 15)
        while Date() < deadline {
            if (try? HarkConnection(path: socket, timeout: 1)) != nil { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw POSIXError(.ETIMEDOUT)
    }

    /// Feeds `raw` to the FIFO in whole 20 ms periods at `speed` × real time, then silence,
    /// until ``stop()``. Opening the FIFO waits for harkd to open the capture device.
    func feed(_ raw: String, speed: Double) {
        let data = FileManager.default.contents(atPath: raw) ?? Data()
        let fifo = self.fifo
        let stop = stopFeeding
        let t = Thread {
            let fd = open(fifo, O_WRONLY)
            guard fd >= 0 else { return }
            defer { close(fd) }
            let period = 1920                       // 960 frames of S16 mono
            let silence = [UInt8](repeating: 0, count: period)
            var offset = 0
            let start = Date()
            var written = 0.0
            while !stop.isSet {
                let chunk: [UInt8] = offset + period <= data.count ? [UInt8](data[offset..<(offset + period)]) : silence
                offset += period
                let n = chunk.withUnsafeBytes { write(fd, $0.baseAddress, period) }
                if n < 0 { return }                  // harkd closed the device
                written += 0.02
                let ahead = written / speed - Date().timeIntervalSince(start)
                if ahead > 0 { Thread.sleep(forTimeInterval: ahead) }
            }
        }
        t.start()
        feeder = t
    }

    func connect() throws -> HarkConnection { try HarkConnection(path: socket) }

    /// Sends SIGTERM and waits; returns the exit status.
    @discardableResult
    func terminate() -> Int32 {
        guard let p = process, p.isRunning else { return process?.terminationStatus ?? -1 }
        kill(p.processIdentifier, SIGTERM)
        p.waitUntilExit()
        return p.terminationStatus
    }

    /// Kills harkd with SIGKILL (no chance to clean up) and waits for it.
    func killHard() {
        guard let p = process, p.isRunning else { return }
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        feeder = nil
    }

    func send(signal sig: Int32) {
        if let p = process { kill(p.processIdentifier, sig) }
    }

    func stop() {
        stopFeeding.set()
        if let p = process, p.isRunning {
            kill(p.processIdentifier, SIGTERM)
            p.waitUntilExit()
        }
        // A feeder still waiting to open the FIFO needs a reader to return.
        let fd = open(fifo, O_RDONLY | O_NONBLOCK)
        if fd >= 0 { close(fd) }
    }

    var logText: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
}

extension HarkConnection {
    /// Sends a command and returns the first message of `class` (skipping others).
    func ask(_ command: [String: Any], until wanted: String, timeout: Double = 20) throws -> [String: Any]? {
        try send(command)
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            guard let o = try readObject(timeout: max(0.01, deadline.timeIntervalSinceNow)) else { return nil }
            if o["class"] as? String == wanted { return o }
        }
        return nil
    }
}

/// A flag the test thread raises and the feeder thread polls.
final class StopFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var raised = false
    var isSet: Bool { lock.withLock { raised } }
    func set() { lock.withLock { raised = true } }
}
