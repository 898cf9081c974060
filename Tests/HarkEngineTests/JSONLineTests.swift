import Foundation
import Testing
import HarkDSP
@testable import HarkEngine
import HarkSystem

@Suite struct JSONLineTests {
    @Test func levelLineHasTheDocumentedFieldsInOrder() {
        let e = AnalysisEvent.level(LevelEvent(source: "a.wav", levels: IntervalLevels(
            time: 2, duration: 1, LAF: 71.234, LAS: 70.1, LAeq: 70.555, LAFmax: 72, LCpeak: nil)))
        #expect(e.jsonLine == #"{"class":"level","file":"a.wav","t":2.000,"LAF":71.23,"LAS":70.10,"LCpeak":null,"LAeq":70.56,"LAFmax":72.00}"#)
    }

    @Test func reportLineParsesAndKeepsItsFieldNames() throws {
        let meter = MeterReport(duration: 10, LAeq: 70, LCeq: 75, LZeq: 80, LAE: 80, LAFmax: 85, LAFmin: 60,
                                LASmax: 82, LCpeak: 99, LA10: 75, LA50: 70, LA90: 62)
        let e = AnalysisEvent.report(ReportEvent(source: "b\"c.wav", meter: meter, bands: [("31.5", 40), ("40", nil)],
                                                 calibration: 0, sampleRate: 48_000, channels: 2, channelUse: "average",
                                                 format: "WAV", warnings: ["x\ny"]))
        let line = e.jsonLine
        #expect(!line.contains("\n"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        for key in ["class", "file", "duration", "LAeq", "LCeq", "LZeq", "LAE", "LAFmax", "LAFmin", "LASmax", "LCpeak",
                    "LA10", "LA50", "LA90", "bands"] {
            #expect(object[key] != nil, "missing \(key)")
        }
        let file = object["file"] as? String
        #expect(file == "b\"c.wav")
        let bands = try #require(object["bands"] as? [String: Any])
        #expect(bands["40"] is NSNull)
        #expect((object["warnings"] as? [String]) == ["x\ny"])
        // Fields appear in the documented order.
        let order = ["\"class\"", "\"file\"", "\"duration\"", "\"LAeq\"", "\"LCeq\"", "\"LZeq\"", "\"LAE\"", "\"LAFmax\"",
                     "\"LAFmin\"", "\"LASmax\"", "\"LCpeak\"", "\"LA10\"", "\"LA50\"", "\"LA90\"", "\"bands\""]
        let positions = order.map { line.range(of: $0)!.lowerBound }
        #expect(positions == positions.sorted())
    }

    @Test func stringsAreEscaped() {
        #expect(JSONLine.quoted("a\u{01}b\tc\\") == #""a\u0001b\tc\\""#)
        #expect(JSONLine.number(-0.001, decimals: 2) == "0.00")
        #expect(JSONLine.number(.nan, decimals: 2) == "null")
        #expect(JSONLine.number(nil, decimals: 2) == "null")
    }
}

@Suite struct UTCTimeTests {
    @Test func millisecondsInUTC() {
        #expect(UTCTime.iso8601(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(UTCTime.iso8601(Date(timeIntervalSince1970: 1_795_470_867.125)) == "2026-11-23T21:54:27.125Z")
        #expect(UTCTime.iso8601(Date(timeIntervalSince1970: 1_795_470_867.9999)) == "2026-11-23T21:54:27.999Z")
        #expect(UTCTime.iso8601(Date(timeIntervalSince1970: -0.25)) == "1969-12-31T23:59:59.750Z")
    }
}
