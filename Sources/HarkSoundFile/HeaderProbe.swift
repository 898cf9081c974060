import FoundationEssentials
import Glibc

/// Reads what a WAV (RIFF, RIFX, RF64) or AIFF/AIFC header *declares*, independently of
/// libsndfile.
///
/// libsndfile silently trims a data length that runs past the end of the file, so a recording
/// cut short would be analysed as if complete. Comparing the declared length with what the file
/// holds lets Hark say what is missing.
struct HeaderProbe {
    /// The sample layout of a WAV `fmt ` chunk, enough to read its data as raw samples.
    struct WaveFormat: Equatable {
        var formatTag: UInt16          // 1 PCM, 3 IEEE float (after resolving EXTENSIBLE)
        var channels: Int
        var sampleRate: Int
        var bitsPerSample: Int
        var blockAlign: Int
        var bigEndian: Bool
    }

    /// Frames the header declares, if it states a definite length.
    var declaredFrames: Int64?
    /// Byte offset of the sample data.
    var dataOffset: Int64?
    /// Data bytes the header declares (nil when it uses an "unknown length" placeholder).
    var declaredDataBytes: Int64?
    /// Bytes present from the data offset to the end of the file.
    var availableDataBytes: Int64?
    var waveFormat: WaveFormat?

    /// Probes `path`; returns an empty probe for anything that is not WAV or AIFF.
    static func probe(path: String) -> HeaderProbe {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return HeaderProbe() }
        defer { close(fd) }
        let fileSize = Int64(max(lseek(fd, 0, SEEK_END), 0))
        func read(_ offset: Int64, _ count: Int) -> [UInt8]? {
            guard offset >= 0, offset + Int64(count) <= fileSize else { return nil }
            var bytes = [UInt8](repeating: 0, count: count)
            var done = 0
            while done < count {
                let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset) + off_t(done)) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return nil }
                done += n
            }
            return bytes
        }
        guard let head = read(0, 12) else { return HeaderProbe() }
        let id = String(decoding: head[0..<4], as: UTF8.self)
        let form = String(decoding: head[8..<12], as: UTF8.self)
        switch (id, form) {
        case ("RIFF", "WAVE"), ("RIFX", "WAVE"), ("RF64", "WAVE"):
            return probeWave(bigEndian: id == "RIFX", rf64: id == "RF64", fileSize: fileSize, read: read)
        case ("FORM", "AIFF"), ("FORM", "AIFC"):
            return probeAIFF(fileSize: fileSize, read: read)
        default:
            return HeaderProbe()
        }
    }

    private static func integer(_ b: ArraySlice<UInt8>, bigEndian: Bool) -> UInt64 {
        let bytes = bigEndian ? Array(b) : Array(b.reversed())
        return bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// Visits the chunks after a 12-byte RIFF/FORM header until `visit` returns false, the file
    /// ends, or 64 chunks have gone by. Odd input ends the walk quietly: libsndfile reports
    /// real errors.
    private static func forEachChunk(bigEndian: Bool, read: (Int64, Int) -> [UInt8]?,
                                     visit: (_ id: String, _ size: Int64, _ body: Int64) -> Bool) {
        var offset: Int64 = 12
        for _ in 0..<64 {
            guard let h = read(offset, 8) else { return }
            let size = Int64(integer(h[4..<8], bigEndian: bigEndian))
            guard visit(String(decoding: h[0..<4], as: UTF8.self), size, offset + 8), size < 0xFFFF_FFFF else { return }
            offset += 8 + size + (size & 1)
        }
    }

    private static func probeWave(bigEndian: Bool, rf64: Bool, fileSize: Int64,
                                  read: (Int64, Int) -> [UInt8]?) -> HeaderProbe {
        var result = HeaderProbe()
        var ds64DataSize: Int64?
        forEachChunk(bigEndian: bigEndian, read: read) { chunk, size, body in
            switch chunk {
            case "ds64":
                if let d = read(body, 16) { ds64DataSize = Int64(integer(d[8..<16], bigEndian: false)) }
            case "fmt ":
                if let f = read(body, 16) {
                    var tag = UInt16(integer(f[0..<2], bigEndian: bigEndian))
                    if tag == 0xFFFE, let ext = read(body + 24, 2) {
                        tag = UInt16(integer(ext[0..<2], bigEndian: bigEndian))   // SubFormat GUID starts with the tag
                    }
                    result.waveFormat = WaveFormat(
                        formatTag: tag,
                        channels: Int(integer(f[2..<4], bigEndian: bigEndian)),
                        sampleRate: Int(integer(f[4..<8], bigEndian: bigEndian)),
                        bitsPerSample: Int(integer(f[14..<16], bigEndian: bigEndian)),
                        blockAlign: Int(integer(f[12..<14], bigEndian: bigEndian)),
                        bigEndian: bigEndian)
                }
            case "data":
                result.dataOffset = body
                result.availableDataBytes = max(0, fileSize - body)
                var declared: Int64? = size
                if size == 0xFFFF_FFFF { declared = rf64 ? ds64DataSize : nil }   // "unknown length"
                result.declaredDataBytes = declared
                if let declared, let align = result.waveFormat?.blockAlign, align > 0 {
                    result.declaredFrames = declared / Int64(align)
                }
                return false
            default:
                break
            }
            return true
        }
        return result
    }

    private static func probeAIFF(fileSize: Int64, read: (Int64, Int) -> [UInt8]?) -> HeaderProbe {
        var result = HeaderProbe()
        forEachChunk(bigEndian: true, read: read) { chunk, _, body in
            if chunk == "COMM", let c = read(body, 8) {
                result.declaredFrames = Int64(integer(c[2..<6], bigEndian: true))
            } else if chunk == "SSND", let s = read(body, 4) {
                let dataOffset = body + 8 + Int64(integer(s[0..<4], bigEndian: true))
                result.dataOffset = dataOffset
                result.availableDataBytes = max(0, fileSize - dataOffset)
            }
            return true
        }
        return result
    }
}
