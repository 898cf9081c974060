import Foundation
import Testing
import HarkClient
import HarkSystem

/// The blocking client against a stand-in server on a real Unix-domain socket.
@Suite struct HarkClientTests {
    /// A server that accepts one connection, sends a version banner and closes it.
    private func closingServer(at path: String) throws -> Thread {
        let s = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let bound = UnixSocketAddress(path)!.withSockaddr { bind(s, $0, $1) }
        #expect(bound == 0 && listen(s, 1) == 0)
        let thread = Thread {
            let c = accept(s, nil, nil)
            let banner = Array(#"{"class":"version","proto":1}"#.utf8) + [10]
            _ = banner.withUnsafeBytes { write(c, $0.baseAddress!, $0.count) }
            close(c)
            close(s)
        }
        thread.start()
        return thread
    }

    @Test func writingToAClosedConnectionIsAnErrorNotSIGPIPE() throws {
        // With SIGPIPE at its default action, a plain write() to the closed socket kills the
        // process running this test.
        let previous = signal(SIGPIPE, SIG_DFL)
        defer { signal(SIGPIPE, previous) }
        let path = NSTemporaryDirectory() + "hark-client-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        defer { unlink(path) }
        _ = try closingServer(at: path)
        let c = try HarkConnection(path: path)
        var lost = false
        for _ in 0..<50 {
            do { try c.send(["cmd": "status"]) } catch {
                #expect(error == .connectionLost)
                lost = true
                break
            }
            usleep(2_000)
        }
        #expect(lost)
    }
}
