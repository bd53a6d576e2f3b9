import Foundation
import Synchronization
import Testing

@testable import CoordsCore

/// Starts `body` on a new thread; `join()` waits for it.
final class TestThread: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    init(_ body: @escaping @Sendable () -> Void) {
        let thread = Thread { [done] in
            body()
            done.signal()
        }
        thread.start()
    }
    func join() { done.wait() }
}

func elapsed(_ body: () throws -> Void) rethrows -> Duration {
    let start = ContinuousClock.now
    try body()
    return ContinuousClock.now - start
}

/// Ports of the behaviours flume's tests/basic.rs checks (counts scaled down for CI). A deadlock
/// fails the test that hangs, by name (``TestTimeLimit``).
@Suite(.timeLimit(TestTimeLimit.minutes)) struct ChannelConformanceTests {
    @Test func sendRecv() throws {
        let (tx, rx) = Channel.unbounded(of: Int.self)
        for i in 0..<1000 { try tx.send(i) }
        for i in 0..<1000 { #expect(try rx.tryRecv() == i) }
        #expect(throws: TryRecvError.empty) { try rx.tryRecv() }
    }

    @Test func iterEndsWhenTheSenderIsGone() throws {
        let (tx, rx) = Channel.unbounded(of: Int.self)
        for i in 0..<1000 { try tx.send(i) }
        tx.close()
        #expect(rx.blockingValues.reduce(0, +) == (0..<1000).reduce(0, +))
    }

    @Test func tryIterTakesWhatIsQueued() throws {
        let (tx, rx) = Channel.unbounded(of: Int.self)
        for i in 0..<1000 { try tx.send(i) }
        // The sender must outlive the check; `_ = tx` is no guarantee in an optimised build.
        withExtendedLifetime(tx) {
            #expect(rx.drain().reduce(0, +) == (0..<1000).reduce(0, +))
            #expect(!rx.isDisconnected)
        }
    }

    @Test func iterThreaded() throws {
        let (tx, rx) = Channel.unbounded(of: Int.self)
        var threads: [TestThread] = []
        for i in 0..<200 {
            let clone = tx.clone()
            threads.append(
                TestThread {
                    try? clone.send(i)
                    clone.close()
                })
        }
        tx.close()
        #expect(rx.blockingValues.reduce(0, +) == (0..<200).reduce(0, +))
        threads.forEach { $0.join() }
    }

    @Test func recvTimeout() throws {
        let (tx, rx) = Channel.unbounded(of: Int.self)
        let wait = Duration.milliseconds(100)
        let took = elapsed { #expect(throws: RecvTimeoutError.timedOut) { try rx.recv(timeout: wait) } }
        let lower: Duration = wait - .milliseconds(2)
        let upper: Duration = wait + .milliseconds(80)
        #expect(took >= lower)
        #expect(took < upper)
        try tx.send(42)
        var value = 0
        let fast = try elapsed { value = try rx.recv(timeout: wait) }
        #expect(value == 42)
        #expect(fast < .milliseconds(20))
    }

    @Test func disconnectTx() {
        let (tx, rx) = Channel.unbounded(of: Int.self)
        tx.close()
        #expect(throws: RecvError.disconnected) { try rx.recv() }
        #expect(rx.isDisconnected)
    }

    @Test func disconnectRx() {
        let (tx, rx) = Channel.unbounded(of: Int.self)
        rx.close()
        do {
            try tx.send(7)
            Issue.record("send to a channel without receivers succeeded")
        } catch {
            #expect(error.channelError == .disconnected)
            #expect(error.value == 7)  // the value is handed back
        }
        #expect(tx.isDisconnected)
    }

    @Test func dropOfLastReferenceDisconnects() throws {
        let rx: Receiver<Int>
        do {
            let (tx, r) = Channel.unbounded(of: Int.self)
            try tx.send(1)
            rx = r
        }  // `tx` released here
        #expect(try rx.recv() == 1)  // queued values are drained first
        #expect(throws: RecvError.disconnected) { try rx.recv() }
    }

    @Test func drain() throws {
        let (tx, rx) = Channel.unbounded(of: Int.self)
        for i in 0..<100 { try tx.send(i) }
        #expect(rx.drain().reduce(0, +) == (0..<100).reduce(0, +))
        for i in 0..<100 { try tx.send(i) }
        for i in 0..<100 { try tx.send(i) }
        _ = try rx.recv()
        #expect(rx.drain() == Array(1..<100) + Array(0..<100))
    }

    @Test func trySend() throws {
        let (tx, rx) = Channel.bounded(5, of: Int.self)
        for i in 0..<5 { try tx.trySend(i) }
        #expect(throws: TrySendError<Int>.self) { try tx.trySend(42) }
        do { try tx.trySend(42) } catch { #expect(error.channelError == .full && error.value == 42 && error.code == 501) }
        #expect(try rx.recv() == 0)
        try tx.trySend(42)
        #expect(try rx.recv() == 1)
        rx.close()
        do { try tx.trySend(42) } catch { #expect(error.channelError == .disconnected && error.value == 42) }
    }

    @Test func sendBounded() throws {
        let (tx, rx) = Channel.bounded(5, of: Int.self)
        for _ in 0..<5 { try tx.send(42) }
        _ = try rx.recv()
        try tx.send(42)
        #expect(throws: TrySendError<Int>.self) { try tx.trySend(42) }
        _ = rx.drain()
        var threads: [TestThread] = []
        for _ in 0..<16 {
            let clone = tx.clone()
            threads.append(
                TestThread {
                    for i in 0..<2000 { try? clone.send(i) }
                    clone.close()
                })
        }
        tx.close()
        let expected: Int = (0..<2000).reduce(0, +) * 16
        let total: Int = rx.blockingValues.reduce(0, +)
        #expect(total == expected)
        threads.forEach { $0.join() }
        #expect(throws: RecvError.disconnected) { try rx.recv() }
    }

    @Test func rendezvous() throws {
        let (tx, rx) = Channel.bounded(0, of: Int.self)
        for i in 0..<5 {
            let clone = tx.clone()
            let blocked = Atomic<Int64>(0)
            let sending = Atomic<Bool>(false)
            let thread = TestThread {
                let refused = (try? clone.trySend(i)) == nil  // nobody is receiving yet
                #expect(refused)
                let start = ContinuousClock.now
                sending.store(true, ordering: .releasing)
                try? clone.send(i)
                let took = ContinuousClock.now - start
                blocked.store(took.components.seconds * 1000 + took.components.attoseconds / 1_000_000_000_000_000, ordering: .relaxed)
            }
            // The 100 ms count from the moment the sender is about to block: a loaded machine may
            // start its thread late (the receiver slept 100 ms while it had not begun, issue 61's CI).
            for _ in 0..<2000 where !sending.load(ordering: .acquiring) { Thread.sleep(forTimeInterval: 0.005) }
            Thread.sleep(forTimeInterval: 0.1)
            #expect(try rx.recv() == i)
            thread.join()
            #expect(blocked.load(ordering: .relaxed) >= 50, "send returned before a receiver took the value")
        }
    }

    @Test func rendezvousTrySendSucceedsWhenAReceiverWaits() throws {
        let (tx, rx) = Channel.bounded(0, of: Int.self)
        let got = Atomic<Int>(-1)
        let thread = TestThread { got.store((try? rx.recv()) ?? -2, ordering: .relaxed) }
        var sent = false
        for _ in 0..<2000 where !sent {  // up to 10 s for the thread to wait in recv on a loaded machine
            do {
                try tx.trySend(9)
                sent = true
            } catch { Thread.sleep(forTimeInterval: 0.005) }
        }
        thread.join()
        #expect(sent)
        #expect(got.load(ordering: .relaxed) == 9)
    }

    @Test func sendTimeoutHandsTheValueBack() throws {
        let (tx, _rx) = Channel.bounded(1, of: String.self)
        try tx.send("first")
        let took = elapsed {
            do {
                try tx.send("second", timeout: .milliseconds(50))
                Issue.record("the send did not time out")
            } catch let error as SendTimeoutError<String> {
                if case .timedOut(let value) = error {
                    #expect(value == "second" && error.code == 503)
                } else {
                    Issue.record("unexpected \(error)")
                }
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
        #expect(took >= .milliseconds(48))
        #expect(_rx.count == 1)
    }

    @Test func blockedSenderIsReleasedWhenReceiversDisappear() throws {
        let (tx, rx) = Channel.bounded(1, of: Int.self)
        try tx.send(1)
        let result = Atomic<Int>(0)
        let thread = TestThread {
            do {
                try tx.send(2)
                result.store(1, ordering: .relaxed)
            } catch let error as SendError<Int> {
                result.store(error.channelError == .disconnected && error.value == 2 ? 2 : 3, ordering: .relaxed)
            } catch {
                result.store(4, ordering: .relaxed)
            }
        }
        Thread.sleep(forTimeInterval: 0.05)
        rx.close()
        thread.join()
        #expect(result.load(ordering: .relaxed) == 2)
    }

    @Test func hydra() throws {
        let threadCount = 8
        let messages = 100
        let (mainTx, mainRx) = Channel.unbounded(of: Int.self)
        var txs: [Sender<Int>] = []
        var threads: [TestThread] = []
        for _ in 0..<threadCount {
            let forward = mainTx.clone()
            let (tx, rx) = Channel.unbounded(of: Int.self)
            txs.append(tx)
            threads.append(
                TestThread {
                    for message in rx.blockingValues { try? forward.send(message) }
                    forward.close()
                })
        }
        mainTx.close()
        for _ in 0..<20 {
            for tx in txs { for _ in 0..<messages { try tx.send(1) } }
            for _ in 0..<(threadCount * messages) { _ = try mainRx.recv() }
        }
        txs.forEach { $0.close() }
        threads.forEach { $0.join() }
        #expect(throws: RecvError.disconnected) { try mainRx.recv() }
    }

    /// Messages go through a chain of eight forwarding threads (bounded hops, each forwarder the
    /// only reader of its hop): all of them arrive, once each, in the order they were sent.
    @Test func robin() throws {
        let threadCount = 8
        let messages = 10
        let rounds = 200
        let main = Channel.bounded(1, of: Int.self)
        var mainTx = main.sender
        let mainRx = main.receiver
        var threads: [TestThread] = []
        for _ in 0..<threadCount {
            let link = Channel.bounded(100, of: Int.self)
            var tx = link.sender
            let rx = link.receiver
            swap(&tx, &mainTx)
            let forward = tx
            threads.append(
                TestThread {
                    // The test's receiver outlives every forwarder: a failed send would be a lost message, seen below.
                    for message in rx.blockingValues { try? forward.send(message) }
                    forward.close()
                })
        }
        var received: [Int] = []
        for round in 0..<rounds {
            let sender = mainTx.clone()
            let producer = TestThread {
                // Likewise: the chain is open until the end of the test.
                for k in 0..<messages { try? sender.send(round * messages + k) }
                sender.close()
            }
            for _ in 0..<messages { received.append(try mainRx.recv()) }
            producer.join()
        }
        #expect(received == Array(0..<(rounds * messages)), "every message once, in the order sent")
        mainTx.close()
        threads.forEach { $0.join() }
        // The forwarders are gone and the chain drained: the main channel reports disconnection.
        #expect(throws: RecvError.disconnected) { try mainRx.recv() }
    }

    @Test func asyncReceiveFromAnotherThread() async throws {
        let (tx, rx) = Channel.unbounded(of: UInt32.self)
        let thread = TestThread {
            Thread.sleep(forTimeInterval: 0.05)
            try? tx.send(42)
        }
        #expect(try await rx.receive() == 42)
        thread.join()
    }

    @Test func asyncIterationDrainsThenEnds() async throws {
        let (tx, rx) = Channel.bounded(4, of: Int.self)
        let producer = TestThread {
            for i in 0..<100 { try? tx.send(i) }
            tx.close()
        }
        var received: [Int] = []
        for await value in rx { received.append(value) }
        producer.join()
        #expect(received == Array(0..<100))
    }

    /// A task suspended in `receive()` wakes with the error of whichever comes: its own
    /// cancellation, or the last sender going away.
    @Test(arguments: [ChannelError.cancelled, .disconnected])
    func suspendedAsyncReceiveIsWoken(with reason: ChannelError) async throws {
        let (tx, rx) = Channel.unbounded(of: Int.self)
        let task = Task { try await rx.receive() }
        try await Task.sleep(for: .milliseconds(20))
        if reason == .cancelled { task.cancel() } else { tx.close() }
        await #expect(throws: reason) { try await task.value }
        if reason == .cancelled {
            try tx.send(5)  // the cancelled waiter did not swallow it
            #expect(try rx.tryRecv() == 5)
        }
    }

    @Test func closedHandlesRefuseWork() throws {
        let (tx, rx) = Channel.unbounded(of: Int.self)
        let extra = tx.clone()
        tx.close()
        tx.close()  // idempotent
        do { try tx.send(1) } catch { #expect(error.channelError == .disconnected && error.value == 1) }
        try extra.send(2)  // the clone keeps the channel connected
        #expect(try rx.recv() == 2)
        let rx2 = rx.clone()
        rx.close()
        #expect(throws: TryRecvError.disconnected) { try rx.tryRecv() }
        try extra.send(3)
        #expect(try rx2.recv() == 3)
    }
}

/// Several senders and receivers on threads: every value is received exactly once.
/// CI also runs this suite under ThreadSanitizer (`make test-tsan`).
@Suite(.timeLimit(TestTimeLimit.minutes)) struct ChannelStressTests {
    @Test(arguments: [nil, 0, 1, 64] as [Int?])
    func everyValueIsReceivedExactlyOnce(capacity: Int?) throws {
        let (tx, rx) = capacity.map { Channel.bounded($0, of: Int.self) } ?? Channel.unbounded(of: Int.self)
        let senders = 4
        let receivers = 4
        let perSender = capacity == 0 ? 2_000 : 20_000
        // NSLock (pthread underneath), not Synchronization.Mutex: TSan cannot see futex-based locks.
        let seen = LockedBox<[Int: Int]>([:])
        var threads: [TestThread] = []
        for s in 0..<senders {
            let handle = tx.clone()
            threads.append(
                TestThread {
                    for i in 0..<perSender { try? handle.send(s * perSender + i) }
                    handle.close()
                })
        }
        tx.close()
        for r in 0..<receivers {
            let handle = rx.clone()
            let useTimeout = r % 2 == 0
            threads.append(
                TestThread {
                    var local: [Int] = []
                    while true {
                        do {
                            local.append(useTimeout ? try handle.recv(timeout: .seconds(5)) : try handle.recv())
                        } catch { break }
                    }
                    seen.update { counts in for v in local { counts[v, default: 0] += 1 } }
                })
        }
        rx.close()
        threads.forEach { $0.join() }
        let counts = seen.value
        #expect(counts.count == senders * perSender)
        #expect(counts.values.allSatisfy { $0 == 1 })
    }
}
