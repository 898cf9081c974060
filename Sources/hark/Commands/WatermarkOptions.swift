import ArgumentParser
import Foundation
import HarkDSP

/// `--key` / `--key-file`, shared by the watermark commands.
struct KeyOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Secret key text that selects the watermark pattern (default: the demo key).", valueName: "text"))
    var key: String?

    @Option(help: ArgumentHelp("Read the key from a file (its bytes).", valueName: "path"))
    var keyFile: String?

    func validate() throws {
        if key != nil && keyFile != nil { throw ValidationError("give --key or --key-file, not both") }
        if let k = key, k.isEmpty { throw ValidationError("--key is empty") }
    }

    /// The key, or an error line naming the key file.
    func resolve() throws -> WatermarkKey {
        if let path = keyFile {
            guard let data = FileManager.default.contents(atPath: path) else {
                let reason = FileManager.default.fileExists(atPath: path) ? "cannot be read" : "no such file"
                Diagnostics.error("\(path): \(reason) (key file)")
                throw ExitCode.failure
            }
            guard !data.isEmpty else {
                Diagnostics.error("\(path): the key file is empty")
                throw ExitCode.failure
            }
            return WatermarkKey(bytes: [UInt8](data))
        }
        return key.map(WatermarkKey.init(text:)) ?? .demo
    }
}
