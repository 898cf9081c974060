import Foundation
import HarkTesting
import Testing
@testable import HarkDSP
@testable import HarkEngine

@Suite struct KeyFileTests {
    private let temporary = TemporaryDirectory(prefix: "hark-key")

    private func file(_ bytes: [UInt8]) -> String {
        temporary.write(UUID().uuidString, bytes)
    }

    @Test func oneTrailingLineEndIsNotPartOfTheKey() throws {
        let text = WatermarkKey(text: "a campaign secret")
        for ending in ["", "\n", "\r\n"] {
            #expect(try KeyFile.read(file(Array(("a campaign secret" + ending).utf8))) == text, "\(ending.debugDescription)")
        }
        // Only one: a second newline is part of the key.
        #expect(try KeyFile.read(file(Array("a campaign secret\n\n".utf8))) == WatermarkKey(text: "a campaign secret\n"))
        // Binary keys are bytes as they are, apart from that one line end.
        #expect(try KeyFile.read(file([0, 255, 10, 13, 7])).bytes == [0, 255, 10, 13, 7])
    }

    @Test func missingEmptyAndUnreadableFilesAreNamed() throws {
        #expect(throws: KeyFile.Failure.missing("/nonexistent/key")) { try KeyFile.read("/nonexistent/key") }
        let newlineOnly = file([10])
        #expect(throws: KeyFile.Failure.empty(newlineOnly)) { try KeyFile.read(newlineOnly) }
        #expect(throws: KeyFile.Failure.unreadable(NSTemporaryDirectory())) { try KeyFile.read(NSTemporaryDirectory()) }
    }
}
