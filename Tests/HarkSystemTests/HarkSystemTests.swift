import Foundation
import Glibc
import Testing
@testable import HarkSystem

@Suite struct CFormatTests {
    /// Every specifier the project writes, against the C library's own printf through Foundation.
    @Test func matchesFoundationsFormatting() {
        let cases: [(String, [any CVarArg])] = [
            ("%.2f", [3.14159]), ("%+.0f dB", [-5.0]), ("%7.2f", [-1.5]), ("%g Hz", [1000.0]),
            ("%d:%02d:%02d.%03d", [1, 2, 3, 45]), ("0x%04X", [0xBEEF]), ("format 0x%x", [0x10002]),
            ("\\u%04x", [0x1f]), ("≥ %.0f %%", [99.5]), ("%+.2f", [0.0]), ("%.3f s", [Double.infinity]),
            ("%.1f", [Double.nan]), ("%d of %d", [Int32(-3), UInt8(200)]),
        ]
        for (format, arguments) in cases {
            let expected = String(format: format, arguments: arguments)
            let actual = String(cFormat: format, arguments.map { $0 as Any })
            #expect(actual == expected, "\(format)")
        }
    }

    @Test func objectsPrintTheirDescription() {
        #expect(String(cFormat: "%@: payload %@ at %.2f s", "clip.wav", "c0ffee42", 1.005) == "clip.wav: payload c0ffee42 at 1.00 s")
        #expect(String(cFormat: "%@ and %d", "a") == "a and 0")       // a missing argument reads as zero
        #expect(String(cFormat: "100%") == "100%")                     // a lone % is kept
    }

    @Test func longOutputIsNotCut() {
        #expect(String(cFormat: "%300.1f", 1.0).count == 300)
    }
}

@Suite struct TextTests {
    @Test func trimming() {
        #expect("  a b \t\r\n".trimmingWhitespace() == "a b")
        #expect(" \n ".trimmingWhitespace() == "")
        #expect("x".trimmingWhitespace() == "x")
        #expect("key = value"[...].split(separator: "=")[1].trimmingWhitespace() == "value")
    }

    @Test func directories() {
        #expect(directoryOfPath("/run/hark/hark.sock") == "/run/hark")
        #expect(directoryOfPath("/hark.sock") == "/")
        #expect(directoryOfPath("hark.sock") == "")
        #expect(directoryOfPath("run/hark.sock") == "run")
    }
}

@Suite struct ThreadTests {
    final class Box: @unchecked Sendable {
        let condition = ConditionLock()
        var value = 0
    }

    @Test func aThreadRunsAndSignals() throws {
        let box = Box()
        try DetachedThread.start(name: "hark-test-thread-long-name") {
            box.condition.lock()
            box.value = 42
            box.condition.signal()
            box.condition.unlock()
        }
        box.condition.lock()
        defer { box.condition.unlock() }
        let deadline = Date(timeIntervalSinceNow: 10)
        while box.value == 0 {
            if !box.condition.wait(until: deadline) { break }
        }
        #expect(box.value == 42)
    }

    @Test func aWaitEndsAtItsDeadline() {
        let condition = ConditionLock()
        condition.lock()
        defer { condition.unlock() }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let start = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
        let signalled = condition.wait(until: Date(timeIntervalSinceNow: 0.05))
        clock_gettime(CLOCK_MONOTONIC, &now)
        #expect(!signalled)
        #expect(Double(now.tv_sec) + Double(now.tv_nsec) / 1e9 - start >= 0.049)
        #expect(!condition.wait(until: Date(timeIntervalSinceNow: -1)))   // already passed
    }

    @Test func lockExcludes() async {
        final class Counter: @unchecked Sendable { let lock = PosixLock(); var n = 0 }
        let counter = Counter()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask { for _ in 0..<10_000 { counter.lock.withLock { counter.n += 1 } } }
            }
        }
        #expect(counter.n == 40_000)
    }
}

@Suite struct SubprocessTests {
    @Test func keepsBothStreamsAndTheStatus() throws {
        // More than a pipe holds on each stream, so a reader that drained one then the other
        // would hang here.
        let run = try Subprocess.run("/bin/sh", ["-c", "head -c 200000 /dev/zero; head -c 150000 /dev/zero >&2; exit 3"])
        #expect(run.status == 3)
        #expect(run.standardOutput.count == 200_000)
        #expect(run.standardError.count == 150_000)
    }

    @Test func outputCanBeDropped() throws {
        let run = try Subprocess.run("/bin/sh", ["-c", "echo out; echo err >&2"], keepOutput: false)
        #expect(run.status == 0 && run.standardOutput.isEmpty)
        #expect(String(decoding: run.standardError, as: UTF8.self) == "err\n")
    }

    @Test func aSignalIsReportedAs128PlusIt() throws {
        #expect(try Subprocess.run("/bin/sh", ["-c", "kill -9 $$"]).status == 137)
    }

    @Test func aProgramThatOutrunsItsTimeLimitIsKilled() throws {
        let run = try Subprocess.run("/bin/sh", ["-c", "echo started; exec sleep 30"], timeLimit: 0.3)
        #expect(run.timedOut && run.status == 137)
        #expect(String(decoding: run.standardOutput, as: UTF8.self) == "started\n")
        let quick = try Subprocess.run("/bin/sh", ["-c", "exit 4"], timeLimit: 30)
        #expect(!quick.timedOut && quick.status == 4)
    }

    @Test func aGrandchildHoldingThePipesDoesNotKeepATimedOutRunWaiting() throws {
        // The background sleep keeps copies of both pipes after its parent is killed.
        let run = try Subprocess.run("/bin/sh", ["-c", "sleep 5 & exec sleep 30"], timeLimit: 0.3)
        #expect(run.timedOut && run.status == 137)
    }

    @Test func aMissingProgramIsAnError() {
        #expect(throws: Subprocess.Failure.self) { try Subprocess.run("/nonexistent/program", []) }
    }
}

@Suite struct PercentDecodingTests {
    @Test func decodesLikeFoundation() {
        for text in ["plain", "p%40ss%3Aword", "caf%C3%A9", "50%", "%zz", "%C3", "%", "a%2", ""] {
            #expect(text.percentDecoded == text.removingPercentEncoding, "\(text)")
        }
    }
}
