import FoundationEssentials
import Glibc
import HarkSQLite
import HarkSystem

/// A durable queue of the records harkd makes (noise reports, detections, shake results),
/// kept in SQLite so that a report made while no client listens, the link is down or harkd
/// restarts is still there to deliver.
///
/// Every ``commit(_:)`` is a transaction in WAL mode with `synchronous = FULL`: when it
/// returns, the record survives `kill -9` and power loss, and a record half written never
/// appears. Bounded by size and age (``Limits``): delivered records go first, oldest first;
/// undelivered ones are dropped only past the bound, and counted.
///
/// Thread-safe, and Sendable by hand: the connection is reached only under `databaseLock`;
/// ``stats`` is a copy kept under its own lock, so reading it never waits on a disk flush.
public final class Spool: @unchecked Sendable {
    /// The schema this code writes; a file with a higher `user_version` was written by a newer
    /// Hark and is left alone.
    public static let schemaVersion: Int64 = 1

    public struct Limits: Sendable, Equatable {
        /// Bytes of records (pages in use) the spool may hold.
        public var maxBytes: Int
        /// Seconds a record may be kept.
        public var maxAge: TimeInterval

        public init(maxBytes: Int = 64 << 20, maxAge: TimeInterval = 30 * 86_400) {
            self.maxBytes = maxBytes
            self.maxAge = maxAge
        }
    }

    /// One record as stored.
    public struct Record: Sendable, Equatable {
        /// Order of commitment, increasing.
        public var seq: Int64
        /// Unique across restarts and units (the `rid` field of the JSON line).
        public var rid: String
        /// `report`, `detection` or `shake`.
        public var kind: String
        /// When it was made: milliseconds since 1970 UTC.
        public var created: Int64
        /// The JSON line as it was committed.
        public var body: String
        /// When the uplink's broker acknowledged it (milliseconds since 1970 UTC), or nil.
        public var delivered: Int64?

        public init(seq: Int64 = 0, rid: String, kind: String, created: Int64, body: String, delivered: Int64? = nil) {
            (self.seq, self.rid, self.kind, self.created, self.body, self.delivered) = (seq, rid, kind, created, body, delivered)
        }
    }

    public struct Stats: Sendable, Equatable {
        /// Records not yet delivered.
        public var pending = 0
        /// Creation time of the oldest of them (ms since 1970 UTC).
        public var oldestPending: Int64?
        public var delivered = 0
        /// The latest delivery (ms since 1970 UTC).
        public var lastDelivery: Int64?
        /// Undelivered records dropped because the spool was past its bound, ever.
        public var droppedUndelivered = 0
        /// Bytes of the file in use.
        public var bytes = 0
    }

    public enum Which: String, Sendable, CaseIterable {
        case pending, delivered, all
    }

    public let path: String
    public let limits: Limits
    private let database: SQLiteDatabase
    private let databaseLock = PosixLock()
    private var cachedStats = Stats()
    private let statsLock = PosixLock()
    private let log: @Sendable (String) -> Void
    /// This process's claim on the spool (a writer's only).
    private let claim: SpoolLock?

    /// What the write-ahead log may hold between checkpoints. With the shared memory's 32 KB,
    /// the files stay within ``Limits/maxBytes`` + 1 MB (docs/daemon.md, The spool).
    public static let walLimitBytes = 512 * 1024

    /// Opens (creating if need be) the spool at `path`. Refuses, naming the file, one that is
    /// not a database or is damaged, one written by a newer schema, a path it cannot write, and
    /// a spool another process writes (``SpoolError/inUse(_:owner:)``); it never deletes or
    /// rewrites such a file.
    ///
    /// A spool it creates is readable by its owner and group only (0640 at most, whatever the
    /// umask): records name units and places. SQLite gives its log files the same mode.
    public init(path: String, limits: Limits = Limits(), readOnly: Bool = false,
                log: @escaping @Sendable (String) -> Void = { _ in }) throws(SpoolError) {
        self.path = path
        self.limits = limits
        self.log = log
        if readOnly && !FileManager.default.fileExists(atPath: path) { throw .cannotOpen(path, "no such file") }
        if readOnly {
            claim = nil
        } else {
            claim = try SpoolLock(spoolPath: path)
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o640)
            if fd >= 0 {
                Glibc.close(fd)
            } else if errno != EEXIST {
                throw .cannotOpen(path, String(cString: strerror(errno)))
            }
        }
        let db: SQLiteDatabase
        do {
            db = try SQLiteDatabase(path: path, readOnly: readOnly)
        } catch {
            throw .cannotOpen(path, error.message)
        }
        do {
            let version = try db.integer("PRAGMA user_version") ?? 0
            guard version <= Self.schemaVersion else { throw SpoolError.newerSchema(path, version, Self.schemaVersion) }
            if !readOnly {
                let mode = try db.query("PRAGMA journal_mode = WAL").first?.first
                guard mode == .text("wal") else { throw SpoolError.cannotOpen(path, "the file system does not allow a write-ahead log") }
                try db.execute("PRAGMA synchronous = FULL")
                // Checkpoint every 64 pages (256 KB), and cut the log back after each: left to
                // SQLite's defaults (1 000 pages) it grew to 4 MB beside a spool of 0.1 MB.
                try db.execute("PRAGMA wal_autocheckpoint = 64")
                try db.execute("PRAGMA journal_size_limit = \(Self.walLimitBytes / 2)")
                if version == 0 {
                    try db.execute("""
                        BEGIN IMMEDIATE;
                        CREATE TABLE IF NOT EXISTS records (
                            seq INTEGER PRIMARY KEY AUTOINCREMENT,
                            rid TEXT NOT NULL UNIQUE,
                            kind TEXT NOT NULL,
                            created INTEGER NOT NULL,
                            body TEXT NOT NULL,
                            delivered INTEGER);
                        CREATE INDEX IF NOT EXISTS records_by_delivery ON records (delivered, seq);
                        CREATE INDEX IF NOT EXISTS records_by_age ON records (created);
                        CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
                        PRAGMA user_version = \(Self.schemaVersion);
                        COMMIT;
                        """)
                }
            } else if version == 0 {
                throw SpoolError.cannotOpen(path, "not a Hark spool (no schema)")
            }
            // Reads every page of the schema: a damaged or foreign file fails here, not later.
            _ = try db.integer("SELECT count(*) FROM records WHERE seq < 0")
        } catch let error as SpoolError {
            throw error
        } catch let error as SQLiteError {
            throw error.isCorrupt ? .corrupt(path, error.message) : .cannotOpen(path, error.message)
        } catch {
            throw .cannotOpen(path, "\(error)")
        }
        database = db
        try refreshStats()
    }

    /// The figures for status messages, as of the last change (never waits on the disk).
    public var stats: Stats { statsLock.withLock { cachedStats } }

    /// Commits `record` (its `seq` is ignored and assigned), then applies the bounds. When this
    /// returns the record is on disk.
    public func commit(_ record: Record) throws(SpoolError) {
        try write { db, change in
            try db.query("INSERT INTO records (rid, kind, created, body) VALUES (?, ?, ?, ?)",
                         [.text(record.rid), .text(record.kind), .integer(record.created), .text(record.body)])
            change.pending += 1
            try enforceLimits(db, now: record.created, change: &change)
        }
    }

    /// SQLite's own check of every page and index: "ok", or what is wrong.
    public func integrityCheck() throws(SpoolError) -> String {
        try read { db in
            try db.query("PRAGMA integrity_check").compactMap { row -> String? in
                if case .text(let t)? = row.first { return t }
                return nil
            }.joined(separator: "; ")
        }
    }

    /// Commits many records in one transaction (an import; harkd commits one at a time).
    public func commitAll(_ records: [Record]) throws(SpoolError) {
        guard let last = records.last else { return }
        try write { db, change in
            for record in records {
                try db.query("INSERT INTO records (rid, kind, created, body) VALUES (?, ?, ?, ?)",
                             [.text(record.rid), .text(record.kind), .integer(record.created), .text(record.body)])
            }
            change.pending += records.count
            try enforceLimits(db, now: last.created, change: &change)
        }
    }

    /// Reads the figures of ``stats`` again from the file (another process may write it).
    public func reload() throws(SpoolError) {
        try refreshStats()
    }

    /// Undelivered records, oldest first, after `seq`.
    public func pending(after seq: Int64 = 0, limit: Int = 100) throws(SpoolError) -> [Record] {
        try read { db in
            try db.query("SELECT seq, rid, kind, created, body, delivered FROM records WHERE delivered IS NULL AND seq > ? ORDER BY seq LIMIT ?",
                         [.integer(seq), .integer(Int64(limit))]).compactMap(Self.record)
        }
    }

    /// Records in order of commitment, by delivery state.
    public func records(_ which: Which, limit: Int = .max) throws(SpoolError) -> [Record] {
        let condition = switch which {
        case .pending: "WHERE delivered IS NULL"
        case .delivered: "WHERE delivered IS NOT NULL"
        case .all: ""
        }
        return try read { db in
            try db.query("SELECT seq, rid, kind, created, body, delivered FROM records \(condition) ORDER BY seq LIMIT ?",
                         [.integer(Int64(min(limit, Int(Int64.max))))]).compactMap(Self.record)
        }
    }

    /// Marks records delivered (the broker acknowledged them) at `time` (ms since 1970 UTC).
    public func markDelivered(_ seqs: [Int64], at time: Int64) throws(SpoolError) {
        guard !seqs.isEmpty else { return }
        try write { db, change in
            for seq in seqs {
                try db.query("UPDATE records SET delivered = ? WHERE seq = ? AND delivered IS NULL", [.integer(time), .integer(seq)])
                change.pending -= db.changes
                change.delivered += db.changes
            }
            // Kept apart from the rows, which the bounds may evict.
            try db.query("INSERT INTO counters (name, value) VALUES ('last-delivery', ?) ON CONFLICT(name) DO UPDATE SET value = max(value, excluded.value)",
                         [.integer(time)])
            change.lastDelivery = time
        }
    }

    private static func record(_ row: [SQLiteDatabase.Value]) -> Record? {
        guard row.count == 6, case .integer(let seq) = row[0], case .text(let rid) = row[1], case .text(let kind) = row[2],
              case .integer(let created) = row[3], case .text(let body) = row[4] else { return nil }
        var delivered: Int64?
        if case .integer(let d) = row[5] { delivered = d }
        return Record(seq: seq, rid: rid, kind: kind, created: created, body: body, delivered: delivered)
    }

    // MARK: - Transactions

    private func read<T>(_ body: (SQLiteDatabase) throws -> T) throws(SpoolError) -> T {
        do {
            return try databaseLock.withLock { try body(database) }
        } catch {
            throw Self.spoolError(error, path: path)
        }
    }

    /// What a write did to the counts of ``stats``: kept up to date from it rather than
    /// counted again, which would cost a pass over the table at every commit.
    private struct Change {
        var pending = 0, delivered = 0, dropped = 0
        var lastDelivery: Int64?
    }

    private func write(_ body: (SQLiteDatabase, inout Change) throws -> Void) throws(SpoolError) {
        do {
            let (change, oldest, bytes) = try databaseLock.withLock { () -> (Change, Int64?, Int) in
                let db = database
                var change = Change()
                try db.execute("BEGIN IMMEDIATE")
                do {
                    try body(db, &change)
                    try db.execute("COMMIT")
                } catch {
                    try? db.execute("ROLLBACK")
                    throw error
                }
                let result = (change, try oldestPending(db), Int(try usedBytes(db)))
                try boundLog(db)
                return result
            }
            statsLock.withLock {
                cachedStats.pending += change.pending
                cachedStats.delivered += change.delivered
                cachedStats.droppedUndelivered += change.dropped
                cachedStats.lastDelivery = change.lastDelivery ?? cachedStats.lastDelivery
                cachedStats.oldestPending = oldest
                cachedStats.bytes = bytes
            }
        } catch {
            throw Self.spoolError(error, path: path)
        }
    }

    /// A reader elsewhere (`hark spool list`) can hold the log from being rewound by the
    /// automatic checkpoints; past ``walLimitBytes`` it is checkpointed and truncated now,
    /// waiting for such readers as long as the busy timeout allows.
    private func boundLog(_ db: SQLiteDatabase) throws {
        var info = stat()
        guard stat(path + "-wal", &info) == 0, Int(info.st_size) > Self.walLimitBytes else { return }
        do {
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        } catch {
            guard error.isBusy else { throw error }
            log("spool \(path): its log is \(info.st_size / 1024) KB and a reader keeps it from being truncated")
        }
    }

    /// Checkpoints the log into the database, truncates it, and closes the file: what a clean
    /// stop leaves is the database alone. Reading or writing after this fails.
    public func close() {
        databaseLock.lock()
        defer { databaseLock.unlock() }
        if claim != nil { try? database.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
        database.close()
    }

    /// Through the delivery index: the first pending row in order of commitment.
    private func oldestPending(_ db: SQLiteDatabase) throws -> Int64? {
        try db.integer("SELECT created FROM records WHERE delivered IS NULL ORDER BY seq LIMIT 1")
    }

    private static func spoolError(_ error: Error, path: String) -> SpoolError {
        if let e = error as? SpoolError { return e }
        guard let e = error as? SQLiteError else { return .writeFailed(path, "\(error)") }
        if e.isFull { return .full(path) }
        if e.isCorrupt { return .corrupt(path, e.message) }
        return .writeFailed(path, e.message)
    }

    private func refreshStats() throws(SpoolError) {
        let s: Stats = try read { db in
            var s = Stats()
            s.pending = Int(try db.integer("SELECT count(*) FROM records WHERE delivered IS NULL") ?? 0)
            s.oldestPending = try oldestPending(db)
            s.delivered = Int(try db.integer("SELECT count(*) FROM records WHERE delivered IS NOT NULL") ?? 0)
            s.lastDelivery = try db.integer("SELECT value FROM counters WHERE name = 'last-delivery'")
            s.droppedUndelivered = Int(try db.integer("SELECT value FROM counters WHERE name = 'dropped-undelivered'") ?? 0)
            s.bytes = Int(try usedBytes(db))
            return s
        }
        statsLock.withLock { cachedStats = s }
    }

    // MARK: - Bounds

    private func usedBytes(_ db: SQLiteDatabase) throws -> Int64 {
        let pages = try db.integer("PRAGMA page_count") ?? 0
        let free = try db.integer("PRAGMA freelist_count") ?? 0
        let size = try db.integer("PRAGMA page_size") ?? 4096
        return (pages - free) * size
    }

    /// Past the age bound, records go (undelivered ones counted); past the size bound, the
    /// oldest delivered go first, then the oldest undelivered, counted.
    private func enforceLimits(_ db: SQLiteDatabase, now: Int64, change: inout Change) throws {
        let cutoff = now - Int64(limits.maxAge * 1000)
        try db.query("DELETE FROM records WHERE created < ? AND delivered IS NOT NULL", [.integer(cutoff)])
        change.delivered -= db.changes
        try db.query("DELETE FROM records WHERE created < ? AND delivered IS NULL", [.integer(cutoff)])
        var dropped = db.changes
        if dropped > 0 { log("spool \(path): \(dropped) undelivered record(s) older than \(Int(limits.maxAge / 86_400)) days dropped") }
        var evictedDelivered = 0, evictedPending = 0
        while try usedBytes(db) > Int64(limits.maxBytes) {
            // In delivery order, which the delivery index holds: the oldest delivered first.
            try db.query("DELETE FROM records WHERE seq IN (SELECT seq FROM records WHERE delivered IS NOT NULL ORDER BY delivered, seq LIMIT 32)")
            if db.changes > 0 { evictedDelivered += db.changes; continue }
            // Never the record just committed: a spool too small for one record keeps that one.
            try db.query("DELETE FROM records WHERE seq IN (SELECT seq FROM records WHERE delivered IS NULL AND seq < (SELECT max(seq) FROM records) ORDER BY seq LIMIT 8)")
            if db.changes == 0 { break }
            evictedPending += db.changes
        }
        if evictedPending > 0 {
            log("spool \(path) is full (\(limits.maxBytes / 1024) KB): \(evictedPending) undelivered record(s) dropped, oldest first")
        }
        dropped += evictedPending
        change.pending -= dropped
        change.delivered -= evictedDelivered
        change.dropped += dropped
        if dropped > 0 {
            try db.query("INSERT INTO counters (name, value) VALUES ('dropped-undelivered', ?) ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
                         [.integer(Int64(dropped))])
        }
    }
}

/// Why the spool could not be opened or written; every case names the file.
public enum SpoolError: Error, Equatable, CustomStringConvertible {
    case cannotOpen(String, String)
    case corrupt(String, String)
    case newerSchema(String, Int64, Int64)
    case full(String)
    case writeFailed(String, String)
    /// Another process (with this process id, when it said) writes this spool.
    case inUse(String, owner: Int32?)

    public var description: String {
        switch self {
        case .cannotOpen(let p, let why): return "cannot open spool \(p): \(why)"
        case .corrupt(let p, let why): return "spool \(p) is damaged or not a database (\(why)); it was left as it is"
        case .newerSchema(let p, let found, let known):
            return "spool \(p) was written by a newer Hark (schema \(found); this one reads up to \(known)); it was left as it is"
        case .full(let p): return "cannot write spool \(p): the disk is full"
        case .writeFailed(let p, let why): return "cannot write spool \(p): \(why)"
        case .inUse(let p, let owner):
            return "spool \(p) is in use by another process\(owner.map { " (pid \($0))" } ?? ""): one harkd per spool; it was left as it is"
        }
    }
}
