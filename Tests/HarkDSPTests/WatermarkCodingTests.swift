import Foundation
import Testing
@testable import HarkDSP

@Suite struct WatermarkCodingTests {
    private func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test func sha256KnownAnswers() {
        #expect(hex(SHA256.hash([])) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(hex(SHA256.hash(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let long = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        #expect(hex(SHA256.hash(long)) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test func crc16CheckValue() {
        // CRC-16/CCITT-FALSE of "123456789" is 0x29B1.
        var bits: [Bool] = []
        for byte in Array("123456789".utf8) { for i in 0..<8 { bits.append((byte >> (7 - UInt8(i))) & 1 == 1) } }
        #expect(CRC16.checksum(bits) == 0x29B1)
    }

    @Test func viterbiDecodesCleanAndCorrectsErrors() {
        var rng = SplitMix64(seed: 3)
        for _ in 0..<20 {
            let bits = (0..<48).map { _ in rng.next() & 1 == 1 }
            let coded = ConvolutionalCode.encode(bits)
            #expect(coded.count == 108)
            var soft = coded.map { $0 ? Float(1) : -1 }
            #expect(ConvolutionalCode.decode(soft, count: 48) == bits)
            // Four scattered hard errors are within the code's reach (free distance 10).
            for i in [5, 30, 61, 90] { soft[i] = -soft[i] }
            #expect(ConvolutionalCode.decode(soft, count: 48) == bits)
        }
    }

    /// The vector decoder against the textbook one (a state at a time) on pure noise, where
    /// every decision is close: the same bits, so the same maximum-likelihood codeword.
    @Test func viterbiMatchesTheTextbookDecoder() {
        func textbook(_ soft: [Float], count: Int) -> [Bool] {
            let steps = count + 6
            var metric = [Float](repeating: -1e30, count: 64), next = metric
            var survivors = [Int](repeating: 0, count: steps * 64)
            metric[0] = 0
            func sign(_ r: Int, _ g: Int) -> Float { (r & g).nonzeroBitCount & 1 == 1 ? 1 : -1 }
            for t in 0..<steps {
                for n in 0..<64 {
                    if t >= count && n & 1 == 1 { next[n] = -1e30; continue }
                    let a = n >> 1, b = a | 32
                    let ra = (a << 1 | (n & 1)) & 0x7F, rb = (b << 1 | (n & 1)) & 0x7F
                    let ma = metric[a] + sign(ra, 0o133) * soft[2 * t] + sign(ra, 0o171) * soft[2 * t + 1]
                    let mb = metric[b] + sign(rb, 0o133) * soft[2 * t] + sign(rb, 0o171) * soft[2 * t + 1]
                    (next[n], survivors[t * 64 + n]) = ma >= mb ? (ma, a) : (mb, b)
                }
                swap(&metric, &next)
            }
            var state = 0, bits = [Bool](repeating: false, count: steps)
            for t in stride(from: steps - 1, through: 0, by: -1) {
                bits[t] = state & 1 == 1
                state = survivors[t * 64 + state]
            }
            return Array(bits.prefix(count))
        }
        var rng = SplitMix64(seed: 17)
        for _ in 0..<200 {
            let soft = (0..<108).map { _ in Float(rng.nextGaussian()) }
            #expect(ConvolutionalCode.decode(soft, count: 48) == textbook(soft, count: 48))
        }
    }

    @Test func viterbiUsesSoftConfidence() {
        // Noise at σ = 0.8 per coded bit (3 dB below the signal per bit after coding) decodes.
        var rng = SplitMix64(seed: 9)
        var failures = 0
        for _ in 0..<50 {
            let bits = (0..<48).map { _ in rng.next() & 1 == 1 }
            let soft = ConvolutionalCode.encode(bits).map { Float(($0 ? 1 : -1) + 0.8 * rng.nextGaussian()) }
            if ConvolutionalCode.decode(soft, count: 48) != bits { failures += 1 }
        }
        #expect(failures <= 2)
    }

    @Test func payloadParsing() throws {
        #expect(try WatermarkPayload(hex: "1A2b3C4d").hex == "1a2b3c4d")
        #expect(try WatermarkPayload(hex: "0x7").hex == "00000007")
        #expect(throws: WatermarkPayload.ParseError.notHex("12g4")) { try WatermarkPayload(hex: "12g4") }
        #expect(throws: WatermarkPayload.ParseError.tooLong("123456789")) { try WatermarkPayload(hex: "123456789") }
        #expect(throws: WatermarkPayload.ParseError.empty) { try WatermarkPayload(hex: "") }
        let p = WatermarkPayload(0xDEADBEEF)
        #expect(WatermarkPayload(bits: p.bits) == p)
    }

    @Test func formatIsDeterministicPerKeyAndDiffersBetweenKeys() {
        let a = WatermarkFormat(key: WatermarkKey(text: "alpha"))
        let a2 = WatermarkFormat(key: WatermarkKey(text: "alpha"))
        let b = WatermarkFormat(key: WatermarkKey(text: "beta"))
        #expect(a.frequency == a2.frequency && a.phase == a2.phase)
        #expect(a.frequency != b.frequency)
        #expect(a.placement.map(\.slot) == a2.placement.map(\.slot))
        // Every coded bit has its own place.
        #expect(Set(a.placement.map { $0.slot * 100 + $0.position }).count == WatermarkFormat.codedBits)
        for profile in WatermarkProfile.allCases {
            let format = WatermarkFormat(key: WatermarkKey(text: "alpha"), profile: profile)
            for slot in format.frequency {
                let all = slot.flatMap { $0.flatMap { $0 } }.sorted()
                #expect(all.count == 2 * WatermarkFormat.pairsPerSymbol)
                #expect(all.first! >= profile.band.lowerBound && all.last! <= profile.band.upperBound)
                // Distinct grid points, so at least 10 Hz (4 detector bins) apart.
                let index = all.map { format.grid.firstIndex(of: $0)! }
                for (x, y) in zip(index, index.dropFirst()) { #expect(y - x >= 1) }
                for (x, y) in zip(all, all.dropFirst()) { #expect(y - x >= 10 - 1e-9) }
            }
        }
    }

    @Test func profileGridsSpanTheirBandsDensestWhereBandsAreWidest() {
        for (profile, points) in [(WatermarkProfile.tv, 284), (.stadium, 402)] {
            let grid = profile.grid
            #expect(grid.count == points, "\(profile)")
            #expect(grid.allSatisfy { $0.truncatingRemainder(dividingBy: WatermarkFormat.gridResolution) == 0 })
            #expect(grid.first! >= profile.band.lowerBound && grid.first! < profile.band.lowerBound + 100)
            #expect(grid.last! <= profile.band.upperBound && grid.last! > profile.band.upperBound - 20)
            // Spacing follows the critical band: wide at the bottom, the grid's 10 Hz at the top.
            #expect(grid[1] - grid[0] >= 50)
            #expect(grid[grid.count - 1] - grid[grid.count - 2] == WatermarkFormat.gridResolution)
        }
    }

    @Test func thresholdMeetsTheFalseDetectionBudget() {
        // candidates per hour × 2³² payloads × c·P(η ≥ z) ≤ 10⁻⁶, c = 1 / (4 P(η ≥ √2))
        let t = WatermarkDetector.threshold
        let bound = WatermarkDetector.candidatesPerHour * pow(2, 32) * WatermarkDetector.tailBound(t)
        #expect(bound <= 1.0001e-6 && bound > 0.9e-6)
        #expect(abs(t - 9.646) < 0.001)
        #expect(abs(WatermarkDetector.rademacherGaussianConstant - 3.1787) < 0.0001)
        // Never looser than Hoeffding's e^(−z²/2) where thresholds lie.
        for z in stride(from: 6.0, through: 12, by: 0.5) { #expect(WatermarkDetector.tailBound(z) < exp(-z * z / 2)) }
        // The normal tail itself, checked against tabulated values: P(η ≥ 3) = 1.3499e-3,
        // P(η ≥ 10) = 7.6199e-24.
        #expect(abs(WatermarkDetector.tailBound(3) / WatermarkDetector.rademacherGaussianConstant - 1.3499e-3) < 1e-7)
        #expect(abs(WatermarkDetector.tailBound(10) / WatermarkDetector.rademacherGaussianConstant / 7.6199e-24 - 1) < 1e-4)
    }
}

@Suite struct WatermarkCatalogueTests {
    @Test func listParsesSeparatorsCommentsAndDuplicates() throws {
        let text = """
        # campaigns on air
        c0ffee42, 1a2b3c4d
        0xDA7E0001   ff  # a short one
        c0ffee42
        """
        #expect(try WatermarkPayload.list(text) == [WatermarkPayload(0xC0FFEE42), WatermarkPayload(0x1A2B3C4D),
                                                   WatermarkPayload(0xDA7E0001), WatermarkPayload(0xFF)])
        #expect(try WatermarkPayload.list("# nothing\n\n").isEmpty)
        #expect(throws: WatermarkPayload.ParseError.notHex("xyz")) { try WatermarkPayload.list("c0ffee42, xyz") }
        #expect(throws: WatermarkPayload.ParseError.tooLong("123456789")) { try WatermarkPayload.list("123456789") }
    }

    @Test func thresholdFollowsTheNumberOfPayloads() throws {
        // candidates × N × c·P(η ≥ z) = 10⁻⁶ per hour.
        #expect(abs(WatermarkDetector.threshold(payloads: pow(2, 32)) - WatermarkDetector.threshold) < 1e-12)
        #expect(abs(WatermarkDetector.threshold(payloads: 100) - 7.639) < 0.001)
        #expect(abs(WatermarkDetector.threshold(payloads: 1) - 7.022) < 0.001)
        let format = WatermarkFormat(key: .demo)
        let one = try WatermarkDetector(format: format, sampleRate: 16_000, catalogue: [WatermarkPayload(1), WatermarkPayload(1)])
        #expect(one.catalogue == [WatermarkPayload(1)])
        #expect(one.threshold == WatermarkDetector.threshold(payloads: 1))
        let none = try WatermarkDetector(format: format, sampleRate: 16_000, catalogue: [])
        #expect(none.catalogue == nil)
        #expect(none.threshold == WatermarkDetector.threshold)
    }
}
