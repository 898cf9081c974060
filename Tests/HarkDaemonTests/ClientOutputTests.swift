import Logging
import NIOCore
import NIOEmbedded
import Testing
@testable import HarkDaemon

/// What a client's unsent output holds, alone and with every other client's.
@Suite struct ClientOutputTests {
    private let line = String(repeating: "x", count: 199)      // 200 bytes with its newline

    @Test func theBudgetGivesEachClientItsFloorAndSharesThePool() {
        let budget = OutputBudget(total: 1 << 20, clients: 16)
        #expect(budget.floor == 16 * 1024 && budget.pool == (1 << 20) - 16 * 16 * 1024)
        // Many clients allowed: the floors take at most half.
        let many = OutputBudget(total: 1 << 20, clients: 1024)
        #expect(many.floor * 1024 <= (1 << 20) / 2 + 1024 * 1024 && many.pool + many.floor * 1024 <= 1 << 20)
        // Within its floor a client draws nothing from the pool.
        #expect(budget.change(from: 0, to: budget.floor) && budget.inUse == 0 && budget.held == budget.floor)
        // Beyond it, it draws until the pool is spent, then is refused without a change.
        #expect(budget.change(from: budget.floor, to: budget.floor + budget.pool))
        #expect(budget.inUse == budget.pool)
        #expect(!budget.change(from: 0, to: budget.floor + 1))
        #expect(budget.change(from: 0, to: budget.floor), "another client's floor is its own")
        #expect(budget.inUse == budget.pool && budget.held == 2 * budget.floor + budget.pool)
        #expect(budget.change(from: budget.floor + budget.pool, to: 0) && budget.change(from: budget.floor, to: 0))
        #expect(budget.inUse == 0 && budget.held == 0)
    }

    /// A connected channel (a new EmbeddedChannel is not active, and so could not be seen closed).
    private func client() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        #expect(channel.isActive)
        return channel
    }

    private func connection(_ channel: EmbeddedChannel, limit: Int = 256 * 1024, budget: OutputBudget) -> ClientConnection {
        ClientConnection(id: 1, channel: channel, limit: limit, budget: budget, logger: Logger(label: "test"))
    }

    private func written(_ channel: EmbeddedChannel) throws -> (writes: Int, bytes: Int) {
        var writes = 0, bytes = 0
        while let b = try channel.readOutbound(as: ByteBuffer.self) {
            if b.readableBytes > 0 { writes += 1 }
            bytes += b.readableBytes
        }
        return (writes, bytes)
    }

    @Test func linesOfOneTurnGoOutInOneWriteAndWaitWhileTheSocketIsFull() throws {
        let channel = try client()
        let budget = OutputBudget(clients: 4)
        let c = connection(channel, budget: budget)
        for _ in 0..<50 { #expect(c.send(line)) }
        channel.embeddedEventLoop.run()
        #expect(try written(channel) == (1, 50 * 200))
        // The socket takes nothing: lines gather in one buffer, counted by its capacity.
        channel.isWritable = false
        for _ in 0..<500 { #expect(c.send(line)) }
        channel.embeddedEventLoop.run()
        #expect(try written(channel) == (0, 0))
        #expect(c.held >= 500 * 200 && c.held < 2 * 500 * 200 && budget.held == c.held)
        // Writable again: everything goes, in order, in one write, and nothing is held.
        channel.isWritable = true
        c.flush()
        #expect(try written(channel) == (1, 500 * 200))
        #expect(c.held == 0 && budget.held == 0 && budget.inUse == 0)
    }

    @Test func aClientThatNeverReadsIsDroppedAtItsLimitOrWhenThePoolIsSpent() throws {
        // Its own limit.
        let alone = try client()
        let budget = OutputBudget(clients: 4)
        let c = connection(alone, limit: 64 * 1024, budget: budget)
        alone.isWritable = false
        var sent = 0
        while c.send(line) { sent += 1 }
        #expect(sent * 200 <= 64 * 1024 && sent * 200 > 16 * 1024, "\(sent) lines")
        #expect(!alone.isActive && budget.held == 0, "dropped, and what it held let go")
        // The pool: three clients that never read share a small one; the one that finds it spent
        // is dropped, and a client that reads still gets its lines.
        let small = OutputBudget(total: 256 * 1024, clients: 4)
        let deaf = try (0..<3).map { _ in try client() }
        for d in deaf { d.isWritable = false }
        let clients = deaf.map { connection($0, budget: small) }
        let readerChannel = try client()
        let reader = connection(readerChannel, budget: small)
        for _ in 0..<2_000 {
            for c in clients { c.send(line) }
            #expect(reader.send(line))
            readerChannel.embeddedEventLoop.run()
            _ = try written(readerChannel)
            #expect(small.held <= small.total)
        }
        #expect(deaf.contains { !$0.isActive }, "someone was dropped")
        #expect(readerChannel.isActive)
    }

    @Test func anErrorThatClosesIsWrittenBeforeTheClose() throws {
        let channel = try client()
        let c = connection(channel, budget: OutputBudget(clients: 4))
        c.send("first")
        c.sendAndClose("last")
        channel.embeddedEventLoop.run()
        var text = ""
        while var b = try channel.readOutbound(as: ByteBuffer.self) { text += b.readString(length: b.readableBytes) ?? "" }
        #expect(text == "first\nlast\n")
        #expect(!channel.isActive)
        #expect(!c.send("after"))
    }
}
