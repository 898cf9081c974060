/// Where events end up: a terminal, a pipe, a socket client.
public protocol EventSink {
    func receive(_ event: AnalysisEvent) throws
}

/// One JSON object per line, every line tagged with its `"class"` (docs/protocol.md).
public struct JSONLinesSink: EventSink {
    public let writer: LineWriter

    public init(writer: LineWriter) {
        self.writer = writer
    }

    public func receive(_ event: AnalysisEvent) throws {
        try writer.write(line: event.jsonLine)
    }
}
