import CoordsCore
import Synchronization

/// Why the relay closes a live connection (PROTOCOL.md §8.4): a WebSocket close code and a short
/// reason (at most 123 bytes, as a close frame allows).
public struct LiveClose: Error, Sendable, Equatable {
    /// The WebSocket close code (4xxx, §8.4).
    public let code: UInt16
    /// The close reason, cut to 123 bytes.
    public let reason: String

    init(_ code: UInt16, _ reason: String) {
        self.code = code
        self.reason = String(decoding: reason.utf8.prefix(123), as: UTF8.self)
    }

    static func malformed(_ why: String) -> LiveClose { LiveClose(4400, "malformed frame: \(why)") }
    static let mailboxRefused = LiveClose(4401, "mailbox proof refused")
    static let idle = LiveClose(4408, "idle: nothing watched")
    static func tooManyIDs(_ maximum: Int) -> LiveClose { LiveClose(4413, "too many ids (at most 50 per frame and \(maximum) per connection)") }
    static let tooManyFromAddress = LiveClose(4429, "too many live connections from this address")
    static let relayFull = LiveClose(4429, "the relay holds its maximum number of live connections")
    static let fellBehind = LiveClose(4503, "fell behind: notices were dropped; reconnect and fetch")
    static let binary = LiveClose(4400, "malformed frame: binary frames are not used")
}

/// This node's live subscribers and the fan-out of notices to them (§8.3). Every accepted upload,
/// delete and envelope is published here; each subscriber watching the key or mailbox gets the
/// frame in its queue, serialised once. Thread-safe; lock hold times are a few dictionary operations.
public final class LiveHub: Sendable {
    let limits: LiveLimits
    private let state = Mutex(State())

    /// One live connection's side of the hub: the frames to write, in order.
    public final class Subscriber: Sendable {
        /// A number unique in this process, naming the connection.
        public let id: UInt64
        let address: String
        /// Frames to write to the socket; ends when the subscriber fell behind or was disconnected.
        public let frames: AsyncStream<String>
        let continuation: AsyncStream<String>.Continuation
        private let behind = Atomic<Bool>(false)

        init(id: UInt64, address: String, queueLength: Int) {
            (self.id, self.address) = (id, address)
            (frames, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingOldest(max(queueLength, 1)))
        }

        /// Whether the queue overflowed (the connection is then closed with 4503).
        public var fellBehind: Bool { behind.load(ordering: .acquiring) }

        /// Queues `text`; on overflow marks the subscriber behind and ends its stream.
        func send(_ text: String) {
            if case .dropped = continuation.yield(text) {
                behind.store(true, ordering: .releasing)
                continuation.finish()
            }
        }
    }

    private struct Entry {
        let subscriber: Subscriber
        var keys = Set<String>()
        var mailbox: String?
    }

    private struct State {
        var nextID: UInt64 = 0
        var entries: [UInt64: Entry] = [:]
        var perAddress: [String: Int] = [:]
        var byKey: [String: Set<UInt64>] = [:]
        var byMailbox: [String: Set<UInt64>] = [:]
    }

    init(limits: LiveLimits) { self.limits = limits }

    // MARK: Connections

    /// Admits a live connection from `address`.
    /// - Throws: ``LiveClose`` 4429 over the per-address or total cap.
    func connect(address: String) throws(LiveClose) -> Subscriber {
        try state.withLock { state throws(LiveClose) in
            guard state.entries.count < limits.maximumConnections else { throw LiveClose.relayFull }
            let current = state.perAddress[address] ?? 0
            guard current < limits.maximumConnectionsPerAddress else { throw LiveClose.tooManyFromAddress }
            state.nextID &+= 1
            let subscriber = Subscriber(id: state.nextID, address: address, queueLength: limits.queueLength)
            state.entries[subscriber.id] = Entry(subscriber: subscriber)
            state.perAddress[address] = current + 1
            return subscriber
        }
    }

    /// Forgets `subscriber` and everything it watched; ends its frame stream. Idempotent.
    func disconnect(_ subscriber: Subscriber) {
        state.withLock { state in
            guard let entry = state.entries.removeValue(forKey: subscriber.id) else { return }
            for key in entry.keys { Self.remove(subscriber.id, from: &state.byKey, at: key) }
            if let mailbox = entry.mailbox { Self.remove(subscriber.id, from: &state.byMailbox, at: mailbox) }
            let left = (state.perAddress[entry.subscriber.address] ?? 1) - 1
            state.perAddress[entry.subscriber.address] = left > 0 ? left : nil
        }
        subscriber.continuation.finish()
    }

    // MARK: Subscriptions

    /// Adds `ids` (and the mailbox `recipient`, already proven) to what `subscriber` watches and
    /// queues the `subscribed` answer.
    /// - Throws: ``LiveClose`` 4413 when the connection would watch more than the limit.
    func subscribe(_ subscriber: Subscriber, ids: [String], mailbox recipient: String?) throws(LiveClose) {
        let answer = try state.withLock { state throws(LiveClose) -> LiveFrame in
            guard var entry = state.entries[subscriber.id] else { return .subscribed(ids: 0, mailbox: false) }
            let added = ids.filter { !entry.keys.contains($0) }
            guard entry.keys.count + added.count <= limits.maximumIDsPerConnection else {
                throw LiveClose.tooManyIDs(limits.maximumIDsPerConnection)
            }
            for key in added {
                entry.keys.insert(key)
                state.byKey[key, default: []].insert(subscriber.id)
            }
            if let recipient, entry.mailbox != recipient {
                if let old = entry.mailbox { Self.remove(subscriber.id, from: &state.byMailbox, at: old) }
                entry.mailbox = recipient
                state.byMailbox[recipient, default: []].insert(subscriber.id)
            }
            state.entries[subscriber.id] = entry
            return .subscribed(ids: entry.keys.count, mailbox: entry.mailbox != nil)
        }
        subscriber.send(answer.text)
    }

    /// Removes `ids` from what `subscriber` watches and queues the `subscribed` answer.
    func unsubscribe(_ subscriber: Subscriber, ids: [String]) {
        let answer = state.withLock { state -> LiveFrame in
            guard var entry = state.entries[subscriber.id] else { return .subscribed(ids: 0, mailbox: false) }
            for key in ids where entry.keys.remove(key) != nil { Self.remove(subscriber.id, from: &state.byKey, at: key) }
            state.entries[subscriber.id] = entry
            return .subscribed(ids: entry.keys.count, mailbox: entry.mailbox != nil)
        }
        subscriber.send(answer.text)
    }

    /// Whether `subscriber` watches any key or a mailbox.
    func isWatching(_ subscriber: Subscriber) -> Bool {
        state.withLock { state in state.entries[subscriber.id].map { !$0.keys.isEmpty || $0.mailbox != nil } ?? false }
    }

    // MARK: Publishing

    /// Sends `frame` (a `location` or `deleted` notice) to every subscriber watching `key`
    /// (canonical b64u); serialised once. A notice that would not fit in one frame (a blob over
    /// about 12 KB) goes out as `changed` instead, and the clients fetch it (§8.3).
    public func publish(_ frame: LiveFrame, key: String) { fanOut(frame) { $0.byKey[key] } }

    /// Sends `frame` (a `message` notice) to every subscriber watching the mailbox of `recipient` (hex).
    public func publish(_ frame: LiveFrame, mailbox recipient: String) { fanOut(frame) { $0.byMailbox[recipient] } }

    private func fanOut(_ frame: LiveFrame, to watchers: (State) -> Set<UInt64>?) {
        let subscribers = state.withLock { state in (watchers(state) ?? []).compactMap { state.entries[$0]?.subscriber } }
        guard !subscribers.isEmpty else { return }
        var text = frame.text
        if case .location(let notice) = frame, text.utf8.count > LiveFrame.maximumFrameBytes { text = LiveFrame.changed(id: notice.id).text }
        for subscriber in subscribers { subscriber.send(text) }
    }

    /// Whether any subscriber on this node watches `key`.
    func isWatched(key: String) -> Bool { state.withLock { $0.byKey[key] != nil } }

    /// Live connections open now, and keys watched in total (for /metrics).
    var counts: (connections: Int, keys: Int) { state.withLock { ($0.entries.count, $0.byKey.count) } }

    private static func remove(_ id: UInt64, from index: inout [String: Set<UInt64>], at key: String) {
        index[key]?.remove(id)
        if index[key]?.isEmpty == true { index[key] = nil }
    }
}
