import FoundationEssentials
import HarkCatalogue
import HarkDSP
import HarkEngine

/// The campaigns harkd listens for, from the catalogue file named by the `catalogue` setting:
/// what it last read whole, what of it is on air today, and why the last read failed, if it did.
///
/// A catalogue that cannot be read (missing, truncated, foreign, of a newer version) never
/// replaces one that could: harkd logs it, shows it in `status` and keeps listening for the
/// campaigns it had. Value type; the ``Daemon`` keeps it behind a lock.
struct CampaignsOnAir {
    private(set) var path: String?
    private(set) var campaigns: [Campaign] = []
    private(set) var error: String?
    /// The day (UTC) ``search`` was chosen for.
    private(set) var day = ""
    /// The on-air campaigns' payloads and sound, for the pipeline (nil: no catalogue, or none on air).
    private(set) var search: AnalysisPipeline.SoundSearch?

    /// Reads `path` (nil: no catalogue) for `today`; returns a line for the log.
    mutating func load(_ path: String?, today: String = Campaign.today()) -> String? {
        guard let path else {
            let had = self.path
            self = CampaignsOnAir()
            return had.map { "catalogue \($0) no longer configured: listening for marks alone" }
        }
        do {
            let read = try CampaignCatalogue.read(path)
            guard read.count <= WatermarkDetector.maxCatalogue else {
                throw CatalogueError.damaged(path, "\(read.count) campaigns; harkd listens for at most \(WatermarkDetector.maxCatalogue)")
            }
            (self.path, campaigns, error, day) = (path, read, nil, "")
            choose(today: today)
            return "catalogue \(path): \(read.count) campaign(s), \(search?.payloads.count ?? 0) on air today"
        } catch {
            self.error = "\(error)"
            if self.path != path || campaigns.isEmpty {
                return "\(error); listening for \(campaigns.isEmpty ? "marks alone" : "the campaigns of \(self.path ?? "")")"
            }
            return "\(error); still listening for the \(search?.payloads.count ?? 0) campaign(s) read before"
        }
    }

    /// Picks the campaigns on air on `today`; returns whether that changed what is listened for.
    @discardableResult
    mutating func choose(today: String) -> Bool {
        guard today != day else { return false }
        day = today
        let onAir = campaigns.filter { $0.isOnAir(on: today) }
        let before = search?.payloads
        // harkd's sessions need every confirmation (repeat interval 0), as for the mark.
        search = onAir.isEmpty ? nil : AnalysisPipeline.SoundSearch(index: SoundIndex(prints: onAir.map(\.sound)),
                                                                    payloads: onAir.map(\.payload), repeatInterval: 0)
        return before != search?.payloads
    }
}
