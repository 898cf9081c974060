import FoundationEssentials
import Glibc
import HarkSystem
import HarkEngine
import Logging
import Synchronization

/// Where the socket's handlers meet harkd's sessions without touching them. What changes a
/// session or a subscription (a client come or gone, `watch`, `shake`, `noise`, a reloaded
/// configuration, shutdown) goes into one queue, in the order it came; the analysis thread,
/// which owns the ``SessionTable``, takes the queue at every turn (``take()``), applies it and
/// hands back what the table answered (``deliver(_:)``). What needs no session is answered
/// here, on NIO's thread: the banner, `version`, `status`, the `watch` acknowledgement and
/// refused lines. Every dependency comes through `init`.
public final class Hub: Sendable {
    /// What the analysis thread applies to its ``SessionTable``, in order.
    enum Message {
        case connected(Int)
        case disconnected(Int)
        case inputClosed(Int)
        case command(Command, from: Int, at: Date)
        case configure(SessionTable.Settings)
        case shutdown(String)
    }

    typealias Refusal = ClientRegistry.Refusal

    let clients: ClientRegistry
    private let queue = Locked<[Message]>([])
    private let logger: Logger
    /// The recorder in force (harkd replaces it when a reload changes the spool).
    private let recorder: @Sendable () -> Recorder
    private let onAudioNeed: @Sendable (Bool) -> Void
    private let status: @Sendable (Hub) -> Messages.Status
    /// What the analysis thread last published: sessions in flight, and whether audio is needed.
    private let sessions = Atomic<Int>(0)
    private let needed = Atomic<Bool>(false)
    private let refusals = LogRateLimiter(burst: 1, window: 60)

    init(logger: Logger, recorder: @escaping @Sendable () -> Recorder = { Recorder.unspooled() },
         onAudioNeed: @escaping @Sendable (Bool) -> Void = { _ in },
         status: @escaping @Sendable (Hub) -> Messages.Status = { hub in
             Messages.Status(state: "idle", device: "", rate: nil, mode: "", uptime: 0, overruns: 0, dropped: 0,
                             clients: hub.clientCount, sessions: hub.sessionCount)
         }) {
        self.logger = logger
        self.recorder = recorder
        self.onAudioNeed = onAudioNeed
        self.status = status
        clients = ClientRegistry()
    }

    private func post(_ message: Message) {
        queue.withLock { $0.append(message) }
    }

    // MARK: - NIO's threads

    /// Takes a new client (and sends it the version banner), or says why not.
    func connect(_ connection: ClientConnection) -> Refusal? {
        let refusal = clients.admit(connection)
        switch refusal {
        case nil:
            post(.connected(connection.id))
            connection.send(Messages.version())
        case .full(let n):
            for line in refusals.admit("a client was refused: \(n) clients are connected (max-clients)") { logger.warning("\(line)") }
        case .shuttingDown: break
        }
        return refusal
    }

    func disconnect(_ id: Int) {
        clients.remove(id)
        post(.disconnected(id))
    }

    /// The client will send nothing more: its connection closes once its sessions answered.
    func inputClosed(_ client: Int) {
        post(.inputClosed(client))
    }

    func handle(_ command: Command, from client: Int) {
        switch command {
        case .version(let id):
            clients.send(Messages.version(id: id), to: client)
        case .status(let id):
            clients.send(Messages.status(status(self), id: id), to: client)
        case .watch(let classes, let id):
            post(.command(command, from: client, at: Date()))
            var j = JSONLine()
            j.add("class", "watch")
            if let id { j.add("id", id) }
            j.add("classes", strings: classes.sorted().map(\.rawValue))
            clients.send(j.line, to: client)
            if classes.contains(.status) { clients.send(Messages.status(status(self)), to: client) }
        case .shake, .noise:
            post(.command(command, from: client, at: Date()))
        }
    }

    func reject(_ rejection: Command.Rejection, from client: Int) {
        clients.send(Messages.error(rejection.code, rejection.message, id: rejection.id), to: client)
    }

    // MARK: - harkd's other tasks

    /// Applies the parts of a (re)loaded configuration the sessions use.
    func configure(_ settings: SessionTable.Settings) {
        post(.configure(settings))
    }

    /// Serves at most `n` clients at once (harkd's `max-clients`): each is a descriptor, and the
    /// capture device, the spool and the uplink must still find theirs.
    func limitClients(_ n: Int) { clients.limit(n) }

    /// Takes no more clients; the analysis thread answers every session in flight with
    /// `message` when it next turns or as it stops.
    func shutdown(message: String) {
        clients.close()
        post(.shutdown(message))
    }

    var clientCount: Int { clients.count }
    var maxClients: Int { clients.maxClients }
    /// Connections refused for ``maxClients`` since start.
    var clientsRefused: Int { clients.refused }
    /// Every connected client (to close them).
    var connections: [ClientConnection] { clients.all }
    /// Sessions in flight, as the analysis thread last published.
    var sessionCount: Int { sessions.load(ordering: .relaxed) }
    /// Whether anything needs the microphone, as the analysis thread last published.
    var audioNeeded: Bool { needed.load(ordering: .relaxed) }
    func statusMessage() -> String { Messages.status(status(self)) }

    // MARK: - the analysis thread

    /// What came since the last call, in order. Called at every turn of the analysis loop, most
    /// often with nothing queued: that costs no allocation (keeping the queue's capacity would
    /// copy the buffer the caller now shares).
    func take() -> [Message] {
        queue.withLock { q in
            guard !q.isEmpty else { return [] }
            let taken = q
            q = []
            return taken
        }
    }

    /// Does what `table` answered: each record committed before it is sent, so nothing reaches
    /// a client that a crash could lose; then publishes its figures for `status`.
    func deliver(_ outputs: [SessionOutput], table: SessionTable) {
        if !outputs.isEmpty {
            let recorder = recorder()
            for o in outputs {
                switch o {
                case .send(let line, let client):
                    clients.send(line, to: client)
                case .record(let kind, let stamp, let line, let to):
                    recorder.commit(kind, stamp: stamp, line: line)
                    for c in to { clients.send(line, to: c) }
                case .close(let client):
                    clients.closeWhenWritten(client)
                case .audioNeed(let need):
                    needed.store(need, ordering: .relaxed)
                    onAudioNeed(need)
                }
            }
        }
        sessions.store(table.sessionCount, ordering: .relaxed)
    }
}

extension SessionTable {
    /// Applies what the hub's queue held, in order.
    mutating func apply(_ messages: [Hub.Message]) -> [SessionOutput] {
        var out: [SessionOutput] = []
        for m in messages {
            switch m {
            case .connected(let id): out += connect(id)
            case .disconnected(let id): out += disconnect(id)
            case .inputClosed(let id): out += inputClosed(id)
            case .command(let command, let client, let at): out += handle(command, from: client, now: at)
            case .configure(let settings): out += configure(settings)
            case .shutdown(let message): out += shutdown(message: message)
            }
        }
        return out
    }
}
