import NIOCore

/// Splits the byte stream from a client into lines (without the `\n`, and without a `\r`
/// before it). A line longer than ``maximumLength`` bytes is an error: the client is told and
/// disconnected, since the rest of the stream can no longer be trusted.
struct LineFramer: ByteToMessageDecoder {
    typealias InboundOut = String
    static let maximumLength = 4096

    struct LineTooLong: Error {}

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        // Empty lines are skipped here, all at once: a client sending nothing but newlines
        // once cost the event loop a pass of the pipeline for each of thousands a read.
        while let first = buffer.readableBytesView.first, first == UInt8(ascii: "\n") || first == UInt8(ascii: "\r") {
            buffer.moveReaderIndex(forwardBy: 1)
        }
        let view = buffer.readableBytesView
        if let newline = view.firstIndex(of: UInt8(ascii: "\n")) {
            let length = newline - view.startIndex
            // The limit counts the line's own bytes: a `\r` before the `\n` is not one of them.
            let carriageReturn = length > 0 && view[newline - 1] == UInt8(ascii: "\r")
            guard length - (carriageReturn ? 1 : 0) <= Self.maximumLength else { throw LineTooLong() }
            var line = buffer.readString(length: length) ?? ""
            buffer.moveReaderIndex(forwardBy: 1)
            if line.hasSuffix("\r") { line.removeLast() }
            context.fireChannelRead(wrapInboundOut(line))
            return .continue
        }
        // One byte more may still be a line of the longest length and its `\r`.
        if buffer.readableBytes > Self.maximumLength + 1 { throw LineTooLong() }
        return .needMoreData
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        // A last line without a newline is still a line.
        while try decode(context: context, buffer: &buffer) == .continue {}
        if buffer.readableBytes > 0, let line = buffer.readString(length: buffer.readableBytes) {
            context.fireChannelRead(wrapInboundOut(line))
        }
        return .needMoreData
    }
}
