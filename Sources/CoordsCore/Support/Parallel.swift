#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Independent, CPU-bound work of one call (the signatures of a group message's copies, the
/// signature checks of a mailbox answer) spread over the machine's cores: the caller's thread
/// takes the first share, short-lived ``OSThread``s the others, and all are joined before the
/// call returns. Nothing here touches the store; the work items must not share mutable state.
enum Parallel {
    /// At most this many threads work on one call (the caller's included): the processors this
    /// process may run on (its affinity mask, so `taskset -c 0` means one), 1…4 (more would cost
    /// more in thread starts than a few dozen signatures save).
    static let workers: Int = min(max(usableProcessors(), 1), 4)

    /// The processors in the process's affinity mask (Linux), else the processors online.
    private static func usableProcessors() -> Int {
        #if os(Linux)
        var mask = [UInt8](repeating: 0, count: 128)  // glibc's cpu_set_t: 1,024 processors
        if mask.withUnsafeMutableBytes({ schedGetAffinity(0, $0.count, $0.baseAddress) }) == 0 {
            return mask.reduce(0) { $0 + $1.nonzeroBitCount }
        }
        #endif
        let online = sysconf(Int32(_SC_NPROCESSORS_ONLN))
        return online < 1 ? 1 : Int(min(online, 4))
    }

    /// `body(0) … body(count - 1)` in order, computed on up to ``workers`` threads when each would
    /// get at least `minimumShare` items (inline otherwise, and whenever a thread cannot start).
    /// - Parameters:
    ///   - count: how many items (≤ 0: none).
    ///   - minimumShare: the fewest items worth a thread of their own (≥ 1).
    ///   - body: computes one item; called once per index, from any of the threads.
    /// - Returns: the results, index by index.
    static func map<T: Sendable>(_ count: Int, minimumShare: Int, _ body: @Sendable (Int) -> T) -> [T] {
        guard count > 0 else { return [] }
        let share = max(1, minimumShare)
        let threads = min(workers, count / share)
        guard threads > 1 else { return (0..<count).map(body) }
        return withoutActuallyEscaping(body) { body in
            // Worker w computes the indices [bounds[w], bounds[w + 1]) (the last one the remainder);
            // its results go to its own box. w × (count / threads) ≤ count: nothing can overflow.
            let bounds = (0...threads).map { $0 == threads ? count : $0 * (count / threads) }
            let boxes = (1..<threads).map { _ in ResultBox<T>() }
            var started: [(OSThread, Int)] = []
            for worker in 1..<threads {
                let box = boxes[worker - 1]
                let range = bounds[worker]..<bounds[worker + 1]
                // No thread (at the limit): this share is computed inline below instead.
                if let thread = try? OSThread.start({ box.items = range.map(body) }) { started.append((thread, worker)) }
            }
            var results = (bounds[0]..<bounds[1]).map(body)
            results.reserveCapacity(count)
            let joined = Set(started.map { $0.1 })
            for (thread, _) in started { thread.join() }
            for worker in 1..<threads {
                results += joined.contains(worker) ? boxes[worker - 1].items : (bounds[worker]..<bounds[worker + 1]).map(body)
            }
            return results
        }
    }

    #if os(Linux)
    /// glibc's `sched_getaffinity` (its module hides it behind `_GNU_SOURCE`).
    @_silgen_name("sched_getaffinity")
    private static func schedGetAffinity(_ pid: Int32, _ size: Int, _ mask: UnsafeMutableRawPointer?) -> Int32
    #endif

    /// One worker's results: written by its thread only, read after it was joined.
    private final class ResultBox<T>: @unchecked Sendable {
        var items: [T] = []
    }
}
