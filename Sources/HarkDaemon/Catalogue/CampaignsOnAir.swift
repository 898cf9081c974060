import FoundationEssentials
import HarkCatalogue
import HarkDSP
import HarkEngine
import HarkSystem

/// The campaigns harkd listens for, from the catalogue file named by the `catalogue` setting:
/// what it last read whole, what of it is on air today, and why the last read failed, if it did.
///
/// A catalogue that cannot be read (missing, truncated, foreign, of a newer version) never
/// replaces one that could: harkd logs it, shows it in `status` and keeps listening for the
/// campaigns it had. Value type; the ``Daemon`` keeps it behind a lock.
struct CampaignsOnAir {
    private(set) var path: String?
    /// Every campaign of the file, by its payload and dates; their sound lives in `index`.
    private(set) var campaigns: [CampaignDates] = []
    /// The file's campaigns whose marks carry airing codes.
    private(set) var airing: [AiringCampaign] = []
    /// Those of them on air today: heard by their codes, never by their payload.
    private(set) var airingOnAir: [AiringCampaign] = []
    private(set) var error: String?
    /// The day (UTC) ``search`` was chosen for.
    private(set) var day = ""
    /// The campaigns on air that day whose marks carry their payload, for the mark.
    private(set) var payloadsOnAir: [WatermarkPayload] = []
    /// The campaigns' sound for the pipeline, those off air set aside (nil: no catalogue, or
    /// none on air).
    private(set) var search: AnalysisPipeline.SoundSearch?
    /// Every campaign's sound, indexed once when the file is read: the readings themselves are
    /// not kept (100 creatives' readings take about 5 MB encoded and 18 MB decoded, their index
    /// about 9), and a new day changes only which of the index's creatives are listened for.
    private var index: SoundIndex?
    /// Every campaign's learned reading that this build's network made (nil: none).
    private var embeddings: EmbeddingIndex?
    /// Whether the landmarks listen too (`sound-reading` is not `learned`, or no creative has a
    /// learned reading).
    private var landmarks = true

    /// Reads `path` (nil: no catalogue) for `today`; returns a line for the log.
    /// With `key`, the line also says how many campaigns were marked with another key.
    mutating func load(_ path: String?, reading: SoundReadingChoice = .standard, key: WatermarkKey? = nil,
                       today: String = Campaign.today()) -> String? {
        guard let path else {
            let had = self.path
            self = CampaignsOnAir()
            return had.map { "catalogue \($0) no longer configured: listening for marks alone" }
        }
        do {
            let (read, built, keyed, learned, fingerprints) = try Self.index(path, learned: reading != .landmarks)
            (self.path, error, day) = (path, nil, "")
            campaigns = read
            airing = keyed
            index = built
            embeddings = learned.index
            landmarks = reading != .learned || learned.index == nil
            // What building the index freed (its scaffolding, the file's pages) goes back to the
            // system before the pipeline that listens with it allocates its own: glibc keeps it
            // in its arenas otherwise, and harkd's peak of memory was the two together. And again
            // once that pipeline is started, for what starting it freed.
            HeapTrim.now()
            HeapTrim.soon()
            choose(today: today)
            let other = learned.otherModel > 0
                ? "; \(learned.otherModel) read by another build's sound embedder, heard by their landmarks alone" : ""
            let otherKey = key.flatMap { MarkKeyCheck.otherKey(fingerprints, key: $0, catalogue: path) }.map { "; " + $0.line } ?? ""
            return "catalogue \(path): \(read.count) campaign(s), \(payloadsOnAir.count) on air today" + other + otherKey
        } catch {
            self.error = "\(error)"
            if self.path != path || campaigns.isEmpty {
                return "\(error); listening for \(campaigns.isEmpty ? "marks alone" : "the campaigns of \(self.path ?? "")")"
            }
            return "\(error); still listening for the \(payloadsOnAir.count) campaign(s) read before"
        }
    }

    /// The campaigns of the catalogue at `path` and the index of their sound (nil: none), the
    /// file closed when this returns. Without `learned`, neither the learned readings nor the
    /// network are loaded: building an index only to drop it raised harkd's peak by the index
    /// and kept the network for good.
    private static func index(_ path: String, learned: Bool) throws
        -> ([CampaignDates], SoundIndex?, [AiringCampaign], (index: EmbeddingIndex?, otherModel: Int), [String?]) {
        let read = try CampaignCatalogue.readForListening(path, embeddings: learned)
        guard read.campaigns.count <= WatermarkDetector.maxCatalogue else {
            throw CatalogueError.damaged(path, "\(read.campaigns.count) campaigns; harkd listens for at most \(WatermarkDetector.maxCatalogue)")
        }
        let codes = read.campaigns.count + AiringSchedule(campaigns: read.airing).codesPerMinute
        guard codes <= WatermarkDetector.maxPayloads else {
            throw CatalogueError.damaged(path, "\(codes) payloads and airing codes a minute; harkd listens for at most \(WatermarkDetector.maxPayloads)")
        }
        // Read from the file one creative at a time as the index is built.
        let index = read.campaigns.isEmpty ? nil : SoundIndex(readings: read.readings, sharing: read.sharing)
        if let failure = read.readings.failure { throw failure }
        return (read.campaigns, index, read.airing, learned ? EmbeddingIndex.forCatalogue(read.embeddings) : (nil, 0), read.keyFingerprints)
    }

    /// Picks the campaigns on air on `today`; returns whether that changed what is listened for.
    @discardableResult
    mutating func choose(today: String) -> Bool {
        guard today != day else { return false }
        day = today
        let onAir = campaigns.indices.filter { campaigns[$0].isOnAir(on: today) }
        let before = (payloadsOnAir, airingOnAir)
        let keyed = Set(airing.map(\.campaign))
        payloadsOnAir = onAir.map { campaigns[$0].payload }.filter { !keyed.contains($0) }
        // Their slots of today and of the days either side (a month's log holds thousands of
        // rows a campaign; a capture's clock and a channel's delay never reach past a day).
        let midnight = UTCTime.parse(today + "T00:00Z") ?? 0
        airingOnAir = airing.filter { a in onAir.contains { campaigns[$0].payload == a.campaign } }.map { a in
            var near = a
            near.slots = a.slots.filter { $0.until >= midnight - 86_400 && $0.from < midnight + 2 * 86_400 }
            return near
        }
        search = onAir.isEmpty ? nil : index.map {
            var s = AnalysisPipeline.SoundSearch(index: $0, payloads: campaigns.map(\.payload),
                                                 offAir: Set(campaigns.indices).subtracting(onAir), embeddings: embeddings)
            s.landmarks = landmarks
            return s
        }
        return before.0 != payloadsOnAir || before.1 != airingOnAir
    }
}
