/// The secret that selects a watermark's pattern: tone frequencies, phases and bit placement.
/// Audio marked with one key is invisible to a detector holding another.
public struct WatermarkKey: Sendable, Equatable {
    public let bytes: [UInt8]

    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// A key given as text (its UTF-8 bytes).
    public init(text: String) {
        bytes = Array(text.utf8)
    }

    /// Eight hex digits that tell keys apart without telling what they are: the first 4 bytes of
    /// HMAC-SHA-256 under the key of a fixed label. A catalogue keeps this, never the key, so that
    /// a detection with another key can say so instead of "no watermark found".
    public var fingerprint: String {
        SHA256.hmac(key: bytes, message: Array("hark watermark key fingerprint".utf8)).prefix(4)
            .map { byte in String(byte, radix: 16).count == 1 ? "0" + String(byte, radix: 16) : String(byte, radix: 16) }.joined()
    }

    /// The key used when none is given. Fine for tests and demos; anything real needs its own.
    public static let demo = WatermarkKey(text: "hark-demo-key")
}
