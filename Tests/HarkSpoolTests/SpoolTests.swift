import Foundation
import HarkTesting
import Testing
import HarkSQLite
@testable import HarkSpool

/// The spool on real SQLite files in a temporary folder.
@Suite struct SpoolTests {
    private let temporary = TemporaryDirectory(prefix: "hark-spool")
    private var dir: String { temporary.path }

    private func record(_ n: Int, kind: String = "report", created: Int64 = 1_800_000_000_000, size: Int = 40) -> Spool.Record {
        let padding = String(repeating: "x", count: max(0, size - 40))
        return Spool.Record(rid: "r\(n)", kind: kind, created: created + Int64(n), body: #"{"class":"\#(kind)","n":\#(n),"p":"\#(padding)"}"#)
    }

    @Test func committedRecordsSurviveReopeningInOrder() throws {
        let path = dir + "/spool.sqlite"
        do {
            let spool = try Spool(path: path)
            for n in 0..<5 { try spool.commit(record(n, kind: n % 2 == 0 ? "report" : "detection")) }
            #expect(spool.stats.pending == 5)
        }
        let again = try Spool(path: path)
        let pending = try again.pending()
        #expect(pending.map(\.rid) == ["r0", "r1", "r2", "r3", "r4"])
        #expect(pending.map(\.kind) == ["report", "detection", "report", "detection", "report"])
        #expect(pending.allSatisfy { $0.delivered == nil } && pending.map(\.seq) == pending.map(\.seq).sorted())
        #expect(again.stats.pending == 5 && again.stats.oldestPending == 1_800_000_000_000)
        #expect(try again.pending(after: pending[2].seq, limit: 1).map(\.rid) == ["r3"])
    }

    @Test func deliveredRecordsLeaveThePendingQueue() throws {
        let spool = try Spool(path: dir + "/s.sqlite")
        for n in 0..<4 { try spool.commit(record(n)) }
        let first = try spool.pending(limit: 2)
        try spool.markDelivered(first.map(\.seq), at: 1_800_000_001_000)
        #expect(try spool.pending().map(\.rid) == ["r2", "r3"])
        #expect(try spool.records(.delivered).map(\.rid) == ["r0", "r1"])
        #expect(try spool.records(.all).count == 4)
        let s = spool.stats
        #expect(s.pending == 2 && s.delivered == 2 && s.lastDelivery == 1_800_000_001_000 && s.oldestPending == 1_800_000_000_002)
    }

    @Test func manyInOneTransactionAndAReaderSeesThem() throws {
        let spool = try Spool(path: dir + "/s.sqlite")
        try spool.commitAll((0..<500).map { record($0) })
        let reader = try Spool(path: dir + "/s.sqlite", readOnly: true)
        #expect(reader.stats.pending == 500)
        try spool.markDelivered(try spool.pending(limit: 200).map(\.seq), at: 1_800_000_100_000)
        #expect(reader.stats.pending == 500)
        try reader.reload()
        #expect(reader.stats.pending == 300 && reader.stats.delivered == 200)
        #expect(reader.stats == spool.stats)
        // A batch with a duplicate id commits nothing.
        #expect(throws: SpoolError.self) { try spool.commitAll([record(1000), record(3)]) }
        #expect(try spool.records(.all).count == 500)
    }

    @Test func aRecordIdIsCommittedOnce() throws {
        let spool = try Spool(path: dir + "/s.sqlite")
        try spool.commit(record(1))
        #expect(throws: SpoolError.self) { try spool.commit(record(1)) }
        #expect(spool.stats.pending == 1)
    }

    @Test func atItsSizeBoundTheOldestDeliveredGoFirst() throws {
        let spool = try Spool(path: dir + "/s.sqlite", limits: .init(maxBytes: 256 * 1024))
        // 100 records of 1 KB, the first 60 delivered; then keep committing past the bound.
        for n in 0..<100 { try spool.commit(record(n, size: 1024)) }
        try spool.markDelivered(try spool.pending(limit: 60).map(\.seq), at: 1_800_000_100_000)
        for n in 100..<260 { try spool.commit(record(n, size: 1024)) }
        let all = try spool.records(.all)
        let delivered = all.filter { $0.delivered != nil }
        let pending = all.filter { $0.delivered == nil }
        #expect(spool.stats.bytes <= 256 * 1024)
        // Every undelivered record is kept while delivered ones remain to evict ...
        if !delivered.isEmpty {
            #expect(pending.count == 200 && spool.stats.droppedUndelivered == 0)
            #expect(delivered.map(\.rid) == (60 - delivered.count..<60).map { "r\($0)" }, "the newest delivered are the ones kept")
        } else {
            // ... and once they are gone, the oldest undelivered go, counted.
            #expect(spool.stats.droppedUndelivered == 200 - pending.count)
            #expect(pending.last?.rid == "r259")
            #expect(pending.map(\.rid) == pending.map(\.rid).sorted { Int($0.dropFirst())! < Int($1.dropFirst())! })
        }
        #expect(spool.stats.pending == pending.count)
        // The figures kept up to date commit by commit are those a fresh count gives.
        let fresh = try Spool(path: dir + "/s.sqlite", readOnly: true).stats
        #expect(spool.stats == fresh, "\(spool.stats) against \(fresh)")
    }

    @Test func pastItsBoundUndeliveredRecordsAreDroppedOldestFirstAndCounted() throws {
        let messages = LogLines()
        let spool = try Spool(path: dir + "/s.sqlite", limits: .init(maxBytes: 128 * 1024), log: { messages.append($0) })
        for n in 0..<300 { try spool.commit(record(n, size: 1024)) }
        let pending = try spool.pending(limit: 1000)
        #expect(pending.count > 40 && pending.count < 128, "\(pending.count)")
        #expect(pending.last?.rid == "r299")
        #expect(Int(pending.first!.rid.dropFirst())! == 300 - pending.count, "the newest are kept, without holes")
        #expect(spool.stats.droppedUndelivered == 300 - pending.count)
        #expect(messages.lines.contains { $0.contains("is full") && $0.contains("undelivered record(s) dropped") })
        // The count survives a restart.
        #expect(try Spool(path: dir + "/s.sqlite").stats.droppedUndelivered == 300 - pending.count)
    }

    /// The bytes the spool's files take on disk: the database, its log and its shared memory.
    private func diskBytes(_ path: String) -> Int {
        ["", "-wal", "-shm"].reduce(0) { total, suffix in
            var info = stat()
            return total + (stat(path + suffix, &info) == 0 ? Int(info.st_size) : 0)
        }
    }

    @Test func itsFilesStayWithinTheBoundPlusOneMegabyteAndAStopLeavesNoLog() throws {
        let path = dir + "/s.sqlite"
        let limit = 100 * 1024
        let spool = try Spool(path: path, limits: .init(maxBytes: limit))
        var most = 0
        for n in 0..<3_000 {
            try spool.commit(record(n, size: 600))
            if n % 300 == 0 { try spool.markDelivered(try spool.pending(limit: 200).map(\.seq), at: 1_800_000_100_000 + Int64(n)) }
            most = max(most, diskBytes(path))
        }
        // Left to SQLite's defaults the log alone reached 4 MB beside a spool of 0.1 MB.
        #expect(most <= limit + 1_048_576, "\(most) bytes on disk")
        #expect(spool.stats.pending > 0 && spool.stats.droppedUndelivered > 0)
        spool.close()
        var info = stat()
        #expect(stat(path + "-wal", &info) != 0 || info.st_size == 0, "the log is folded in and truncated at a clean stop")
        #expect(try Spool(path: path, readOnly: true).stats.pending == spool.stats.pending)
    }

    @Test(.enabled(if: geteuid() == 0, "mounting a 1 MB file system needs root"))
    func onADiskOfOneMegabyteTheBoundKeepsItFromFilling() throws {
        let mountPoint = dir + "/small"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        guard mount("tmpfs", mountPoint, "tmpfs", 0, "size=1m") == 0 else {
            // A container without CAP_SYS_ADMIN: the test above bounds the same figure.
            Issue.record("cannot mount a tmpfs here: \(String(cString: strerror(errno)))")
            return
        }
        defer { umount2(mountPoint, Int32(MNT_DETACH)) }
        let spool = try Spool(path: mountPoint + "/s.sqlite", limits: .init(maxBytes: 100 * 1024))
        // Before the bound held, 43 records filled such a disk with none counted as dropped.
        for n in 0..<2_000 { try spool.commit(record(n, size: 600)) }
        #expect(spool.stats.droppedUndelivered > 1_500)
        #expect(try spool.pending(limit: 5_000).last?.rid == "r1999")
    }

    @Test func itsFilesAreTheOwnersAndGroupsOnlyWhateverTheUmask() throws {
        let path = dir + "/s.sqlite"
        let old = umask(0)
        defer { umask(old) }
        let spool = try Spool(path: path)
        try spool.commit(record(1))
        for file in [path, path + "-wal", path + "-shm", path + "-lock"] {
            var info = stat()
            #expect(stat(file, &info) == 0, "\(file)")
            #expect(info.st_mode & 0o027 == 0, "\(file): mode \(String(info.st_mode & 0o777, radix: 8))")
        }
    }

    @Test func aSpoolAnotherProcessWritesIsRefusedByName() throws {
        let path = dir + "/s.sqlite"
        // Another harkd's claim: its own open of the lock file, as another process has.
        let fd = open(path + "-lock", O_RDWR | O_CREAT, 0o640)
        #expect(fd >= 0)
        #expect(write(fd, "4242\n", 5) == 5)
        #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
        #expect(throws: SpoolError.inUse(path, owner: 4242)) { try Spool(path: path) }
        #expect("\(SpoolError.inUse(path, owner: 4242))" == "spool \(path) is in use by another process (pid 4242): one harkd per spool; it was left as it is")
        // `hark spool` reads it all the same.
        close(fd)
        let spool = try Spool(path: path)
        try spool.commit(record(1))
        #expect(try Spool(path: path, readOnly: true).stats.pending == 1)
    }

    @Test func oneProcessMayOpenItsSpoolTwiceAndReleasesItAfterwards() throws {
        let path = dir + "/s.sqlite"
        do {
            // A reload opens the spool anew while records in flight still use the old one.
            let first = try Spool(path: path)
            let second = try Spool(path: path)
            try first.commit(record(1))
            try second.commit(record(2))
            let fd = open(path + "-lock", O_RDWR)
            defer { close(fd) }
            #expect(flock(fd, LOCK_EX | LOCK_NB) != 0, "held while either is open")
            var text = [UInt8](repeating: 0, count: 16)
            let n = read(fd, &text, 16)
            #expect(String(decoding: text.prefix(max(0, n)), as: UTF8.self) == "\(getpid())\n")
        }
        let fd = open(path + "-lock", O_RDWR)
        defer { close(fd) }
        #expect(flock(fd, LOCK_EX | LOCK_NB) == 0, "released when the last is gone")
    }

    @Test func pastItsAgeBoundRecordsGo() throws {
        let day: Int64 = 86_400_000
        let spool = try Spool(path: dir + "/s.sqlite", limits: .init(maxAge: 2 * 86_400))
        try spool.commit(record(0, created: 0))
        try spool.markDelivered([try spool.pending(limit: 1)[0].seq], at: day)
        try spool.commit(record(1, created: 3 * day / 2))
        // Three days on: the delivered record of day 0 goes, the undelivered one of day 1.5 stays.
        try spool.commit(record(2, created: 3 * day))
        #expect(try spool.records(.all).map(\.rid) == ["r1", "r2"])
        #expect(spool.stats.droppedUndelivered == 0)
        // Five days on it is past the bound too: dropped, and counted.
        try spool.commit(record(3, created: 5 * day - 100))
        #expect(try spool.records(.all).map(\.rid) == ["r2", "r3"])
        #expect(spool.stats.droppedUndelivered == 1)
        let fresh = try Spool(path: dir + "/s.sqlite", readOnly: true).stats
        #expect(spool.stats == fresh, "\(spool.stats) against \(fresh)")
    }

    @Test func aFileThatIsNotADatabaseIsRefusedAndKept() throws {
        let path = dir + "/garbage.sqlite"
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 2654435761 >> 7) })
        try garbage.write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try Spool(path: path)
        } throws: { error in
            guard case .corrupt(let p, _) = error as? SpoolError else { return false }
            return p == path && "\(error)".contains("left as it is")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == garbage)
    }

    @Test func aSpoolFromANewerVersionIsRefusedAndKept() throws {
        let path = dir + "/newer.sqlite"
        do {
            let spool = try Spool(path: path)
            try spool.commit(record(1))
        }
        let db = try SQLiteDatabase(path: path)
        try db.execute("PRAGMA user_version = 7")
        db.close()
        #expect(throws: SpoolError.newerSchema(path, 7, Spool.schemaVersion)) { _ = try Spool(path: path) }
        let check = try SQLiteDatabase(path: path, readOnly: true)
        #expect(try check.integer("SELECT count(*) FROM records") == 1)
    }

    @Test func aFolderItCannotWriteIsAClearError() throws {
        guard getuid() != 0 else {
            // root writes anywhere; a missing folder fails the same way.
            #expect(throws: SpoolError.self) { _ = try Spool(path: dir + "/no/such/folder/s.sqlite") }
            return
        }
        let ro = dir + "/ro"
        try FileManager.default.createDirectory(atPath: ro, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o500])
        #expect {
            _ = try Spool(path: ro + "/s.sqlite")
        } throws: { error in
            guard case .cannotOpen(let p, _) = error as? SpoolError else { return false }
            return p == ro + "/s.sqlite"
        }
    }

    @Test func aMissingFolderIsAClearError() {
        let path = dir + "/no/such/folder/s.sqlite"
        #expect {
            _ = try Spool(path: path)
        } throws: { error in
            "\(error)".contains("cannot open spool \(path)")
        }
    }

    @Test func readingOnlyNeitherCreatesNorChanges() throws {
        #expect(throws: SpoolError.self) { _ = try Spool(path: dir + "/absent.sqlite", readOnly: true) }
        #expect(!FileManager.default.fileExists(atPath: dir + "/absent.sqlite"))
        let writer = try Spool(path: dir + "/s.sqlite")
        try writer.commit(record(1))
        let reader = try Spool(path: dir + "/s.sqlite", readOnly: true)
        #expect(try reader.records(.pending).map(\.rid) == ["r1"])
        #expect(throws: SpoolError.self) { try reader.commit(record(2)) }
    }
}

/// Log lines collected from another thread.
final class LogLines: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []
    func append(_ line: String) { lock.withLock { stored.append(line) } }
    var lines: [String] { lock.withLock { stored } }
}
