#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Independent, CPU-bound work of one call (the signatures of a group message's copies, the
/// signature checks of a mailbox answer) spread over the machine's cores: the caller's thread and
/// up to three helper threads take the items one at a time, and the call returns when every item
/// is done. Nothing here touches the store; the work items must not share mutable state.
///
/// The helpers are started once, on the first call that can use them, and then wait on a
/// condition variable for the next call for the rest of the process: waking a waiting thread
/// costs a few microseconds, starting one (as the first version did, per call) cost more than two
/// signatures of a send to 8 members save. One call at a time uses them; a call made while
/// another one does (from another thread, or from inside an item) computes its items on its own
/// thread, so no call ever waits for another one.
enum Parallel {
    /// At most this many threads work on one call (the caller's included): the processors this
    /// process may run on (its affinity mask, so `taskset -c 0` means one), 1…4 (more would cost
    /// more in wake-ups than a few dozen signatures save).
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

    /// `body(0) … body(count - 1)`, computed on up to ``workers`` threads when each would get at
    /// least `minimumShare` items (on the caller's thread otherwise, and whenever the helpers are
    /// busy with another call or could not be started).
    /// - Parameters:
    ///   - count: how many items (≤ 0: none).
    ///   - minimumShare: the fewest items worth a thread of their own (≥ 1).
    ///   - body: computes one item; called once per index, from any of the threads, never after
    ///     the call returned (a helper may release it, and what it captured, just after).
    /// - Returns: the results, index by index.
    static func map<T: Sendable>(_ count: Int, minimumShare: Int, _ body: @escaping @Sendable (Int) -> T) -> [T] {
        let share = max(1, minimumShare)
        guard count > 0, min(workers, count / share) > 1, let pool = Pool.shared else { return (0..<max(count, 0)).map(body) }
        let job = Job(count: count, body)
        guard pool.post(job) else { return (0..<count).map(body) }
        pool.join(job)
        return job.results()
    }

    /// One call's items and results. Each index is claimed by exactly one thread (under the
    /// pool's mutex), which alone writes its result; the results are read after every item was
    /// counted done under the same mutex.
    private final class Job<T: Sendable>: AnyJob, @unchecked Sendable {
        private let body: @Sendable (Int) -> T
        private let slots: UnsafeMutableBufferPointer<T?>

        init(count: Int, _ body: @escaping @Sendable (Int) -> T) {
            self.body = body
            slots = .allocate(capacity: count)
            slots.initialize(repeating: nil)
            super.init(count: count)
        }

        deinit {
            slots.deinitialize()
            slots.deallocate()
        }

        override func run(_ index: Int) { slots[index] = body(index) }

        /// The results in order (every slot is filled once the job is done).
        func results() -> [T] {
            var results: [T] = []
            results.reserveCapacity(slots.count)
            for index in slots.indices {
                // Filled by the thread that claimed it; computed here only if something went wrong.
                results.append(slots[index] ?? body(index))
            }
            return results
        }
    }

    /// A job as the helpers see it: how many items, and one item's work.
    private class AnyJob: @unchecked Sendable {
        let count: Int
        init(count: Int) { self.count = count }
        func run(_ index: Int) {}
    }

    /// The helper threads and the one job they work on. All its state is guarded by `mutex`.
    private final class Pool: @unchecked Sendable {
        /// The helpers, started on first use (nil: one processor, or no thread could start).
        static let shared: Pool? = Pool(helpers: workers - 1)

        private let mutex = PthreadMutex()
        /// Signalled when a job is posted (the helpers wait on it).
        private let posted = Condition()
        /// Signalled when the job's last item is done (its caller waits on it).
        private let finished = Condition()
        private var job: AnyJob?
        /// The next unclaimed index of `job`, and how many of its items are done.
        private var next = 0
        private var done = 0

        private init?(helpers: Int) {
            guard helpers > 0 else { return nil }
            var started = 0
            for _ in 0..<helpers {
                // A helper that cannot start (the thread limit) is one fewer; with none, no pool.
                guard let thread = try? OSThread.start({ [unowned self] in self.help() }) else { break }
                thread.detach()
                started += 1
            }
            guard started > 0 else { return nil }
        }

        /// Hands `job` to the helpers. False (nothing posted) when another job is running.
        func post(_ job: AnyJob) -> Bool {
            mutex.withLock {
                guard self.job == nil else { return false }
                self.job = job
                next = 0
                done = 0
                posted.broadcast()
                return true
            }
        }

        /// Works on the posted `job` on the caller's thread until no item is left to claim, then
        /// waits for the items the helpers claimed, and takes the job back from them.
        func join(_ job: AnyJob) {
            mutex.lock()
            defer { mutex.unlock() }
            while next < job.count { runNext(of: job) }
            while done < job.count { finished.wait(mutex) }
            self.job = nil
        }

        /// A helper's loop: claims the posted job's items one at a time; waits when there is none.
        private func help() -> Never {
            mutex.lock()
            while true {
                guard let job, next < job.count else {
                    posted.wait(mutex)
                    continue
                }
                runNext(of: job)
                if done == job.count { finished.signal() }
            }
        }

        /// Claims `job`'s next item, runs it without the mutex and counts it done (called and
        /// returning with the mutex held; `next < job.count`).
        private func runNext(of job: AnyJob) {
            let index = next
            next += 1
            mutex.unlock()
            job.run(index)
            mutex.lock()
            done += 1
        }
    }

    #if os(Linux)
    /// glibc's `sched_getaffinity` (its module hides it behind `_GNU_SOURCE`).
    @_silgen_name("sched_getaffinity")
    private static func schedGetAffinity(_ pid: Int32, _ size: Int, _ mask: UnsafeMutableRawPointer?) -> Int32
    #endif
}
