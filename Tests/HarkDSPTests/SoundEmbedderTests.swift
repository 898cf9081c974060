import Foundation
import Testing
@testable import HarkDSP

/// Hark's inference of the sound embedder against the training framework's: the fixture holds
/// inputs and the embeddings PyTorch made of them with the network as trained (batch
/// normalisation unfolded, eval mode), written by tools/learned/train.py with the weights.
@Suite struct SoundEmbedderTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/sound-embedder-fixture.bin")

    struct Fixture {
        var samples: [Float]
        var starts: [Int]
        var embeddings: [[Float]]
    }

    static func readFixture() throws -> Fixture {
        let data = try Data(contentsOf: fixture)
        #expect(data.prefix(4) == Data("HKSF".utf8))
        func u32(_ at: Int) -> Int { (0..<4).reduce(0) { $0 | Int(data[at + $1]) << (8 * $1) } }
        func floats(_ at: Int, _ n: Int) -> [Float] { (0..<n).map { Float(bitPattern: UInt32(u32(at + 4 * $0))) } }
        let count = u32(4), segments = u32(8), dim = u32(12)
        var at = 16
        let samples = floats(at, count)
        at += 4 * count
        let starts = (0..<segments).map { u32(at + 4 * $0) }
        at += 4 * segments
        let flat = floats(at, segments * dim)
        return Fixture(samples: samples, starts: starts, embeddings: (0..<segments).map { Array(flat[($0 * dim)..<(($0 + 1) * dim)]) })
    }

    /// Every component within 2e-4 of PyTorch's, and every cosine above 0.99999: float32 FFTs,
    /// sums in other orders and batch normalisation folded into the weights are all that
    /// differs. A layer read in the wrong order or a mel matrix transposed moves them by 0.1
    /// and more.
    @Test func theInferenceGivesTheTrainingFrameworksEmbeddings() throws {
        let f = try Self.readFixture()
        let embedder = try SoundEmbedder()
        let model = embedder.model
        #expect(f.embeddings.first?.count == model.dimensions)
        var worst: Float = 0, lowestCosine: Float = 1
        var out = [Float](repeating: 0, count: model.dimensions)
        for (start, expected) in zip(f.starts, f.embeddings) {
            f.samples.withUnsafeBufferPointer { x in
                out.withUnsafeMutableBufferPointer { embedder.embed(UnsafeBufferPointer(rebasing: x[start..<(start + model.segmentSamples)]), into: $0) }
            }
            worst = max(worst, zip(out, expected).map { abs($0 - $1) }.max()!)
            lowestCosine = min(lowestCosine, zip(out, expected).map(*).reduce(0, +))
        }
        #expect(f.starts.count >= 8)
        #expect(worst < 2e-4, "largest difference \(worst)")
        #expect(lowestCosine > 0.99999, "lowest cosine \(lowestCosine)")
    }

    @Test func aDamagedWeightsFileIsRefusedByName() throws {
        let good = Array(SoundEmbedderModel.builtInBytes)
        func read(_ bytes: [UInt8]) -> SoundEmbedderModel.Failure? {
            bytes.withUnsafeBufferPointer { b -> SoundEmbedderModel.Failure? in
                do throws(SoundEmbedderModel.Failure) { _ = try SoundEmbedderModel(bytes: b); return nil } catch { return error }
            }
        }
        #expect(read(good) == nil)
        #expect(read(Array("RIFF0000".utf8)) == .notAModel)
        var v2 = good
        v2[4] = 2
        #expect(read(v2) == .version(2))
        if case .truncated = read(Array(good.prefix(good.count - 100))) {} else { Issue.record("a cut file read") }
    }
}
