import Foundation

/// A private temporary directory for one test, removed with everything in it when the value is
/// released, so that a test run leaves nothing behind in the system's temporary folder.
public final class TemporaryDirectory: Sendable {
    public let path: String

    /// - Parameter prefix: names the directory after what made it, for whoever finds one left
    ///   by a run that was killed.
    public init(prefix: String = "hark-test") {
        path = NSTemporaryDirectory() + prefix + "-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// The path of `name` inside the directory (nothing is created).
    public func file(_ name: String) -> String { path + "/" + name }

    /// Writes `bytes` to `name` inside the directory and returns its path.
    @discardableResult
    public func write(_ name: String, _ bytes: [UInt8]) -> String {
        _ = FileManager.default.createFile(atPath: file(name), contents: Data(bytes))
        return file(name)
    }
}
