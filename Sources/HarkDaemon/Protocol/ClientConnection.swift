import Logging
import NIOCore
import Synchronization

/// One connected client: sends whole lines, and drops the client if it stops reading.
///
/// Writes go out through NIO from any thread. Bytes written but not yet taken by the socket
/// are counted; past ``limit`` the client is disconnected (and logged), so one slow reader
/// never holds memory or slows the others or the capture.
public final class ClientConnection: Sendable {
    /// Unsent bytes a client may accumulate before it is dropped, by default (about 2 000
    /// level lines).
    public static let defaultLimit = 256 * 1024

    public let id: Int
    let limit: Int
    let channel: Channel
    private let pending = Atomic<Int>(0)
    private let dropped = Atomic<Bool>(false)
    private let logger: Logger

    init(id: Int, channel: Channel, limit: Int = ClientConnection.defaultLimit, logger: Logger) {
        self.id = id
        self.channel = channel
        self.limit = limit
        self.logger = logger
    }

    /// Queues `line` (a newline is added). Returns false if the client was dropped.
    @discardableResult
    public func send(_ line: String) -> Bool {
        if dropped.load(ordering: .relaxed) { return false }
        let bytes = line.utf8.count + 1
        if pending.add(bytes, ordering: .relaxed).newValue > limit {
            disconnect(reason: "not reading (more than \(limit / 1024) KB waiting)")
            return false
        }
        var buffer = channel.allocator.buffer(capacity: bytes)
        buffer.writeString(line)
        buffer.writeInteger(UInt8(ascii: "\n"))
        channel.writeAndFlush(buffer).whenComplete { [self] _ in pending.subtract(bytes, ordering: .relaxed) }
        return true
    }

    /// Closes the connection once, logging why.
    public func disconnect(reason: String) {
        if dropped.exchange(true, ordering: .relaxed) { return }
        logger.warning("client \(id) disconnected: \(reason)")
        channel.close(promise: nil)
    }

    /// Closes once everything queued so far has been written (writes complete in order).
    func closeWhenWritten() {
        if dropped.exchange(true, ordering: .relaxed) { return }
        let channel = self.channel
        channel.writeAndFlush(channel.allocator.buffer(capacity: 0)).whenComplete { _ in channel.close(promise: nil) }
    }

    /// Sends `line`, then closes (for errors that end the conversation).
    func sendAndClose(_ line: String) {
        if dropped.exchange(true, ordering: .relaxed) { return }
        var buffer = channel.allocator.buffer(capacity: line.utf8.count + 1)
        buffer.writeString(line)
        buffer.writeInteger(UInt8(ascii: "\n"))
        let channel = self.channel
        channel.writeAndFlush(buffer).whenComplete { _ in channel.close(promise: nil) }
    }
}
