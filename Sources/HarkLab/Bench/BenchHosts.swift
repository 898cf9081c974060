import FoundationEssentials
import Glibc
import HarkDSP
import HarkEngine
import HarkSoundFile
import HarkSynthesis
import HarkSimulation

/// Host and noise recordings for the benches, generated once into a work folder: speech from
/// espeak-ng (several voices, speeds and texts, with pauses of digital silence), a music-like
/// signal, pink noise, a quiet room with sparse phrases, solo flute and solo piano lines (with a
/// room tone at −80 dBFS),
/// percussive music (drums and bass), an advert (speech over a music bed 10 dB under it), and
/// babble (6 voices) and crowd (30 voices over pink noise) made of the same synthetic speech.
/// For the sound reading's bench, creatives that are none of those: other songs ("song", their
/// style drawn from the seed), voice-overs with other words ("decoy-speech", "song-advert",
/// "decoy-sparse-speech"), and talkers in other voices saying other words again ("talk").
public struct BenchHosts {
    public enum Failure: Error, CustomStringConvertible {
        case espeakMissing
        case espeakFailed(String)
        case noBed(String)
        case noTracks(String)
        public var description: String {
            switch self {
            case .espeakMissing: return "espeak-ng is not installed (apt-get install espeak-ng); the bench needs it for speech hosts"
            case .espeakFailed(let m): return "espeak-ng failed: \(m)"
            case .noBed(let kind): return "hosts of kind '\(kind)' have no music bed to air alone (bedAlone needs kind 'song-advert' or 'track-advert')"
            case .noTracks(let kind): return "hosts of kind '\(kind)' are cut from recorded music: the definitions need \"tracks\" (signals/real-audio-tracks.tsv)"
            }
        }
    }

    static let rate = 48_000.0
    static let texts = [
        "The quick brown fox jumps over the lazy dog while the evening news reports on the weather across the country.",
        "Tonight only, every shake of your phone during the match could win you tickets to the final, so keep watching.",
        "In other news, the city council has approved a new plan for public transport that will add three new lines by next year.",
        "Scientists have discovered that the ocean currents are changing faster than expected, with consequences for the climate.",
        "Welcome back to the show. Our next guest has travelled around the world twice on a bicycle and written four books about it.",
        "Please remember that the last train leaves at midnight and that tickets must be validated before boarding the carriage.",
        "Buy one, get one free on every pizza this weekend at your local store, while stocks last and terms apply.",
        "The home team scored in the last minute of extra time, and the crowd in the stadium went absolutely wild.",
    ]
    static let voices = ["en", "en-us", "en+f3", "en+m3", "en-gb-scotland", "en+f2", "en+m7", "en-us+f4"]
    /// What the sound bench's decoy creatives say: other words than the hosts', so that a decoy
    /// shares no phrase with a creative (two campaigns do not share a voice-over).
    static let decoyTexts = [
        "Switch today and save on your energy bills with our new fixed price plan, available for a limited time only.",
        "This winter, discover the mountains by train, with family tickets from just nineteen ninety nine.",
        "Our new phone takes stunning pictures in the dark, and its battery lasts for two whole days.",
        "Fresh from the farm to your table, our vegetables are picked in the morning and delivered the same afternoon.",
        "Book your summer holiday now and get a free upgrade to a room with a view of the sea.",
        "The bank that listens: open an account online in five minutes and get your card next week.",
        "Feel the difference of real coffee, roasted slowly in small batches by people who care.",
        "Come and see the new electric hatchback at your local dealer, test drives available all weekend.",
    ]
    /// What the talkers of the sound bench's living room say ("talk"): neither the hosts' nor
    /// the decoys' words, in voices of their own.
    static let talkTexts = [
        "Did you remember to call your mother about the weekend, she was asking whether we would come.",
        "I think the pasta needs another five minutes, can you pass me the salt and the big spoon.",
        "No, the meeting was moved to Thursday, so I will have to pick up the kids after school.",
        "Look at the garden, the roses finally came out after all that rain we had last month.",
        "Where did you put the remote, I want to check the score before the second half starts.",
        "We should really fix the kitchen window before the cold weather arrives in November.",
        "Honestly, the film was far too long, but the music at the end was beautiful.",
        "Can you believe how expensive the tickets were, and we were sitting right behind a pillar.",
    ]
    static let talkVoices = ["en+m1", "en+f1", "en+m4", "en-gb-x-rp+m5", "en-us+m2", "en-029+f2"]
    /// What the calibration's unmarked speech says ("calibration-speech" and its kin): no
    /// host's, decoy's or talker's words, in voices of its own. A catalogue that holds the
    /// hosts' own spoken creatives is then listened for on speech that is none of theirs: with
    /// the hosts' 8 texts and 8 voices, 40 minutes of "speech" said a creative's very sentences
    /// in its very voice, again and again, and both readings rightly heard the creative.
    static let calibrationTexts = [
        "Good evening, and welcome to the programme, where tonight we look at how bridges are built across wide rivers.",
        "The forecast for tomorrow brings light showers in the north, with sunny spells developing later in the south.",
        "After the break we will meet a baker who gets up at three every morning to feed half the village.",
        "Researchers followed a family of foxes for a whole year to learn how they find food in the city.",
        "The orchestra rehearsed for six weeks before the concert, and the hall was full on the opening night.",
        "Here is a recipe for a simple soup with lentils, carrots and a little cumin, ready in thirty minutes.",
        "Traffic is heavy on the ring road this morning after a lorry lost part of its load near the airport.",
        "In the studio with me is a historian who has written about the old canals and the people who worked them.",
    ]
    static let calibrationVoices = ["en-us-nyc", "en+Andy", "en-gb+Annie", "en-us+Boris", "en-029+Linda", "en-gb-scotland+Max"]
    /// The decoys' voices: neither the hosts' nor the talkers'. With the hosts' voices, a
    /// synthesiser says a phrase two texts share ("at your local") sample for sample alike, and
    /// 10 minutes of unmarked speech then held seconds of a decoy's very audio.
    static let decoyVoices = ["en-gb-x-gbcwmd+m6", "en-us+f5", "en-gb-x-gbclan+m2", "en-029+m3", "en+f4", "en-gb-x-rp+f3"]

    /// Bumped when a kind's recipe changes, so that a cached file made by the old recipe is not
    /// read as the new one's (the cache is keyed by kind, index, length and seed).
    static let recipes = ["decoy-speech": 2, "song-advert": 2, "decoy-sparse-speech": 2]

    let directory: String
    /// Recorded music for the "track" kinds (nil: those kinds cannot be made).
    let tracks: RealTracks?
    /// The files this run was handed, for ``digest()``. Shared by the copies of this value.
    private let handedOut = HandedOutFiles()

    public init(directory: String, tracks: RealTracks? = nil) throws {
        self.directory = directory
        self.tracks = tracks
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    /// The host kinds ``file(kind:index:seconds:seed:)`` makes.
    public static let kinds = ["speech", "music", "song", "song-advert", "song-bed", "decoy-speech", "decoy-sparse-speech", "talk", "pink", "sparse-speech", "silence", "flute", "piano", "drums", "advert",
                               "babble", "crowd", "cue"] + calibrationKinds + trackKinds
    /// Speech, a quiet room with phrases, an advert and babble as "speech", "sparse-speech",
    /// "advert" and "babble" are, in the calibration's own words and voices.
    public static let calibrationKinds = ["calibration-speech", "calibration-sparse-speech", "calibration-advert", "calibration-babble"]
    /// Cuts of recorded music (``RealTracks``): "track" from the bench's creative tracks,
    /// "track-decoy" from its decoy tracks, each "-advert" with a voice-over (the hosts' words
    /// and voices on a creative's bed, the decoys' on a decoy's), "track-bed" a track-advert's
    /// bed alone, and "track-calibration" the calibration tracks one after another.
    public static let trackKinds = ["track", "track-advert", "track-bed", "track-decoy", "track-decoy-advert", "track-calibration"]

    /// The path of a host file, generating it first if needed. The name holds everything the
    /// file is made from, seed included, so that a work folder shared by benches or seeds never
    /// hands one of them another's host.
    /// The music bed alone of the host `file(kind:index:seconds:seed:)` gives, sample for sample.
    public func bed(of kind: String, index: Int, seconds: Double, seed: UInt64) throws -> String {
        guard kind == "song-advert" || kind == "track-advert" else { throw Failure.noBed(kind) }
        return try file(kind: kind == "song-advert" ? "song-bed" : "track-bed", index: index, seconds: seconds, seed: seed)
    }

    public func file(kind: String, index: Int, seconds: Double, seed: UInt64) throws -> String {
        let recipe = Self.recipes[kind].map { "-r\($0)" } ?? ""
        let path = "\(directory)/\(kind)\(recipe)-\(index)-\(Int(seconds))s-seed\(seed).wav"
        handedOut.paths.insert(path)
        if FileManager.default.fileExists(atPath: path) { return path }
        let n = Int(seconds * Self.rate)
        var x: [Float]
        // The calibration's kinds are the hosts' recipes in the calibration's own words and voices.
        let calibration = Self.calibrationKinds.contains(kind)
        let (texts, voices) = calibration ? (Self.calibrationTexts, Self.calibrationVoices) : (Self.texts, Self.voices)
        switch calibration ? String(kind.dropFirst("calibration-".count)) : kind {
        case "speech":
            x = try speech(samples: n, seed: seed, texts: texts, voices: voices)
        case "music":
            x = [Float](repeating: 0, count: n)
            x.withUnsafeMutableBufferPointer { var g = MusicGenerator(rms: 0.1, sampleRate: Self.rate, seed: seed); g.render(into: $0) }
        case "song", "song-advert", "song-bed":
            // Other songs than "music"'s: roots, chord shape and tempo drawn from the seed (under
            // a voice-over for "song-advert", as "advert" is over "music"; "song-bed" is that
            // song-advert's bed alone).
            let voiced = kind == "song-advert"
            x = voiced ? try speech(samples: n, seed: seed, texts: Self.decoyTexts, voices: Self.decoyVoices) : [Float](repeating: 0, count: n)
            var bed = [Float](repeating: 0, count: n)
            bed.withUnsafeMutableBufferPointer {
                var g = MusicGenerator(rms: kind == "song" ? 0.1 : 0.0316, sampleRate: Self.rate, seed: seed &+ 3, style: .drawn(seed: seed))
                g.render(into: $0)
            }
            for i in 0..<n { x[i] += bed[i] }
        case "track", "track-advert", "track-bed", "track-decoy", "track-decoy-advert":
            guard let tracks else { throw Failure.noTracks(kind) }
            let decoy = kind.hasPrefix("track-decoy"), voiced = kind.hasSuffix("-advert")
            let list = decoy ? tracks.decoys : tracks.creatives
            guard !list.isEmpty else { throw RealTracks.Failure.none("bench") }
            let music = try track(list[index % list.count])
            var rng = SplitMix64(seed: seed &+ 41)
            // A cut from past the intro, at a place the seed draws.
            let room = max(0, music.count - n - Int(10 * Self.rate))
            let start = min(Int(5 * Self.rate), music.count - n > 0 ? music.count - n : 0) + Int(rng.nextUniform() * Double(room))
            var bed = Array((music + [Float](repeating: 0, count: max(0, start + n - music.count)))[start..<(start + n)])
            let bedScale = Float((voiced || kind == "track-bed" ? 0.0316 : 0.1) / max(rms(bed), 1e-9))
            for i in bed.indices { bed[i] *= bedScale }
            x = voiced ? try speech(samples: n, seed: seed, texts: decoy ? Self.decoyTexts : Self.texts,
                                    voices: decoy ? Self.decoyVoices : Self.voices) : [Float](repeating: 0, count: n)
            for i in 0..<n { x[i] += bed[i] }
        case "track-calibration":
            guard let tracks else { throw Failure.noTracks(kind) }
            let list = tracks.role("calibration")
            guard !list.isEmpty else { throw RealTracks.Failure.none("calibration") }
            x = []
            var k = index
            while x.count < n {
                var music = try track(list[k % list.count])
                let scale = Float(0.1 / max(rms(music), 1e-9))
                for i in music.indices { music[i] *= scale }
                x += music.prefix(n - x.count)
                k += 1
            }
        case "pink":
            x = [Float](repeating: 0, count: n)
            x.withUnsafeMutableBufferPointer { var g = PinkNoiseGenerator(rms: 0.1, sampleRate: Self.rate, seed: seed); g.render(into: $0) }
        case "flute", "piano":
            x = [Float](repeating: 0, count: n)
            let instrument = SoloLineGenerator.Instrument(rawValue: kind)!
            x.withUnsafeMutableBufferPointer { var g = SoloLineGenerator(instrument, rms: 0.1, sampleRate: Self.rate, seed: seed); g.render(into: $0) }
            // The room tone of any recording, at −80 dBFS: PEAQ's bandwidth measures are
            // undefined for a reference with nothing above 8.1 kHz (GstPEAQ returns no grade).
            var room = [Float](repeating: 0, count: n)
            room.withUnsafeMutableBufferPointer { var g = PinkNoiseGenerator(rms: 1e-4, sampleRate: Self.rate, seed: seed &+ 5); g.render(into: $0) }
            for i in 0..<n { x[i] += room[i] }
        case "drums":
            x = [Float](repeating: 0, count: n)
            x.withUnsafeMutableBufferPointer { var g = DrumKitGenerator(rms: 0.1, sampleRate: Self.rate, seed: seed); g.render(into: $0) }
        case "advert":
            x = try speech(samples: n, seed: seed, texts: texts, voices: voices)
            var bed = [Float](repeating: 0, count: n)
            bed.withUnsafeMutableBufferPointer { var g = MusicGenerator(rms: 0.0316, sampleRate: Self.rate, seed: seed &+ 3); g.render(into: $0) }
            for i in 0..<n { x[i] += bed[i] }
        case "sparse-speech":
            x = try sparseSpeech(samples: n, seed: seed, texts: texts, voices: voices)
        case "decoy-speech":
            x = try speech(samples: n, seed: seed, texts: Self.decoyTexts, voices: Self.decoyVoices)
        case "decoy-sparse-speech":
            x = try sparseSpeech(samples: n, seed: seed, texts: Self.decoyTexts, voices: Self.decoyVoices)
        case "silence":
            x = [Float](repeating: 0, count: n)
        case "cue":
            // The Stadium Shake cue's music from the first sample, then silence.
            x = [Float](repeating: 0, count: n)
            x.withUnsafeMutableBufferPointer { out in
                var g = CueGenerator(rms: 0.1, sampleRate: Self.rate, seed: seed)
                g.render(into: UnsafeMutableBufferPointer(rebasing: out[0..<min(n, Int(CueGenerator.duration * Self.rate))]))
            }
        case "babble", "crowd", "talk":
            let talkers = kind == "crowd" ? 30 : 6
            x = [Float](repeating: 0, count: n)
            for t in 0..<talkers {
                let voice = kind == "talk"
                    ? try speech(samples: n, seed: seed &* 1000 &+ UInt64(t), texts: Self.talkTexts, voices: Self.talkVoices)
                    : try speech(samples: n, seed: seed &* 1000 &+ UInt64(t), texts: texts, voices: voices)
                for i in 0..<n { x[i] += voice[i] }
            }
            if kind == "crowd" {
                var bed = [Float](repeating: 0, count: n)
                bed.withUnsafeMutableBufferPointer { var g = PinkNoiseGenerator(rms: 0.5 * rms(x), sampleRate: Self.rate, seed: seed); g.render(into: $0) }
                for i in 0..<n { x[i] += bed[i] }
            }
            let scale = Float(0.1 / rms(x))
            for i in x.indices { x[i] *= scale }
        default:
            preconditionFailure("unknown host kind \(kind)")
        }
        try write(x, to: path)
        return path
    }

    /// A fingerprint of the samples of every host and noise file this run was handed: two
    /// runs whose figures differ read the same audio when their digests agree. The cache is
    /// keyed by kind, recipe, index, length and seed, not by the generator's code nor by the
    /// versions of espeak-ng that spoke its speech, so a work folder made by another build or
    /// machine can hold other audio under the same names. FNV-1a over each file's name and its
    /// samples' bits in name order (not the file's bytes: a float WAV's PEAK chunk holds the
    /// time it was written).
    public func digest() throws -> (files: Int, digest: UInt64) {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ word: UInt64) {
            h ^= word
            h = h &* 0x0000_0100_0000_01b3
        }
        let paths = handedOut.paths.sorted()
        var block = [Float](repeating: 0, count: 65_536)
        for path in paths {
            for byte in path.split(separator: "/").last!.utf8 { mix(UInt64(byte)) }
            let reader = try SoundFileReader(path: path)
            while true {
                let n = try block.withUnsafeMutableBufferPointer { try reader.read(into: $0) }
                if n == 0 { break }
                for i in 0..<(n * reader.channels) { mix(UInt64(block[i].bitPattern)) }
            }
        }
        return (paths.count, h)
    }

    /// The host of ``file(kind:index:seconds:seed:)`` low-passed at 18 kHz, as a production
    /// chain leaves it: PEAQ finds a reference's bandwidth only under the level it reads above
    /// 21.6 kHz, and grades nothing (GstPEAQ returns NaN) for a full-band noise host.
    public func bandLimitedFile(kind: String, index: Int, seconds: Double, seed: UInt64) throws -> String {
        let path = "\(directory)/\(kind)-\(index)-\(Int(seconds))s-seed\(seed)-18k.wav"
        if FileManager.default.fileExists(atPath: path) { return path }
        let reader = try SoundFileReader(path: try file(kind: kind, index: index, seconds: seconds, seed: seed))
        var blocks = MonoBlockReader(reader)
        var x: [Float] = []
        while case let mono = try blocks.next(), !mono.isEmpty { x += mono }
        try write(try lowPass(x, cutoff: 18_000), to: path)
        return path
    }

    /// A windowed-sinc low-pass (255 taps, Blackman window: −74 dB from 1.3 kHz above `cutoff`).
    private func lowPass(_ x: [Float], cutoff: Double) throws -> [Float] {
        let taps = 255, half = taps / 2
        let fc = cutoff / Self.rate
        var h = (0..<taps).map { i -> Double in
            let k = Double(i - half)
            let sinc = k == 0 ? 2 * fc : sin(2 * Double.pi * fc * k) / (Double.pi * k)
            let w = 0.42 - 0.5 * cos(2 * Double.pi * Double(i) / Double(taps - 1)) + 0.08 * cos(4 * Double.pi * Double(i) / Double(taps - 1))
            return sinc * w
        }
        let sum = h.reduce(0, +)
        h = h.map { $0 / sum }
        // Centred (no delay): the convolver's output is late by half the response, so it runs
        // half a response past the end and the first half is dropped.
        let convolver = try FFTConvolver(impulseResponse: h.map(Float.init))
        var y: [Float] = []
        (x + [Float](repeating: 0, count: half)).withUnsafeBufferPointer { convolver.process($0, into: &y) }
        convolver.finish(into: &y)
        return Array(y[half..<(half + x.count)])
    }

    /// Seconds of all the calibration tracks together ("track-calibration" reads them whole).
    public func calibrationSeconds() throws -> Double {
        guard let tracks else { throw Failure.noTracks("track-calibration") }
        return tracks.role("calibration").reduce(0) { $0 + $1.seconds }.rounded(.down)
    }

    /// A whole track at the hosts' rate, decoded once into the work folder.
    private func track(_ t: RealTracks.Track) throws -> [Float] {
        let path = "\(directory)/track-\(t.id).wav"
        if !FileManager.default.fileExists(atPath: path) {
            let x = try RealTracks.decode(t, rate: Self.rate, scratch: directory)
            try write(x, to: path)
        }
        handedOut.paths.insert(path)
        // Each decoy and host cut reads its whole track: kept once read (a bench cuts a hundred
        // decoys from a score of tracks).
        if let kept = handedOut.tracks[path] { return kept }
        let x = try WatermarkBench.readMono(path).0
        handedOut.tracks[path] = x
        return x
    }

    private func rms(_ x: [Float]) -> Double {
        (x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(x.count, 1))).squareRoot()
    }

    private func write(_ x: [Float], to path: String) throws {
        try Self.writeMono(x[...], rate: Self.rate, to: path)
    }

    /// Mono samples as a 32-bit float WAV file (the benches' own files: nothing is rounded).
    static func writeMono(_ y: ArraySlice<Float>, rate: Double, to path: String) throws {
        let w = try SoundFileWriter(path: path, sampleRate: Int(rate), channels: 1, format: .init(container: .wav, encoding: .f32))
        try y.withUnsafeBufferPointer { try w.write($0) }
        try w.finish()
    }

    /// Phrases from espeak-ng with short pauses, at RMS 0.1.
    private func speech(samples n: Int, seed: UInt64, texts: [String] = texts, voices: [String] = voices) throws -> [Float] {
        guard let espeak = Simulation.findExecutable("espeak-ng") else { throw Failure.espeakMissing }
        var rng = SplitMix64(seed: seed)
        var out: [Float] = []
        let temp = "\(directory)/.espeak-\(getpid()).wav"
        defer { unlink(temp) }
        while out.count < n {
            let text = texts[Int(rng.next() % UInt64(texts.count))]
            let voice = voices[Int(rng.next() % UInt64(voices.count))]
            let speed = 140 + Int(rng.next() % 50)
            do {
                try Simulation.runProcess(espeak, ["-v", voice, "-s", String(speed), "-w", temp, text])
            } catch {
                throw Failure.espeakFailed("\(error)")
            }
            let reader = try SoundFileReader(path: temp)
            var raw = [Float](repeating: 0, count: Int(reader.declaredFrames) + 16)
            let got = try raw.withUnsafeMutableBufferPointer { try reader.read(into: $0) }
            let resampler = Resampler(from: Double(reader.sampleRate), to: Self.rate)
            raw.withUnsafeBufferPointer { resampler.process(UnsafeBufferPointer(rebasing: $0[0..<got]), into: &out) }
            resampler.finish(into: &out)
            out += [Float](repeating: 0, count: Int((0.1 + 0.4 * rng.nextUniform()) * Self.rate))
        }
        out = Array(out.prefix(n))
        let scale = Float(0.1 / max(rms(out), 1e-9))
        return out.map { $0 * scale }
    }

    /// A quiet room (pink noise 40 dB down) with a phrase now and then: 1–2.5 s of speech
    /// every 3–7 s.
    private func sparseSpeech(samples n: Int, seed: UInt64, texts: [String] = texts, voices: [String] = voices) throws -> [Float] {
        var x = [Float](repeating: 0, count: n)
        x.withUnsafeMutableBufferPointer { var g = PinkNoiseGenerator(rms: 0.001, sampleRate: Self.rate, seed: seed); g.render(into: $0) }
        let voice = try speech(samples: n, seed: seed &+ 7, texts: texts, voices: voices)
        var rng = SplitMix64(seed: seed &+ 11)
        var position = 0
        while position < n {
            let off = Int((2 + 3 * rng.nextUniform()) * Self.rate), on = Int((1 + 1.5 * rng.nextUniform()) * Self.rate)
            let start = position + off
            if start < n { for i in start..<min(n, start + on) { x[i] += 0.5 * voice[i] } }
            position = start + on
        }
        return x
    }
}

/// The paths a ``BenchHosts`` handed out. A class so that the copies of a ``BenchHosts`` (a
/// value passed to each part of a bench) add to one set; a bench runs on one thread.
final class HandedOutFiles {
    var paths = Set<String>()
    /// Whole tracks read so far (``BenchHosts/file(kind:index:seconds:seed:)``'s track kinds).
    var tracks: [String: [Float]] = [:]
}
