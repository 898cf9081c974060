import FoundationEssentials
import Glibc

/// Writes a WAV stream to a file descriptor that may not seek: standard output into a pipe.
///
/// libsndfile refuses to write WAV to a pipe, because it fills in the RIFF and data lengths
/// when the file is closed. This writes them as 0xFFFFFFFF, the placeholder `arecord` and
/// `ffmpeg` use for a stream of unknown length (readers, Hark's among them, read such a file
/// to its end), and fills in the true lengths at the end when the descriptor turns out to be
/// a file after all (`hark generate pink - > x.wav`).
final class StreamedWAV {
    let fd: Int32
    let channels: Int
    let encoding: OutputFormat.Encoding
    private(set) var dataBytes: UInt64 = 0
    private var buffer: [UInt8] = []

    /// Writes the header. `encoding` must be PCM or float (WAV holds no Vorbis).
    init(fd: Int32, sampleRate: Int, channels: Int, encoding: OutputFormat.Encoding) throws(SoundFileError) {
        self.fd = fd
        self.channels = channels
        self.encoding = encoding
        let bytes = Self.bytesPerSample(encoding)
        var header: [UInt8] = []
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { header += $0 } }
        func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { header += $0 } }
        header += Array("RIFF".utf8); u32(0xFFFF_FFFF); header += Array("WAVE".utf8)
        header += Array("fmt ".utf8); u32(16)
        u16(encoding == .f32 || encoding == .f64 ? 3 : 1)
        u16(UInt16(channels)); u32(UInt32(sampleRate)); u32(UInt32(sampleRate * channels * bytes))
        u16(UInt16(channels * bytes)); u16(UInt16(bytes * 8))
        header += Array("data".utf8); u32(0xFFFF_FFFF)
        try put(header)
    }

    static func bytesPerSample(_ e: OutputFormat.Encoding) -> Int {
        switch e {
        case .s16: return 2
        case .s24: return 3
        case .s32, .f32, .vorbis: return 4
        case .f64: return 8
        }
    }

    /// Appends interleaved samples; integer encodings clip at full scale. Converted as libsndfile
    /// converts, so a stream holds the same samples as a file written by path.
    func write(_ samples: UnsafeBufferPointer<Float>) throws(SoundFileError) {
        buffer.removeAll(keepingCapacity: true)
        buffer.reserveCapacity(samples.count * Self.bytesPerSample(encoding))
        for s in samples {
            let x = s.isNaN ? 0 : s
            switch encoding {
            case .s16, .s24, .s32:
                // libsndfile's clipping conversion: to 32 bits, rounded, then shifted down.
                let wide = Int32(max(-2_147_483_648, min(2_147_483_647, (Double(x) * 2_147_483_648).rounded(.toNearestOrEven))))
                switch encoding {
                case .s16: withUnsafeBytes(of: Int16(wide >> 16).littleEndian) { buffer += $0 }
                case .s24: withUnsafeBytes(of: (wide >> 8).littleEndian) { buffer += $0.prefix(3) }
                default: withUnsafeBytes(of: wide.littleEndian) { buffer += $0 }
                }
            case .f32, .vorbis:
                withUnsafeBytes(of: x.bitPattern.littleEndian) { buffer += $0 }
            case .f64:
                withUnsafeBytes(of: Double(x).bitPattern.littleEndian) { buffer += $0 }
            }
        }
        try put(buffer)
        dataBytes += UInt64(buffer.count)
    }

    /// Fills in the lengths if the descriptor can seek and they fit; a pipe keeps the placeholders.
    func finish() {
        guard lseek(fd, 0, SEEK_CUR) >= 0, dataBytes + 36 <= UInt64(UInt32.max) else { return }
        var riff = UInt32(dataBytes + 36).littleEndian, data = UInt32(dataBytes).littleEndian
        _ = pwrite(fd, &riff, 4, 4)
        _ = pwrite(fd, &data, 4, 40)
    }

    private func put(_ bytes: [UInt8]) throws(SoundFileError) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .writeFailed(path: "-", detail: String(cString: strerror(errno)))
            }
            offset += n
        }
    }
}
