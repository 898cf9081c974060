import Foundation
import HarkTesting
import Testing
@testable import HarkLab
import HarkEngine
import HarkSimulation

/// The benches' host cache: a host is generated once per work folder and reused, so a reused
/// file must be the one that was asked for.
struct BenchHostsTests {
    @Test func anotherSeedInTheSameFolderGetsItsOwnHost() throws {
        let temporary = TemporaryDirectory(prefix: "hark-hosts")
        let hosts = try BenchHosts(directory: temporary.path)
        let one = try hosts.file(kind: "pink", index: 0, seconds: 1, seed: 1)
        let two = try hosts.file(kind: "pink", index: 0, seconds: 1, seed: 2)
        #expect(one != two)
        let a = try Data(contentsOf: URL(fileURLWithPath: one)), b = try Data(contentsOf: URL(fileURLWithPath: two))
        #expect(a != b)
        // The same request is served from the cache: the same file, not made again.
        let modified = try FileManager.default.attributesOfItem(atPath: one)[.modificationDate] as? Date
        #expect(try hosts.file(kind: "pink", index: 0, seconds: 1, seed: 1) == one)
        #expect(try FileManager.default.attributesOfItem(atPath: one)[.modificationDate] as? Date == modified)
        let limited = try hosts.bandLimitedFile(kind: "pink", index: 0, seconds: 1, seed: 1)
        #expect(limited != (try hosts.bandLimitedFile(kind: "pink", index: 0, seconds: 1, seed: 2)))
    }

    /// Two runs read the same audio exactly when their digests agree: the same hosts made in
    /// two folders agree, whatever the files' headers hold; one sample changed, or another
    /// host handed out, does not.
    @Test func theDigestFollowsTheSamplesHandedOutAndNothingElse() throws {
        let a = TemporaryDirectory(prefix: "hark-digest-a"), b = TemporaryDirectory(prefix: "hark-digest-b")
        let one = try BenchHosts(directory: a.path), two = try BenchHosts(directory: b.path)
        #expect(try one.digest().files == 0)
        let path = try one.file(kind: "pink", index: 0, seconds: 1, seed: 1)
        _ = try one.file(kind: "music", index: 0, seconds: 1, seed: 1)
        // Asked for in the other order, into a copy of the value: the same set of files.
        let copy = two
        _ = try copy.file(kind: "music", index: 0, seconds: 1, seed: 1)
        _ = try two.file(kind: "pink", index: 0, seconds: 1, seed: 1)
        let d = try one.digest()
        #expect(d.files == 2)
        #expect(try two.digest().digest == d.digest)
        // The same samples written again: another header (a float WAV's PEAK chunk holds the
        // time it was written), the same digest.
        var (x, _) = try WatermarkBench.readMono(path)
        sleep(1)
        try BenchHosts.writeMono(x[...], rate: 48_000, to: path)
        #expect(try one.digest().digest == d.digest)
        x[100] = x[100].nextUp
        try BenchHosts.writeMono(x[...], rate: 48_000, to: path)
        #expect(try one.digest().digest != d.digest)
        _ = try two.file(kind: "pink", index: 1, seconds: 1, seed: 1)
        let three = try two.digest()
        #expect(three.files == 3 && three.digest != d.digest)
    }
}

/// The bed-alone rows air a voice-over's song without the voice: sample for sample the song
/// under it, or a row of "the bed alone" would measure another song.
struct BenchBedTests {
    @Test func aVoiceOversBedIsTheSongUnderItAndOnlySuchHostsHaveOne() throws {
        let temporary = TemporaryDirectory(prefix: "hark-bed")
        let hosts = try BenchHosts(directory: temporary.path)
        #expect(throws: BenchHosts.Failure.self) { try hosts.bed(of: "speech", index: 0, seconds: 1, seed: 1) }
        guard Simulation.findExecutable("espeak-ng") != nil else { return }
        let (whole, _) = try WatermarkBench.readMono(try hosts.file(kind: "song-advert", index: 0, seconds: 3, seed: 5))
        let (bed, _) = try WatermarkBench.readMono(try hosts.bed(of: "song-advert", index: 0, seconds: 3, seed: 5))
        let (voice, _) = try WatermarkBench.readMono(try hosts.file(kind: "decoy-speech", index: 0, seconds: 3, seed: 5))
        #expect(whole.count == bed.count && bed.contains { $0 != 0 })
        // What is left when the bed is taken out is the voice, to the file's rounding.
        let residual = zip(zip(whole, bed), voice).map { Double($0.0 - $0.1 - $1) }
        #expect(residual.map(abs).max()! < 1e-5, "\(residual.map(abs).max()!)")
    }
}
