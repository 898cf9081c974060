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

    /// The key used when none is given. Fine for tests and demos; anything real needs its own.
    public static let demo = WatermarkKey(text: "hark-demo-key")
}
