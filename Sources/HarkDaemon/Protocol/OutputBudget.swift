import Glibc
import Synchronization

/// The memory all clients' unsent output may hold together, whatever their number.
///
/// Each client may hold ``floor`` bytes on its own: a client that reads never holds more than a
/// few lines, and is never refused because others do not read. Beyond that it draws from a pool
/// of ``total`` less every client's floor, so the floors and the pool together never exceed
/// ``total``. A client that cannot draw is dropped (``ClientConnection``).
///
/// What is counted is the capacity of the buffers held, not the bytes of the lines in them:
/// 1 000 clients that never read once held 800 MB against a nominal 256 KB each, in one small
/// buffer, write and callback per line (the connection now keeps one buffer a client).
public final class OutputBudget: Sendable {
    /// 64 MiB for all clients together.
    public static let defaultTotal = 64 * 1024 * 1024

    public let total: Int
    /// What each client holds without drawing from the pool: 16 KiB, less when many clients
    /// are allowed (the floors never take more than half of ``total``).
    public let floor: Int
    /// ``total`` less every client's floor.
    public let pool: Int
    private let drawn = Atomic<Int>(0)
    private let heldBytes = Atomic<Int>(0)

    /// - Parameters:
    ///   - clients: the most clients served at once (max-clients).
    public init(total: Int = OutputBudget.defaultTotal, clients: Int) {
        self.total = total
        floor = max(1024, min(16 * 1024, total / 2 / max(1, clients)))
        pool = total - floor * max(1, clients)
    }

    /// Bytes drawn from the pool now.
    public var inUse: Int { drawn.load(ordering: .relaxed) }
    /// Bytes all clients hold now.
    public var held: Int { heldBytes.load(ordering: .relaxed) }

    /// Moves a client's holding from `old` to `new` bytes. False (and nothing changed) when
    /// the pool cannot give what the growth asks of it.
    func change(from old: Int, to new: Int) -> Bool {
        let delta = max(0, new - floor) - max(0, old - floor)
        if delta > 0, drawn.add(delta, ordering: .relaxed).newValue > pool {
            drawn.subtract(delta, ordering: .relaxed)
            return false
        }
        if delta < 0 { drawn.subtract(-delta, ordering: .relaxed) }
        heldBytes.add(new - old, ordering: .relaxed)
        return true
    }
}

/// Gives freed heap back to the system after clients leave: glibc keeps what it freed in its
/// arenas, and the memory of a thousand clients that never read stayed the process's after they
/// had gone (783 MB). A second after a client leaves, off the event loop (the clients that leave
/// meanwhile are covered by the same trim, those that leave during it by the next); at once when
/// a catalogue's index is built.
public enum HeapTrim {
    private static let pending = Atomic<Bool>(false)
    private typealias Trim = @convention(c) (Int) -> Int32
    private static let trim: Trim? = dlsym(nil, "malloc_trim").map { unsafeBitCast($0, to: Trim.self) }

    private typealias Option = @convention(c) (Int32, Int32) -> Int32
    private static let option: Option? = dlsym(nil, "mallopt").map { unsafeBitCast($0, to: Option.self) }

    /// One heap for every thread (glibc's `M_ARENA_MAX`), unless `MALLOC_ARENA_MAX` says
    /// otherwise: by default each thread that allocates gets an arena of its own, each with its
    /// own free space and padding, and harkd's few busy threads gain nothing from them. With a
    /// catalogue of 100, harkd's peak was 39.5-40.5 MB with its arenas and 38.1-38.7 MB with one
    /// (docs/daemon.md). Called before any thread starts.
    public static func useOneArena() {
        guard getenv("MALLOC_ARENA_MAX") == nil else { return }
        let arenaMax: Int32 = -8
        _ = option?(arenaMax, 1)
    }

    /// At once, on the caller's thread (a few milliseconds for harkd's heap).
    static func now() {
        _ = trim?(0)
    }

    static func soon() {
        guard let trim, !pending.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Task.detached(priority: .background) {
            try? await Task.sleep(for: .seconds(1))
            pending.store(false, ordering: .releasing)
            _ = trim(0)
        }
    }
}
