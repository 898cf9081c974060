import FoundationEssentials
import Glibc
import HarkSystem
import Logging
import NIOCore
import NIOPosix

/// Why the socket could not be set up.
public enum SocketServerError: Error, CustomStringConvertible {
    case inUse(String)
    case notASocket(String)
    case cannotCreateDirectory(String, String)
    case unknownGroup(String)

    public var description: String {
        switch self {
        case .inUse(let p): return "\(p): another harkd is already listening there"
        case .notASocket(let p): return "\(p) exists and is not a socket; refusing to replace it"
        case let .cannotCreateDirectory(p, why): return "cannot create \(p): \(why)"
        case .unknownGroup(let g): return "socket-group '\(g)' does not exist"
        }
    }
}

/// The Unix-domain stream socket harkd serves: bound to a path (mode and group applied, stale
/// socket files replaced, live ones refused) or inherited from systemd socket activation.
final class SocketServer: Sendable {
    private let group: EventLoopGroup
    private let hub: Hub
    private let logger: Logger
    private let listening = Locked(Listening())
    private struct Listening {
        var channel: Channel?
        /// The path this server created, removed on stop (not when systemd owns the socket).
        var createdPath: String?
    }
    var createdPath: String? { listening.withLock { $0.createdPath } }

    init(group: EventLoopGroup, hub: Hub, logger: Logger) {
        self.group = group
        self.hub = hub
        self.logger = logger
    }

    /// Kernel send buffer per client. JSON lines are small; a large buffer would only hide a
    /// client that stopped reading for longer.
    static let sendBuffer = 32 * 1024

    func start(path: String, mode: UInt16, groupName: String?, queueLimit: Int, budget: OutputBudget, environment: [String: String]) async throws {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 128)
            .childChannelOption(.socketOption(.so_sndbuf), value: Self.sendBuffer)
            // A client may send its command and shut down its side; it still gets the answer.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 32 * 1024, high: 128 * 1024))
            // One read of at most 8 KiB per client per turn of the event loop: a client flooding
            // lines that pass every limit then costs the others a line or two of its work per
            // turn, not everything its socket buffer holds (another client's status once waited
            // 105 ms at the median behind four such clients).
            .childChannelOption(.maxMessagesPerRead, value: 1)
            .childChannelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 8 * 1024))
            .childChannelInitializer { [hub, logger] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineFramer()))
                    try channel.pipeline.syncOperations.addHandler(ClientHandler(hub: hub, queueLimit: queueLimit, budget: budget, logger: logger))
                }
            }
        if let fd = Self.activatedSocket(environment) {
            let channel = try await bootstrap.withBoundSocket(fd).get()
            listening.withLock { $0.channel = channel }
            logger.info("listening on the socket systemd passed (fd \(fd))")
            return
        }
        try prepare(path)
        // Bound in a private directory (mode 0700), given its mode and group there, and only
        // then renamed into place: the socket is never reachable at its public path with the
        // permissions bind() gives it under the inherited umask (0777 under umask 000, where an
        // unprivileged user was once served during start-up).
        let staging = try Self.privateDirectory(beside: path)
        defer { rmdir(staging) }
        let bound = staging + "/harkd.sock"
        let channel = try await bootstrap.bind(unixDomainSocketPath: bound).get()
        listening.withLock { $0.channel = channel }
        if chmod(bound, mode_t(mode)) != 0 {
            logger.warning("cannot set mode \(String(mode, radix: 8)) on \(path): \(String(cString: strerror(errno)))")
        }
        if let groupName {
            guard let g = getgrnam(groupName) else {
                await stop()
                unlink(bound)
                throw SocketServerError.unknownGroup(groupName)
            }
            if chown(bound, uid_t.max, g.pointee.gr_gid) != 0 {
                logger.warning("cannot give \(path) to group \(groupName): \(String(cString: strerror(errno)))")
            }
        }
        guard rename(bound, path) == 0 else {
            let why = String(cString: strerror(errno))
            await stop()
            unlink(bound)
            throw SocketServerError.cannotCreateDirectory(path, "cannot move the socket into place: \(why)")
        }
        listening.withLock { $0.createdPath = path }
        logger.info("listening on \(path) (mode \(String(mode, radix: 8)))")
    }

    /// fd 3 when systemd passed exactly one socket to this process.
    static func activatedSocket(_ environment: [String: String]) -> CInt? {
        guard let pid = environment["LISTEN_PID"].flatMap(Int32.init), pid == getpid(),
              let count = environment["LISTEN_FDS"].flatMap(Int.init), count >= 1 else { return nil }
        return 3
    }

    /// Makes the directory, and clears a stale socket file (one nobody answers on).
    private func prepare(_ path: String) throws {
        let dir = directoryOfPath(path)
        if !dir.isEmpty && !FileManager.default.fileExists(atPath: dir) {
            do {
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o755])
            } catch {
                throw SocketServerError.cannotCreateDirectory(dir, "\(error)")
            }
        }
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        guard (st.st_mode & S_IFMT) == S_IFSOCK else { throw SocketServerError.notASocket(path) }
        if Self.someoneListens(at: path) { throw SocketServerError.inUse(path) }
        unlink(path)
        logger.info("removed stale socket \(path)")
    }

    /// A new directory only this user can enter, in the socket's own directory (so the rename
    /// stays on one file system).
    static func privateDirectory(beside path: String) throws -> String {
        let dir = directoryOfPath(path)
        var template = Array(((dir.isEmpty ? "." : dir) + "/.harkd-XXXXXX").utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw SocketServerError.cannotCreateDirectory(dir, String(cString: strerror(errno)))
        }
        return String(decoding: template.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func someoneListens(at path: String) -> Bool {
        guard let fd = UnixSocketAddress.connectStream(path) else { return false }
        close(fd)
        return true
    }

    func stop() async {
        let (channel, path) = listening.withLock { l in
            defer { l = Listening() }
            return (l.channel, l.createdPath)
        }
        try? await channel?.close().get()
        if let path { unlink(path) }
    }
}
