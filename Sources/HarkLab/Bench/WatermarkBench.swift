import FoundationEssentials
import Glibc
import HarkDSP
import HarkEngine
import HarkSoundFile
import HarkSystem
import HarkSimulation

/// One line of the bench table: a condition at one window length.
public struct BenchRow: Sendable {
    public var condition: String
    public var window: Double
    public var trials: Int
    public var detected: Int
    public var wrong: Int
    /// Median over all trials of the time to detect (undetected count as never); nil when fewer
    /// than half were detected.
    public var medianSeconds: Double?
    public var target: BenchDefinition.Target?
    /// Detected and trials per host, in definition order.
    public var byHost: [(host: String, detected: Int, trials: Int)] = []

    public var rate: Double { trials > 0 ? Double(detected) / Double(trials) : 0 }
    /// Whether this row is the one a target applies to, and whether it is met.
    public var targetMet: Bool? {
        guard let t = target, t.window == window else { return nil }
        if wrong > 0 || rate < t.rate { return false }
        if let m = t.medianSeconds { return (medianSeconds ?? .infinity) <= m }
        return true
    }
}

/// The unmarked audio read by the detectors of one profile.
public struct UnmarkedCheck: Sendable {
    public var profile: WatermarkProfile
    public var hours = 0.0
    public var falseDetections = 0
    /// Highest score of a decoded codeword (CRC or not).
    public var highestScore = 0.0
    /// The same with a catalogue detector (when the definition asks for one).
    public var catalogueSize: Int?
    public var catalogueFalseDetections = 0
    public var catalogueHighestScore = 0.0
    /// The same with a sound catalogue (when the definition asks for one): creatives named,
    /// and the most votes any creative gathered at one alignment.
    public var soundSize: Int?
    public var soundFalseDetections = 0
    public var soundHighestVotes = 0
    public var soundHighestEvidence = -Double.infinity
    public var soundHighestCombined = -Double.infinity
    public var soundHighestFollowing = -Double.infinity
    /// The mark confirmed at the sound's leads on the same audio (``WatermarkDetector/confirm(_:creativeStart:)``),
    /// and the highest score a confirmation reached.
    public var confirmations = 0
    public var highestConfirmation = -Double.infinity
}

/// The unmarked audio read by the learned reading alone, listening for a catalogue of `size`
/// creatives (the bench's decoys): creatives named, the most evidence at one alignment, and
/// each minute's most, for the threshold's tail fit (docs/calibration.md).
public struct LearnedUnmarkedCheck: Sendable {
    public var size: Int
    public var hours = 0.0
    public var falseDetections = 0
    public var highest = 0.0
    /// Each minute's most evidence and the creative that held it.
    public var minuteMaxima: [(kind: String, evidence: Double, creative: String)] = []
    /// The creatives listened for, by name, in the index's order.
    public var creatives: [String] = []
    public var highestCreative = ""
    /// With ``BenchDefinition/FalsePositives/learnedCreatives``: the landmarks on the same
    /// audio for the same creatives (named, the most votes at one alignment, peak evidence,
    /// peaks and envelopes together, envelopes following).
    public var landmarks: (named: Int, votes: Int, peaks: Double, combined: Double, following: Double)?
}

public struct BenchReport: Sendable {
    public var rows: [BenchRow] = []
    /// One per profile the conditions use.
    public var unmarked: [UnmarkedCheck] = []
    public var learnedUnmarked: LearnedUnmarkedCheck?
    public var wrongKeyWindows = 0
    public var wrongKeyDetections = 0
    public var ratioRange = (Double.infinity, -Double.infinity)
    public var worstBand = -Double.infinity
    public var seconds = 0.0
    /// The host and noise files read, and a digest of their samples (``BenchHosts/digest()``).
    public var hostFiles = 0
    public var hostDigest: UInt64 = 0
    /// What made the hosts' speech and the codecs' round trips: the first line each of
    /// `espeak-ng --version` and `ffmpeg -version`, when installed.
    public var tools: [String] = []
}

/// `hark-lab bench watermark`: embeds random payloads into every host, passes each marked host
/// through every condition's acoustic path, and runs a fresh detector over windows of each
/// length at random offsets. Reports detection rate, wrong payloads and median time to detect
/// per condition and window; then false detections over unmarked audio and with a wrong key.
public enum WatermarkBench {
    /// Why the bench cannot run as defined.
    public enum Failure: Error, CustomStringConvertible, Equatable {
        case codecUnavailable(condition: String, codec: String)
        public var description: String {
            switch self {
            case .codecUnavailable(let condition, let codec):
                return "the condition '\(condition)' passes the audio through \(codec), which needs ffmpeg, and ffmpeg is not installed (apt-get install ffmpeg; tools/bench-watermark installs it)"
            }
        }
    }

    /// Refuses a definition that needs a program this machine lacks. Without ffmpeg a path's
    /// codec is skipped (`hark simulate` says so and goes on), and a bench row would then report
    /// under the codec's name what the path did without it.
    static func checkTools(_ d: BenchDefinition, find: (String) -> String? = Simulation.findExecutable) throws {
        if let c = d.conditions.first(where: { $0.codec != nil }), find("ffmpeg") == nil {
            throw Failure.codecUnavailable(condition: c.name, codec: c.codec!)
        }
    }

    public static func run(_ d: BenchDefinition, workDirectory: String, log: (String) -> Void) throws -> BenchReport {
        try checkTools(d)
        let started = Date()
        let hosts = try BenchHosts(directory: workDirectory + "/hosts", tracks: try d.tracks.map { try RealTracks(path: $0) })
        // One network for the whole bench: what harkd and hark run.
        let learning = d.conditions.contains { $0.learned == true } || d.falsePositives.learned != nil
        let embedder = learning ? try SoundEmbedder() : nil
        var rng = SplitMix64(seed: d.seed)
        var report = BenchReport()
        let profiles = WatermarkProfile.allCases.filter { p in d.conditions.contains { $0.watermarkProfile == p } }
        // Noise files made of real synthetic speech, used for "babble" and "crowd" (made only
        // when a condition uses them: they need espeak-ng).
        let noises = Set(d.conditions.flatMap { $0.noise ?? [] })
        let babble = noises.contains("babble") ? try hosts.file(kind: "babble", index: 0, seconds: 60, seed: d.seed &+ 100) : ""
        let crowd = noises.contains("crowd") ? try hosts.file(kind: "crowd", index: 0, seconds: 60, seed: d.seed &+ 200) : ""
        // Talkers who are none of the hosts' or decoys' voices or words, for the sound readings.
        let talk = noises.contains("talk") ? try hosts.file(kind: "talk", index: 0, seconds: 60, seed: d.seed &+ 300) : ""
        // The creatives a sound catalogue holds beside the trial's own: other hosts' readings.
        let soundSize = (d.conditions.compactMap(\.sound) + [d.falsePositives.sound ?? 0, d.falsePositives.learned ?? 0]).max() ?? 0
        let anchor = soundSize > 0 ? try AudfprintAnchor() : nil
        // A table row per reading: a condition with its own catalogue, or another it is also read with.
        let readings = d.readings(anchor: anchor != nil)
        let rowCount = readings.reduce(0) { $0 + $1.count }
        // results[row][window] = (detected, wrong, times); perHost[row][window][host] = (detected, trials)
        var results = [[(Int, Int, [Double])]](repeating: [(Int, Int, [Double])](repeating: (0, 0, []), count: d.windows.count),
                                               count: rowCount)
        var perHost = [[[(Int, Int)]]](repeating: [[(Int, Int)]](repeating: [(Int, Int)](repeating: (0, 0), count: d.hosts.count),
                                                                   count: d.windows.count), count: rowCount)
        let (decoyFiles, decoys) = try decoyPrints(count: max(0, soundSize - 1), hosts: hosts, seconds: d.hostSeconds, seed: d.seed,
                                                   kinds: d.decoyKinds, log: log)
        let decoyEmbeddings = try embedder.map { e in try decoyFiles.map { try Self.embeddings(of: $0, embedder: e) } } ?? []
        // audfprint's database of the decoys, to which each trial adds its creative as aired.
        let anchorDirectory = workDirectory + "/audfprint"
        let anchorDecoys = anchorDirectory + "/decoys.pklz"
        if let anchor {
            try? FileManager.default.removeItem(atPath: anchorDirectory)
            try FileManager.default.createDirectory(atPath: anchorDirectory, withIntermediateDirectories: true)
            log("audfprint: a database of \(decoyFiles.count) decoys")
            try anchor.build(database: anchorDecoys, files: decoyFiles)
        }
        // An airing-coded campaign's key (the trials draw their own payloads and mark keys).
        let slotsAsked = d.conditions.contains { $0.airingSlots == true && $0.learned == true }
        // Drawn apart from `rng`, whose draws make the other rows' trials.
        var keyDraw = SplitMix64(seed: d.seed ^ 0xA1A1)
        let airingKey = try AiringKey(bytes: (0..<32).map { _ in UInt8(truncatingIfNeeded: keyDraw.next()) })
        var trial = 0
        for (hi, host) in d.hosts.enumerated() {
            for index in 0..<host.count {
                let hostPath = try hosts.file(kind: host.kind, index: index, seconds: d.hostSeconds, seed: d.seed &* 31 &+ UInt64(index))
                for _ in 0..<d.payloadsPerHost {
                    let payload = WatermarkPayload(UInt32(truncatingIfNeeded: rng.next()))
                    let key = WatermarkKey(text: "bench-\(rng.next() % 1000)")
                    // The host marked in each profile the conditions use.
                    var marked: [WatermarkProfile: String] = [:]
                    for profile in profiles {
                        let path = workDirectory + "/marked-\(profile.rawValue).wav"
                        let e = try Embedding.embed(input: hostPath, output: path,
                                                    options: EmbedOptions(payload: payload, key: key,
                                                                          strength: d.strength,
                                                                          profile: profile))
                        report.ratioRange = (min(report.ratioRange.0, e.ratio), max(report.ratioRange.1, e.ratio))
                        report.worstBand = max(report.worstBand, e.worstBand.ratio)
                        log("\(host.name) \(index + 1), payload \(payload.hex), \(profile.rawValue): watermark \(String(cFormat: "%.1f", e.ratio)) dB")
                        marked[profile] = path
                    }
                    // The host as an airing-coded campaign's creative, aired on channel 7 from
                    // `airedAt`: its copies carry that minute's codes.
                    var coded: [WatermarkProfile: String] = [:]
                    if slotsAsked {
                        for profile in profiles {
                            let path = workDirectory + "/coded-\(profile.rawValue).wav"
                            _ = try Embedding.embed(input: hostPath, output: path,
                                                    options: EmbedOptions(payload: payload, key: key, strength: d.strength, profile: profile,
                                                                          airing: .init(key: airingKey, channel: 7, startUTC: Self.airedAt)))
                            coded[profile] = path
                        }
                    }
                    // The creative as it leaves the embedder, as a catalogue would hold it.
                    var aired: [WatermarkProfile: [Int: SoundIndex]] = [:]
                    var airedEmbeddings: [WatermarkProfile: [Int: EmbeddingIndex]] = [:]
                    if soundSize > 0 {
                        for (profile, path) in marked {
                            let (x, rate) = try readMono(path)
                            let own = try x.withUnsafeBufferPointer { try SoundPrint.read($0, sampleRate: rate) }
                            let ownEmbeddings = try embedder.map { try Self.embeddings(of: path, embedder: $0) }
                            for size in Set(d.conditions.compactMap(\.sound)) {
                                aired[profile, default: [:]][size] = SoundIndex(prints: [own] + decoys.prefix(max(0, size - 1)))
                                if let ownEmbeddings, let embedder {
                                    airedEmbeddings[profile, default: [:]][size] = try EmbeddingIndex(
                                        embeddings: [ownEmbeddings] + decoyEmbeddings.prefix(max(0, size - 1)), model: embedder.model.digest)
                                }
                            }
                        }
                    }
                    // audfprint's windows of this trial (row, window, file), matched at its end.
                    var anchorQueries: [(row: Int, window: Int, file: String)] = []
                    var firstRow = 0
                    for (ci, condition) in d.conditions.enumerated() {
                        defer { firstRow += readings[ci].count }
                        let profile = condition.watermarkProfile
                        var path = d.path(for: condition, trial: trial)
                        if path.noise == .babble { path.noise = .file(babble) }
                        if path.noise == .crowd { path.noise = .file(crowd) }
                        if path.noise == .file("talk") { path.noise = .file(talk) }
                        let received = workDirectory + "/received.wav"
                        var played = condition.bedAlone == true
                            ? try hosts.bed(of: host.kind, index: index, seconds: d.hostSeconds, seed: d.seed &* 31 &+ UInt64(index))
                            : condition.unmarked == true ? hostPath : marked[profile]!
                        if let offset = condition.ambientMasker, case .file(let noise)? = path.noise {
                            // The crowd as the embedder's masker: at the level the path will give
                            // it against this programme, plus the offset.
                            let gain = 20 * log10(try Self.rms(hostPath) / Self.rms(noise)) - path.snr + offset
                            played = workDirectory + "/marked-ambient.wav"
                            _ = try Embedding.embed(input: hostPath, output: played,
                                                    options: EmbedOptions(payload: payload, key: key, strength: d.strength, profile: profile,
                                                                          ambient: EmbedOptions.Ambient(path: noise, gain: gain)))
                        }
                        _ = try Simulation.run(input: played, output: received, path: path)
                        let (y, rate) = try readMono(received)
                        // The airing-coded creative through the same path (its seeds are the trial's).
                        var codedY: [Float] = []
                        if condition.airingSlots == true, condition.learned == true, let codedPath = coded[profile] {
                            let codedReceived = workDirectory + "/received-coded.wav"
                            _ = try Simulation.run(input: codedPath, output: codedReceived, path: path)
                            codedY = try readMono(codedReceived).0
                        }
                        for (wi, window) in d.windows.enumerated() {
                            let length = Int(window * rate)
                            guard y.count > length else { continue }
                            for _ in 0..<(condition.fromStart == true ? 1 : d.offsetsPerWindow) {
                                let offset = condition.fromStart == true ? 0 : Int(rng.nextUniform() * Double(y.count - length))
                                let windowSamples = y[offset..<(offset + length)]
                                var marks: [Int?: [WatermarkDetection]] = [:]
                                func mark(_ size: Int?) throws -> [WatermarkDetection] {
                                    if let found = marks[size] { return found }
                                    let catalogue = size.map { Self.catalogue(size: $0, containing: payload) }
                                    let found = try detect(windowSamples, rate: rate, key: key, profile: profile, catalogue: catalogue)
                                    marks[size] = found
                                    return found
                                }
                                var heard: [WatermarkDetection]?
                                func sound() throws -> [WatermarkDetection] {
                                    if let heard { return heard }
                                    let found = try Self.hear(windowSamples, rate: rate, index: aired[profile]![condition.sound!]!, payload: payload)
                                    heard = found
                                    return found
                                }
                                var fusedFound: [WatermarkDetection]?
                                func fused() throws -> [WatermarkDetection] {
                                    if let fusedFound { return fusedFound }
                                    let catalogue = condition.catalogue.map { Self.catalogue(size: $0, containing: payload) }
                                    let found = try Self.listen(windowSamples, rate: rate, key: key, profile: profile, catalogue: catalogue,
                                                                index: aired[profile]![condition.sound!]!,
                                                                payloads: Self.soundPayloads(condition.sound!, trial: payload))
                                    fusedFound = found
                                    return found
                                }
                                var learnedFound: [WatermarkDetection]?
                                func learnedSound() throws -> [WatermarkDetection] {
                                    if let learnedFound { return learnedFound }
                                    let found = Self.hearLearned(windowSamples, rate: rate, index: airedEmbeddings[profile]![condition.sound!]!,
                                                                 embedder: embedder!, payload: payload)
                                    learnedFound = found
                                    return found
                                }
                                func learnedFused() throws -> [WatermarkDetection] {
                                    let catalogue = condition.catalogue.map { Self.catalogue(size: $0, containing: payload) }
                                    return try Self.listen(windowSamples, rate: rate, key: key, profile: profile, catalogue: catalogue,
                                                           index: aired[profile]![condition.sound!]!,
                                                           payloads: Self.soundPayloads(condition.sound!, trial: payload),
                                                           embeddings: airedEmbeddings[profile]![condition.sound!]!)
                                }
                                // The airing-coded campaign as harkd would hear it with the window's UTC time:
                                // the catalogue's other campaigns by payload, this one by its codes and its
                                // slot (the creative started at `airedAt`). Its sound reading is the static
                                // creative's: a mark 25 dB under it changes none of it, and no catalogue holds
                                // an airing-coded creative as every minute aired it. Only what answers counts.
                                func slotted(replayedAfter later: Double) throws -> [WatermarkDetection] {
                                    let catalogue = condition.catalogue.map { Self.catalogue(size: max(1, $0 - 1), containing: nil, seed: UInt64(payload.value)) } ?? []
                                    let slot = AiringSlot(channel: 7, from: Self.airedAt, until: Self.airedAt)
                                    let campaign = AiringCampaign(campaign: payload, key: airingKey, channels: [7], slots: [slot])
                                    let listening = AnalysisPipeline.AiringListening(schedule: AiringSchedule(campaigns: [campaign]),
                                                                                     startUTC: Self.airedAt + Double(offset) / rate + later)
                                    let found = try Self.listen(codedY[offset..<(offset + length)], rate: rate, key: key, profile: profile,
                                                                catalogue: catalogue, index: aired[profile]![condition.sound!]!,
                                                                payloads: Self.soundPayloads(condition.sound!, trial: payload),
                                                                embeddings: airedEmbeddings[profile]![condition.sound!]!, airing: listening)
                                    return found.filter { $0.payload != payload || ShakePolicy.answers($0) }
                                }
                                for (k, reading) in readings[ci].enumerated() {
                                    let row = firstRow + k
                                    let found: [WatermarkDetection]
                                    switch reading.witness {
                                    case .slotFresh: found = try slotted(replayedAfter: 0)
                                    case .slotReplay: found = try slotted(replayedAfter: 86_400)
                                    case .mark: found = try mark(reading.catalogue)
                                    case .sound: found = try sound()
                                    case .either: found = try fused()
                                    case .learned: found = try learnedSound()
                                    case .learnedEither: found = try learnedFused()
                                    case .markEvidence: found = try fused().filter(\.markHeard)
                                    case .soundCeiling:
                                        found = try Self.ceiling(windowSamples, rate: rate, index: aired[profile]![condition.sound!]!,
                                                                 payload: payload, offset: offset,
                                                                 log: { log("\(host.name) \(condition.name): \($0)") })
                                    case .anchor:
                                        let file = anchorDirectory + "/window-\(anchorQueries.count).wav"
                                        try BenchHosts.writeMono(windowSamples, rate: rate, to: file)
                                        anchorQueries.append((row, wi, file))
                                        continue
                                    }
                                    perHost[row][wi][hi].1 += 1
                                    if let hit = found.first(where: { $0.payload == payload }) {
                                        results[row][wi].0 += 1
                                        results[row][wi].2.append(hit.time)
                                        perHost[row][wi][hi].0 += 1
                                    } else {
                                        results[row][wi].2.append(.infinity)
                                    }
                                    if found.contains(where: { $0.payload != payload }) { results[row][wi].1 += 1 }
                                }
                            }
                        }
                        if ci == 0 {
                            // Key separation: the clean marked file through a detector with another key.
                            let other = WatermarkKey(text: "not-" + String(decoding: key.bytes, as: UTF8.self))
                            report.wrongKeyWindows += 1
                            report.wrongKeyDetections += try detect(y[...], rate: rate, key: other, profile: profile).count
                        }
                    }
                    if let anchor, !anchorQueries.isEmpty {
                        // The trial's creative as aired (the profile its conditions use) beside the decoys.
                        let aired = anchorDirectory + "/creative-\(trial).wav"
                        try? FileManager.default.removeItem(atPath: aired)
                        try FileManager.default.copyItem(atPath: marked[d.conditions.first { $0.sound != nil }!.watermarkProfile]!, toPath: aired)
                        let database = anchorDirectory + "/trial.pklz"
                        try anchor.extend(anchorDecoys, with: [aired], as: database)
                        let named = try anchor.match(database: database, queries: anchorQueries.map(\.file))
                        for q in anchorQueries {
                            let name = named[q.file]!
                            perHost[q.row][q.window][hi].1 += 1
                            // audfprint reads a whole file: no time to detect.
                            results[q.row][q.window].2.append(name == aired ? 0 : .infinity)
                            if name == aired {
                                results[q.row][q.window].0 += 1
                                perHost[q.row][q.window][hi].0 += 1
                            } else if name != nil {
                                results[q.row][q.window].1 += 1
                            }
                            try? FileManager.default.removeItem(atPath: q.file)
                        }
                        log("audfprint, trial \(trial + 1): \(named.values.filter { $0 == aired }.count) of \(named.count) windows named the creative")
                    }
                    trial += 1
                }
            }
        }
        for (row, reading) in readings.joined().enumerated() {
            for (wi, window) in d.windows.enumerated() {
                let (detected, wrong, times) = results[row][wi]
                let sorted = times.sorted()
                let median = sorted.isEmpty || reading.witness == .anchor ? nil : sorted[sorted.count / 2]
                report.rows.append(BenchRow(condition: reading.name, window: window, trials: times.count, detected: detected,
                                            wrong: wrong, medianSeconds: median?.isFinite == true ? median : nil,
                                            target: reading.target,
                                            byHost: d.hosts.enumerated().map { (hi, h) in (h.name, perHost[row][wi][hi].0, perHost[row][wi][hi].1) }))
            }
        }
        // False detections: long stretches of unmarked audio, read continuously, by the
        // detectors of every profile the conditions use.
        report.unmarked = profiles.map { UnmarkedCheck(profile: $0, catalogueSize: d.falsePositives.catalogue, soundSize: d.falsePositives.sound) }
        // The bench's own creatives, cut as its trials cut them, join the decoys listened for.
        let creativeFiles = try (d.falsePositives.learnedCreatives ?? []).flatMap { h in
            try (0..<h.count).map { i in try hosts.file(kind: h.kind, index: i, seconds: d.hostSeconds, seed: d.seed &* 31 &+ UInt64(i)) }
        }
        let creativeEmbeddings = try creativeFiles.map { try Self.embeddings(of: $0, embedder: embedder!) }
        let unmarkedEmbeddings = try d.falsePositives.learned.map { size in
            try EmbeddingIndex(embeddings: creativeEmbeddings + decoyEmbeddings.prefix(size), model: embedder!.model.digest)
        }
        let unmarkedIndex = d.falsePositives.sound.map { SoundIndex(prints: Array(decoys.prefix($0))) }
        let landmarkIndex = creativeFiles.isEmpty ? nil : try d.falsePositives.learned.map { size in
            SoundIndex(prints: try creativeFiles.map(Self.soundPrint) + decoys.prefix(size))
        }
        report.learnedUnmarked = d.falsePositives.learned.map { size in
            var check = LearnedUnmarkedCheck(size: creativeFiles.count + min(size, decoyFiles.count))
            check.creatives = (creativeFiles + decoyFiles.prefix(size)).map { URL(fileURLWithPath: $0).deletingPathExtension().lastPathComponent }
            return check
        }
        for (k, kind) in d.falsePositives.kinds.enumerated() {
            // The calibration tracks are read whole, once: hours of recorded music no other use reads.
            let seconds = kind == "track-calibration" ? try hosts.calibrationSeconds() : d.falsePositives.minutesPerKind * 60
            let path = try hosts.file(kind: kind, index: 99, seconds: seconds, seed: d.seed &+ 500 &+ UInt64(k))
            let (y, rate) = try readMono(path)
            if let index = unmarkedEmbeddings, let embedder, var check = report.learnedUnmarked {
                let matcher = EmbeddingMatcher(index: index, sampleRate: rate, embedder: embedder)
                var minuteMost = 0.0, minuteLeader = -1, minuteEnd = 60.0, named = 0
                var news = AiringMemory(repeatInterval: AiringMemory.standardInterval)
                inBlocks(y[...]) { block in
                    named += matcher.process(block).filter { news.isNews(WatermarkDetection(sound: $0, payload: WatermarkPayload(UInt32($0.reference)))) }.count
                    if matcher.recentEvidence > minuteMost { (minuteMost, minuteLeader) = (matcher.recentEvidence, matcher.recentLeader) }
                    if matcher.time >= minuteEnd {
                        check.minuteMaxima.append((kind, minuteMost, minuteLeader >= 0 ? check.creatives[minuteLeader] : ""))
                        if minuteMost > check.highest { (check.highest, check.highestCreative) = (minuteMost, check.minuteMaxima.last!.creative) }
                        (minuteMost, minuteLeader, minuteEnd) = (0, -1, minuteEnd + 60)
                    }
                }
                check.falseDetections += named
                check.highest = max(check.highest, matcher.highestEvidence)
                if let landmarkIndex {
                    let heard = try Self.listenByLandmarks(y[...], rate: rate, index: landmarkIndex)
                    let before = check.landmarks ?? (0, 0, -.infinity, -.infinity, -.infinity)
                    check.landmarks = (before.named + heard.named, max(before.votes, heard.votes), max(before.peaks, heard.peaks),
                                       max(before.combined, heard.combined), max(before.following, heard.following))
                    log("unmarked \(kind), landmarks for the same creatives: \(heard.named) named, the most votes \(heard.votes)")
                }
                check.hours += Double(y.count) / rate / 3600
                report.learnedUnmarked = check
                log(String(cFormat: "unmarked %@, %.0f min, learned reading: %d named, highest evidence %.2f",
                           kind, Double(y.count) / rate / 60, named, matcher.highestEvidence))
            }
            for i in report.unmarked.indices {
                let format = WatermarkFormat(key: WatermarkKey(text: "bench-unmarked"), profile: report.unmarked[i].profile)
                let detector = try WatermarkDetector(format: format, sampleRate: rate)
                let found = feed(detector, y[...])
                report.unmarked[i].falseDetections += found.count
                report.unmarked[i].highestScore = max(report.unmarked[i].highestScore, detector.highestDecodedScore)
                let catalogue = d.falsePositives.catalogue.map { Self.catalogue(size: $0, containing: nil, seed: d.seed &+ UInt64(k)) }
                if let catalogue, unmarkedIndex == nil || i > 0 {
                    let c = try WatermarkDetector(format: format, sampleRate: rate, catalogue: catalogue)
                    report.unmarked[i].catalogueFalseDetections += feed(c, y[...]).count
                    report.unmarked[i].catalogueHighestScore = max(report.unmarked[i].catalogueHighestScore, c.highestDecodedScore)
                }
                if let index = unmarkedIndex, i == 0 {
                    // The sound reading does not depend on the profile: read once, in the one
                    // pipeline with the mark's catalogue search and the confirmations at the
                    // sound's leads (each decoy given a payload of its own).
                    let payloads = Self.catalogue(size: index.creatives, containing: nil, seed: d.seed &+ 77 &+ UInt64(k))
                    let heard = try listenUnmarked(y[...], rate: rate, index: index, payloads: payloads, format: format, catalogue: catalogue)
                    report.unmarked[i].soundFalseDetections += heard.named
                    report.unmarked[i].confirmations += heard.confirmations
                    report.unmarked[i].highestConfirmation = max(report.unmarked[i].highestConfirmation, heard.highestConfirmation)
                    if catalogue != nil {
                        report.unmarked[i].catalogueFalseDetections += heard.marks
                        report.unmarked[i].catalogueHighestScore = max(report.unmarked[i].catalogueHighestScore, heard.highestMark)
                    }
                    report.unmarked[i].soundHighestVotes = max(report.unmarked[i].soundHighestVotes, heard.votes)
                    report.unmarked[i].soundHighestEvidence = max(report.unmarked[i].soundHighestEvidence, heard.peaks)
                    report.unmarked[i].soundHighestCombined = max(report.unmarked[i].soundHighestCombined, heard.combined)
                    report.unmarked[i].soundHighestFollowing = max(report.unmarked[i].soundHighestFollowing, heard.following)
                }
                report.unmarked[i].hours += Double(y.count) / rate / 3600
                log("unmarked \(kind), \(Int(d.falsePositives.minutesPerKind)) min, \(report.unmarked[i].profile.rawValue): \(found.count) detections")
            }
        }
        if let u = report.learnedUnmarked, !u.minuteMaxima.isEmpty {
            // Each minute's most evidence, for the calibration's tail fit (docs/calibration.md).
            let path = workDirectory + "/learned-unmarked-minutes.tsv"
            let text = "kind\tevidence\tcreative\n"
                + u.minuteMaxima.map { "\($0.kind)\t" + String(cFormat: "%.3f", $0.evidence) + "\t\($0.creative)" }.joined(separator: "\n") + "\n"
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            log("each minute's most learned evidence: \(path)")
        }
        (report.hostFiles, report.hostDigest) = try hosts.digest()
        report.tools = toolVersions()
        report.seconds = Date().timeIntervalSince(started)
        return report
    }

    /// Sound readings of `count` creatives that are not the bench's hosts: hosts of every kind
    /// made with seeds of their own.
    /// Their files too.
    static func decoyPrints(count: Int, hosts: BenchHosts, seconds: Double, seed: UInt64, kinds: [String]? = nil,
                            log: (String) -> Void) throws -> ([String], [SoundPrint]) {
        guard count > 0 else { return ([], []) }
        let kinds = kinds ?? ["song", "decoy-speech", "song-advert", "decoy-sparse-speech", "pink", "flute", "piano", "drums"]
        log("sound readings of \(count) decoy creatives")
        let paths = try (0..<count).map { i in
            try hosts.file(kind: kinds[i % kinds.count], index: 500 + i, seconds: seconds, seed: seed &+ 9_000 &+ UInt64(i))
        }
        return (paths, try paths.map(soundPrint))
    }

    /// A file's landmark reading, as a catalogue would hold it.
    static func soundPrint(of path: String) throws -> SoundPrint {
        let (x, rate) = try readMono(path)
        return try x.withUnsafeBufferPointer { try SoundPrint.read($0, sampleRate: rate) }
    }


    /// The payloads of a sound catalogue of `size`: the trial's creative (reference 0) carries its
    /// payload, each decoy one that is not it (so a decoy named counts as a wrong payload).
    static func soundPayloads(_ size: Int, trial payload: WatermarkPayload) -> [WatermarkPayload] {
        (0..<size).map { $0 == 0 ? payload : WatermarkPayload(payload.value ^ UInt32($0)) }
    }

    /// A window read by the one pipeline with both witnesses: the mark's search (with
    /// `catalogue`), the creatives' sound, and the mark confirmed where the sound places them.
    static func listen(_ y: ArraySlice<Float>, rate: Double, key: WatermarkKey, profile: WatermarkProfile,
                       catalogue: [WatermarkPayload]?, index: SoundIndex, payloads: [WatermarkPayload],
                       embeddings: EmbeddingIndex? = nil, airing: AnalysisPipeline.AiringListening? = nil) throws -> [WatermarkDetection] {
        let pipeline = try witnesses(rate: rate, key: key, profile: profile, catalogue: catalogue, index: index, payloads: payloads,
                                     embeddings: embeddings, airing: airing)
        var found: [WatermarkDetection] = []
        try inBlocks(y) { block in
            try pipeline.process(block) { if case .detection(let d) = $0 { found.append(d) } }
        }
        return found
    }

    static func witnesses(rate: Double, key: WatermarkKey, profile: WatermarkProfile, catalogue: [WatermarkPayload]?,
                          index: SoundIndex, payloads: [WatermarkPayload], embeddings: EmbeddingIndex? = nil,
                          airing: AnalysisPipeline.AiringListening? = nil) throws -> AnalysisPipeline {
        var settings = AnalysisPipeline.Settings(sampleRate: rate)
        settings.meter = false
        settings.bands = false
        settings.watermark = .init(key: key, profile: profile, catalogue: catalogue, airing: airing)
        settings.sound = .init(index: index, payloads: payloads, embeddings: embeddings)
        return try AnalysisPipeline(settings)
    }

    /// The creatives a window's sound names, as detections: the trial's own creative carries its
    /// payload, a decoy a payload that is not it (so a decoy named counts as a wrong payload).
    static func hear(_ y: ArraySlice<Float>, rate: Double, index: SoundIndex, payload: WatermarkPayload) throws -> [WatermarkDetection] {
        let matcher = try SoundMatcher(index: index, sampleRate: rate)
        let payloads = soundPayloads(index.creatives, trial: payload)
        var found: [WatermarkDetection] = []
        inBlocks(y) { block in
            for m in matcher.process(block) { found.append(WatermarkDetection(sound: m, payload: payloads[m.reference])) }
        }
        return news(found)
    }

    /// The creatives a window's learned reading names (``hear(_:rate:index:payload:)``'s payloads).
    static func hearLearned(_ y: ArraySlice<Float>, rate: Double, index: EmbeddingIndex, embedder: SoundEmbedder,
                            payload: WatermarkPayload) -> [WatermarkDetection] {
        let matcher = EmbeddingMatcher(index: index, sampleRate: rate, embedder: embedder)
        let payloads = soundPayloads(index.creatives, trial: payload)
        var found: [WatermarkDetection] = []
        inBlocks(y) { block in
            for m in matcher.process(block) { found.append(WatermarkDetection(sound: m, payload: payloads[m.reference])) }
        }
        return news(found)
    }

    /// What a listener is told of `found`, an analyser's every confirmation: each airing once,
    /// as the pipeline's last stage says (``AiringMemory``), so that the bench counts airings.
    static func news(_ found: [WatermarkDetection]) -> [WatermarkDetection] {
        var memory = AiringMemory(repeatInterval: AiringMemory.standardInterval)
        return found.filter { memory.isNews($0) }
    }

    /// A recording's learned reading, as `hark catalogue add` makes it.
    static func embeddings(of path: String, embedder: SoundEmbedder) throws -> CreativeEmbeddings {
        let (x, rate) = try readMono(path)
        return x.withUnsafeBufferPointer { CreativeEmbeddings(reading: $0, sampleRate: rate, embedder: embedder) }
    }

    /// What the sound's confirmations would name if the search always found the creative's
    /// alignment: the window fed to a matcher as ``hear(_:rate:index:payload:)`` does, and every
    /// half second of input each of the matcher's tests (votes spread, peaks, peaks and
    /// envelopes, envelopes following) read at the place the trial put the creative, whether or
    /// not its votes made it a candidate or another creative rivals it. The place is known to
    /// within the path's delay: of the alignments from 3 frames before it to 10 after, the one
    /// with the most votes, as the matcher reads a creative at its most voted alignment (reading
    /// every one of the 14 and keeping the best named music at SNR 10 dB in 21 of 48 windows of
    /// 6 s where this names 12: that is a search of its own). The same for four decoys
    /// (references 1–4) at the same alignments is what the rule names where the creative is not,
    /// reported as wrong payloads.
    /// `offset` is where the window starts in the received audio, whose sample 0 is the
    /// creative's.
    static func ceiling(_ y: ArraySlice<Float>, rate: Double, index: SoundIndex, payload: WatermarkPayload,
                        offset: Int, log: (String) -> Void) throws -> [WatermarkDetection] {
        let matcher = try SoundMatcher(index: index, sampleRate: rate)
        let payloads = soundPayloads(index.creatives, trial: payload)
        let hop = (SpectralPeakPicker.hopDuration * rate).rounded()
        let expected = Int((-Double(offset) / hop).rounded())
        let references = [0] + Array(1..<min(5, index.creatives))
        var found: [WatermarkDetection] = []
        var named = Set<Int>()
        var namedBy = ""
        var consumed = 0
        var nextReading = 0.5
        var best = (combined: -Double.infinity, peaks: -Double.infinity, envelopes: -Double.infinity, rho: -Double.infinity, votes: 0)
        func read(at time: Double) {
            for r in references where !named.contains(r) {
                // The place the votes favour near where the trial put it, as the matcher reads a
                // creative at its most voted alignment (ties to the path's usual delay, 2 frames).
                let around = (expected - 3)...(expected + 10)
                let place = around.map { (a: $0, votes: matcher.spreadVotes(reference: r, alignment: $0).votes) }
                    .max { ($0.votes, -abs($0.a - expected - 2)) < ($1.votes, -abs($1.a - expected - 2)) }!
                // Standing alone is the search's question (which of the creative's places), not
                // the place's: taken as answered.
                let e = matcher.evidence(reference: r, alignment: place.a, votes: place.votes, standsAlone: true)
                if r == 0 {
                    best = (max(best.combined, e.combined), max(best.peaks, e.peaks.trimmed), max(best.envelopes, e.envelopes.trimmed),
                            max(best.rho, e.envelopes.rho), max(best.votes, e.votes))
                }
                let paths = e.tests(matcher.tuning, combinedLimit: matcher.combinedLimit).map(\.rawValue)
                guard !paths.isEmpty else { continue }
                named.insert(r)
                if r == 0 { namedBy = paths.joined(separator: "+") }
                found.append(WatermarkDetection(payload: payloads[r], time: time, start: time,
                                                sound: WatermarkDetection.Sound(votes: place.votes), windowStart: 0))
            }
        }
        inBlocks(y) { block in
            _ = matcher.process(block)
            consumed += block.count
            if Double(consumed) / rate >= nextReading {
                read(at: Double(consumed) / rate)
                nextReading += 0.5
            }
        }
        read(at: Double(consumed) / rate)
        log(String(cFormat: "ceiling: %.0f s, best at the creative's place: votes %d, peaks %.1f, envelopes %.1f, together %.1f, following %.2f; named ",
                    Double(consumed) / rate, best.votes, best.peaks, best.envelopes, best.combined, best.rho)
             + named.sorted().map(String.init).joined(separator: ",") + (namedBy.isEmpty ? "" : " (the creative by \(namedBy))"))
        return found
    }

    /// Creatives named in unmarked audio, the most votes any gathered at one alignment,
    /// and the most evidence any candidate reached (``SoundMatcher/highestPeakEvidence``,
    /// ``SoundMatcher/highestCombinedEvidence``, ``SoundMatcher/highestFollowing``); read in the
    /// one pipeline with the mark's search (with `catalogue`, if any), whose detections and
    /// highest score it also gives, and the confirmations of the mark at the sound's leads.
    static func listenUnmarked(_ y: ArraySlice<Float>, rate: Double, index: SoundIndex, payloads: [WatermarkPayload],
                               format: WatermarkFormat, catalogue: [WatermarkPayload]?) throws
        -> (named: Int, votes: Int, peaks: Double, combined: Double, following: Double,
            marks: Int, highestMark: Double, confirmations: Int, highestConfirmation: Double) {
        let pipeline = try witnesses(rate: rate, key: format.key, profile: format.profile, catalogue: catalogue, index: index, payloads: payloads)
        let matcher = pipeline.soundMatcher!, detector = pipeline.watermarkDetector!
        var named = 0, most = 0, marks = 0, confirmations = 0
        try inBlocks(y) { block in
            try pipeline.process(block) { output in
                guard case .detection(let d) = output else { return }
                if d.mark?.confirmedAtSound == true { confirmations += 1 }
                else if d.evidence == .mark { marks += 1 }
                else { named += 1 }
            }
            most = max(most, matcher.bestScores().values.max() ?? 0)
        }
        return (named, most, matcher.highestPeakEvidence, matcher.highestCombinedEvidence, matcher.highestFollowing,
                marks, detector.highestDecodedScore, confirmations, detector.highestConfirmationScore)
    }

    /// Creatives named in unmarked audio by their landmarks alone (each airing once), and the
    /// most each of the matcher's tests reached.
    static func listenByLandmarks(_ y: ArraySlice<Float>, rate: Double, index: SoundIndex) throws
        -> (named: Int, votes: Int, peaks: Double, combined: Double, following: Double) {
        let matcher = try SoundMatcher(index: index, sampleRate: rate)
        var news = AiringMemory(repeatInterval: AiringMemory.standardInterval)
        var named = 0, most = 0
        inBlocks(y) { block in
            named += matcher.process(block).filter { news.isNews(WatermarkDetection(sound: $0, payload: WatermarkPayload(UInt32($0.reference)))) }.count
            most = max(most, matcher.bestScores().values.max() ?? 0)
        }
        return (named, most, matcher.highestPeakEvidence, matcher.highestCombinedEvidence, matcher.highestFollowing)
    }

    static func readMono(_ path: String) throws -> ([Float], Double) {
        let reader = try SoundFileReader(path: path)
        var blocks = MonoBlockReader(reader)
        var out: [Float] = []
        while case let mono = try blocks.next(), !mono.isEmpty { out += mono }
        return (out, Double(reader.sampleRate))
    }

    /// `size` payloads drawn from their own random stream (so that adding a catalogue condition
    /// leaves every other trial as it was), with `payload` among them.
    /// When the airing-coded creatives air (``BenchDefinition/Condition/airingSlots``):
    /// 2026-11-28T20:00:00Z.
    static let airedAt = 1_795_896_000.0

    static func catalogue(size: Int, containing payload: WatermarkPayload?, seed: UInt64 = 0) -> [WatermarkPayload] {
        var rng = SplitMix64(seed: UInt64(payload?.value ?? 0) &* 0x9E37_79B9 &+ seed &+ 7)
        var list = (0..<max(0, size - (payload == nil ? 0 : 1))).map { _ in WatermarkPayload(UInt32(truncatingIfNeeded: rng.next())) }
        if let payload { list.insert(payload, at: Int(rng.next() % UInt64(list.count + 1))) }
        return list
    }

    static func detect(_ y: ArraySlice<Float>, rate: Double, key: WatermarkKey, profile: WatermarkProfile,
                       catalogue: [WatermarkPayload]? = nil) throws -> [WatermarkDetection] {
        feed(try WatermarkDetector(format: WatermarkFormat(key: key, profile: profile), sampleRate: rate, catalogue: catalogue), y)
    }

    /// The RMS of a file's channels' mean.
    static func rms(_ path: String) throws -> Double {
        let (x, _) = try readMono(path)
        return (x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, x.count))).squareRoot()
    }

    /// Pushes `y` through `detector` in 4096-sample blocks, as a capture would; each airing once.
    static func feed(_ detector: WatermarkDetector, _ y: ArraySlice<Float>) -> [WatermarkDetection] {
        var found: [WatermarkDetection] = []
        inBlocks(y) { found += detector.process($0) }
        return news(found)
    }

    /// Hands `y` to `body` in 4096-sample blocks, as a capture would.
    static func inBlocks(_ y: ArraySlice<Float>, _ body: (UnsafeBufferPointer<Float>) throws -> Void) rethrows {
        var i = y.startIndex
        while i < y.endIndex {
            let n = min(4096, y.endIndex - i)
            try y[i..<(i + n)].withUnsafeBufferPointer(body)
            i += n
        }
    }

    /// The results as a Markdown table, with the false-detection and transparency lines.
    public static func table(_ r: BenchReport) -> String {
        var s = "| condition | window | detected | rate | by host | wrong payloads | median time to detect | target |\n"
        s += "|---|---|---|---|---|---|---|---|\n"
        for row in r.rows {
            let median = row.medianSeconds.map { String(cFormat: "%.2f s", $0) } ?? "–"
            var target = ""
            if let t = row.target, t.window == row.window {
                target = String(cFormat: "≥ %.0f %%", t.rate * 100) + (t.medianSeconds.map { String(cFormat: ", median ≤ %.0f s", $0) } ?? "")
                target += row.targetMet == true ? ": met" : ": not met"
            }
            let hosts = row.byHost.map { "\($0.host) \($0.detected)/\($0.trials)" }.joined(separator: ", ")
            s += String(cFormat: "| %@ | %.0f s | %d / %d | %.1f %% | %@ | %d | %@ | %@ |\n",
                        row.condition, row.window, row.detected, row.trials, row.rate * 100, hosts, row.wrong, median, target)
        }
        s += "\n"
        for u in r.unmarked where u.hours > 0 {
            s += String(cFormat: "Unmarked audio, %@ profile: %.2f h, %d false detections; the highest score of any codeword the decoder returned there, valid or not, was %.2f (threshold %.2f).\n",
                        u.profile.rawValue, u.hours, u.falseDetections, u.highestScore, WatermarkDetector.threshold)
            if let size = u.catalogueSize {
                s += String(cFormat: "With a catalogue of %d payloads: %d false detections on the same audio; highest catalogue score %.2f (threshold %.2f).\n",
                            size, u.catalogueFalseDetections, u.catalogueHighestScore, WatermarkDetector.threshold(payloads: Double(size)))
            }
            if let size = u.soundSize {
                s += String(cFormat: "Listening for %d creatives by their sound: %d named on the same audio; the most votes at one alignment %d (threshold %d, spread over more than a second); the most peak evidence %.1f (threshold %.1f), peaks and envelopes together %.1f (threshold %.1f).\n",
                            size, u.soundFalseDetections, u.soundHighestVotes, LandmarkTuning.standard.threshold,
                            u.soundHighestEvidence, LandmarkTuning.standard.peakThreshold, u.soundHighestCombined, LandmarkTuning.standard.combinedThreshold(creatives: size))
                s += String(cFormat: "The mark confirmed where the sound placed its leading candidates: %d confirmations on the same audio; the highest score %.2f (threshold %.2f).\n",
                            u.confirmations, u.highestConfirmation, WatermarkDetector.confirmationThreshold)
                s += String(cFormat: "Of the candidates with %d votes, %.1f times any other alignment's, and peak evidence %.0f, the envelopes followed a creative at most %.2f (threshold %.2f).\n",
                            LandmarkTuning.standard.followVotes, LandmarkTuning.standard.followUniqueness, LandmarkTuning.standard.followPeakEvidence, u.soundHighestFollowing, LandmarkTuning.standard.followThreshold)
            }
        }
        if let u = r.learnedUnmarked, u.hours > 0 {
            s += String(cFormat: "Unmarked audio, %.2f h, listened for %d creatives by the learned reading alone: %d named; the most evidence at one alignment %.2f",
                        u.hours, u.size, u.falseDetections, u.highest)
                + (u.highestCreative.isEmpty ? "" : " (\(u.highestCreative))")
                + String(cFormat: " (threshold %.2f).\n", EmbeddingTuning.standard.threshold(creatives: u.size))
            if let l = u.landmarks {
                s += String(cFormat: "The same audio for the same %d creatives by their landmarks: %d named; the most votes at one alignment %d (threshold %d), peak evidence %.1f (threshold %.1f), peaks and envelopes %.1f (threshold %.1f), envelopes following %.2f (threshold %.2f).\n",
                            u.size, l.named, l.votes, LandmarkTuning.standard.threshold, l.peaks, LandmarkTuning.standard.peakThreshold,
                            l.combined, LandmarkTuning.standard.combinedThreshold(creatives: u.size), l.following, LandmarkTuning.standard.followThreshold)
            }
        }
        // A definitions file with no hosts or no conditions marks nothing (tools use one to make
        // the bench's noise files): no line rather than an empty range read as ±infinity.
        if r.wrongKeyWindows > 0 {
            s += String(cFormat: "Wrong key: %d detections in %d marked files.\n", r.wrongKeyDetections, r.wrongKeyWindows)
        }
        if r.ratioRange.0 <= r.ratioRange.1 {
            s += String(cFormat: "Transparency: watermark %.1f to %.1f dB re host overall; closest 1/3-octave band %.1f dB.\n",
                        r.ratioRange.0, r.ratioRange.1, r.worstBand)
        }
        if r.hostFiles > 0 {
            s += String(cFormat: "Hosts: %d files, samples digest %016llx", r.hostFiles, r.hostDigest)
                + (r.tools.isEmpty ? "" : "; " + r.tools.joined(separator: "; ")) + ".\n"
        }
        s += String(cFormat: "Bench time: %.0f s.\n", r.seconds)
        return s
    }

    /// The first line each of `espeak-ng --version` and `ffmpeg -version` (those installed):
    /// another version speaks other samples and codes other frames under the same cache names.
    static func toolVersions() -> [String] {
        [("espeak-ng", "--version"), ("ffmpeg", "-version")].compactMap { tool, flag in
            guard let path = Simulation.findExecutable(tool), let run = try? Subprocess.run(path, [flag], timeLimit: 10), run.status == 0,
                  let line = String(decoding: run.standardOutput, as: UTF8.self).split(separator: "\n").first else { return nil }
            // ffmpeg's line goes on with its copyright, espeak-ng's with its data's folder.
            let kept = line.split(separator: " Copyright").first.flatMap { $0.split(separator: "  Data at").first } ?? line
            return kept.trimmingWhitespace()
        }
    }
}
