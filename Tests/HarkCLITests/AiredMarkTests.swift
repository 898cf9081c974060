import Foundation
import Testing

/// A mark as aired: made once by the embedder of the pinned format (signals/README.md) and
/// committed, so a detector change that stops reading marks already on air fails here, not in
/// the field.
@Suite struct AiredMarkTests {
    static let clip = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../signals/aired-c0ffee42.flac").standardized.path

    @Test func theAiredMarkIsStillReadWithinThreeSeconds() throws {
        let run = try Hark.run(["detect", "--json", Self.clip])
        #expect(run.status == 0, "\(run.stderr)")
        let first = try #require(run.jsonObjects.first ?? nil)
        #expect(first["payload"] as? String == "c0ffee42")
        #expect((first["t"] as? Double ?? 99) <= 3.0, "\(first)")
        // With a catalogue that lists it, too; and not by another key or profile.
        #expect(try Hark.run(["detect", "--json", "--catalogue", "c0ffee42,1a2b3c4d", Self.clip]).stdout.contains("c0ffee42"))
        #expect(try Hark.run(["detect", "--json", "--key", "another", Self.clip]).stdout.isEmpty)
        #expect(try Hark.run(["detect", "--json", "--profile", "stadium", Self.clip]).stdout.isEmpty)
    }
}
