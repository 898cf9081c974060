import Glibc

/// A named thread that runs one closure and ends with it (nobody joins it).
public enum DetachedThread {
    public enum Failure: Error, CustomStringConvertible {
        case cannotStart(name: String, code: Int32)
        public var description: String {
            switch self {
            case let .cannotStart(name, code): "cannot start thread \(name): \(String(cString: strerror(code)))"
            }
        }
    }

    fileprivate final class Job: Sendable {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) { (self.name, self.body) = (name, body) }
    }

    /// Starts `body` on a new thread called `name` (at most 15 bytes show in `top -H`).
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) throws {
        let job = Unmanaged.passRetained(Job(name: name, body: body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let rc = pthread_create(&thread, &attributes, runJob, job)
        pthread_attr_destroy(&attributes)
        if rc != 0 {
            Unmanaged<Job>.fromOpaque(job).release()
            throw Failure.cannotStart(name: name, code: rc)
        }
    }

    fileprivate static func run(_ raw: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
        let job = Unmanaged<Job>.fromOpaque(raw!).takeRetainedValue()
        nameThisThread(job.name)
        job.body()
        return nil
    }

    // Through /proc rather than pthread_setname_np, which Glibc's Swift module does not export.
    private static func nameThisThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }

    /// Sleeps the calling thread (resuming after signals until the time is up).
    public static func sleep(seconds: Double) {
        guard seconds > 0 else { return }
        let whole = seconds.rounded(.down)
        var request = timespec(tv_sec: Int(whole), tv_nsec: Int((seconds - whole) * 1e9))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}

private func runJob(_ raw: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    DetachedThread.run(raw)
}
