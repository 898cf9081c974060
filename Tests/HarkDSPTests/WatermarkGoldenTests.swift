import Foundation
import Testing
@testable import HarkDSP

/// The on-air format, pinned. Marks already aired must stay detectable, so the keyed tone plan
/// (frequencies, phases, sides), the placement of coded bits and the coding of a payload may not
/// change by accident. If one of these fails after a deliberate change of format, every mark on
/// air becomes undetectable to the new detector: that needs a new format version, not an update
/// of these values.
@Suite struct WatermarkGoldenTests {
    /// A canonical text of everything the key selects, for one profile.
    static func plan(_ profile: WatermarkProfile, key: WatermarkKey) -> String {
        let f = WatermarkFormat(key: key, profile: profile)
        var lines = ["grid " + f.grid.map { String(Int($0.rounded())) }.joined(separator: ",")]
        for slot in 0..<WatermarkFormat.symbolsPerCopy {
            for position in 0..<WatermarkFormat.bitsPerSymbol {
                for pair in 0..<WatermarkFormat.pairsPerBit {
                    let hz = f.frequency[slot][position][pair].map { String(Int($0.rounded())) }
                    let phase = f.phase[slot][position][pair].map { String(format: "%.6f", $0) }
                    lines.append("\(slot).\(position).\(pair) \(hz.joined(separator: "/")) \(phase.joined(separator: "/"))")
                }
            }
        }
        lines.append("placement " + f.placement.map { "\($0.slot).\($0.position)" }.joined(separator: ","))
        let bits = WatermarkPayload(0xC0FF_EE42).codeword.map { $0 ? "1" : "0" }.joined()
        lines.append("codeword c0ffee42 " + bits)
        return lines.joined(separator: "\n")
    }

    static func digest(_ text: String) -> String {
        SHA256.hash(Array(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    @Test func theDemoKeysTonePlanIsPinned() {
        let tv = Self.plan(.tv, key: .demo)
        // A few values in the open, so a failure shows where the plan moved.
        #expect(tv.split(separator: "\n")[1] == "0.0.0 1450/2670 1.871345/5.464914")
        #expect(Self.digest(tv) == "cfb3653458350b38c0bd2d5064b4954f858d1b90b7af918c9ec7d8df89163273")
        #expect(Self.digest(Self.plan(.stadium, key: .demo)) == "26b8f4a9799033ffd9d649b45b5072e11a7d31ddecda45243709264b0c899650")
    }

    @Test func anotherKeysPlanAndTheCodewordArePinned() {
        let text = Self.plan(.tv, key: WatermarkKey(text: "station A"))
        #expect(Self.digest(text) == "d834dfeeb96ff80cb72cf531bdd89e611ec17b15b4e0e031757b753be8a2c665")
        #expect(text.split(separator: "\n").last == "codeword c0ffee42 110110110010101111010110010011111111110001110011111011100011100111010000001011000111111111011001100110110000")
    }
}
