import Foundation
import HarkTesting
import Testing
@testable import HarkSoundFile

@Suite struct SoundFileWriterTests {
    let dir = TemporaryDirectory()

    @Test func outputTypeComesFromTheName() throws {
        #expect(try OutputFormat.forPath("a.WAV") == .init(container: .wav, encoding: .s16))
        #expect(try OutputFormat.forPath("dir.x/a.flac", encoding: .s24) == .init(container: .flac, encoding: .s24))
        #expect(try OutputFormat.forPath("a.ogg") == .init(container: .ogg, encoding: .vorbis))
        #expect(throws: SoundFileError.unknownOutputType(path: "a.mp4")) { try OutputFormat.forPath("a.mp4") }
        #expect(throws: SoundFileError.unknownOutputType(path: "noextension")) { try OutputFormat.forPath("noextension") }
        #expect(throws: SoundFileError.unsupportedOutputEncoding(path: "a.flac", detail: "FLAC cannot hold f32 samples")) {
            try OutputFormat.forPath("a.flac", encoding: .f32)
        }
    }

    @Test func rawIsHeaderlessLittleEndian() throws {
        let p = dir.file("x.raw")
        let w = try SoundFileWriter(path: p, sampleRate: 48_000, channels: 1, format: try OutputFormat.forPath(p))
        try [Float(0.5), -0.5, 0].withUnsafeBufferPointer { try w.write($0) }
        try w.finish()
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: p)))
        #expect(bytes == [0x00, 0x40, 0x00, 0xC0, 0x00, 0x00])
    }

    @Test func clippingIsCountedAndBounded() throws {
        let p = dir.file("clip.wav")
        let w = try SoundFileWriter(path: p, sampleRate: 48_000, channels: 1, format: try OutputFormat.forPath(p))
        try [Float(1.5), -2, 0.25].withUnsafeBufferPointer { try w.write($0) }
        try w.finish()
        #expect(w.clippedSamples == 2)
        let got = try readAll(try SoundFileReader(path: p))
        #expect(got[0] > 0.999 && got[1] == -1 && abs(got[2] - 0.25) < 1e-4)
    }

    @Test func abandonedWriteLeavesNothing() throws {
        let p = dir.file("gone.wav")
        do {
            let w = try SoundFileWriter(path: p, sampleRate: 48_000, channels: 1, format: try OutputFormat.forPath(p))
            try [Float](repeating: 0.1, count: 1000).withUnsafeBufferPointer { try w.write($0) }
            // released without finish()
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
    }

    @Test func cannotCreateInAMissingDirectory() {
        let p = dir.file("missing/x.wav")
        #expect {
            try SoundFileWriter(path: p, sampleRate: 48_000, channels: 1, format: .init(container: .wav, encoding: .s16))
        } throws: { error in
            if case .cannotCreate(let path, _) = error as? SoundFileError { return path == p }
            return false
        }
    }

    @Test func rejectsRatesAndChannelsOutOfRange() {
        #expect(throws: SoundFileError.unsupportedSampleRate(path: "a.wav", rate: 1000)) {
            try SoundFileWriter(path: "a.wav", sampleRate: 1000, channels: 1, format: .init(container: .wav, encoding: .s16))
        }
        #expect(throws: SoundFileError.tooManyChannels(path: "a.wav", channels: 0)) {
            try SoundFileWriter(path: "a.wav", sampleRate: 48_000, channels: 0, format: .init(container: .wav, encoding: .s16))
        }
    }
}
