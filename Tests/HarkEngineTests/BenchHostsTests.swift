import Foundation
import HarkTesting
import Testing
@testable import HarkEngine

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
}
