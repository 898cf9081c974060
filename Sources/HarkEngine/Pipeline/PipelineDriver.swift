/// The loop every file takes through the pipeline, for `hark analyze`, `hark detect` and
/// `hark plot` alike: blocks read and mixed down (``MonoBlockReader``), each processed as it
/// comes, and the end finished once audio came. harkd's capture takes the same pipeline from
/// its ring buffer (HarkDaemon's `AnalysisLoop`), where audio arrives in time, not on demand.
extension AnalysisPipeline {
    /// Reads `blocks` to the end through the pipeline; returns the frames read. A source with
    /// no frames is not finished: there is nothing to report, and the caller says so.
    /// - Parameters:
    ///   - emit: receives each output as soon as it is known.
    ///   - progress: receives the number of frames read after every block.
    @discardableResult
    public func drive(_ blocks: inout MonoBlockReader, emit: (Output) throws -> Void,
                      progress: ((Int64) -> Void)? = nil) throws -> Int64 {
        var frames: Int64 = 0
        while case let mono = try blocks.next(), !mono.isEmpty {
            frames += Int64(mono.count)
            try mono.withUnsafeBufferPointer { try process($0, emit: emit) }
            progress?(frames)
        }
        if frames > 0 { try finish(emit: emit) }
        return frames
    }
}
