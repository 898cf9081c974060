import HarkSystem

/// The connected clients, by id: who may connect (max-clients, not while shutting down) and
/// the one way lines reach them. Its lock guards the map alone; what a client is sent goes
/// through its connection's own outbox, which never blocks.
final class ClientRegistry: Sendable {
    /// Why a connection was not taken.
    enum Refusal: Equatable {
        case shuttingDown
        /// ``maxClients`` are connected.
        case full(Int)
    }

    private struct State {
        var connections: [Int: ClientConnection] = [:]
        var maxClients = Int.max
        var refused = 0
        var closing = false
    }

    private let state = Locked(State())

    func admit(_ connection: ClientConnection) -> Refusal? {
        state.withLock { s in
            guard !s.closing else { return .shuttingDown }
            guard s.connections.count < s.maxClients else {
                s.refused += 1
                return .full(s.maxClients)
            }
            s.connections[connection.id] = connection
            return nil
        }
    }

    func remove(_ id: Int) {
        state.withLock { $0.connections[id] = nil }
    }

    func send(_ line: String, to id: Int) {
        state.withLock { $0.connections[id] }?.send(line)
    }

    func closeWhenWritten(_ id: Int) {
        state.withLock { $0.connections[id] }?.closeWhenWritten()
    }

    func limit(_ n: Int) {
        state.withLock { $0.maxClients = max(1, n) }
    }

    /// Takes no more clients.
    func close() {
        state.withLock { $0.closing = true }
    }

    var count: Int { state.withLock { $0.connections.count } }
    var maxClients: Int { state.withLock { $0.maxClients } }
    var refused: Int { state.withLock { $0.refused } }
    var all: [ClientConnection] { state.withLock { Array($0.connections.values) } }
}
