import Synchronization
import Testing

@testable import CoordsCore

#if canImport(Glibc)
import Glibc
#endif

/// Work spread over the cores (group copies' signatures, a mailbox answer's signature checks):
/// the same results, in the same order, as one thread would give — and ahead-of-time signature
/// checks that can only ever repeat libsodium's answer for the very same bytes.
// Counters are atomics, not `Mutex`: ThreadSanitizer does not see `Synchronization.Mutex`'s
// locking on Linux and would report its protected state as racing.
@Suite(.serialized) struct ParallelTests {
    @Test func resultsComeBackInOrderWhateverTheSplit() {
        for count in [0, 1, 2, 3, 5, 7, 8, 63, 255, 256] {
            for share in [0, 1, 3, 4, 100] {
                let squares = Parallel.map(count, minimumShare: share) { $0 * $0 }
                #expect(squares == (0..<count).map { $0 * $0 }, "count \(count), share \(share)")
            }
        }
        #expect(Parallel.workers >= 1 && Parallel.workers <= 4)
    }

    @Test func everyItemIsComputedOnce() {
        let calls = Atomic<Int>(0)
        let items = Parallel.map(257, minimumShare: 1) { index -> Int in
            calls.wrappingAdd(1, ordering: .relaxed)
            return index
        }
        #expect(items == Array(0..<257) && calls.load(ordering: .relaxed) == 257)
    }

    /// How many of `rounds` × 8 slow items (2 ms each, so a woken helper has time to take some)
    /// ran on a thread other than the caller's.
    static func itemsOnHelpers(rounds: Int = 5) -> Int {
        let caller = pthread_self()
        let elsewhere = Atomic<Int>(0)
        for _ in 0..<rounds {
            let items = Parallel.map(8, minimumShare: 1) { index -> Int in
                if pthread_equal(pthread_self(), caller) == 0 { elsewhere.wrappingAdd(1, ordering: .relaxed) }
                usleep(2_000)
                return index
            }
            #expect(items == Array(0..<8))
        }
        return elsewhere.load(ordering: .relaxed)
    }

    @Test func theHelpersTakeItemsWhenThereIsMoreThanOneProcessor() {
        let elsewhere = Self.itemsOnHelpers()
        if Parallel.workers > 1 {
            #expect(elsewhere > 0, "no item ran on a helper")
        } else {
            #expect(elsewhere == 0, "one processor: every item on the caller's thread")
        }
    }

    @Test func helpersThatFellAsleepBetweenCallsAreWokenByTheNext() {
        // Calls further apart than the helpers poll (Pool.helperPollNanoseconds, 2 ms): each one
        // wakes a sleeping helper; items longer than the caller's poll make the caller sleep too.
        let caller = pthread_self()
        let elsewhere = Atomic<Int>(0)
        var wrong = 0
        for round in 0..<20 {
            usleep(3_000)
            let items = Parallel.map(4, minimumShare: 1) { index -> Int in
                if pthread_equal(pthread_self(), caller) == 0 { elsewhere.wrappingAdd(1, ordering: .relaxed) }
                usleep(round % 2 == 0 ? 300 : 20)
                return round * 10 + index
            }
            if items != (0..<4).map({ round * 10 + $0 }) { wrong += 1 }
        }
        #expect(wrong == 0)
        #expect((elsewhere.load(ordering: .relaxed) > 0) == (Parallel.workers > 1), "a sleeping helper was never woken")
    }

    @Test func callsFromManyThreadsAndFromInsideAnItemEachGetTheirOwnResults() throws {
        // The helpers serve one call at a time: the others (and a call made by an item) run on
        // their own threads, and nobody waits for another call.
        let failures = Atomic<Int>(0)
        var threads: [OSThread] = []
        for thread in 0..<6 {
            threads.append(
                try OSThread.start {
                    for round in 0..<40 {
                        let count = 5 + (thread + round) % 20
                        let items = Parallel.map(count, minimumShare: 1) { index -> [Int] in
                            // An item that itself spreads work (nested: computed inline).
                            Parallel.map(3, minimumShare: 1) { thread * 1_000 + index * 10 + $0 }
                        }
                        let expected = (0..<count).map { index in (0..<3).map { thread * 1_000 + index * 10 + $0 } }
                        if items != expected { failures.wrappingAdd(1, ordering: .relaxed) }
                    }
                })
        }
        for thread in threads { thread.join() }
        #expect(failures.load(ordering: .relaxed) == 0)
    }

    @Test func wakingTheHelpersAheadOfAJobBringsThemOutOfTheirSleepUntilTheirNextPoll() throws {
        guard Parallel.workers > 1 else {
            Parallel.wakeHelpers()  // one processor: nothing to wake, and nothing breaks
            return
        }
        _ = Parallel.map(4, minimumShare: 1) { $0 }  // the pool is started
        guard let pool = Parallel.helpersAsleep() else {
            Issue.record("no helper started")
            return
        }
        func waitFor(_ asleep: Int) -> Bool {
            // Up to a few hundred milliseconds: other suites may keep the helpers busy meanwhile.
            for _ in 0..<4_000 {
                if Parallel.helpersAsleep()?.asleep == asleep { return true }
                usleep(50)
            }
            return false
        }
        // Past their poll (2 ms) they sleep; a nudge wakes them all; after polling again they sleep.
        #expect(waitFor(pool.helpers), "the helpers never fell asleep")
        Parallel.wakeHelpers()
        #expect(waitFor(0), "a nudge woke no helper")
        #expect(waitFor(pool.helpers), "nudged helpers did not go back to sleep")
        // And they still take the next job.
        Parallel.wakeHelpers()
        #expect(Self.itemsOnHelpers(rounds: 1) > 0)
    }

    #if os(Linux)
    /// A helper that Linux queued on its caller's processor (as it does when the caller starts or
    /// wakes it there, until a balancing moves it, tens of milliseconds later on a two-processor
    /// virtual machine) is moved to another processor by the next call, and takes items there.
    @Test func aHelperQueuedOnItsCallersProcessorIsMovedOffIt() throws {
        guard Parallel.workers > 1 else { return }
        _ = Parallel.map(4, minimumShare: 1) { $0 }  // the pool is started
        var helpers = Parallel.helperThreads()
        for _ in 0..<20_000 where helpers.contains(0) {  // a helper publishes its id once it runs
            usleep(50)
            helpers = Parallel.helperThreads()
        }
        try #require(!helpers.isEmpty && !helpers.contains(0))
        let original = try #require(Parallel.Affinity.current())
        defer {
            _ = Parallel.Affinity.set(original, thread: 0)
            for helper in helpers { _ = Parallel.Affinity.set(original, thread: helper) }
        }
        // The caller and its helpers on one processor.
        let mine = try #require(Parallel.Affinity.processor())
        var only = [UInt8](repeating: 0, count: Parallel.Affinity.maskBytes)
        only[Int(mine) / 8] = 1 << UInt8(mine % 8)
        try #require(Parallel.Affinity.set(only, thread: 0))
        for helper in helpers { try #require(Parallel.Affinity.set(only, thread: helper)) }
        let caller = pthread_self()
        var helperItems = 0
        var besideTheCaller = 0
        for _ in 0..<20 {
            // Items that keep their processor busy: a helper queued behind the caller never runs.
            let placed = Parallel.map(8, minimumShare: 1) { _ -> Int32 in
                let start = monotonicNanoseconds()
                while monotonicNanoseconds() &- start < 500_000 {}
                return pthread_equal(pthread_self(), caller) == 0 ? Parallel.Affinity.processor() ?? -1 : -1
            }
            helperItems += placed.filter { $0 >= 0 }.count
            besideTheCaller += placed.filter { $0 == mine }.count
        }
        // Unmoved, every helper item runs on the caller's processor. (Not none at all: other suites
        // running meanwhile keep the other processors busy too, and the kernel may balance a
        // helper back onto the caller's.)
        #expect(helperItems >= 20, "the helpers took \(helperItems) of 160 items")
        #expect(besideTheCaller * 2 <= helperItems, "\(besideTheCaller) of \(helperItems) helper items ran on the caller's processor")
        // Once running elsewhere, a helper widened its mask again (it may run anywhere it could).
        for helper in helpers {
            var mask = Parallel.Affinity.current(thread: helper)
            for _ in 0..<2_000 where mask != original {  // it widens it when it next polls
                usleep(50)
                mask = Parallel.Affinity.current(thread: helper)
            }
            #expect(mask == original, "helper \(helper) kept a narrowed mask: \(mask?.prefix(4) ?? []) instead of \(original.prefix(4))")
        }
    }

    @Test func aMaskWithoutOneProcessor() {
        var mask = [UInt8](repeating: 0, count: 128)
        mask[0] = 0b0000_0011
        #expect(Parallel.Affinity.removing(0, from: mask)?.first == 0b0000_0010)
        #expect(Parallel.Affinity.removing(1, from: mask)?.first == 0b0000_0001)
        #expect(Parallel.Affinity.removing(5, from: mask) == mask)  // not in it: unchanged
        #expect(Parallel.Affinity.removing(0, from: Parallel.Affinity.removing(1, from: mask) ?? []) == nil)  // none left
        #expect(Parallel.Affinity.removing(-1, from: mask) == nil && Parallel.Affinity.removing(1024, from: mask) == nil)
        #expect(Parallel.Affinity.count(mask) == 2)
    }
    #endif

    struct Stop: Error, Equatable { let at: Int }

    @Test func aPipelineConsumesEveryResultOnceInOrderAfterItsOwnWork() throws {
        for count in [0, 1, 2, 3, 5, 7, 8, 63, 256] {
            for share in [0, 1, 3, 100] {
                let produced = Atomic<Int>(0)
                var events: [String] = []
                var consumed: [Int] = []
                try Parallel.pipeline(
                    count, minimumShare: share, meanwhile: { events.append("meanwhile") },
                    produce: { index -> Int in
                        produced.wrappingAdd(1, ordering: .relaxed)
                        return index * 3
                    },
                    consume: { index, value in
                        if events.count == 1 { events.append("consume") }
                        #expect(value == index * 3)
                        consumed.append(index)
                    })
                #expect(consumed == Array(0..<count), "count \(count), share \(share)")
                #expect(produced.load(ordering: .relaxed) == count)
                #expect(events == (count == 0 ? ["meanwhile"] : ["meanwhile", "consume"]))
            }
        }
    }

    @Test func aPipelineConsumesResultsWhileLaterItemsAreStillBeingMade() throws {
        // Slow items on a machine with helpers: the caller takes the first results before the
        // last item is made (that is the point: a send queues copies while others are signed).
        guard Parallel.workers > 1 else { return }
        let finished = Atomic<Int>(0)
        var finishedAtFirstConsume = -1
        var onCaller = 0
        let caller = pthread_self()
        try Parallel.pipeline(
            12, minimumShare: 1, meanwhile: {},
            produce: { index -> Bool in
                usleep(2_000)
                finished.wrappingAdd(1, ordering: .acquiringAndReleasing)
                return pthread_equal(pthread_self(), caller) != 0
            },
            consume: { index, madeByCaller in
                if index == 0 { finishedAtFirstConsume = finished.load(ordering: .acquiring) }
                if madeByCaller { onCaller += 1 }
            })
        #expect(finishedAtFirstConsume >= 1 && finishedAtFirstConsume < 12, "\(finishedAtFirstConsume) items made before the first was taken")
        #expect(onCaller < 12, "every item was made on the caller's thread")
    }

    @Test func aPipelineThatThrowsStopsConsumingAndFinishesWhatTheHelpersTook() throws {
        for stopAt in [0, 3, 11] {
            let started = Atomic<Int>(0)
            let ended = Atomic<Int>(0)
            var consumed: [Int] = []
            #expect(throws: Stop(at: stopAt)) {
                try Parallel.pipeline(
                    12, minimumShare: 1, meanwhile: {},
                    produce: { index -> Int in
                        started.wrappingAdd(1, ordering: .relaxed)
                        usleep(500)
                        ended.wrappingAdd(1, ordering: .relaxed)
                        return index
                    },
                    consume: { index, _ in
                        if index == stopAt { throw Stop(at: stopAt) }
                        consumed.append(index)
                    })
            }
            // Nothing after the error is consumed, and no item is still running once the call returned.
            #expect(consumed == Array(0..<stopAt))
            #expect(started.load(ordering: .relaxed) == ended.load(ordering: .relaxed))
        }
        // Its own work failing: nothing consumed.
        var consumed = 0
        #expect(throws: Stop(at: -1)) {
            try Parallel.pipeline(
                8, minimumShare: 1, meanwhile: { throw Stop(at: -1) }, produce: { $0 }, consume: { _, _ in consumed += 1 })
        }
        #expect(consumed == 0)
        // The helpers are free again for the next call.
        #expect((Self.itemsOnHelpers() > 0) == (Parallel.workers > 1))
    }

    @Test func aMemoRemembersOnlyValidSignaturesForTheExactBytes() throws {
        let signer = try Ed25519SigningKey.generate()
        let other = try Ed25519SigningKey.generate()
        let messages = (0..<12).map { Array("message \($0)".utf8) }
        var checks = messages.map { SignatureMemo.Check(key: signer.publicKey, signature: signer.signature(for: $0), message: $0) }
        // Two that are not valid: a signature over other bytes, and another key's signature.
        checks.append(SignatureMemo.Check(key: signer.publicKey, signature: signer.signature(for: messages[0]), message: messages[1]))
        checks.append(SignatureMemo.Check(key: signer.publicKey, signature: other.signature(for: messages[2]), message: messages[2]))
        let memo = SignatureMemo(verifying: checks)
        #expect(memo.count == 12)
        for message in messages { #expect(memo.isValid(signer.signature(for: message), by: signer.publicKey, for: message)) }
        // Whatever was not remembered is checked on the spot, and refused as libsodium refuses it.
        #expect(!memo.isValid(signer.signature(for: messages[0]), by: signer.publicKey, for: messages[1]))
        #expect(!memo.isValid(other.signature(for: messages[2]), by: signer.publicKey, for: messages[2]))
        #expect(!memo.isValid(signer.signature(for: messages[3]), by: other.publicKey, for: messages[3]))
        var flipped = messages[4]
        flipped[0] ^= 1
        #expect(!memo.isValid(signer.signature(for: messages[4]), by: signer.publicKey, for: flipped))
        // An empty memo answers the same, by checking.
        #expect(SignatureMemo().isValid(signer.signature(for: messages[5]), by: signer.publicKey, for: messages[5]))
        #expect(SignatureMemo(verifying: []).count == 0)
    }
}
