import Foundation
import Logging
import NIOPosix
import Testing
@testable import HarkDaemon
import HarkClient

/// The listening socket on a real path.
@Suite(.serialized) struct SocketServerTests {
    @Test func theSocketAppearsOnlyWithItsModeEvenUnderAPermissiveUmask() async throws {
        // Under umask 000, bind() makes the socket 0777; before the chmod that followed it, an
        // unprivileged user could connect. Now it appears at its path already 0660, and a
        // watcher polling the path during start-up never sees it with other permissions.
        let dir = NSTemporaryDirectory() + "hark-sock-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/hark.sock"
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = SocketServer(group: group, hub: Hub(logger: Logger(label: "test")), logger: Logger(label: "test"))
        let watching = ManagedAtomicFlag()
        let seen = LockedModes()
        let watcher = Thread {
            while !watching.isSet {
                var st = stat()
                if lstat(path, &st) == 0 { seen.add(st.st_mode & 0o777) }
            }
        }
        watcher.start()
        let previous = umask(0)
        do {
            try await server.start(path: path, mode: 0o660, groupName: nil, queueLimit: 4096, budget: OutputBudget(clients: 4), environment: [:])
        } catch {
            umask(previous)
            watching.set()
            throw error
        }
        umask(previous)
        var st = stat()
        #expect(lstat(path, &st) == 0 && st.st_mode & 0o777 == 0o660)
        watching.set()
        while !watcher.isFinished { usleep(1000) }
        #expect(seen.all.allSatisfy { $0 == 0o660 }, "modes seen at the path: \(seen.all.map { String($0, radix: 8) })")
        // Nothing is left beside it, and it answers.
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["hark.sock"])
        let client = try HarkConnection(path: path)
        #expect(client.banner["class"] as? String == "version")
        await server.stop()
        #expect(lstat(path, &st) != 0)
        try await group.shutdownGracefully()
    }
}

/// A flag one thread sets and another polls.
final class ManagedAtomicFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}

final class LockedModes: @unchecked Sendable {
    private let lock = NSLock()
    private var modes = Set<mode_t>()
    func add(_ m: mode_t) { lock.withLock { _ = modes.insert(m) } }
    var all: Set<mode_t> { lock.withLock { modes } }
}
