import Logging
import NIOCore
import Synchronization

/// One client connection's protocol: the version banner on connect, then one command per line,
/// each answered or refused with an `error` line; the connection stays open after errors,
/// except for a line longer than 4 KiB, which closes it.
final class ClientHandler: ChannelInboundHandler {
    typealias InboundIn = String

    private static let nextID = Atomic<Int>(1)
    private let hub: Hub
    private let logger: Logger
    private let queueLimit: Int
    private let budget: OutputBudget
    private var connection: ClientConnection?

    init(hub: Hub, queueLimit: Int = ClientConnection.defaultLimit, budget: OutputBudget, logger: Logger) {
        self.hub = hub
        self.queueLimit = queueLimit
        self.budget = budget
        self.logger = logger
    }

    func channelActive(context: ChannelHandlerContext) {
        let id = Self.nextID.add(1, ordering: .relaxed).oldValue
        let c = ClientConnection(id: id, channel: context.channel, limit: queueLimit, budget: budget, logger: logger)
        connection = c
        switch hub.connect(c) {
        case nil: break
        case .shuttingDown:
            c.sendAndClose(Messages.error(.shuttingDown, "harkd is shutting down"))
            return
        case .full(let n):
            c.sendAndClose(Messages.error(.tooManyClients, "harkd serves at most \(n) clients at once (max-clients); try again later"))
            return
        }
        logger.debug("client \(id) connected")
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let connection else { return }
        let line = unwrapInboundIn(data)
        if line.allSatisfy(\.isWhitespace) { return }
        switch Command.parse(line) {
        case .success(let command): hub.handle(command, from: connection.id)
        case .failure(let rejection): hub.reject(rejection, from: connection.id)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The client closed its side: answer what it asked for, then close ours.
        if case ChannelEvent.inputClosed = event, let connection { hub.inputClosed(connection.id) }
        context.fireUserInboundEventTriggered(event)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { connection?.flush() }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let connection {
            hub.disconnect(connection.id)
            connection.release()
            logger.debug("client \(connection.id) disconnected")
            HeapTrim.soon()
        }
        // Lines the framer still delivers after this (it may be mid-burst when the close comes)
        // belong to no one.
        connection = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        if error is LineFramer.LineTooLong {
            logger.notice("client \(connection?.id ?? 0): line longer than \(LineFramer.maximumLength) bytes; closing")
            connection?.sendAndClose(Messages.error(.lineTooLong, "line longer than \(LineFramer.maximumLength) bytes; closing the connection"))
        } else {
            logger.notice("client \(connection?.id ?? 0): \(error); closing")
            context.close(promise: nil)
        }
    }
}
