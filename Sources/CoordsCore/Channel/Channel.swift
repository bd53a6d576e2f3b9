import Synchronization

/// Errors of the channel layer. Codes 500–599, stable.
public enum ChannelError: CoordsCoreError, Equatable {
    /// `tryRecv` found nothing queued.
    case empty
    /// `trySend` found a bounded channel full (or, for a rendezvous channel, no receiver waiting).
    case full
    /// The other side is gone: every receiver (for sends) or every sender (for receives, after
    /// the queue was drained) was dropped or closed.
    case disconnected
    /// A timed send or receive reached its deadline.
    case timedOut
    /// The task awaiting `receive()` was cancelled.
    case cancelled

    public var code: Int32 {
        switch self {
        case .empty: 500
        case .full: 501
        case .disconnected: 502
        case .timedOut: 503
        case .cancelled: 504
        }
    }

    public var description: String {
        switch self {
        case .empty: "the channel is empty"
        case .full: "the channel is full"
        case .disconnected: "the channel is disconnected (the other side is gone)"
        case .timedOut: "the channel operation timed out"
        case .cancelled: "the receive was cancelled"
        }
    }
}

/// The error of one channel operation: only the cases that operation can meet (as in flume),
/// each mapped to its stable ``ChannelError`` code.
public protocol ChannelOperationError: CoordsCoreError {
    /// The same failure as a ``ChannelError`` (its code and text).
    var channelError: ChannelError { get }
}

extension ChannelOperationError {
    public var code: Int32 { channelError.code }
    public var description: String { channelError.description }
}

/// ``Sender/send(_:)`` failed: every receiver is gone. The value comes back.
public struct SendError<T: Sendable>: ChannelOperationError {
    /// The value that was not sent.
    public let value: T
    public var channelError: ChannelError { .disconnected }
}

/// ``Sender/trySend(_:)`` failed. The value comes back.
public enum TrySendError<T: Sendable>: ChannelOperationError {
    /// A bounded channel is full (for rendezvous: no receiver is waiting).
    case full(T)
    /// Every receiver is gone.
    case disconnected(T)

    /// The value that was not sent.
    public var value: T {
        switch self {
        case .full(let value), .disconnected(let value): value
        }
    }

    public var channelError: ChannelError {
        switch self {
        case .full: .full
        case .disconnected: .disconnected
        }
    }
}

/// ``Sender/send(_:timeout:)`` failed. The value comes back.
public enum SendTimeoutError<T: Sendable>: ChannelOperationError {
    /// The deadline passed with the channel still full.
    case timedOut(T)
    /// Every receiver is gone.
    case disconnected(T)

    /// The value that was not sent.
    public var value: T {
        switch self {
        case .timedOut(let value), .disconnected(let value): value
        }
    }

    public var channelError: ChannelError {
        switch self {
        case .timedOut: .timedOut
        case .disconnected: .disconnected
        }
    }
}

/// ``Receiver/recv()`` failed: no sender is left and the queue is drained.
public enum RecvError: ChannelOperationError, Equatable {
    /// Every sender is gone and nothing is left to receive.
    case disconnected
    public var channelError: ChannelError { .disconnected }
}

/// ``Receiver/tryRecv()`` failed.
public enum TryRecvError: ChannelOperationError, Equatable {
    /// Nothing is queued right now.
    case empty
    /// No sender is left and the queue is drained.
    case disconnected

    public var channelError: ChannelError {
        switch self {
        case .empty: .empty
        case .disconnected: .disconnected
        }
    }
}

/// ``Receiver/recv(timeout:)`` failed.
public enum RecvTimeoutError: ChannelOperationError, Equatable {
    /// The deadline passed with nothing queued.
    case timedOut
    /// No sender is left and the queue is drained.
    case disconnected

    public var channelError: ChannelError {
        switch self {
        case .timedOut: .timedOut
        case .disconnected: .disconnected
        }
    }
}

/// Why the channel core refused a send (internal; the public operations map it to their own error).
struct SendFailure<T: Sendable>: Error {
    let reason: ChannelError
    let value: T
}

/// Multi-producer, multi-consumer channels with flume's semantics.
///
/// ```swift
/// let (tx, rx) = Channel.bounded(16, of: Int.self)
/// try tx.send(1)                  // blocks while full
/// let one = try rx.recv()          // blocks while empty
/// for await value in rx { … }      // async iteration ends on disconnection
/// ```
/// - `bounded(0)` is a rendezvous channel: a send completes only when a receiver takes the value.
/// - Senders and receivers are cloneable handles; cloned receivers *compete* (each value goes
///   to one of them).
/// - When the last sender is gone, receivers first drain what is queued, then get
///   ``ChannelError/disconnected``; when the last receiver is gone, sends fail at once and hand
///   the value back.
/// - Waiting uses a mutex and condition variables (or a suspended continuation for `async`);
///   nothing spins.
public enum Channel {
    /// A channel without a capacity limit: sends never block.
    public static func unbounded<T: Sendable>(of type: T.Type = T.self) -> (sender: Sender<T>, receiver: Receiver<T>) {
        make(capacity: nil, doorbell: nil)
    }

    /// A channel holding at most `capacity` values (0: rendezvous). Negative counts as 0.
    public static func bounded<T: Sendable>(_ capacity: Int, of type: T.Type = T.self) -> (sender: Sender<T>, receiver: Receiver<T>) {
        make(capacity: max(capacity, 0), doorbell: nil)
    }

    static func make<T: Sendable>(capacity: Int?, doorbell: Doorbell?) -> (sender: Sender<T>, receiver: Receiver<T>) {
        let core = ChannelCore<T>(capacity: capacity, doorbell: doorbell)
        return (Sender(ChannelHandle(core, .sending)), Receiver(ChannelHandle(core, .receiving)))
    }
}

/// The sending half. Thread-safe; `clone()` makes another handle that keeps the channel
/// connected on its own.
public final class Sender<T: Sendable>: Sendable {
    private let handle: ChannelHandle<T>
    private var core: ChannelCore<T> { handle.core }

    init(_ handle: ChannelHandle<T>) { self.handle = handle }

    /// Another sending handle on the same channel.
    public func clone() -> Sender<T> { Sender(handle.clone()) }

    /// Drops this handle now (as if its last reference went away). Idempotent.
    public func close() { handle.close() }

    /// Sends, blocking while a bounded channel is full (or, for rendezvous, until a receiver takes it).
    /// - Throws: ``SendError`` (every receiver is gone), with the value.
    public func send(_ value: T) throws(SendError<T>) {
        do { try deliver(value, blocking: true, deadline: nil) } catch { throw SendError(value: error.value) }
    }

    /// Sends without blocking.
    /// - Throws: ``TrySendError/full(_:)`` or ``TrySendError/disconnected(_:)``, with the value.
    public func trySend(_ value: T) throws(TrySendError<T>) {
        do {
            try deliver(value, blocking: false, deadline: nil)
        } catch {
            throw error.reason == .full ? .full(error.value) : .disconnected(error.value)
        }
    }

    /// Sends, blocking at most `timeout`.
    /// - Throws: ``SendTimeoutError/timedOut(_:)`` or ``SendTimeoutError/disconnected(_:)``, with the value.
    public func send(_ value: T, timeout: Duration) throws(SendTimeoutError<T>) {
        do {
            try deliver(value, blocking: true, deadline: monotonicDeadline(after: timeout))
        } catch {
            throw error.reason == .timedOut ? .timedOut(error.value) : .disconnected(error.value)
        }
    }

    /// Every send goes through here: the one check that this handle is still open.
    private func deliver(_ value: T, blocking: Bool, deadline: UInt64?) throws(SendFailure<T>) {
        guard handle.isOpen else { throw SendFailure(reason: .disconnected, value: value) }
        try core.send(value, blocking: blocking, deadline: deadline)
    }

    /// Whether every receiver is gone (or this handle was closed).
    public var isDisconnected: Bool { !handle.isOpen || core.isReceiverSideGone }
    /// Values currently queued.
    public var count: Int { core.queuedCount }
    /// The capacity (nil: unbounded).
    public var capacity: Int? { core.capacity }
}

/// The receiving half. Thread-safe; `clone()` makes a competing receiver.
public final class Receiver<T: Sendable>: Sendable {
    private let handle: ChannelHandle<T>
    private var core: ChannelCore<T> { handle.core }

    init(_ handle: ChannelHandle<T>) { self.handle = handle }

    /// Another receiving handle; the two compete for values.
    public func clone() -> Receiver<T> { Receiver(handle.clone()) }

    /// Drops this handle now. Idempotent.
    public func close() { handle.close() }

    /// Receives, blocking while the channel is empty.
    /// - Throws: ``RecvError/disconnected`` once no sender is left and the queue is drained.
    public func recv() throws(RecvError) -> T {
        do { return try take(blocking: true, deadline: nil) } catch { throw .disconnected }
    }

    /// Receives without blocking.
    /// - Throws: ``TryRecvError/empty`` or ``TryRecvError/disconnected``.
    public func tryRecv() throws(TryRecvError) -> T {
        do { return try take(blocking: false, deadline: nil) } catch { throw error == .empty ? .empty : .disconnected }
    }

    /// Receives, blocking at most `timeout`.
    /// - Throws: ``RecvTimeoutError/timedOut`` or ``RecvTimeoutError/disconnected``.
    public func recv(timeout: Duration) throws(RecvTimeoutError) -> T {
        do {
            return try take(blocking: true, deadline: monotonicDeadline(after: timeout))
        } catch {
            throw error == .timedOut ? .timedOut : .disconnected
        }
    }

    /// Receives, suspending the task (not a thread) while the channel is empty.
    /// - Throws: ``ChannelError/disconnected`` (after draining) or ``ChannelError/cancelled``
    ///   when the task is cancelled while waiting.
    public func receive() async throws -> T {
        guard isOpen else { throw ChannelError.disconnected }
        return try await core.receiveAsync()
    }

    /// Everything queued right now, without blocking.
    public func drain() -> [T] {
        guard isOpen else { return [] }
        return core.drain()
    }

    /// Whether this handle was not closed: the one check every receive makes.
    private var isOpen: Bool { handle.isOpen }

    /// Every blocking or non-blocking receive goes through here.
    private func take(blocking: Bool, deadline: UInt64?) throws(ChannelError) -> T {
        guard isOpen else { throw .disconnected }
        return try core.receive(blocking: blocking, deadline: deadline)
    }

    /// A blocking sequence: yields values until the channel disconnects.
    public var blockingValues: BlockingValues { BlockingValues(receiver: self) }

    /// Whether every sender is gone and nothing is queued (or this handle was closed).
    public var isDisconnected: Bool { !isOpen || core.isSenderSideGone }
    /// Values currently queued.
    public var count: Int { core.queuedCount }
    /// The capacity (nil: unbounded).
    public var capacity: Int? { core.capacity }

    /// See ``Receiver/blockingValues``.
    public struct BlockingValues: Sequence, IteratorProtocol {
        let receiver: Receiver<T>
        // Disconnection (recv's only error) ends the sequence.
        public mutating func next() -> T? { try? receiver.recv() }
    }
}

extension Receiver: AsyncSequence {
    public typealias Element = T

    /// Async iteration: ends (returns nil) when the channel disconnects or the task is cancelled.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let receiver: Receiver<T>
        // Disconnection or cancellation (receive's only errors) ends the sequence.
        public mutating func next() async -> T? { try? await receiver.receive() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(receiver: self) }
}

/// A sender blocked because the channel was full (or rendezvous): its value waits here until
/// a receiver takes it.
final class SendWaiter<T> {
    var value: T?
    var taken = false
    init(_ value: T) { self.value = value }
}

/// One end a ``Sender`` or ``Receiver`` holds: the side it counts on, and whether it was
/// closed. Closing (explicitly or when the handle goes away) drops the side exactly once;
/// cloning counts one more on the same side.
final class ChannelHandle<T: Sendable>: Sendable {
    enum Side: Sendable { case sending, receiving }

    let core: ChannelCore<T>
    private let side: Side
    private let closed = Atomic<Bool>(false)

    init(_ core: ChannelCore<T>, _ side: Side) {
        self.core = core
        self.side = side
    }

    deinit { close() }

    var isOpen: Bool { !closed.load(ordering: .acquiring) }

    func clone() -> ChannelHandle<T> {
        core.add(side)
        return ChannelHandle(core, side)
    }

    func close() {
        if !closed.exchange(true, ordering: .acquiringAndReleasing) { core.drop(side) }
    }
}

/// The shared state of one channel. Every field is guarded by `mutex`.
final class ChannelCore<T: Sendable>: @unchecked Sendable {
    let capacity: Int?
    private let doorbell: Doorbell?
    private let mutex = PthreadMutex()
    private let notEmpty = Condition()
    private let senderProgress = Condition()
    private var queue = RingBuffer<T>()
    private var waitingSenders: [SendWaiter<T>] = []
    private var asyncReceivers: [(id: UInt64, continuation: CheckedContinuation<T, any Error>)] = []
    private var blockedReceivers = 0
    private var senders = 1
    private var receivers = 1
    private var nextWaiterID: UInt64 = 0

    init(capacity: Int?, doorbell: Doorbell?) {
        self.capacity = capacity
        self.doorbell = doorbell
    }

    var queuedCount: Int { mutex.withLock { queue.count } }
    var isReceiverSideGone: Bool { mutex.withLock { receivers == 0 } }
    var isSenderSideGone: Bool { mutex.withLock { senders == 0 && queue.isEmpty && waitingSenders.isEmpty } }

    func add(_ side: ChannelHandle<T>.Side) {
        mutex.withLock {
            switch side {
            case .sending: senders += 1
            case .receiving: receivers += 1
            }
        }
    }

    func drop(_ side: ChannelHandle<T>.Side) {
        switch side {
        case .sending: dropSender()
        case .receiving: dropReceiver()
        }
    }

    private func dropSender() {
        mutex.lock()
        senders -= 1
        guard senders == 0 else { return mutex.unlock() }
        let waiters = asyncReceivers
        asyncReceivers = []
        notEmpty.broadcast()
        mutex.unlock()
        for waiter in waiters { waiter.continuation.resume(throwing: ChannelError.disconnected) }
        doorbell?.ring()
    }

    private func dropReceiver() {
        mutex.withLock {
            receivers -= 1
            if receivers == 0 { senderProgress.broadcast() }
        }
    }

    /// Whether a value can be queued now: below capacity, or a blocked receiver is about to take it.
    private var hasRoom: Bool {
        guard let capacity else { return true }
        return queue.count < max(capacity, blockedReceivers)
    }

    func send(_ value: T, blocking: Bool, deadline: UInt64?) throws(SendFailure<T>) {
        mutex.lock()
        guard receivers > 0 else {
            mutex.unlock()
            throw SendFailure(reason: .disconnected, value: value)
        }
        if !asyncReceivers.isEmpty {
            let waiter = asyncReceivers.removeFirst()
            mutex.unlock()
            waiter.continuation.resume(returning: value)
            return
        }
        if hasRoom {
            queue.append(value)
            notEmpty.signal()
            mutex.unlock()
            doorbell?.ring()
            return
        }
        guard blocking else {
            mutex.unlock()
            throw SendFailure(reason: .full, value: value)
        }
        let waiter = SendWaiter(value)
        waitingSenders.append(waiter)
        doorbell?.ring()  // a polling receiver can take the value directly (rendezvous)
        while !waiter.taken {
            if receivers == 0 || !senderProgress.wait(mutex, until: deadline) {
                if waiter.taken { break }
                let reason: ChannelError = receivers == 0 ? .disconnected : .timedOut
                waitingSenders.removeAll { $0 === waiter }
                mutex.unlock()
                throw SendFailure(reason: reason, value: value)
            }
        }
        mutex.unlock()
    }

    /// Takes the next value (queue first, then a blocked sender's); the caller holds the mutex.
    private func takeAvailable() -> T? {
        if let value = queue.popFirst() {
            if let capacity, !waitingSenders.isEmpty, queue.count < capacity {
                let waiter = waitingSenders.removeFirst()
                if let promoted = waiter.value { queue.append(promoted) }
                waiter.value = nil
                waiter.taken = true
                senderProgress.broadcast()
            }
            return value
        }
        while !waitingSenders.isEmpty {
            let waiter = waitingSenders.removeFirst()
            waiter.taken = true
            senderProgress.broadcast()
            if let value = waiter.value {
                waiter.value = nil
                return value
            }
        }
        return nil
    }

    func receive(blocking: Bool, deadline: UInt64?) throws(ChannelError) -> T {
        mutex.lock()
        defer { mutex.unlock() }
        while true {
            if let value = takeAvailable() { return value }
            guard senders > 0 else { throw .disconnected }
            guard blocking else { throw .empty }
            blockedReceivers += 1
            let signalled = notEmpty.wait(mutex, until: deadline)
            blockedReceivers -= 1
            if !signalled {
                if let value = takeAvailable() { return value }
                throw .timedOut
            }
        }
    }

    func receiveAsync() async throws -> T {
        let id: UInt64 = mutex.withLock {
            nextWaiterID += 1
            return nextWaiterID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                mutex.lock()
                if let value = takeAvailable() {
                    mutex.unlock()
                    continuation.resume(returning: value)
                } else if senders == 0 {
                    mutex.unlock()
                    continuation.resume(throwing: ChannelError.disconnected)
                } else if Task.isCancelled {
                    mutex.unlock()
                    continuation.resume(throwing: ChannelError.cancelled)
                } else {
                    asyncReceivers.append((id, continuation))
                    mutex.unlock()
                }
            }
        } onCancel: {
            mutex.lock()
            if let index = asyncReceivers.firstIndex(where: { $0.id == id }) {
                let waiter = asyncReceivers.remove(at: index)
                mutex.unlock()
                waiter.continuation.resume(throwing: ChannelError.cancelled)
            } else {
                mutex.unlock()
            }
        }
    }

    func drain() -> [T] {
        mutex.withLock {
            var out: [T] = []
            while let value = takeAvailable() { out.append(value) }
            return out
        }
    }
}

/// Rings whenever one of several channels gets a value, so one thread can wait on all of
/// them without spinning (``CoordsApp/nextUpdate(timeout:)``).
final class Doorbell: @unchecked Sendable {
    private let mutex = PthreadMutex()
    private let condition = Condition()
    private var rings: UInt64 = 0

    /// The number of rings so far; pass it to ``wait(after:until:)``.
    var generation: UInt64 { mutex.withLock { rings } }

    func ring() {
        mutex.withLock {
            rings &+= 1
            condition.broadcast()
        }
    }

    /// Waits until the bell rang after `generation`, or until `deadline` (monotonic ns).
    /// Returns false on timeout.
    func wait(after generation: UInt64, until deadline: UInt64?) -> Bool {
        mutex.withLock {
            while rings == generation {
                if !condition.wait(mutex, until: deadline) { return rings != generation }
            }
            return true
        }
    }
}

/// A growable FIFO ring buffer.
struct RingBuffer<T> {
    private var storage: [T?] = []
    private var head = 0
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    mutating func append(_ value: T) {
        if count == storage.count {
            let old = storage
            let oldHead = head
            storage = [T?](repeating: nil, count: max(8, old.count * 2))
            for i in 0..<count { storage[i] = old[(oldHead + i) % old.count] }
            head = 0
        }
        storage[(head + count) % storage.count] = value
        count += 1
    }

    mutating func popFirst() -> T? {
        guard count > 0 else { return nil }
        let value = storage[head]
        storage[head] = nil
        head = (head + 1) % storage.count
        count -= 1
        return value
    }
}
