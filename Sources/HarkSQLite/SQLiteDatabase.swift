import CSQLite
import FoundationEssentials
import Glibc

/// Why SQLite refused: the file, SQLite's result code and its own message.
public struct SQLiteError: Error, CustomStringConvertible, Equatable {
    public var path: String
    public var code: Int32
    public var message: String

    public var description: String { "\(path): \(message) (SQLite code \(code))" }

    /// The file is not a database, or is damaged.
    public var isCorrupt: Bool { code & 0xff == SQLITE_CORRUPT || code & 0xff == SQLITE_NOTADB }
    /// The disk (or a quota) is full.
    public var isFull: Bool { code & 0xff == SQLITE_FULL }
    /// Another connection holds the file (past the busy timeout).
    public var isBusy: Bool { code & 0xff == SQLITE_BUSY || code & 0xff == SQLITE_LOCKED }
}

/// One SQLite connection: owns the `sqlite3` handle and its prepared statements, and turns
/// result codes into ``SQLiteError``. Not thread-safe: one owner uses it (``Spool`` keeps it
/// behind a lock). The spool (HarkSpool) and the campaign catalogue (HarkCatalogue) both use it.
package final class SQLiteDatabase {
    package let path: String
    private var handle: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]

    /// SQLite may free or reuse the buffer once the call returns: it must copy the text.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    package init(path: String, readOnly: Bool = false) throws(SQLiteError) {
        self.path = path
        let flags = readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, nil)
        handle = db
        guard rc == SQLITE_OK else {
            let error = SQLiteError(path: path, code: rc, message: db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open")
            sqlite3_close_v2(db)
            handle = nil
            throw error
        }
        sqlite3_extended_result_codes(db, 1)
        // A writer that finds the file locked (`hark spool` reading, say) waits a little.
        sqlite3_busy_timeout(db, 2_000)
    }

    deinit { close() }

    package func close() {
        for s in statements.values { sqlite3_finalize(s) }
        statements = [:]
        if let h = handle { sqlite3_close_v2(h) }
        handle = nil
    }

    private func error(_ rc: Int32) -> SQLiteError {
        SQLiteError(path: path, code: rc, message: handle.map { String(cString: sqlite3_errmsg($0)) } ?? "closed")
    }

    /// Runs statements that return nothing (schema, pragmas, transactions).
    package func execute(_ sql: String) throws(SQLiteError) {
        guard handle != nil else { throw SQLiteError(path: path, code: SQLITE_MISUSE, message: "the database is closed") }
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &message)
        guard rc == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_free(message)
            throw SQLiteError(path: path, code: rc, message: text)
        }
    }

    package enum Value: Equatable {
        case integer(Int64)
        case text(String)
        case blob([UInt8])
        case real(Double)
        case null
    }

    /// Runs one statement with `arguments` bound to its `?`s and returns its rows. Statements
    /// are prepared once and kept (plan once, run many times).
    @discardableResult
    package func query(_ sql: String, _ arguments: [Value] = []) throws(SQLiteError) -> [[Value]] {
        guard handle != nil else { throw SQLiteError(path: path, code: SQLITE_MISUSE, message: "the database is closed") }
        let statement: OpaquePointer
        if let s = statements[sql] {
            statement = s
        } else {
            var s: OpaquePointer?
            let rc = sqlite3_prepare_v2(handle, sql, -1, &s, nil)
            guard rc == SQLITE_OK, let s else { throw error(rc) }
            statements[sql] = s
            statement = s
        }
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (i, argument) in arguments.enumerated() {
            let index = Int32(i + 1)
            let rc: Int32
            switch argument {
            case .integer(let v): rc = sqlite3_bind_int64(statement, index, v)
            case .text(let v): rc = sqlite3_bind_text(statement, index, v, -1, Self.transient)
            case .null: rc = sqlite3_bind_null(statement, index)
            case .real(let v): rc = sqlite3_bind_double(statement, index, v)
            case .blob(let v):
                rc = v.withUnsafeBytes { sqlite3_bind_blob(statement, index, $0.baseAddress, Int32($0.count), Self.transient) }
            }
            guard rc == SQLITE_OK else { throw error(rc) }
        }
        var rows: [[Value]] = []
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw error(rc) }
            var row: [Value] = []
            for c in 0..<sqlite3_column_count(statement) {
                switch sqlite3_column_type(statement, c) {
                case SQLITE_INTEGER: row.append(.integer(sqlite3_column_int64(statement, c)))
                case SQLITE_NULL: row.append(.null)
                case SQLITE_FLOAT: row.append(.real(sqlite3_column_double(statement, c)))
                case SQLITE_BLOB:
                    let n = Int(sqlite3_column_bytes(statement, c))
                    let p = sqlite3_column_blob(statement, c)
                    row.append(.blob(p.map { Array(UnsafeRawBufferPointer(start: $0, count: n)) } ?? []))
                default: row.append(.text(String(cString: sqlite3_column_text(statement, c))))
                }
            }
            rows.append(row)
        }
        return rows
    }

    /// The first column of the first row as an integer (for counts and pragmas).
    package func integer(_ sql: String, _ arguments: [Value] = []) throws(SQLiteError) -> Int64? {
        guard case .integer(let v)? = try query(sql, arguments).first?.first else { return nil }
        return v
    }

    /// Rows changed by the last statement.
    package var changes: Int { Int(sqlite3_changes(handle)) }
}
