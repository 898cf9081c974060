import Foundation
import HarkTesting
import Testing
@testable import HarkLab
import HarkEngine

/// A bench's definitions file that does not decode is refused with the field and the place.
struct DefinitionsFileTests {
    private func refusal(_ json: String) throws -> String? {
        let temporary = TemporaryDirectory(prefix: "hark-definitions")
        let path = temporary.path + "/d.json"
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        do {
            _ = try BenchDefinition.load(path: path)
            return nil
        } catch let error as DefinitionsFile.Invalid {
            return error.description
        }
    }

    @Test func saysWhichFieldIsWrongAndWhere() throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../signals/watermark-bench-stadium-ambient.json")
        let whole = try String(contentsOfFile: file.path, encoding: .utf8)
        var d = try JSONSerialization.jsonObject(with: Data(whole.utf8)) as! [String: Any]
        #expect(try refusal(whole) == nil)
        func text(_ object: Any) -> String { String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self) }

        d["falsePositives"] = nil
        #expect(try refusal(text(d)) == "\"falsePositives\" is missing at the top level")
        d = try JSONSerialization.jsonObject(with: Data(whole.utf8)) as! [String: Any]
        var conditions = d["conditions"] as! [[String: Any]]
        conditions[1]["snr"] = "loud"
        d["conditions"] = conditions
        #expect(try refusal(text(d)) == "conditions[1].snr should be a number")
        // A field that may be left out may be null too; one that must be there may not.
        conditions[1]["snr"] = NSNull()
        d["conditions"] = conditions
        #expect(try refusal(text(d)) == nil)
        var hosts = d["hosts"] as! [[String: Any]]
        hosts[2]["count"] = NSNull()
        d["hosts"] = hosts
        #expect(try refusal(text(d)) == "hosts[2].count is null; it should be a number")
        #expect(try refusal("{\"seed\": 1,")?.hasPrefix("not valid JSON") == true)
        #expect(try refusal("")?.hasPrefix("not valid JSON") == true)
        #expect(throws: DefinitionsFile.Invalid(description: "cannot read it: no such file")) {
            try BenchDefinition.load(path: "/nonexistent/d.json")
        }
    }
}
