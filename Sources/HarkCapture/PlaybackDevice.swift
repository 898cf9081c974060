import CALSA
import FoundationEssentials
import Glibc

/// The calls a playback loop makes on a PCM: the seam where tests inject an underrun (the
/// `file` plugin never has one) while everything else stays real.
public protocol PCMOutput: AnyObject {
    var negotiated: NegotiatedFormat { get }
    /// `snd_pcm_writei`: frames written (≥ 0) or a negative error code.
    func writeInterleaved(from buffer: UnsafeRawPointer, frames: Int) -> Int
    /// `snd_pcm_recover(pcm, code, silent)`.
    func recover(_ code: Int32) -> Int32
    /// `snd_pcm_drain`: plays what is queued, then stops.
    func drain()
    func close()
}

/// An ALSA playback PCM, negotiated as ``PCMDevice`` negotiates capture; owns the `snd_pcm_t`
/// until ``close()``. Used by one thread.
public final class PlaybackDevice: PCMOutput, @unchecked Sendable {
    public let negotiated: NegotiatedFormat
    private var pcm: OpaquePointer?

    public init(settings: CaptureSettings) throws(ALSAError) {
        do {
            (pcm, negotiated) = try PCMDevice.open(settings, stream: SND_PCM_STREAM_PLAYBACK)
        } catch {
            switch error {
            case let .open(d, c, m): throw .openPlayback(device: d, code: c, message: m)
            case let .configure(d, s, c, m): throw .configurePlayback(device: d, step: s, code: c, message: m)
            default: throw error
            }
        }
    }

    deinit { close() }

    public func writeInterleaved(from buffer: UnsafeRawPointer, frames: Int) -> Int {
        guard let pcm else { return -Int(EBADFD) }
        return Int(snd_pcm_writei(pcm, buffer, snd_pcm_uframes_t(frames)))
    }

    public func recover(_ code: Int32) -> Int32 {
        guard let pcm else { return -EBADFD }
        return snd_pcm_recover(pcm, code, 1)
    }

    public func drain() {
        if let pcm { snd_pcm_drain(pcm) }
    }

    public func close() {
        if let pcm { snd_pcm_close(pcm) }
        pcm = nil
    }
}

/// Writes interleaved frames to a playback PCM, recovering from underruns (`-EPIPE`) and
/// suspends (`-ESTRPIPE`) and counting them; any other error is thrown. One thread uses it.
public final class PlaybackSink {
    public let output: PCMOutput
    /// Underruns recovered: the PCM ran dry before the next block came.
    public private(set) var underruns = 0
    public private(set) var suspends = 0
    public private(set) var writtenFrames = 0
    private var bytes: [UInt8] = []

    public init(output: PCMOutput) {
        self.output = output
    }

    /// Writes `samples` (interleaved, ±1 full scale, clamped) in the PCM's format.
    public func write(_ samples: UnsafeBufferPointer<Float>) throws(ALSAError) {
        let f = output.negotiated
        let frames = samples.count / f.channels
        SampleEncoding.encode(samples, as: f.format, into: &bytes)
        var done = 0
        var attempts = 0
        while done < frames {
            let n = bytes.withUnsafeBytes { output.writeInterleaved(from: $0.baseAddress! + done * f.channels * f.format.bytesPerSample, frames: frames - done) }
            if n >= 0 {
                done += n
                attempts = 0
                continue
            }
            attempts += 1
            let code = Int32(n)
            if code == -EPIPE { underruns += 1 } else if code == -ESTRPIPE { suspends += 1 } else if code == -EAGAIN { continue }
            guard attempts <= 3, output.recover(code) >= 0 else {
                throw .write(code: code, message: ALSAError.message(code))
            }
        }
        writtenFrames += frames
    }
}

/// Samples in ALSA's little-endian formats, to and from floats at ±1 full scale: what the
/// capture thread, playback and `hark embed --live`'s raw stream share.
public enum SampleEncoding {
    /// Replaces `out` with `samples` encoded, clamped to full scale.
    public static func encode(_ samples: UnsafeBufferPointer<Float>, as format: SampleFormat, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        out.reserveCapacity(samples.count * format.bytesPerSample)
        for x in samples {
            let v = max(-1, min(1, x.isFinite ? x : 0))
            switch format {
            case .s16:
                let i = Int16(max(-32768, min(32767, (v * 32768).rounded())))
                out.append(UInt8(truncatingIfNeeded: i)); out.append(UInt8(truncatingIfNeeded: i >> 8))
            case .s32:
                let i = Int32(max(-2_147_483_648, min(2_147_483_647, (Double(v) * 2_147_483_648).rounded())))
                for k in 0..<4 { out.append(UInt8(truncatingIfNeeded: i >> (8 * Int32(k)))) }
            case .float:
                let b = v.bitPattern
                for k in 0..<4 { out.append(UInt8(truncatingIfNeeded: b >> (8 * UInt32(k)))) }
            }
        }
    }

    /// Decodes `count` samples of `format` at `raw` into `out`.
    public static func decode(_ raw: UnsafeRawPointer, _ format: SampleFormat, count n: Int, into out: UnsafeMutableBufferPointer<Float>) {
        switch format {
        case .s16:
            let p = raw.assumingMemoryBound(to: Int16.self)
            for i in 0..<n { out[i] = Float(Int16(littleEndian: p[i])) / 32_768 }
        case .s32:
            let p = raw.assumingMemoryBound(to: Int32.self)
            for i in 0..<n { out[i] = Float(Int32(littleEndian: p[i])) / 2_147_483_648 }
        case .float:
            let p = raw.assumingMemoryBound(to: Float.self)
            for i in 0..<n { out[i] = p[i] }
        }
    }
}
