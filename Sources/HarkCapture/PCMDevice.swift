import CALSA
import CALSAShim
import FoundationEssentials
import Glibc
import HarkSystem

/// The calls the capture loop makes on a PCM: the seam where tests inject errors (an
/// overrun cannot be provoked through ALSA's file plugin) while everything else stays real.
public protocol PCMStream: AnyObject {
    var negotiated: NegotiatedFormat { get }
    /// `snd_pcm_readi`: frames read (> 0) or a negative error code.
    func readInterleaved(into buffer: UnsafeMutableRawPointer, frames: Int) -> Int
    /// `snd_pcm_recover(pcm, code, silent)`.
    func recover(_ code: Int32) -> Int32
    /// `snd_pcm_resume`.
    func resume() -> Int32
    /// `snd_pcm_prepare`.
    func prepare() -> Int32
    func close()
}

/// An ALSA capture PCM: opens it, negotiates hardware parameters through the `hw_params`
/// API (`snd_pcm_set_params` does not pin the period size), and owns the `snd_pcm_t` until
/// ``close()``. Sendable by hand so it can be handed to the capture thread, which alone uses
/// it from then on (ALSA handles are not safe to share).
public final class PCMDevice: PCMStream, @unchecked Sendable {
    public let negotiated: NegotiatedFormat
    private var pcm: OpaquePointer?

    public init(settings: CaptureSettings) throws(ALSAError) {
        (pcm, negotiated) = try Self.open(settings, stream: SND_PCM_STREAM_CAPTURE)
    }

    deinit { close() }

    /// Opens `settings.device` for `stream` (from `settings.configuration` when given) and
    /// negotiates its parameters; the handle is the caller's to close.
    static func open(_ settings: CaptureSettings, stream: snd_pcm_stream_t) throws(ALSAError) -> (OpaquePointer, NegotiatedFormat) {
        var handle: OpaquePointer?
        let device = settings.device
        if let text = settings.configuration {
            var config: OpaquePointer?
            var rc = snd_config_top(&config)
            var input: OpaquePointer?
            if rc == 0 {
                rc = text.withCString { snd_input_buffer_open(&input, $0, -1) }
            }
            if rc == 0 {
                rc = snd_config_load(config, input)
                snd_input_close(input)
            }
            guard rc == 0 else {
                if config != nil { snd_config_delete(config) }
                throw .configuration(code: rc, message: ALSAError.message(rc))
            }
            rc = snd_pcm_open_lconf(&handle, device, stream, 0, config)
            snd_config_delete(config)
            guard rc == 0, handle != nil else { throw .open(device: device, code: rc, message: ALSAError.message(rc)) }
        } else {
            let rc = snd_pcm_open(&handle, device, stream, 0)
            guard rc == 0, handle != nil else { throw .open(device: device, code: rc, message: ALSAError.message(rc)) }
        }
        do {
            return (handle!, try configure(handle!, settings: settings))
        } catch {
            snd_pcm_close(handle)
            throw error
        }
    }

    private static func configure(_ pcm: OpaquePointer, settings: CaptureSettings) throws(ALSAError) -> NegotiatedFormat {
        let device = settings.device
        var params: OpaquePointer?
        guard snd_pcm_hw_params_malloc(&params) == 0, let hw = params else {
            throw .configure(device: device, step: "memory for parameters", code: -ENOMEM, message: "out of memory")
        }
        defer { snd_pcm_hw_params_free(hw) }
        func check(_ rc: Int32, _ step: String) throws(ALSAError) {
            guard rc >= 0 else { throw .configure(device: device, step: step, code: rc, message: ALSAError.message(rc)) }
        }
        try check(snd_pcm_hw_params_any(pcm, hw), "any configuration")
        try check(snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED), "interleaved access")
        let alsaFormat: snd_pcm_format_t
        switch settings.format {
        case .s16: alsaFormat = SND_PCM_FORMAT_S16_LE
        case .s32: alsaFormat = SND_PCM_FORMAT_S32_LE
        case .float: alsaFormat = SND_PCM_FORMAT_FLOAT_LE
        }
        try check(snd_pcm_hw_params_set_format(pcm, hw, alsaFormat), "format \(settings.format.rawValue)")
        var channels = UInt32(settings.channels)
        try check(snd_pcm_hw_params_set_channels_near(pcm, hw, &channels), "\(settings.channels) channels")
        var rate = UInt32(settings.rate)
        var dir: Int32 = 0
        try check(snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, &dir), "rate \(settings.rate) Hz")
        var period = snd_pcm_uframes_t(settings.periodFrames)
        try check(snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, &dir), "period of \(settings.periodFrames) frames")
        var buffer = snd_pcm_uframes_t(max(settings.bufferFrames, 2 * Int(period)))
        try check(snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &buffer), "buffer of \(settings.bufferFrames) frames")
        try check(snd_pcm_hw_params(pcm, hw), "the parameter set")
        try check(snd_pcm_prepare(pcm), "prepare")
        return NegotiatedFormat(rate: Int(rate), channels: Int(channels), format: settings.format,
                                periodFrames: Int(period), bufferFrames: Int(buffer))
    }

    public func readInterleaved(into buffer: UnsafeMutableRawPointer, frames: Int) -> Int {
        guard let pcm else { return -Int(EBADFD) }
        return Int(snd_pcm_readi(pcm, buffer, snd_pcm_uframes_t(frames)))
    }

    public func recover(_ code: Int32) -> Int32 {
        guard let pcm else { return -EBADFD }
        return snd_pcm_recover(pcm, code, 1)
    }

    public func resume() -> Int32 {
        guard let pcm else { return -EBADFD }
        return snd_pcm_resume(pcm)
    }

    public func prepare() -> Int32 {
        guard let pcm else { return -EBADFD }
        return snd_pcm_prepare(pcm)
    }

    public func close() {
        if let pcm { snd_pcm_close(pcm) }
        pcm = nil
    }
}

/// Sends ALSA's own library messages (normally printed on stderr) to `handler`.
public enum ALSALog {
    // Routed from any thread, read on whichever thread ALSA reports from (a capture thread).
    private static let lock = PosixLock()
    nonisolated(unsafe) private static var handler: (@Sendable (String) -> Void)?
    private static var current: (@Sendable (String) -> Void)? { lock.withLock { handler } }

    public static func route(to handler: @escaping @Sendable (String) -> Void) {
        lock.withLock { Self.handler = handler }
        hark_alsa_set_log_callback { file, line, function, err, message in
            let text = message.map { String(cString: $0) } ?? ""
            let where_ = function.map { String(cString: $0) } ?? "?"
            let code = err != 0 ? " (\(String(cString: snd_strerror(err))))" : ""
            ALSALog.current?("ALSA \(where_): \(text)\(code)")
            _ = file
            _ = line
        }
    }

    public static func reset() {
        hark_alsa_clear_log_callback()
        lock.withLock { handler = nil }
    }
}
