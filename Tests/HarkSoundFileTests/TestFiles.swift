import Foundation
@testable import HarkSoundFile

/// Little-endian field helpers for hand-made headers.
func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF)] }
func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8((v >> (8 * $0)) & 0xFF) } }

/// A canonical 44-byte-header 16-bit PCM WAV, with every header field overridable so tests
/// can make it lie.
func wavBytes(samples: [Int16], channels: Int = 1, rate: Int = 48_000, formatTag: Int = 1,
              declaredDataBytes: Int? = nil, bits: Int = 16) -> [UInt8] {
    let data = samples.flatMap { le16(Int($0)) }
    let blockAlign = channels * bits / 8
    var out: [UInt8] = Array("RIFF".utf8) + le32(36 + data.count) + Array("WAVE".utf8)
    out += Array("fmt ".utf8) + le32(16) + le16(formatTag) + le16(channels) + le32(rate)
    out += le32(rate * blockAlign) + le16(blockAlign) + le16(bits)
    out += Array("data".utf8) + le32(declaredDataBytes ?? data.count) + data
    return out
}

/// A 1 kHz tone as 16-bit samples.
func toneSamples(_ count: Int, rate: Int = 48_000, amplitude: Double = 0.5) -> [Int16] {
    (0..<count).map { Int16(amplitude * 32767 * sin(2 * Double.pi * 1000 * Double($0) / Double(rate))) }
}

/// Reads every frame of `reader` in blocks; returns the samples (interleaved).
func readAll(_ reader: SoundFileReader, block: Int = 1000) throws -> [Float] {
    var out: [Float] = []
    var buffer = [Float](repeating: 0, count: block * reader.channels)
    while true {
        let n = try buffer.withUnsafeMutableBufferPointer { try reader.read(into: $0) }
        if n == 0 { break }
        out += buffer[0..<(n * reader.channels)]
    }
    return out
}
