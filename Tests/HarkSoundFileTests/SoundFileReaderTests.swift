import Foundation
import HarkTesting
import Testing
@testable import HarkSoundFile

@Suite struct SoundFileReaderTests {
    let dir = TemporaryDirectory()

    @Test func readsAPlainWav() throws {
        let samples = toneSamples(4800)
        let reader = try SoundFileReader(path: dir.write("a.wav", wavBytes(samples: samples)))
        #expect(reader.sampleRate == 48_000 && reader.channels == 1 && reader.declaredFrames == 4800)
        #expect(reader.formatDescription.contains("WAV") && reader.formatDescription.contains("16 bit"))
        let got = try readAll(reader)
        #expect(got.count == 4800)
        #expect(zip(got, samples).allSatisfy { abs($0 - Float($1) / 32768) < 1e-6 })
        #expect(reader.warnings.isEmpty)
        #expect(try readAll(reader).isEmpty)   // stays at the end
    }

    @Test(arguments: [OutputFormat.Encoding.s16, .s24, .s32, .f32, .f64])
    func wavEncodingsRoundTrip(encoding: OutputFormat.Encoding) throws {
        try roundTrip(name: "x.wav", encoding: encoding, channels: 2, tolerance: encoding == .s16 ? 1e-4 : 1e-6)
    }

    @Test func flacOggAiffRoundTrip() throws {
        try roundTrip(name: "x.flac", encoding: .s16, channels: 1, tolerance: 1e-4)
        try roundTrip(name: "x24.flac", encoding: .s24, channels: 8, tolerance: 1e-6)
        try roundTrip(name: "x.aiff", encoding: .s24, channels: 3, tolerance: 1e-6)
        // Vorbis is lossy: compare energy, not samples.
        try roundTrip(name: "x.ogg", encoding: .vorbis, channels: 2, tolerance: nil)
    }

    private func roundTrip(name: String, encoding: OutputFormat.Encoding, channels: Int, tolerance: Float?) throws {
        let path = dir.file(name)
        let format = try OutputFormat.forPath(path, encoding: encoding)
        let writer = try SoundFileWriter(path: path, sampleRate: 44_100, channels: channels, format: format)
        let frames = 22_050
        var samples = [Float](repeating: 0, count: frames * channels)
        for i in 0..<frames {
            for c in 0..<channels {
                samples[i * channels + c] = Float(0.4 * sin(2 * Double.pi * Double(300 * (c + 1)) * Double(i) / 44_100))
            }
        }
        try samples.withUnsafeBufferPointer { try writer.write($0) }
        try writer.finish()
        let reader = try SoundFileReader(path: path)
        #expect(reader.channels == channels && reader.sampleRate == 44_100)
        let got = try readAll(reader, block: 777)
        #expect(got.count == samples.count, "\(name)")
        if let tolerance {
            #expect(zip(got, samples).allSatisfy { abs($0 - $1) <= tolerance }, "\(name)")
        } else {
            let e1 = samples.reduce(0) { $0 + $1 * $1 }, e2 = got.reduce(0) { $0 + $1 * $1 }
            #expect(abs(10 * log10(e2 / e1)) < 0.5, "\(name)")
        }
        #expect(reader.warnings.isEmpty, "\(name): \(reader.warnings)")
    }

    // MARK: bad input

    @Test func missingFile() {
        #expect(throws: SoundFileError.notFound(path: dir.file("nope.wav"))) {
            try SoundFileReader(path: dir.file("nope.wav"))
        }
    }

    @Test func directory() {
        #expect(throws: SoundFileError.isDirectory(path: dir.path)) { try SoundFileReader(path: dir.path) }
    }

    @Test func emptyFile() {
        let p = dir.write("empty.wav", [])
        #expect(throws: SoundFileError.empty(path: p)) { try SoundFileReader(path: p) }
    }

    @Test func randomBytes() {
        var rng = SystemRandomNumberGenerator()
        let p = dir.write("random.wav", (0..<5000).map { _ in UInt8.random(in: 0...255, using: &rng) })
        #expect {
            try SoundFileReader(path: p)
        } throws: { error in
            guard case .unrecognisedFormat = error as? SoundFileError else { return false }
            return (error as! SoundFileError).description.hasPrefix(p + ": not an audio format")
        }
    }

    @Test func headerCutShort() {
        let p = dir.write("short.wav", Array(wavBytes(samples: toneSamples(100)).prefix(30)))
        #expect {
            try SoundFileReader(path: p)
        } throws: { error in
            guard case .malformed(_, let detail) = error as? SoundFileError else { return false }
            return detail.contains("data")
        }
    }

    @Test func zeroChannelsAndZeroRate() {
        var bytes = wavBytes(samples: toneSamples(100))
        bytes[22] = 0; bytes[23] = 0
        let zeroChannels = dir.write("ch0.wav", bytes)
        #expect(throws: SoundFileError.noChannels(path: zeroChannels)) { try SoundFileReader(path: zeroChannels) }
        let zeroRate = dir.write("rate0.wav", wavBytes(samples: toneSamples(100), rate: 0))
        #expect(throws: SoundFileError.unsupportedSampleRate(path: zeroRate, rate: 0)) { try SoundFileReader(path: zeroRate) }
    }

    @Test func rateOutsideTheSupportedRange() {
        let p = dir.write("4k.wav", wavBytes(samples: toneSamples(100), rate: 4000))
        #expect(throws: SoundFileError.unsupportedSampleRate(path: p, rate: 4000)) { try SoundFileReader(path: p) }
        #expect(SoundFileError.unsupportedSampleRate(path: p, rate: 4000).description
            == "\(p): sample rate 4000 Hz is outside the supported 8000–192000 Hz")
    }

    @Test func nineChannels() {
        let p = dir.write("9ch.wav", wavBytes(samples: toneSamples(90), channels: 9))
        #expect(throws: SoundFileError.tooManyChannels(path: p, channels: 9)) { try SoundFileReader(path: p) }
    }

    @Test func unsupportedEncoding() {
        let p = dir.write("mp3.wav", wavBytes(samples: toneSamples(100), formatTag: 0x55))
        #expect(throws: SoundFileError.unsupportedEncoding(path: p, detail: "WAV format tag 0x0055 (MPEG Layer III)")) {
            try SoundFileReader(path: p)
        }
    }

    @Test func headerClaimingMoreThanTheFileHolds() throws {
        // The header promises 2 s; the file holds 1 s (a recorder that stopped mid-write).
        let p = dir.write("cut.wav", wavBytes(samples: toneSamples(48_000), declaredDataBytes: 192_000))
        let reader = try SoundFileReader(path: p)
        #expect(reader.declaredFrames == 96_000)
        #expect(try readAll(reader).count == 48_000)
        #expect(reader.warnings == [.truncated(path: p, declaredFrames: 96_000, availableFrames: 48_000, sampleRate: 48_000)])
        #expect(reader.warnings[0].description.contains("header declares 2.000 s (96000 frames) but the file holds 1.000 s"))
        #expect(reader.warnings[0].description.contains("1.000 s missing"))
    }

    @Test func unknownLengthPlaceholderIsNotAnError() throws {
        let p = dir.write("stream.wav", wavBytes(samples: toneSamples(4800), declaredDataBytes: 0xFFFF_FFFF))
        let reader = try SoundFileReader(path: p)
        #expect(try readAll(reader).count == 4800)
        #expect(reader.warnings.isEmpty)
    }

    @Test func unfinalisedHeaderIsRecovered() throws {
        let samples = toneSamples(4800)
        let p = dir.write("crashed.wav", wavBytes(samples: samples, declaredDataBytes: 0))
        let reader = try SoundFileReader(path: p)
        let got = try readAll(reader)
        #expect(got.count == 4800)
        #expect(zip(got, samples).allSatisfy { abs($0 - Float($1) / 32768) < 1e-6 })
        #expect(reader.warnings == [.unfinalisedHeader(path: p, bytes: 9600)])
    }

    @Test func truncatedFlacReportsTheShortfall() throws {
        let full = dir.file("full.flac")
        let writer = try SoundFileWriter(path: full, sampleRate: 48_000, channels: 1, format: .init(container: .flac, encoding: .s16))
        var rng = SystemRandomNumberGenerator()
        let noise = (0..<96_000).map { _ in Float.random(in: -0.5...0.5, using: &rng) }
        try noise.withUnsafeBufferPointer { try writer.write($0) }
        try writer.finish()
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: full)))
        let cut = dir.write("cut.flac", Array(bytes.prefix(bytes.count / 2)))
        let reader = try SoundFileReader(path: cut)
        let got = try readAll(reader)
        #expect(got.count > 20_000 && got.count < 96_000)
        #expect(reader.warnings.count == 1)
        #expect(reader.warnings.first?.description.contains("missing") == true)
    }

    @Test(.disabled(if: getuid() == 0, "root reads every file, so no unreadable file can be made"))
    func unreadableFile() throws {
        let p = dir.write("locked.wav", wavBytes(samples: toneSamples(10)))
        chmod(p, 0)
        #expect(throws: SoundFileError.self) { try SoundFileReader(path: p) }
    }
}

@Suite struct TruncatedContainerTests {
    let dir = TemporaryDirectory()

    /// Writes a valid file of `frames` frames, then cuts it to `keep` of its bytes.
    private func truncated(_ name: String, format: OutputFormat, frames: Int, keep: Double) throws -> String {
        let full = dir.file("full-" + name)
        let writer = try SoundFileWriter(path: full, sampleRate: 48_000, channels: 2, format: format)
        let samples = (0..<(frames * 2)).map { Float(0.3 * sin(Double($0) * 0.01)) }
        try samples.withUnsafeBufferPointer { try writer.write($0) }
        try writer.finish()
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: full)))
        return dir.write(name, Array(bytes.prefix(Int(Double(bytes.count) * keep))))
    }

    @Test func truncatedAIFFAnd24BitWAVAreReportedToo() throws {
        for (name, container) in [("cut.aiff", OutputFormat.Container.aiff), ("cut.wav", .wav)] {
            let path = try truncated(name, format: .init(container: container, encoding: .s24), frames: 48_000, keep: 0.5)
            let reader = try SoundFileReader(path: path)
            let got = try readAll(reader).count / 2
            #expect(got > 20_000 && got < 48_000, "\(name)")
            #expect(reader.declaredFrames == 48_000, "\(name)")
            guard case .truncated(_, 48_000, let available, 48_000)? = reader.warnings.first else {
                Issue.record("\(name): \(reader.warnings)")
                continue
            }
            #expect(available == Int64(got))
        }
    }
}

@Suite struct WaveVariantTests {
    let dir = TemporaryDirectory()

    /// A WAVE_FORMAT_EXTENSIBLE header (fmt chunk of 40 bytes) around 24-bit PCM samples.
    private func extensible24(_ values: [Int32], channels: Int = 2, declaredDataBytes: Int? = nil) -> [UInt8] {
        let data = values.flatMap { v in (0..<3).map { UInt8((Int(v) >> (8 * $0)) & 0xFF) } }
        let align = channels * 3
        var out: [UInt8] = Array("RIFF".utf8) + le32(60 + data.count) + Array("WAVE".utf8)
        out += Array("fmt ".utf8) + le32(40) + le16(0xFFFE) + le16(channels) + le32(48_000) + le32(48_000 * align)
        out += le16(align) + le16(24) + le16(22) + le16(24) + le32(channels == 2 ? 3 : 4)
        // KSDATAFORMAT_SUBTYPE_PCM: 00000001-0000-0010-8000-00aa00389b71
        out += [0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
        out += Array("data".utf8) + le32(declaredDataBytes ?? data.count) + data
        return out
    }

    @Test func extensibleTwentyFourBit() throws {
        let values: [Int32] = (0..<2000).map { Int32(4_000_000 * sin(Double($0 / 2) * 0.05)) * ($0 % 2 == 0 ? 1 : -1) }
        let reader = try SoundFileReader(path: dir.write("ext.wav", extensible24(values)))
        #expect(reader.channels == 2 && reader.declaredFrames == 1000)
        let got = try readAll(reader)
        #expect(zip(got, values).allSatisfy { abs($0 - Float($1) / 8_388_608) < 1e-6 })
    }

    @Test func unfinalisedExtensibleIsRecovered() throws {
        let values: [Int32] = (0..<2000).map { Int32($0 * 1000) }
        let path = dir.write("ext0.wav", extensible24(values, declaredDataBytes: 0))
        let reader = try SoundFileReader(path: path)
        let got = try readAll(reader)
        #expect(got.count == 2000)
        #expect(abs(got[1999] - Float(1_999_000) / 8_388_608) < 1e-6)
        #expect(reader.warnings == [.unfinalisedHeader(path: path, bytes: 6000)])
    }

    @Test func eightBitIsUnsigned() throws {
        // 8-bit WAV stores 128 as zero.
        var out: [UInt8] = Array("RIFF".utf8) + le32(36 + 4) + Array("WAVE".utf8)
        out += Array("fmt ".utf8) + le32(16) + le16(1) + le16(1) + le32(8000) + le32(8000) + le16(1) + le16(8)
        out += Array("data".utf8) + le32(4) + [128, 255, 0, 192]
        let got = try readAll(try SoundFileReader(path: dir.write("u8.wav", out)))
        #expect(got == [0, 127.0 / 128, -1, 0.5])
    }
}
