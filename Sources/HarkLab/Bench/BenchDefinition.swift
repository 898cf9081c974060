import FoundationEssentials
import Glibc
import HarkDSP
import HarkEngine
import HarkSimulation

/// The watermark robustness bench, as defined in `signals/watermark-bench.json`.
public struct BenchDefinition: Codable, Sendable {
    public struct Host: Codable, Sendable {
        public var name: String
        /// speech, music, pink, sparse-speech
        public var kind: String
        public var count: Int
    }

    public struct Target: Codable, Sendable {
        public var window: Double
        public var rate: Double
        public var medianSeconds: Double?
    }

    public struct Condition: Codable, Sendable {
        public var name: String
        public var codec: String?
        public var rate: Int?
        public var speaker: [Double]?
        public var rt60: Double?
        public var distance: Double?
        public var volume: Double?
        /// Alternated across trials.
        public var noise: [String]?
        public var snr: Double?
        public var mic: [Double]?
        /// Alternated across trials.
        public var driftPPM: [Double]?
        public var gain: Double?
        public var clip: Bool?
        /// Detect with a catalogue of this many payloads (the marked one and others drawn at
        /// random) instead of decoding any payload.
        public var catalogue: Int?
        /// Also read each of this condition's windows with catalogues of these sizes: a row each
        /// ("…, catalogue of N"), on the same windows as the condition's own row, so that rows
        /// differ by the catalogue alone and not by the trials' draw.
        public var alsoCatalogues: [Int]?
        /// Also read each window by the creative's own sound, with a catalogue of this many
        /// creatives (the marked host as aired and decoys): a row for the sound alone
        /// ("…: sound") and one for either witness ("…: mark or sound", the mark read with the
        /// condition's own catalogue).
        public var sound: Int?
        /// Also read each window by the creative's learned reading (with ``sound``): a row for it
        /// alone ("…: learned sound") and one for the one pipeline with the mark and both
        /// readings ("…: mark or sound, learned beside landmarks").
        public var learned: Bool?
        /// Also read each window by the creative's sound at its known place (with ``sound``): a
        /// row for what the sound's confirmations would name if the search always found the
        /// creative's alignment (``WatermarkBench/ceiling(_:rate:index:payload:offset:)``).
        public var soundCeiling: Bool?
        /// Also air each host as a campaign whose marks carry airing codes, its airing in the
        /// catalogue's slots (with ``learned``): a row for what answers a shake when it aired in
        /// its slot ("…: airing-coded, in its slot"), beside the condition's own campaign, whose
        /// every detection does, and one for the same audio replayed a day later, which must
        /// never answer ("…: airing-coded, replayed a day later").
        public var airingSlots: Bool?
        /// Air each host without its mark: an unmarked copy of the creative, which the sound
        /// catalogue still holds as aired. The mark rows then count mark detections of the
        /// creative's payload that must not be there; the sound rows, its sound heard.
        public var unmarked: Bool?
        /// Air only each host's music bed, without its voice-over (hosts of kind "song-advert"):
        /// a campaign's licensed song playing on its own. Every row then counts windows that name
        /// the campaign, which the catalogue holds with its voice-over.
        public var bedAlone: Bool?
        /// Mark the host with the crowd as a masker (``EmbedOptions/ambient``): the condition's
        /// noise file at the level the path gives it against the programme, plus this many dB
        /// (what the quietest seats hear of it, re where the bench listens).
        public var ambientMasker: Double?
        /// Read one window of each length from the host's first sample, not windows at random
        /// offsets: a cue heard within so many seconds of its start.
        public var fromStart: Bool?
        /// The band the hosts are marked in and detected with (default tv).
        public var profile: WatermarkProfile?
        var watermarkProfile: WatermarkProfile { profile ?? .tv }
        public var target: Target?
    }

    public struct FalsePositives: Codable, Sendable {
        public var minutesPerKind: Double
        public var kinds: [String]
        /// Also scan the unmarked audio with a catalogue of this many random payloads.
        public var catalogue: Int?
        /// Also listen to the unmarked audio for a sound catalogue of this many creatives (the
        /// bench's decoys, none of them in that audio).
        public var sound: Int?
        /// Listen to it by the learned reading alone for the decoys' embeddings (a catalogue of
        /// this many): the calibration of ``EmbeddingTuning/threshold``.
        public var learned: Int?
        /// Creatives listened for beside the `learned` decoys, made as a bench's hosts are with
        /// the same seed: the bench's own creatives, whose kinds (a voice alone, a voice over
        /// music) the decoys may not hold. The learned reading listens for them, and so do the
        /// landmarks on the same audio.
        public var learnedCreatives: [Host]?
    }

    public var seed: UInt64
    /// Embedding strength, dB re the masking threshold (the default strength when absent).
    public var strength: Double?
    public var hostSeconds: Double
    public var hosts: [Host]
    public var payloadsPerHost: Int
    public var windows: [Double]
    public var offsetsPerWindow: Int
    public var conditions: [Condition]
    public var falsePositives: FalsePositives
    /// The recorded music the "track" host kinds are cut from (``RealTracks``), a path from
    /// where the bench runs.
    public var tracks: String?
    /// The kinds the sound catalogue's decoys are made of, in turn (default: other songs,
    /// voice-overs, solo lines, drums and noise made by the project's generators).
    public var decoyKinds: [String]?

    public static func load(path: String) throws -> BenchDefinition {
        try DefinitionsFile.load(BenchDefinition.self, path: path)
    }

    /// A smaller run for a quick look: one host of each kind, fewer offsets, 10 minutes of
    /// unmarked audio.
    public var quick: BenchDefinition {
        var d = self
        d.hosts = hosts.map { var h = $0; h.count = 1; return h }
        d.payloadsPerHost = 1
        d.offsetsPerWindow = 4
        d.falsePositives.minutesPerKind = 2.5
        return d
    }

    /// A table row's source: a condition, read with its own catalogue or one of
    /// ``Condition/alsoCatalogues``.
    struct Reading {
        /// `anchor` is audfprint's answer on the same window (``AudfprintAnchor``).
        /// `either` is the one pipeline with both witnesses (each alone, and the mark confirmed
        /// where the sound places the creative); `markEvidence` its detections that carry the mark;
        /// `soundCeiling` the sound's confirmations read at the creative's known place.
        /// `slotFresh` and `slotReplay` count what answers a shake (``ShakePolicy``) of an
        /// airing-coded campaign aired in its slot, and of the same audio a day later.
        enum Witness { case mark, sound, either, markEvidence, anchor, soundCeiling, learned, learnedEither, slotFresh, slotReplay }
        var name: String
        var catalogue: Int?
        var target: Target?
        var witness = Witness.mark
    }

    /// Every condition's readings, in table order: its own, then its other catalogues', each
    /// named as the condition with its own catalogue's size replaced, or with the size added;
    /// with `anchor`, audfprint's row after each condition's sound rows.
    func readings(anchor: Bool = false) -> [[Reading]] {
        conditions.map { c in
            let own = c.catalogue.map { "catalogue of \($0)" }
            return [Reading(name: c.name, catalogue: c.catalogue, target: c.target)]
                + (c.alsoCatalogues ?? []).map { size in
                    let name = own.flatMap { c.name.contains($0) ? c.name.replacing($0, with: "catalogue of \(size)") : nil }
                    return Reading(name: name ?? "\(c.name), catalogue of \(size)", catalogue: size)
                }
                + (c.sound.map { size in
                    [Reading(name: "\(c.name): sound, \(size) creatives", catalogue: size, target: c.target, witness: .sound),
                     Reading(name: "\(c.name): mark or sound", catalogue: c.catalogue, target: c.target, witness: .either),
                     Reading(name: "\(c.name): mark, by search or at the sound's place", catalogue: c.catalogue, witness: .markEvidence)]
                    + (c.learned == true ? [Reading(name: "\(c.name): learned sound, \(size) creatives", catalogue: size, target: c.target, witness: .learned),
                                            Reading(name: "\(c.name): mark or sound, learned beside landmarks", catalogue: c.catalogue, target: c.target,
                                                    witness: .learnedEither)] : [])
                    + (c.learned == true && c.airingSlots == true
                        ? [Reading(name: "\(c.name): airing-coded, in its slot (answers a shake)", catalogue: c.catalogue, target: c.target, witness: .slotFresh),
                           Reading(name: "\(c.name): airing-coded, replayed a day later (answers a shake)", catalogue: c.catalogue, witness: .slotReplay)]
                        : [])
                    + (c.soundCeiling == true ? [Reading(name: "\(c.name): sound at its known place (ceiling)", catalogue: size, witness: .soundCeiling)] : [])
                    + (anchor ? [Reading(name: "\(c.name): audfprint, \(size) creatives", catalogue: size, witness: .anchor)] : [])
                } ?? [])
        }
    }

    func path(for condition: Condition, trial: Int) -> AcousticPath {
        var p = AcousticPath()
        p.codec = condition.codec
        p.rate = condition.rate
        if let s = condition.speaker, s.count == 2 { p.speaker = s[0]...s[1] }
        p.rt60 = condition.rt60
        if let d = condition.distance { p.distance = d }
        if let v = condition.volume { p.volume = v }
        if let kinds = condition.noise, !kinds.isEmpty {
            let k = kinds[trial % kinds.count]
            p.noise = ["pink": .pink, "white": .white, "babble": .babble, "crowd": .crowd][k] ?? .file(k)
        }
        if let s = condition.snr { p.snr = s }
        if let m = condition.mic, m.count == 2 { p.mic = m[0]...m[1] }
        if let d = condition.driftPPM, !d.isEmpty { p.driftPPM = d[trial % d.count] }
        if let g = condition.gain { p.gain = g }
        p.clip = condition.clip ?? false
        p.seed = seed &+ UInt64(trial)
        return p
    }
}
