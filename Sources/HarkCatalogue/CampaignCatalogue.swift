import FoundationEssentials
import Glibc
import HarkDSP
import HarkSQLite
import HarkSystem

/// A campaign on air: the payload its mark carries, when it airs, and the reading of its
/// creative's sound (never the audio).
public struct Campaign: Sendable, Equatable {
    public var payload: WatermarkPayload
    public var name: String?
    /// First and last day on air, `YYYY-MM-DD` (UTC), both inclusive; nil: open-ended.
    public var from: String?
    public var until: String?
    public var sound: SoundPrint
    /// The campaign's airing key and channels when its marks carry airing codes (``AiringCode``);
    /// nil when they carry ``payload``.
    public var airing: AiringCampaign?
    /// The learned reading of its creative (``CreativeEmbeddings``); nil in a catalogue older
    /// than version 4, whose creatives are heard by their landmarks alone.
    public var embeddings: CreativeEmbeddings?
    /// The fingerprint of the key its creative was marked with (``WatermarkKey/fingerprint``),
    /// never the key; nil when not known (added without one, or a catalogue older than version 5).
    public var keyFingerprint: String?

    public init(payload: WatermarkPayload, name: String? = nil, from: String? = nil, until: String? = nil, sound: SoundPrint,
                airing: AiringCampaign? = nil, embeddings: CreativeEmbeddings? = nil, keyFingerprint: String? = nil) {
        (self.payload, self.name, self.from, self.until, self.sound) = (payload, name, from, until, sound)
        self.airing = airing
        self.embeddings = embeddings
        self.keyFingerprint = keyFingerprint
    }

    /// Whether `day` (`YYYY-MM-DD`) lies within the campaign's dates.
    public func isOnAir(on day: String) -> Bool {
        Self.isOnAir(on: day, from: from, until: until)
    }

    /// Whether `day` lies within `from` and `until` (`YYYY-MM-DD`, both inclusive; nil: open).
    public static func isOnAir(on day: String, from: String?, until: String?) -> Bool {
        (from.map { $0 <= day } ?? true) && (until.map { day <= $0 } ?? true)
    }

    /// Checks a `YYYY-MM-DD` date.
    public static func validDate(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]) else { return false }
        return y >= 1970 && (1...12).contains(m) && (1...31).contains(d)
    }

    /// Today in UTC, `YYYY-MM-DD`.
    public static func today() -> String {
        var now = time(nil)
        var parts = tm()
        gmtime_r(&now, &parts)
        return String(cFormat: "%04d-%02d-%02d", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday))
    }
}

/// A campaign's payload and dates, without its sound.
public struct CampaignDates: Sendable, Equatable {
    public var payload: WatermarkPayload
    public var from: String?
    public var until: String?

    /// Whether `day` (`YYYY-MM-DD`) lies within the campaign's dates.
    public func isOnAir(on day: String) -> Bool {
        Campaign.isOnAir(on: day, from: from, until: until)
    }
}

/// A catalogue read to listen with: every campaign's payload and dates, and the readings of
/// their sound, each checked whole when the file was read and read again from it, one creative
/// at a time, as an index asks (``SoundIndex/init(readings:)``). `readings` holds creative `i`
/// of `campaigns[i]`.
public struct ListeningCatalogue: Sendable {
    public var campaigns: [CampaignDates]
    public var readings: CatalogueSoundReadings
    /// The campaigns whose marks carry airing codes, with their keys and channels.
    public var airing: [AiringCampaign] = []
    /// What the creatives share, as the file keeps it for these readings in this order (nil:
    /// not kept, or kept for other readings): for ``SoundIndex/init(readings:sharing:keepSharing:)``.
    public var sharing: [SharedSound]?
    /// Each campaign's learned reading, in `campaigns`' order (nil: the file has none for it).
    public var embeddings: [CreativeEmbeddings?] = []
    /// The fingerprint of the key each campaign's creative was marked with, in `campaigns`'
    /// order (nil: not known).
    public var keyFingerprints: [String?] = []
}

/// What a catalogue's key fingerprints say about the key a detection is given.
public enum MarkKeyCheck {
    /// How many campaigns were marked with another key than `key`, of those whose key is known,
    /// and a line to say so (nil when none was).
    public static func otherKey(_ fingerprints: [String?], key: WatermarkKey, catalogue: String) -> (count: Int, line: String)? {
        let known = fingerprints.compactMap { $0 }
        let given = key.fingerprint
        let other = known.filter { $0 != given }
        guard !other.isEmpty else { return nil }
        let theirs = Set(other).sorted().joined(separator: ", ")
        return (other.count, "\(other.count) of \(fingerprints.count) campaigns in \(catalogue) were marked with another key (fingerprint "
                + "\(theirs)) than the one given (\(given)): their marks cannot be read, only their sound")
    }
}

/// The sound readings of a catalogue file, read from it when asked and never held together:
/// 100 creatives' readings are about 5 MB encoded, which harkd held beside the index it built
/// from them, its peak of memory (docs/watermark.md, Cost).
///
/// Everything is read within one read transaction, from the file's check to the last reading,
/// so a catalogue rewritten meanwhile is seen whole as it was. A read that fails after the
/// check (the disk) gives an empty reading and is kept in ``failure``: an index built then is
/// incomplete, and the catalogue must be refused. Safe to use from several threads: the file's
/// connection is behind a lock.
public final class CatalogueSoundReadings: SoundReadings, @unchecked Sendable {
    private let db: SQLiteDatabase
    private let path: String
    private let payloads: [WatermarkPayload]
    private let lock = PosixLock()
    private var firstFailure: CatalogueError?

    fileprivate init(db: SQLiteDatabase, path: String, payloads: [WatermarkPayload]) {
        (self.db, self.path, self.payloads) = (db, path, payloads)
    }

    deinit { try? db.execute("COMMIT") }

    public var count: Int { payloads.count }

    /// The first reading that could not be read after the file was checked.
    public var failure: CatalogueError? { lock.withLock { firstFailure } }

    /// Creative `i`'s reading as the file holds it.
    fileprivate func bytes(_ i: Int) throws(CatalogueError) -> [UInt8] {
        let rows: [[SQLiteDatabase.Value]]
        lock.lock()
        defer { lock.unlock() }
        do {
            rows = try db.query("SELECT sound FROM campaign WHERE payload = ?", [.integer(Int64(payloads[i].value))])
        } catch {
            throw .damaged(path, error.message)
        }
        guard rows.count == 1, case .blob(let bytes) = rows[0].first else {
            throw .damaged(path, "campaign \(payloads[i].hex): its reading is gone")
        }
        return bytes
    }

    private func fail(_ error: CatalogueError) {
        lock.withLock { if firstFailure == nil { firstFailure = error } }
    }

    public func reading(_ i: Int) -> SoundPrint {
        do {
            return try SoundPrint(bytes: bytes(i))
        } catch let error as CatalogueError {
            fail(error)
        } catch {
            fail(.damaged(path, "campaign \(payloads[i].hex): \(error)"))
        }
        return SoundPrint(landmarks: [], duration: 0)
    }

    public func landmarks(_ i: Int) -> [Landmark] {
        do {
            return SoundPrint.landmarks(inBytes: try bytes(i))
        } catch {
            fail(error)
            return []
        }
    }
}

/// Readings kept in their bytes, each decoded when an index asks for it (and checked whole
/// before): decoded all at once they take several times the room.
private struct EncodedReadings: SoundReadings {
    let encoded: [[UInt8]]
    var count: Int { encoded.count }
    func reading(_ i: Int) -> SoundPrint { (try? SoundPrint(bytes: encoded[i])) ?? SoundPrint(landmarks: [], duration: 0) }
    func landmarks(_ i: Int) -> [Landmark] { SoundPrint.landmarks(inBytes: encoded[i]) }
}

/// Why a catalogue cannot be read or written. Each names the file.
public enum CatalogueError: Error, Equatable, CustomStringConvertible {
    case noSuchFile(String)
    case notACatalogue(String, String)
    case newerVersion(String, found: Int64)
    case damaged(String, String)
    case cannotWrite(String, String)

    public var description: String {
        switch self {
        case .noSuchFile(let p): return "\(p): no such catalogue"
        case .notACatalogue(let p, let why): return "\(p): not a Hark campaign catalogue (\(why))"
        case .newerVersion(let p, let v):
            return "\(p): catalogue format version \(v); this Hark reads version \(CampaignCatalogue.formatVersion) (a newer Hark wrote it)"
        case .damaged(let p, let why): return "\(p): catalogue damaged (\(why))"
        case .cannotWrite(let p, let why): return "\(p): cannot write the catalogue (\(why))"
        }
    }
}

/// The campaign catalogue: a SQLite file holding, per campaign, its payload, dates and the
/// sound reading of its creative, and for a campaign whose marks carry airing codes its airing
/// key and channels (docs/watermark.md, The campaign catalogue).
///
/// SQLite's `application_id` marks the file as Hark's ("Hark" in ASCII) and `user_version`
/// holds the format version: a file of another program or of a newer Hark is refused by name,
/// as is a truncated or damaged one. Version 2 added the `airing` table, version 3 the
/// `shared_sound` table (what the creatives share, ``keepSharedSound()``); an older file is read
/// as it is and becomes version 5 when it is next written. Version 4 added the `embedding`
/// table (each creative's learned reading, ``CreativeEmbeddings``), version 5 the `mark_key`
/// table (the fingerprint of the key each creative was marked with), version 6 the
/// `airing_slot` and `airing_channel` tables (when campaigns air, from a broadcaster's log,
/// ``AiringSlot``, and each channel's tolerance). One owner uses an instance.
public final class CampaignCatalogue {
    public static let formatVersion: Int64 = 6
    /// The oldest version this Hark reads.
    static let oldestVersion: Int64 = 1
    static let airingTable = """
        CREATE TABLE IF NOT EXISTS airing (
            payload INTEGER PRIMARY KEY,
            airing_key BLOB NOT NULL,
            channels TEXT NOT NULL
        );
        """
    /// What every creative shares, kept when the campaigns were last written: a row per
    /// campaign, `related` the payloads of the campaigns it shares sound with and `landmarks`
    /// the places of its shared landmarks in its reading, each 4 bytes little-endian.
    static let sharedSoundTable = """
        CREATE TABLE IF NOT EXISTS shared_sound (
            payload INTEGER PRIMARY KEY,
            related BLOB NOT NULL,
            landmarks BLOB NOT NULL
        );
        """
    /// Each creative's learned reading: the network that made it (its digest), the size of an
    /// embedding and the embeddings, a byte each (``CreativeEmbeddings/bytes``).
    static let embeddingTable = """
        CREATE TABLE IF NOT EXISTS embedding (
            payload INTEGER PRIMARY KEY,
            model TEXT NOT NULL,
            dimensions INTEGER NOT NULL,
            vectors BLOB NOT NULL
        );
        """
    /// The fingerprint of the key each creative was marked with (``WatermarkKey/fingerprint``):
    /// eight hex digits, from which the key cannot be had.
    static let markKeyTable = """
        CREATE TABLE IF NOT EXISTS mark_key (
            payload INTEGER PRIMARY KEY,
            fingerprint TEXT NOT NULL
        );
        """
    /// When each airing-coded campaign airs on a channel, from a broadcaster's as-run or planned
    /// log: its creative starts between `starts` and `ends` (UTC seconds since 1970).
    static let slotTable = """
        CREATE TABLE IF NOT EXISTS airing_slot (
            payload INTEGER NOT NULL,
            channel INTEGER NOT NULL,
            starts INTEGER NOT NULL,
            ends INTEGER NOT NULL,
            PRIMARY KEY (payload, channel, starts)
        );
        CREATE TABLE IF NOT EXISTS airing_channel (
            channel INTEGER PRIMARY KEY,
            tolerance REAL NOT NULL
        );
        """
    /// Whether the file has the `airing_slot` and `airing_channel` tables (version 6 and later).
    private var hasSlots = true
    /// Whether the file has the `mark_key` table (version 5 and later).
    private var hasMarkKeys = true
    /// Whether the file has the `embedding` table (version 4 and later).
    private var hasEmbeddings = true
    /// Whether the file has the `airing` table (version 2 and later).
    private var hasAiring = true
    /// Whether the file has the `shared_sound` table (version 3 and later).
    private var hasSharedSound = true
    static let applicationID: Int64 = 0x4861_726b
    public let path: String
    private let db: SQLiteDatabase

    private init(path: String, db: SQLiteDatabase) {
        self.path = path
        self.db = db
    }

    /// Opens a catalogue to change it, creating it when the file does not exist.
    public static func openForWriting(_ path: String) throws(CatalogueError) -> CampaignCatalogue {
        let exists = FileManager.default.fileExists(atPath: path)
        if exists { try checkHeader(path) }
        let db: SQLiteDatabase
        do { db = try SQLiteDatabase(path: path) } catch { throw .cannotWrite(path, error.message) }
        let catalogue = CampaignCatalogue(path: path, db: db)
        if exists {
            try catalogue.checkSchema()
            if !catalogue.hasAiring || !catalogue.hasSharedSound || !catalogue.hasEmbeddings || !catalogue.hasMarkKeys || !catalogue.hasSlots {
                do {
                    try db.execute("""
                        BEGIN; \(airingTable) \(sharedSoundTable) \(embeddingTable) \(markKeyTable) \(slotTable)
                        PRAGMA user_version = \(formatVersion); COMMIT;
                        """)
                } catch {
                    throw .cannotWrite(path, error.message)
                }
                (catalogue.hasAiring, catalogue.hasSharedSound, catalogue.hasEmbeddings, catalogue.hasMarkKeys) = (true, true, true, true)
                catalogue.hasSlots = true
            }
        } else {
            do {
                try db.execute("""
                    PRAGMA application_id = \(applicationID);
                    PRAGMA user_version = \(formatVersion);
                    CREATE TABLE campaign (
                        payload INTEGER PRIMARY KEY,
                        name TEXT,
                        valid_from TEXT,
                        valid_until TEXT,
                        sound BLOB NOT NULL
                    );
                    \(airingTable)
                    \(sharedSoundTable)
                    \(embeddingTable)
                    \(markKeyTable)
                    \(slotTable)
                    """)
            } catch {
                throw .cannotWrite(path, error.message)
            }
        }
        return catalogue
    }

    /// Every campaign of the catalogue at `path`, each checked whole.
    public static func read(_ path: String) throws(CatalogueError) -> [Campaign] {
        switch openForReading(path) {
        case .success(let catalogue): return try catalogue.campaigns()
        case .failure(let error): throw error
        }
    }

    /// A Result, not a typed throw: a static function that threw `CatalogueError` and returned
    /// the catalogue crashed at its first throw (a missing file) in the debug build of the tests.
    private static func openForReading(_ path: String) -> Result<CampaignCatalogue, CatalogueError> {
        guard FileManager.default.fileExists(atPath: path) else { return .failure(.noSuchFile(path)) }
        do {
            try checkHeader(path)
            let db: SQLiteDatabase
            do { db = try SQLiteDatabase(path: path, readOnly: true) } catch { throw CatalogueError.damaged(path, error.message) }
            let catalogue = CampaignCatalogue(path: path, db: db)
            try catalogue.checkSchema()
            return .success(catalogue)
        } catch let error as CatalogueError {
            return .failure(error)
        } catch {
            return .failure(.damaged(path, "\(error)"))
        }
    }

    /// The catalogue at `path` to listen with: its campaigns, each reading checked whole, and
    /// the readings to be read again from the file as an index asks.
    /// Without `embeddings`, the learned readings are not read (each nil): what does not
    /// listen costs nothing.
    public static func readForListening(_ path: String, embeddings readEmbeddings: Bool = true) throws(CatalogueError) -> ListeningCatalogue {
        let catalogue: CampaignCatalogue
        switch openForReading(path) {
        case .success(let c): catalogue = c
        case .failure(let error): throw error
        }
        do { try catalogue.db.execute("BEGIN") } catch { throw .damaged(path, error.message) }
        let dates: [[SQLiteDatabase.Value]]
        do {
            dates = try catalogue.db.query("SELECT payload, valid_from, valid_until FROM campaign ORDER BY payload")
        } catch {
            throw .damaged(path, error.message)
        }
        var campaigns: [CampaignDates] = []
        for row in dates {
            guard row.count == 3, case .integer(let p) = row[0], (0...Int64(UInt32.max)).contains(p) else {
                throw .damaged(path, "a campaign row is not what this version writes")
            }
            campaigns.append(CampaignDates(payload: WatermarkPayload(UInt32(p)), from: Self.text(row[1]), until: Self.text(row[2])))
        }
        let readings = CatalogueSoundReadings(db: catalogue.db, path: path, payloads: campaigns.map(\.payload))
        // Each checked whole now, one at a time, so that a damaged one refuses the file by name.
        for i in 0..<readings.count {
            let bytes = try readings.bytes(i)
            do { _ = try SoundPrint(bytes: bytes) } catch { throw .damaged(path, "campaign \(campaigns[i].payload.hex): \(error)") }
        }
        let airing = try catalogue.airingCampaigns()
        let embeddings = readEmbeddings ? try catalogue.embeddings() : [:]
        let keys = try catalogue.markKeys()
        return ListeningCatalogue(campaigns: campaigns, readings: readings, airing: airing.filter { a in campaigns.contains { $0.payload == a.campaign } },
                                  sharing: catalogue.keptSharedSound(payloads: campaigns.map(\.payload)),
                                  embeddings: campaigns.map { embeddings[$0.payload] }, keyFingerprints: campaigns.map { keys[$0.payload] })
    }

    /// Every campaign of the catalogue at `path`, each checked whole, with what their creatives
    /// share as the file keeps it (nil: not kept), both read in one transaction.
    public static func readWithSharedSound(_ path: String) throws(CatalogueError) -> (campaigns: [Campaign], sharing: [SharedSound]?) {
        let catalogue: CampaignCatalogue
        switch openForReading(path) {
        case .success(let c): catalogue = c
        case .failure(let error): throw error
        }
        do { try catalogue.db.execute("BEGIN") } catch { throw .damaged(path, error.message) }
        defer { try? catalogue.db.execute("COMMIT") }
        let campaigns = try catalogue.campaigns()
        return (campaigns, catalogue.keptSharedSound(payloads: campaigns.map(\.payload)))
    }

    /// What the creatives of `payloads` (the file's campaigns, in payload order) share, as the
    /// file keeps it; nil when it keeps none or kept it for other campaigns. A row that is not
    /// what this version writes is not an error: what it holds can be found again, and the index
    /// checks what it is given (``SoundIndex/reusedSharing``).
    private func keptSharedSound(payloads: [WatermarkPayload]) -> [SharedSound]? {
        guard hasSharedSound, !payloads.isEmpty,
              let rows = try? db.query("SELECT payload, related, landmarks FROM shared_sound ORDER BY payload"),
              rows.count == payloads.count
        else { return nil }
        var place: [WatermarkPayload: Int32] = [:]
        for (i, p) in payloads.enumerated() { place[p] = Int32(i) }
        var out: [SharedSound] = []
        out.reserveCapacity(rows.count)
        for (i, row) in rows.enumerated() {
            guard row.count == 3, case .integer(let p) = row[0], p == Int64(payloads[i].value),
                  case .blob(let related) = row[1], case .blob(let landmarks) = row[2],
                  related.count % 4 == 0, landmarks.count % 4 == 0
            else { return nil }
            var places: [Int32] = []
            for r in Self.words(related) {
                guard let at = place[WatermarkPayload(r)] else { return nil }
                places.append(at)
            }
            out.append(SharedSound(related: places, landmarks: Self.words(landmarks).map { Int32(bitPattern: $0) }))
        }
        return out
    }

    /// 4-byte little-endian words (a whole number of them).
    private static func words(_ bytes: [UInt8]) -> [UInt32] {
        var out = [UInt32](repeating: 0, count: bytes.count / 4)
        for i in out.indices {
            var w: UInt32 = 0
            for b in 0..<4 { w |= UInt32(bytes[4 * i + b]) << UInt32(8 * b) }
            out[i] = w
        }
        return out
    }

    private static func bytes(_ words: [UInt32]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(4 * words.count)
        for w in words { for b in 0..<4 { out.append(UInt8(truncatingIfNeeded: w >> UInt32(8 * b))) } }
        return out
    }

    /// Finds what the creatives share (the search a ``SoundIndex`` makes when it is built) and
    /// keeps it in the file, so that whoever listens with the file skips that search: most of
    /// the time a catalogue takes to load. Every change of the campaigns drops what was kept,
    /// so `hark` calls this after each; a file without it is read all the same, only slower.
    public func keepSharedSound() throws(CatalogueError) {
        // One write transaction from the read to the last row: what is kept is what was read,
        // whatever another writer does meanwhile.
        do { try db.execute("BEGIN IMMEDIATE") } catch { throw .cannotWrite(path, error.message) }
        let rows: [Row]
        do throws(CatalogueError) {
            rows = try self.rows()
            for row in rows {
                do { _ = try SoundPrint(bytes: row.sound) } catch { throw .damaged(path, "campaign \(row.payload.hex): \(error)") }
            }
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
        let sharing = SoundIndex(readings: EncodedReadings(encoded: rows.map(\.sound)), keepSharing: true).sharing ?? []
        do {
            try db.execute("DELETE FROM shared_sound")
            for (row, s) in zip(rows, sharing) {
                try db.query("INSERT INTO shared_sound (payload, related, landmarks) VALUES (?, ?, ?)",
                             [.integer(Int64(row.payload.value)), .blob(Self.bytes(s.related.map { rows[Int($0)].payload.value })),
                              .blob(Self.bytes(s.landmarks.map { UInt32(bitPattern: $0) }))])
            }
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw .cannotWrite(path, error.message)
        }
    }

    /// The fingerprint of the key each creative was marked with, by payload.
    private func markKeys() throws(CatalogueError) -> [WatermarkPayload: String] {
        guard hasMarkKeys else { return [:] }
        let rows: [[SQLiteDatabase.Value]]
        do { rows = try db.query("SELECT payload, fingerprint FROM mark_key ORDER BY payload") } catch { throw .damaged(path, error.message) }
        var out: [WatermarkPayload: String] = [:]
        for row in rows {
            guard row.count == 2, case .integer(let p) = row[0], (0...Int64(UInt32.max)).contains(p), case .text(let f) = row[1],
                  f.count == 8, f.allSatisfy(\.isHexDigit)
            else { throw .damaged(path, "a mark key row is not what this version writes") }
            out[WatermarkPayload(UInt32(p))] = f
        }
        return out
    }

    /// Every creative's learned reading, by payload, each checked whole.
    private func embeddings() throws(CatalogueError) -> [WatermarkPayload: CreativeEmbeddings] {
        guard hasEmbeddings else { return [:] }
        let rows: [[SQLiteDatabase.Value]]
        do { rows = try db.query("SELECT payload, model, dimensions, vectors FROM embedding ORDER BY payload") } catch {
            throw .damaged(path, error.message)
        }
        var out: [WatermarkPayload: CreativeEmbeddings] = [:]
        for row in rows {
            guard row.count == 4, case .integer(let p) = row[0], (0...Int64(UInt32.max)).contains(p), case .text(let model) = row[1],
                  case .integer(let dims) = row[2], (1...4096).contains(dims), case .blob(let bytes) = row[3]
            else { throw .damaged(path, "an embedding row is not what this version writes") }
            do { out[WatermarkPayload(UInt32(p))] = try CreativeEmbeddings(model: model, dimensions: Int(dims), bytes: bytes) } catch {
                throw .damaged(path, "campaign \(WatermarkPayload(UInt32(p)).hex): \(error)")
            }
        }
        return out
    }

    /// The campaigns with airing keys, by payload.
    private func airingCampaigns() throws(CatalogueError) -> [AiringCampaign] {
        guard hasAiring else { return [] }
        let rows: [[SQLiteDatabase.Value]]
        do { rows = try db.query("SELECT payload, airing_key, channels FROM airing ORDER BY payload") } catch { throw .damaged(path, error.message) }
        var out: [AiringCampaign] = []
        for row in rows {
            guard row.count == 3, case .integer(let p) = row[0], (0...Int64(UInt32.max)).contains(p), case .blob(let key) = row[1],
                  case .text(let list) = row[2], let channels = Self.channels(list), let airingKey = try? AiringKey(bytes: key)
            else { throw .damaged(path, "an airing row is not what this version writes") }
            out.append(AiringCampaign(campaign: WatermarkPayload(UInt32(p)), key: airingKey, channels: channels))
        }
        let slots = try airingSlots()
        for i in out.indices { out[i].slots = (slots[out[i].campaign] ?? []).sorted { $0.from < $1.from } }
        return out
    }

    /// Each channel's tolerance (``AiringSlot/tolerance``), where one was set.
    public func channelTolerances() throws(CatalogueError) -> [UInt16: Double] {
        guard hasSlots else { return [:] }
        let rows: [[SQLiteDatabase.Value]]
        do { rows = try db.query("SELECT channel, tolerance FROM airing_channel ORDER BY channel") } catch { throw .damaged(path, error.message) }
        var out: [UInt16: Double] = [:]
        for row in rows {
            guard row.count == 2, case .integer(let c) = row[0], let channel = UInt16(exactly: c), case .real(let t) = row[1],
                  (0...AiringSlot.maxTolerance).contains(t)
            else { throw .damaged(path, "an airing channel row is not what this version writes") }
            out[channel] = t
        }
        return out
    }

    /// The airing slots, by campaign, each with its channel's tolerance.
    private func airingSlots() throws(CatalogueError) -> [WatermarkPayload: [AiringSlot]] {
        guard hasSlots else { return [:] }
        let tolerances = try channelTolerances()
        let rows: [[SQLiteDatabase.Value]]
        do { rows = try db.query("SELECT payload, channel, starts, ends FROM airing_slot ORDER BY payload, starts") } catch {
            throw .damaged(path, error.message)
        }
        var out: [WatermarkPayload: [AiringSlot]] = [:]
        for row in rows {
            guard row.count == 4, case .integer(let p) = row[0], (0...Int64(UInt32.max)).contains(p), case .integer(let c) = row[1],
                  let channel = UInt16(exactly: c), case .integer(let from) = row[2], case .integer(let until) = row[3],
                  from >= 0, until >= from
            else { throw .damaged(path, "an airing slot row is not what this version writes") }
            out[WatermarkPayload(UInt32(p)), default: []].append(
                AiringSlot(channel: channel, from: Double(from), until: Double(until), tolerance: tolerances[channel] ?? AiringSlot.defaultTolerance))
        }
        return out
    }

    /// Adds slots of a broadcaster's log, each for a campaign the catalogue holds (a slot of the
    /// same campaign, channel and start is replaced), and sets the tolerance of the channels
    /// in `tolerances`; with `replacing`, every slot kept before goes first. All or nothing.
    public func addSlots(_ slots: [(campaign: WatermarkPayload, slot: AiringSlot)], tolerances: [UInt16: Double],
                         replacing: Bool = false) throws(CatalogueError) {
        do {
            try db.execute("BEGIN")
            if replacing { try db.execute("DELETE FROM airing_slot") }
            for (campaign, slot) in slots {
                try db.query("INSERT OR REPLACE INTO airing_slot (payload, channel, starts, ends) VALUES (?, ?, ?, ?)",
                             [.integer(Int64(campaign.value)), .integer(Int64(slot.channel)),
                              .integer(Int64(slot.from.rounded(.down))), .integer(Int64(slot.until.rounded(.up)))])
            }
            for (channel, tolerance) in tolerances.sorted(by: { $0.key < $1.key }) {
                try db.query("INSERT OR REPLACE INTO airing_channel (channel, tolerance) VALUES (?, ?)",
                             [.integer(Int64(channel)), .real(tolerance)])
            }
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw .cannotWrite(path, error.message)
        }
    }

    /// Channels as the file holds them: numbers 0–65535 separated by commas, at least one.
    public static func channels(_ text: String) -> [UInt16]? {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        let values = parts.compactMap { UInt16(String($0.filter { $0 != " " })) }
        guard !values.isEmpty, values.count == parts.count else { return nil }
        var seen = Set<UInt16>()
        return values.filter { seen.insert($0).inserted }
    }

    /// Adds a campaign, replacing one with the same payload (its airing key too).
    public func add(_ c: Campaign) throws(CatalogueError) {
        precondition(c.airing.map { $0.campaign == c.payload } ?? true, "the airing campaign is the campaign's")
        let p = SQLiteDatabase.Value.integer(Int64(c.payload.value))
        do {
            try db.execute("BEGIN")
            try db.query("INSERT OR REPLACE INTO campaign (payload, name, valid_from, valid_until, sound) VALUES (?, ?, ?, ?, ?)",
                         [p, c.name.map { .text($0) } ?? .null, c.from.map { .text($0) } ?? .null,
                          c.until.map { .text($0) } ?? .null, .blob(c.sound.bytes)])
            try db.query("DELETE FROM airing WHERE payload = ?", [p])
            // What the creatives share is pairwise: any change leaves none of it true.
            try db.execute("DELETE FROM shared_sound")
            if let a = c.airing {
                try db.query("INSERT INTO airing (payload, airing_key, channels) VALUES (?, ?, ?)",
                             [p, .blob(a.key.bytes), .text(a.channels.map(String.init).joined(separator: ","))])
            }
            try db.query("DELETE FROM mark_key WHERE payload = ?", [p])
            if let f = c.keyFingerprint {
                try db.query("INSERT INTO mark_key (payload, fingerprint) VALUES (?, ?)", [p, .text(f)])
            }
            try db.query("DELETE FROM embedding WHERE payload = ?", [p])
            if let e = c.embeddings {
                try db.query("INSERT INTO embedding (payload, model, dimensions, vectors) VALUES (?, ?, ?, ?)",
                             [p, .text(e.model), .integer(Int64(e.dimensions)), .blob(e.bytes)])
            }
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw .cannotWrite(path, error.message)
        }
    }

    /// Removes a campaign; false when the catalogue did not hold it.
    public func remove(_ payload: WatermarkPayload) throws(CatalogueError) -> Bool {
        do {
            try db.execute("BEGIN")
            try db.query("DELETE FROM airing WHERE payload = ?", [.integer(Int64(payload.value))])
            if hasSlots { try db.query("DELETE FROM airing_slot WHERE payload = ?", [.integer(Int64(payload.value))]) }
            if hasEmbeddings { try db.query("DELETE FROM embedding WHERE payload = ?", [.integer(Int64(payload.value))]) }
            if hasMarkKeys { try db.query("DELETE FROM mark_key WHERE payload = ?", [.integer(Int64(payload.value))]) }
            try db.query("DELETE FROM campaign WHERE payload = ?", [.integer(Int64(payload.value))])
            let removed = db.changes > 0
            if removed { try db.execute("DELETE FROM shared_sound") }
            try db.execute("COMMIT")
            return removed
        } catch {
            try? db.execute("ROLLBACK")
            throw .cannotWrite(path, error.message)
        }
    }

    /// The campaigns, by payload.
    public func campaigns() throws(CatalogueError) -> [Campaign] {
        var out: [Campaign] = []
        let airing = try airingCampaigns()
        let embeddings = try embeddings()
        let keys = try markKeys()
        for row in try rows() {
            do {
                out.append(Campaign(payload: row.payload, name: row.name, from: row.from, until: row.until, sound: try SoundPrint(bytes: row.sound),
                                    airing: airing.first { $0.campaign == row.payload }, embeddings: embeddings[row.payload],
                                    keyFingerprint: keys[row.payload]))
            } catch {
                throw .damaged(path, "campaign \(row.payload.hex): \(error)")
            }
        }
        return out
    }

    /// A campaign row, its reading as the file holds it.
    private typealias Row = (payload: WatermarkPayload, name: String?, from: String?, until: String?, sound: [UInt8])

    /// The rows, by payload.
    private func rows() throws(CatalogueError) -> [Row] {
        let rows: [[SQLiteDatabase.Value]]
        do {
            rows = try db.query("SELECT payload, name, valid_from, valid_until, sound FROM campaign ORDER BY payload")
        } catch {
            throw .damaged(path, error.message)
        }
        var out: [Row] = []
        for row in rows {
            guard row.count == 5, case .integer(let p) = row[0], (0...Int64(UInt32.max)).contains(p), case .blob(let bytes) = row[4] else {
                throw .damaged(path, "a campaign row is not what this version writes")
            }
            out.append((WatermarkPayload(UInt32(p)), Self.text(row[1]), Self.text(row[2]), Self.text(row[3]), bytes))
        }
        return out
    }

    private static func text(_ v: SQLiteDatabase.Value) -> String? { if case .text(let t) = v { return t } else { return nil } }

    /// Whether `bytes` begin as every SQLite database does (a catalogue, or some other program's).
    public static func hasSQLiteHeader<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        bytes.starts(with: "SQLite format 3\0".utf8)
    }

    /// SQLite's own header, read before SQLite is asked to open the file: SQLite would take a
    /// text file for an empty database and write over it.
    private static func checkHeader(_ path: String) throws(CatalogueError) {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw .notACatalogue(path, "cannot be read: " + String(cString: strerror(errno))) }
        defer { Glibc.close(fd) }
        var head = [UInt8](repeating: 0, count: 100)
        let n = head.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, 100) }
        guard n > 0 else { throw .notACatalogue(path, "empty file") }
        guard n == 100, hasSQLiteHeader(head) else {
            throw .notACatalogue(path, "not a SQLite database")
        }
    }

    private func checkSchema() throws(CatalogueError) {
        let application: Int64?, version: Int64?, check: [[SQLiteDatabase.Value]]
        do {
            application = try db.integer("PRAGMA application_id")
            version = try db.integer("PRAGMA user_version")
        } catch {
            throw .damaged(path, error.message)
        }
        guard application == Self.applicationID else { throw .notACatalogue(path, "a SQLite database of another program") }
        guard let version, version <= Self.formatVersion else { throw .newerVersion(path, found: version ?? 0) }
        guard version >= Self.oldestVersion else { throw .damaged(path, "format version \(version)") }
        hasAiring = version >= 2
        hasSharedSound = version >= 3
        hasEmbeddings = version >= 4
        hasMarkKeys = version >= 5
        hasSlots = version >= 6
        do { check = try db.query("PRAGMA quick_check") } catch { throw .damaged(path, error.message) }
        guard check == [[.text("ok")]] else {
            if case .text(let why)? = check.first?.first { throw .damaged(path, why) }
            throw .damaged(path, "integrity check failed")
        }
    }
}
