import Foundation
import Testing
@testable import HarkEngine
@testable import HarkSoundFile

/// Mutated copies of valid files go through the whole file path (libsndfile, header probe,
/// mixer, meter, bands). Each must either be refused with a `SoundFileError` or produce a report
/// whose figures are finite or absent: never a crash, a hang or a NaN.
@Suite struct MutationFuzzTests {
    static let iterations = 400

    private func validWAV(bits: Int, float: Bool, channels: Int) throws -> [UInt8] {
        let dir = NSTemporaryDirectory() + "hark-fuzz-seed-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/seed.wav"
        let encoding: OutputFormat.Encoding = float ? .f32 : (bits == 24 ? .s24 : .s16)
        let writer = try SoundFileWriter(path: path, sampleRate: 16_000, channels: channels,
                                         format: .init(container: .wav, encoding: encoding))
        let samples = (0..<(1600 * channels)).map { Float(0.5 * sin(Double($0) * 0.3)) }
        try samples.withUnsafeBufferPointer { try writer.write($0) }
        try writer.finish()
        return try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
    }

    private func mutate(_ seed: [UInt8], _ rng: inout SplitMixForTests) -> [UInt8] {
        var b = seed
        for _ in 0..<(1 + Int(rng.next() % 4)) {
            switch rng.next() % 6 {
            case 0:   // flip bits anywhere, mostly in the header
                let i = Int(rng.next() % UInt64(rng.next() % 2 == 0 ? min(64, b.count) : b.count))
                b[i] ^= UInt8(truncatingIfNeeded: rng.next() | 1)
            case 1:   // cut the file short
                b = Array(b.prefix(Int(rng.next() % UInt64(b.count))))
            case 2:   // overwrite a 32-bit header field with an extreme value
                let i = Int(rng.next() % 40) + 4
                let v: [UInt32] = [0, 1, 0xFFFF_FFFF, 0x7FFF_FFFF, 0x8000_0000, UInt32(truncatingIfNeeded: rng.next())]
                let x = v[Int(rng.next() % UInt64(v.count))]
                for k in 0..<4 where i + k < b.count { b[i + k] = UInt8(truncatingIfNeeded: x >> (8 * UInt32(k))) }
            case 3:   // insert junk
                let i = Int(rng.next() % UInt64(b.count + 1))
                b.insert(contentsOf: (0..<Int(rng.next() % 16)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }, at: i)
            case 4:   // overwrite a 16-bit field (format tag, channels, bits)
                let i = 20 + 2 * Int(rng.next() % 8)
                if i + 1 < b.count {
                    let x = UInt16(truncatingIfNeeded: rng.next())
                    b[i] = UInt8(x & 0xFF); b[i + 1] = UInt8(x >> 8)
                }
            default:  // duplicate a slice
                let i = Int(rng.next() % UInt64(b.count)), n = Int(rng.next() % 200)
                b.insert(contentsOf: b[i..<min(b.count, i + n)], at: i)
            }
            if b.isEmpty { break }
        }
        return b
    }

    @Test(arguments: [(16, false, 1), (24, false, 2), (32, true, 1)])
    func mutatedWavsNeverCrashOrLie(bits: Int, float: Bool, channels: Int) throws {
        let seed = try validWAV(bits: bits, float: float, channels: channels)
        let dir = NSTemporaryDirectory() + "hark-fuzz-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var rng = SplitMixForTests(seed: UInt64(bits * 10 + channels))
        var refused = 0, analysed = 0
        for i in 0..<Self.iterations {
            let path = dir + "/m\(i).wav"
            _ = FileManager.default.createFile(atPath: path, contents: Data(mutate(seed, &rng)))
            do {
                let source = try SoundFileSource(path: path)
                let out = try events(source, interval: 0.05)
                guard case .report(let r) = out.last else { Issue.record("no report for \(path)"); continue }
                let m = r.meter
                for v in [m.LAeq, m.LCeq, m.LZeq, m.LAE, m.LAFmax, m.LAFmin, m.LASmax, m.LCpeak, m.LA10, m.LA50, m.LA90]
                    + r.bands.map(\.level) {
                    if let v { #expect(v.isFinite, "non-finite figure from mutant \(i)") }
                }
                #expect(m.duration >= 0 && m.duration < 3600)
                analysed += 1
            } catch is SoundFileError {
                refused += 1
            } catch LevelAnalysisError.noAudio {
                // A header that now promises no frames: refused by name, not reported as silence.
                refused += 1
            }
        }
        // Both outcomes must occur, or the mutations are not testing anything.
        #expect(refused > 10 && analysed > 10, "refused \(refused), analysed \(analysed)")
    }
}

/// The tests' own seeded generator (the library's lives in HarkDSP).
struct SplitMixForTests {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
