import BenchSupport
import Foundation
import HarkSpool

// What delivery costs: the spool's commit latency on this machine's disk, and how fast harkd's
// uplink drains a backlog to a local Mosquitto broker. Run through `tools/bench-delivery`.

struct Options {
    var harkd = ".build/release/harkd"
    var data = "Benchmarks/.data"
    var records = 100_000
    var commits = 2_000
}

func parseOptions() -> Options {
    var o = Options()
    var arguments = CommandLine.arguments.dropFirst()
    while let a = arguments.popFirst() {
        switch a {
        case "--harkd": o.harkd = arguments.popFirst() ?? o.harkd
        case "--data": o.data = arguments.popFirst() ?? o.data
        case "--records": o.records = Int(arguments.popFirst() ?? "") ?? o.records
        case "--commits": o.commits = Int(arguments.popFirst() ?? "") ?? o.commits
        case "--help", "-h":
            print("usage: delivery-bench [--harkd PATH] [--data DIR] [--records N] [--commits N]")
            print("  --records  backlog drained to the broker (default 100000)")
            print("  --commits  single commits timed (default 2000)")
            exit(0)
        default:
            FileHandle.standardError.write(Data("delivery-bench: unknown argument \(a)\n".utf8))
            exit(64)
        }
    }
    return o
}



/// A continuous report as harkd writes it (1.3 KB), under a new rid.
func report(_ n: Int, created: Int64) -> Spool.Record {
    let rid = UUID().uuidString.lowercased()
    let bands = ["31.5", "40", "50", "63", "80", "100", "125", "160", "200", "250", "315", "400", "500", "630", "800", "1000",
                 "1250", "1600", "2000", "2500", "3150", "4000", "5000", "6300", "8000", "10000", "12500", "16000"]
        .map { #""\#($0)":-46.\#(n % 90 + 10)"# }.joined(separator: ",")
    let body = #"{"class":"report","unit":"bench","rid":"\#(rid)","utcStart":"2026-11-23T22:19:15.153Z","utcEnd":"2026-11-23T22:19:16.153Z","t":\#(n).000,"device":"default","duration":60.000,"LAeq":-34.47,"LCeq":-32.76,"LZeq":-29.68,"LAE":-16.69,"LAFmax":-34.32,"LAFmin":-36.02,"LASmax":-36.49,"LCpeak":-19.96,"LA10":-34.59,"LA50":-34.59,"LA90":-34.59,"bands":{\#(bands)},"calibration":0.00,"rate":48000,"channels":1,"channel_use":"mono","format":"live capture","warnings":[]}"#
    return Spool.Record(rid: rid, kind: "report", created: created, body: body)
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.down)))]
}

let options = parseOptions()
signal(SIGPIPE, SIG_IGN)
try? FileManager.default.createDirectory(atPath: options.data, withIntermediateDirectories: true)
// On the data folder's disk, as harkd's spool would be on the device's.
let dir = options.data + "/delivery-bench-\(getpid())"
try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: dir) }
let now = Int64(Date().timeIntervalSince1970 * 1000)

// MARK: - commit latency

do {
    let spool = try Spool(path: dir + "/latency.sqlite")
    var times: [Double] = []
    for n in 0..<options.commits {
        let r = report(n, created: now + Int64(n))
        let t0 = monotonic()
        try spool.commit(r)
        times.append(monotonic() - t0)
    }
    times.sort()
    print("spool commit (WAL, synchronous=FULL, one 1.3 KB report per transaction, \(options.commits) commits, \(dir)):")
    print(String(format: "  median %.2f ms, p99 %.2f ms, max %.2f ms", percentile(times, 0.5) * 1000, percentile(times, 0.99) * 1000,
                 times.last! * 1000))
} catch { fail("\(error)") }

// MARK: - the spool's size on disk

// Before the log was checkpointed and cut back: with spool-max-mb = 0.1 the log alone reached
// 4.1 MB, and 1.8 MB stayed beside a 4 KB database after a clean stop. Target: database, log and
// shared memory ≤ spool-max-mb + 1 MB at all times, the log truncated at a clean stop.
do {
    let path = dir + "/bounded.sqlite"
    let limit = 100 * 1024
    let spool = try Spool(path: path, limits: .init(maxBytes: limit))
    func onDisk() -> Int {
        ["", "-wal", "-shm"].reduce(0) { total, suffix in
            var info = stat()
            return total + (stat(path + suffix, &info) == 0 ? Int(info.st_size) : 0)
        }
    }
    var most = 0
    for n in 0..<3_000 {
        try spool.commit(report(n, created: now + Int64(n)))
        if n % 300 == 299 { try spool.markDelivered(try spool.pending(limit: 200).map(\.seq), at: now + Int64(n)) }
        most = max(most, onDisk())
    }
    spool.close()
    var log = stat()
    let logBytes = stat(path + "-wal", &log) == 0 ? Int(log.st_size) : 0
    print("spool on disk, spool-max-mb 0.1, 3 000 reports of 1.3 KB committed one by one (a delivery every 300):")
    print(String(format: "  database + log + shared memory at most %.0f KB (bound %.0f KB); after a clean close the log holds %d bytes, the database %.0f KB",
                 Double(most) / 1024, Double(limit + 1_048_576) / 1024, logBytes, Double(onDisk()) / 1024))
} catch { fail("\(error)") }

// MARK: - draining a backlog through harkd to a local broker

let spoolPath = dir + "/backlog.sqlite"
do {
    let spool = try Spool(path: spoolPath, limits: .init(maxBytes: 1 << 30))
    var n = 0
    while n < options.records {
        let batch = (n..<min(options.records, n + 5_000)).map { report($0, created: now + Int64($0)) }
        try spool.commitAll(batch)
        n += batch.count
    }
} catch { fail("\(error)") }

let broker = LocalBroker(dir: dir)
defer { broker.stop() }
let port = broker.port

try? """
mqtt-url = mqtt://127.0.0.1:\(port)
spool = \(spoolPath)
spool-max-mb = 1024
unit = bench
socket = \(dir)/hark.sock
""".write(toFile: dir + "/harkd.conf", atomically: true, encoding: .utf8)
let harkd = Process()
harkd.executableURL = URL(fileURLWithPath: options.harkd)
harkd.arguments = ["--config", dir + "/harkd.conf", "-D", "null"]
_ = FileManager.default.createFile(atPath: dir + "/harkd.log", contents: nil)
harkd.standardError = FileHandle(forWritingAtPath: dir + "/harkd.log")
let t0 = monotonic()
do { try harkd.run() } catch { fail("cannot start harkd: \(error)") }
let pid = harkd.processIdentifier
var remaining = options.records
var firstDelivery: Double?
while remaining > 0, monotonic() - t0 < 600 {
    usleep(200_000)
    guard let reader = try? Spool(path: spoolPath, readOnly: true) else { continue }
    remaining = reader.stats.pending
    if firstDelivery == nil, remaining < options.records { firstDelivery = monotonic() }
}
let t1 = monotonic()
let cpu = cpuSeconds(pid)
kill(pid, SIGTERM)
harkd.waitUntilExit()
guard remaining == 0, let first = firstDelivery else {
    fail("\(remaining) of \(options.records) still pending after \(Int(t1 - t0)) s; harkd's log:\n"
         + ((try? String(contentsOfFile: dir + "/harkd.log", encoding: .utf8)) ?? ""))
}
print("backlog of \(options.records) reports drained by harkd to a local Mosquitto (QoS 1, each marked delivered on PUBACK):")
print(String(format: "  %.1f s from the first delivery, %.0f reports/s; %.1f s of harkd CPU (%.0f µs per report)",
             t1 - first, Double(options.records) / (t1 - first), cpu, cpu / Double(options.records) * 1e6))
