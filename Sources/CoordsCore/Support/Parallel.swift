import Synchronization

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
/// signatures of a send to 8 members save. Items are claimed with an atomic counter, not under a
/// lock. A helper polls for the next call for 2 ms before it sleeps (a send or a fetch posts its
/// calls a few hundred microseconds apart, and they come in bursts), and a caller whose items are done polls for the
/// helpers' last ones for 0.1 ms before it sleeps: each futex wake costs 10–15 µs on a virtual
/// machine, and costs the sleeper as much again in latency. A call moves a helper that Linux
/// put on the caller's own processor to another one (``Pool/keepOffCallersProcessor(waking:)``).
/// One call at a time uses them; a call made while
/// another one does (from another thread, or from inside an item) computes its items on its own
/// thread, so no call ever waits for another one.
enum Parallel {
    /// At most this many threads work on one call (the caller's included): the processors this
    /// process may run on (its affinity mask, so `taskset -c 0` means one), 1…4 (more would cost
    /// more in wake-ups than a few dozen signatures save).
    static let workers: Int = min(max(usableProcessors(), 1), 4)

    /// The processors in the process's affinity mask (Linux), else the processors online.
    private static func usableProcessors() -> Int {
        if let mask = Affinity.current() { return Affinity.count(mask) }
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

    /// `produce(0) … produce(count - 1)` spread over the threads like ``map(_:minimumShare:_:)``,
    /// while the caller's thread does the serial work that goes with them: once the items are
    /// posted to the helpers it runs `meanwhile`, then hands each result to `consume`, in index
    /// order, as soon as it is ready, and produces unclaimed items itself while the next result is
    /// not ready yet. A send to a group signs its copies on the helpers while the caller stores the
    /// message and queues the copies already signed, instead of doing that after the last
    /// signature.
    /// - Parameters:
    ///   - count: how many items (≤ 0: none; `meanwhile` still runs).
    ///   - minimumShare: the fewest items worth handing to the helpers (≥ 1; the caller has
    ///     `meanwhile` to do, so even one item can be worth it); with fewer, or with the helpers
    ///     busy, everything runs on the caller's thread: `meanwhile`, then each item produced and
    ///     consumed in turn.
    ///   - meanwhile: the caller's own work, run once, on the caller's thread, before any `consume`.
    ///   - produce: computes one item; called once per index, from any of the threads, never after
    ///     the call returned.
    ///   - consume: takes one result, on the caller's thread, in index order.
    /// - Throws: the first error `meanwhile` or `consume` throws (nothing is consumed after it);
    ///   the items the helpers claimed are finished before the call returns or throws.
    static func pipeline<T: Sendable>(
        _ count: Int, minimumShare: Int, meanwhile: () throws -> Void, produce: @escaping @Sendable (Int) -> T,
        consume: (Int, T) throws -> Void
    ) throws {
        let share = max(1, minimumShare)
        func serially() throws {
            try meanwhile()
            for index in 0..<max(count, 0) { try consume(index, produce(index)) }
        }
        // The caller has its own work meanwhile: one share is enough for a helper to take.
        guard count >= share, workers > 1, let pool = Pool.shared else { return try serially() }
        let job = Job(count: count, produce)
        guard pool.post(job) else { return try serially() }
        // Whatever is thrown, the job is taken back from the helpers (its items finished) first.
        defer { pool.join(job) }
        try meanwhile()
        var index = 0
        while index < count {
            if let result = job.result(index) {
                try consume(index, result)
                index += 1
            } else if !job.workOne() {
                // Nothing left to claim: the next result is a helper's.
                pool.wait(for: job, item: index)
            }
        }
    }

    /// Wakes the helpers that fell asleep, so that they are polling by the time the caller posts
    /// work a few dozen microseconds later (a send wakes them before it seals, instead of paying
    /// the wake-up's latency, often tens of microseconds on a virtual machine, when its copies are
    /// ready to sign). Costs a futex wake when a helper sleeps, an uncontended lock otherwise;
    /// nothing when there are no helpers.
    static func wakeHelpers() {
        guard workers > 1 else { return }
        Pool.shared?.nudge()
    }

    /// How many helpers are asleep and how many there are (nil: no helpers). For tests.
    static func helpersAsleep() -> (asleep: Int, helpers: Int)? { Pool.shared.map { ($0.asleep, $0.helpers) } }

    /// The helpers' thread ids (Linux; 0 for one not started yet). For tests.
    static func helperThreads() -> [Int32] { Pool.shared?.threads ?? [] }

    /// One call's items and results. Each index is claimed by exactly one thread (an atomic
    /// fetch-and-add on ``AnyJob/next``), which alone writes its result and then marks it ready
    /// (releasing it; ``result(_:)`` acquires it); ``results()`` reads them all after
    /// ``AnyJob/done`` reached the count (each item's increment releases its result too).
    private final class Job<T: Sendable>: AnyJob, @unchecked Sendable {
        private let body: @Sendable (Int) -> T
        private let slots: UnsafeMutableBufferPointer<T?>
        /// Per item: its slot is written (``pipeline(_:minimumShare:meanwhile:produce:consume:)``
        /// consumes results before the whole job is done).
        private let ready: UnsafeMutablePointer<Atomic<Bool>>

        init(count: Int, _ body: @escaping @Sendable (Int) -> T) {
            self.body = body
            slots = .allocate(capacity: count)
            slots.initialize(repeating: nil)
            ready = .allocate(capacity: count)
            for index in 0..<count { (ready + index).initialize(to: Atomic(false)) }
            super.init(count: count)
        }

        deinit {
            slots.deinitialize()
            slots.deallocate()
            ready.deinitialize(count: count)
            ready.deallocate()
        }

        override func run(_ index: Int) {
            slots[index] = body(index)
            ready[index].store(true, ordering: .releasing)
        }

        override func isReady(_ index: Int) -> Bool { ready[index].load(ordering: .acquiring) }

        /// Item `index`'s result, if a thread finished it (`index` < count).
        func result(_ index: Int) -> T? { isReady(index) ? slots[index] : nil }

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

    /// A job as the helpers see it: how many items, one item's work, and the two counters the
    /// threads share without a lock (a lock taken per item made every item a futex hand-over
    /// between the caller and a helper on this kind of machine).
    private class AnyJob: @unchecked Sendable {
        let count: Int
        /// The next unclaimed index. Each helper overshoots `count` once at most, a pipeline's
        /// caller once per result it waits for (≤ 2 × count + 4: a few hundred at most).
        let next = Atomic<Int>(0)
        /// How many items are done.
        let done = Atomic<Int>(0)

        init(count: Int) { self.count = count }
        func run(_ index: Int) {}
        /// Whether item `index` (< count) is done.
        func isReady(_ index: Int) -> Bool { isDone }

        /// Claims and runs items until none is left to claim. True when this thread finished
        /// the job's last item (the caller may be waiting for it).
        final func work() -> Bool {
            var last = false
            while true {
                let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
                guard index < count else { return last }
                run(index)
                last = done.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue == count
            }
        }

        /// Claims and runs one item. False when none was left to claim.
        final func workOne() -> Bool {
            let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
            guard index < count else { return false }
            run(index)
            done.wrappingAdd(1, ordering: .acquiringAndReleasing)
            return true
        }

        var isDone: Bool { done.load(ordering: .acquiring) >= count }
    }

    /// The helper threads and the job they are asked to work on.
    private final class Pool: @unchecked Sendable {
        /// The helpers, started on first use (nil: one processor, or no thread could start).
        static let shared: Pool? = Pool(helpers: workers - 1)

        /// How long a caller whose items are done waits for a helper's last item by polling
        /// before it sleeps: a signature takes 20–70 µs, and a sleep costs the helper a futex
        /// wake and the caller the wake-up's latency (10–15 µs each on a virtual machine).
        static let pollNanoseconds: UInt64 = 100_000

        /// How long a helper polls for the next job before it sleeps. A send or a fetch posts its
        /// jobs a few hundred microseconds apart, and sends and fetches come in bursts; waking a
        /// sleeping helper costs the caller a futex wake, and the helper's processor, idle in the
        /// hypervisor by then, a wake-up that can outlast a small send's signatures. With 0.5 ms,
        /// a send to 8 members that followed 1.2 ms of other work ran at 0.5–0.6× of its floor
        /// in the paired benchmark, the next one at 0.8–0.9×; with 2 ms, five runs gave 0.90×–1.23×
        /// (3 ms: 0.90×–0.99×). The cost: up to 2 ms of one processor after a burst's last
        /// call, yielding to any other thread that wants it. (OpenMP runtimes poll for 200 ms by
        /// default.)
        static let helperPollNanoseconds: UInt64 = 2_000_000

        private let mutex = PthreadMutex()
        /// Signalled (without the mutex held) when a job is posted; the helpers wait on it.
        private let posted = Condition()
        /// Signalled when a helper finished a job's last item (its caller may wait on it).
        private let finished = Condition()
        /// The job being worked on, and the number of jobs posted so far (guarded by `mutex`):
        /// a helper works on each job at most once.
        private var job: AnyJob?
        private var generation: UInt64 = 0
        /// Helpers asleep on `posted` (guarded by `mutex`): a post wakes them only if there are any.
        private var sleepers = 0
        /// `generation`, for helpers that poll without the mutex.
        private let posts = Atomic<UInt64>(0)
        /// Bumped by ``nudge()`` (guarded by `mutex`): sleeping helpers wake and poll again.
        private var nudges: UInt64 = 0

        /// The helpers started (set while the pool is made, before anyone else sees it).
        private(set) var helpers = 0

        /// Where each helper runs, for ``keepOffCallersProcessor(waking:)``: one per helper.
        private let helperSlots: [HelperSlot]
        /// The processors the helpers may run on (the affinity mask of the thread that started
        /// the pool, which they inherited; Linux); nil when it could not be read.
        private let allowed: [UInt8]?

        /// One helper's thread and processor, published by the helper for the callers.
        final class HelperSlot: Sendable {
            /// Its thread id (0 until the helper started).
            let thread = Atomic<Int32>(0)
            /// The processor it last polled on; -1 while it sleeps (or before it ran).
            let processor = Atomic<Int32>(-1)
            /// A caller narrowed its affinity mask: the helper widens it again once it runs.
            let steered = Atomic<Bool>(false)
        }

        /// Helpers asleep right now.
        var asleep: Int { mutex.withLock { sleepers } }

        /// The helpers' thread ids.
        var threads: [Int32] { helperSlots.prefix(helpers).map { $0.thread.load(ordering: .acquiring) } }

        private init?(helpers: Int) {
            guard helpers > 0 else { return nil }
            helperSlots = (0..<helpers).map { _ in HelperSlot() }
            allowed = Affinity.current()
            var started = 0
            for slot in helperSlots {
                // A helper that cannot start (the thread limit) is one fewer; with none, no pool.
                guard let thread = try? OSThread.start({ [unowned self] in self.help(slot) }) else { break }
                thread.detach()
                started += 1
            }
            guard started > 0 else { return nil }
            self.helpers = started
        }

        /// Hands `job` to the helpers. False (nothing posted) when another job is running.
        func post(_ job: AnyJob) -> Bool {
            let (posted, wake) = mutex.withLock { () -> (Bool, Bool) in
                guard self.job == nil else { return (false, false) }
                self.job = job
                generation &+= 1
                posts.store(generation, ordering: .releasing)
                return (true, sleepers > 0)
            }
            // Outside the mutex: a woken helper does not block on it at once. A polling helper
            // sees `posts` move without a wake-up.
            if posted { keepOffCallersProcessor(waking: wake) }
            if wake { self.posted.broadcast() }
            return posted
        }

        /// Works on the posted `job` on the caller's thread until no item is left to claim, then
        /// waits for the items the helpers claimed (polling first, then asleep), and takes the
        /// job back from them.
        func join(_ job: AnyJob) {
            _ = job.work()
            if !job.isDone {
                let deadline = monotonicNanoseconds() &+ Self.pollNanoseconds
                while !job.isDone, monotonicNanoseconds() < deadline { sched_yield() }
            }
            mutex.withLock {
                // A helper counts its last item before it takes the mutex to signal: no lost wake-up.
                while !job.isDone { finished.wait(mutex) }
                self.job = nil
            }
        }

        /// Waits (polling first, then asleep until the whole job is done) for item `item` of
        /// `job`, which a helper claimed: the caller of
        /// ``Parallel/pipeline(_:minimumShare:meanwhile:produce:consume:)`` has nothing left to
        /// claim and needs that result next.
        func wait(for job: AnyJob, item: Int) {
            let deadline = monotonicNanoseconds() &+ Self.pollNanoseconds
            while !job.isReady(item), monotonicNanoseconds() < deadline { sched_yield() }
            guard !job.isReady(item) else { return }
            // A helper signals only after the job's last item: wait for all of them.
            mutex.withLock {
                while !job.isDone { finished.wait(mutex) }
            }
        }

        /// Wakes the sleeping helpers without a job: they poll again for ``helperPollNanoseconds``.
        func nudge() {
            let wake = mutex.withLock { () -> Bool in
                guard sleepers > 0 else { return false }
                nudges &+= 1
                return true
            }
            if wake {
                keepOffCallersProcessor(waking: true)
                posted.broadcast()
            }
        }

        /// Moves the helpers that would run on the caller's processor to the others: those asleep
        /// when `waking` (the caller is about to wake them) and those last seen polling there.
        ///
        /// Linux places a thread it wakes or starts next to the thread that woke it when it can,
        /// and an idle processor pulls a queued thread only when it balances, which can take tens
        /// of milliseconds: on a two-processor virtual machine a helper sat queued behind its
        /// caller, which claimed every item itself (measured with `perf record -e sched:*` while
        /// the send benchmark ran: the send to 8 then ran at the one-processor speed, 0.6× of
        /// its floor instead of 1.0×). Narrowing the helper's affinity mask moves it at once; the
        /// helper widens it again once it runs (``settle(_:)``). Costs the caller one
        /// `sched_getcpu` and, only for a helper to move, one `sched_setaffinity`; a failure (a
        /// mask the system refuses) leaves the helper where the kernel put it, as before.
        private func keepOffCallersProcessor(waking: Bool) {
            guard let allowed, let caller = Affinity.processor() else { return }
            var others: [UInt8]?  // made only when a helper is to move (most posts move none)
            for slot in helperSlots {
                let thread = slot.thread.load(ordering: .acquiring)
                let processor = slot.processor.load(ordering: .relaxed)
                guard thread > 0, processor == caller || (waking && processor < 0) else { continue }
                if others == nil { others = Affinity.removing(caller, from: allowed) }
                guard let others else { return }  // the caller's is the only processor allowed
                if Affinity.set(others, thread: thread) { slot.steered.store(true, ordering: .releasing) }
            }
        }

        /// On a helper's thread: publishes the processor it runs on, and widens its affinity
        /// mask again after a caller narrowed it (it stays where it was moved to until the kernel
        /// balances).
        private func settle(_ slot: HelperSlot) {
            if let allowed, slot.steered.exchange(false, ordering: .acquiringAndReleasing) {
                // Refused: the helper keeps the narrower mask (still one the system allowed).
                _ = Affinity.set(allowed, thread: 0)
            }
            slot.processor.store(Affinity.processor() ?? -1, ordering: .relaxed)
        }

        /// A helper's loop: works on each posted job once; between jobs it polls for the next
        /// one for ``helperPollNanoseconds``, then sleeps until one is posted (or until
        /// ``nudge()``, after which it polls again).
        private func help(_ slot: HelperSlot) -> Never {
            slot.thread.store(Affinity.thread(), ordering: .releasing)
            var seen: UInt64 = 0
            while true {
                let deadline = monotonicNanoseconds() &+ Self.helperPollNanoseconds
                repeat {
                    settle(slot)
                    guard posts.load(ordering: .acquiring) == seen else { break }
                    sched_yield()
                } while monotonicNanoseconds() < deadline
                mutex.lock()
                let nudged = nudges
                while generation == seen, nudges == nudged {
                    // Where it wakes is the kernel's choice (and the waking caller's steer).
                    slot.processor.store(-1, ordering: .relaxed)
                    sleepers += 1
                    posted.wait(mutex)
                    sleepers -= 1
                }
                guard generation != seen else {
                    // Nudged: a job is coming.
                    mutex.unlock()
                    continue
                }
                seen = generation
                let job = self.job
                mutex.unlock()
                if let job, job.work() { mutex.withLock { finished.signal() } }
            }
        }
    }

    /// Processor affinity of threads (Linux; elsewhere nothing is known and nothing moves).
    enum Affinity {
        /// Bytes of a mask: glibc's `cpu_set_t`, 1,024 processors.
        static let maskBytes = 128

        /// The affinity mask of `thread` (0: the calling thread), or nil.
        static func current(thread: Int32 = 0) -> [UInt8]? {
            #if os(Linux)
            var mask = [UInt8](repeating: 0, count: maskBytes)
            guard mask.withUnsafeMutableBytes({ schedGetAffinity(thread, $0.count, $0.baseAddress) }) == 0 else { return nil }
            return mask
            #else
            return nil
            #endif
        }

        /// How many processors `mask` holds.
        static func count(_ mask: [UInt8]) -> Int { mask.reduce(0) { $0 + $1.nonzeroBitCount } }

        /// `mask` without `processor`, or nil when that leaves no processor (or `processor` is
        /// outside the mask's range).
        static func removing(_ processor: Int32, from mask: [UInt8]) -> [UInt8]? {
            guard processor >= 0, Int(processor) < mask.count * 8 else { return nil }
            var others = mask
            others[Int(processor) / 8] &= ~(1 << UInt8(processor % 8))
            return count(others) > 0 ? others : nil
        }

        /// The processor the calling thread runs on, or nil.
        static func processor() -> Int32? {
            #if os(Linux)
            let processor = schedGetCPU()
            return processor >= 0 ? processor : nil
            #else
            return nil
            #endif
        }

        /// The calling thread's id (for ``set(_:thread:)``; 0 where there is none).
        static func thread() -> Int32 {
            #if os(Linux)
            return getTID()
            #else
            return 0
            #endif
        }

        /// Sets the affinity mask of `thread` (0: the calling thread). False when refused.
        static func set(_ mask: [UInt8], thread: Int32) -> Bool {
            #if os(Linux)
            return mask.withUnsafeBytes { schedSetAffinity(thread, $0.count, $0.baseAddress) } == 0
            #else
            return false
            #endif
        }

    }
}

#if os(Linux)
// glibc's calls (its module hides them behind `_GNU_SOURCE`). Declared once, here: another
// declaration of the same symbol in a module that imports this one (a test) with another Swift
// type makes the optimiser's cross-module linking fail.
@_silgen_name("sched_getaffinity")
private func schedGetAffinity(_ pid: Int32, _ size: Int, _ mask: UnsafeMutableRawPointer?) -> Int32
@_silgen_name("sched_setaffinity")
private func schedSetAffinity(_ pid: Int32, _ size: Int, _ mask: UnsafeRawPointer?) -> Int32
@_silgen_name("sched_getcpu")
private func schedGetCPU() -> Int32
@_silgen_name("gettid")
private func getTID() -> Int32
#endif
