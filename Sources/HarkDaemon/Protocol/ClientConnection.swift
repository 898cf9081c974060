import Logging
import NIOCore
import Synchronization

/// One connected client: sends whole lines, and drops the client if it stops reading.
///
/// Lines are gathered into one buffer a client (its outbox) and handed to NIO in one write per
/// turn of its event loop, and only while the socket takes them (NIO's write-buffer watermarks):
/// a client that stops reading holds one growing buffer, not a buffer, a write and a callback
/// per line. What it holds (the outbox's capacity and the writes NIO has not finished) is
/// bounded by ``limit`` for the client and by the ``OutputBudget`` shared by all; past either,
/// the client is disconnected (and logged), so a slow reader never holds memory or slows the
/// others or the capture.
public final class ClientConnection: Sendable {
    /// Bytes a client may hold unsent before it is dropped, by default (about 2 000 level lines).
    public static let defaultLimit = 256 * 1024

    public let id: Int
    let limit: Int
    let channel: Channel
    private let budget: OutputBudget
    /// Behind a pthread mutex (``Locked``, as harkd's other shared state), not
    /// `Synchronization.Mutex`: ThreadSanitizer reported the outbox, written under that lock by
    /// the analysis thread and by the event loop, as a race (once, under load); it follows
    /// pthread's locks, so its reports stay about the code.
    private let state: Locked<Outbox>
    private let dropped = Atomic<Bool>(false)
    private let logger: Logger

    private struct Outbox {
        var buffer: ByteBuffer?
        /// Capacity of the writes handed to NIO and not yet completed.
        var inFlight = 0
        /// What the budget has been told this client holds.
        var accounted = 0
        var flushScheduled = false
        /// Close once everything queued so far is written.
        var closing = false
        var held: Int { inFlight + (buffer?.capacity ?? 0) }

        /// Tells the budget what is held now; false when it cannot grant the growth.
        mutating func settle(with budget: OutputBudget) -> Bool {
            guard budget.change(from: accounted, to: held) else { return false }
            accounted = held
            return true
        }
    }

    init(id: Int, channel: Channel, limit: Int = ClientConnection.defaultLimit, budget: OutputBudget? = nil, logger: Logger) {
        self.id = id
        self.channel = channel
        self.limit = limit
        self.budget = budget ?? OutputBudget(clients: 1)
        self.logger = logger
        state = Locked(Outbox())
    }

    /// Bytes this client holds unsent now.
    public var held: Int { state.withLock { $0.held } }

    private enum Refusal { case limit, budget }

    /// Queues `line` (a newline is added). Returns false if the client was dropped.
    @discardableResult
    public func send(_ line: String) -> Bool {
        if dropped.load(ordering: .relaxed) { return false }
        switch enqueue(line) {
        case nil: return true
        case .limit?:
            disconnect(reason: "not reading (more than \(limit / 1024) KB waiting)")
        case .budget?:
            disconnect(reason: "not reading, and the \(budget.total / (1024 * 1024)) MB that all clients' unsent output may hold is taken")
        }
        return false
    }

    private func enqueue(_ line: String) -> Refusal? {
        var schedule = false
        let refusal: Refusal? = state.withLock { box in
            let n = line.utf8.count + 1
            var buffer = box.buffer ?? channel.allocator.buffer(capacity: max(1024, n))
            box.buffer = nil     // so the writes below do not copy a buffer still referenced
            buffer.writeString(line)
            buffer.writeInteger(UInt8(ascii: "\n"))
            box.buffer = buffer
            if box.held > limit { return .limit }
            guard box.settle(with: budget) else { return .budget }
            if !box.flushScheduled {
                box.flushScheduled = true
                schedule = true
            }
            return nil
        }
        if schedule { channel.eventLoop.execute { self.flush() } }
        return refusal
    }

    /// Hands the outbox to NIO if the socket takes writes now (or the connection is closing);
    /// called on the event loop, after a send and when the channel becomes writable again.
    func flush() {
        let (taken, closing): (ByteBuffer?, Bool) = state.withLock { box in
            box.flushScheduled = false
            guard let buffer = box.buffer, self.channel.isWritable || box.closing else { return (nil, box.closing) }
            box.buffer = nil
            box.inFlight += buffer.capacity
            return (buffer, box.closing)
        }
        let channel = self.channel
        if let taken {
            let capacity = taken.capacity
            channel.writeAndFlush(taken).whenComplete { [self] _ in
                state.withLock { box in
                    box.inFlight -= capacity
                    _ = box.settle(with: budget)
                }
            }
        }
        // Writes complete in order: the close comes after everything queued.
        if closing {
            channel.writeAndFlush(channel.allocator.buffer(capacity: 0)).whenComplete { _ in channel.close(promise: nil) }
        }
    }

    /// Closes the connection once, logging why, and lets go of what it held.
    public func disconnect(reason: String) {
        if dropped.exchange(true, ordering: .relaxed) { return }
        logger.warning("client \(id) disconnected: \(reason)")
        release()
        channel.close(promise: nil)
    }

    /// Drops the outbox (the writes NIO holds are released as they complete or fail).
    func release() {
        state.withLock { box in
            box.buffer = nil
            _ = box.settle(with: budget)
        }
    }

    /// Closes once everything queued so far has been written (writes complete in order).
    func closeWhenWritten() {
        if dropped.exchange(true, ordering: .relaxed) { return }
        state.withLock { $0.closing = true }
        channel.eventLoop.execute { self.flush() }
    }

    /// Sends `line`, then closes (for errors that end the conversation).
    func sendAndClose(_ line: String) {
        if dropped.load(ordering: .relaxed) { return }
        _ = enqueue(line)
        closeWhenWritten()
    }
}
