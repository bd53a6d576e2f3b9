import Synchronization

/// A manager's reconcile message. Every manager reports a failed dispatch the same way, so the
/// ``Reconciler`` builds that message itself (an enum case `errorOccurred(code:message:)`
/// satisfies the requirement).
protocol ReconcileMessage: Sendable {
    /// The manager's name in logs and in the C ABI's update records: `"wallet"`, `"friends"`, ….
    static var manager: String { get }
    static func errorOccurred(code: Int32, message: String) -> Self
}

/// What one write transaction leaves to do after its commit — updates for any manager, keys to
/// wipe from the keychain — collected while it runs and applied only once it committed
/// (``Reconciler/write(_:keychain:effects:)``); an aborted attempt's effects are dropped, and a
/// body that runs again starts from an empty list. No manager sends on another's channel: the
/// spine routes each update to its manager's channel.
struct WriteEffects: Sendable {
    /// Updates for any manager's channel, in order.
    var updates: [AppUpdate] = []
    /// Keychain entries to delete (keys that must not outlive the commit).
    var wipe: [String] = []
}

/// A manager's update channel (the model is cove's reconcile channel): the manager's
/// ``Reconciler`` sends reconcile messages after its commits; hosts receive them from the
/// manager's `updates` or through ``CoordsApp/nextUpdate(timeout:)``.
final class ReconcileChannel<Message: Sendable>: Sendable {
    let sender: Sender<Message>
    let receiver: Receiver<Message>

    init(capacity: Int, doorbell: Doorbell) {
        (sender, receiver) = Channel.make(capacity: capacity, doorbell: doorbell)
    }
}

/// The update spine of one ``CoordsApp``: it makes every manager's ``ReconcileChannel`` and keeps
/// them in one list, in the order they were made, which ``CoordsApp/close()`` and
/// ``CoordsApp/nextUpdate(timeout:)`` (and through it the C ABI's update record) walk. A new
/// manager asks for its channel with ``channel(as:)`` — nothing else is wired by hand.
final class UpdateSpine: Sendable {
    /// Rung by every channel of the spine when a message arrives or a channel closes.
    let doorbell = Doorbell()
    private let capacity: Int
    private let entries = Mutex<[Entry]>([])
    private let routes = Mutex<[@Sendable (AppUpdate) -> Bool]>([])

    /// One manager's channel, seen without its message type.
    private struct Entry: Sendable {
        let next: @Sendable () -> AppUpdate?
        let isFinished: @Sendable () -> Bool
        let close: @Sendable () -> Void
    }

    /// - Parameter capacity: how many messages each channel holds; beyond it, a new message is
    ///   dropped (the ones already waiting are kept) with a warning (``Reconciler``).
    init(capacity: Int) { self.capacity = capacity }

    /// A new channel, registered; `wrap` turns its messages into the ``AppUpdate`` hosts receive.
    func channel<Message: Sendable>(as wrap: @escaping @Sendable (Message) -> AppUpdate) -> ReconcileChannel<Message> {
        let channel = ReconcileChannel<Message>(capacity: capacity, doorbell: doorbell)
        let entry = Entry(
            // Empty or disconnected (tryRecv's only errors): nothing from this channel now.
            next: { (try? channel.receiver.tryRecv()).map(wrap) },
            isFinished: { channel.receiver.isDisconnected },
            close: { channel.sender.close() })
        entries.withLock { $0.append(entry) }
        return channel
    }

    /// Registers how updates of one manager's kind reach its channel (``Reconciler``'s `send`).
    func route(_ deliver: @escaping @Sendable (AppUpdate) -> Bool) {
        routes.withLock { $0.append(deliver) }
    }

    /// Sends each update to its manager's channel (an effect list's updates, after the commit).
    func send(_ updates: [AppUpdate]) {
        let routes = routes.withLock { $0 }
        for update in updates where !routes.contains(where: { $0(update) }) {
            continue  // a manager with no channel on this spine (none in an app): nobody to tell
        }
    }

    /// The first waiting message, walking the channels in registration order.
    func next() -> AppUpdate? {
        for entry in entries.withLock({ $0 }) {
            if let update = entry.next() { return update }
        }
        return nil
    }

    /// Whether every channel is closed and drained.
    var isFinished: Bool { entries.withLock { $0 }.allSatisfy { $0.isFinished() } }

    /// Ends every channel (listeners finish after draining). Idempotent.
    func close() {
        for entry in entries.withLock({ $0 }) { entry.close() }
    }
}
