import Foundation
import Testing
@testable import HarkDaemon

@Suite struct LogRateLimiterTests {
    @Test func aFloodCostsAFewLinesAWindow() {
        let limiter = LogRateLimiter(burst: 5, window: 10)
        let t0 = Date(timeIntervalSince1970: 1_000)
        var logged: [String] = []
        // 12 918 messages within one window, as a dead FIFO once produced.
        for i in 0..<12_918 { logged += limiter.admit("ALSA: read error \(i)", now: t0.addingTimeInterval(Double(i) * 1e-4)) }
        #expect(logged == (0..<5).map { "ALSA: read error \($0)" })
        // The next window says how many were held back, then lets a burst through again.
        let next = limiter.admit("ALSA: read error again", now: t0.addingTimeInterval(11))
        #expect(next == ["12913 more such message(s) held back in the last 10 s", "ALSA: read error again"])
    }

    @Test func aQuietLogIsUntouched() {
        let limiter = LogRateLimiter(burst: 5, window: 10)
        let t0 = Date(timeIntervalSince1970: 1_000)
        for i in 0..<20 {
            #expect(limiter.admit("m\(i)", now: t0.addingTimeInterval(Double(i) * 3)) == ["m\(i)"])
        }
    }
}
