import Synchronization

/// A manager's reconcile message. Every manager reports a failed dispatch the same way, so the
/// ``Reconciler`` builds that message itself (an enum case `errorOccurred(code:message:)`
/// satisfies the requirement).
protocol ReconcileMessage: Sendable {
    /// The manager's name in logs and in the C ABI's update records: `"wallet"`, `"friends"`, ….
    static var manager: String { get }
    static func errorOccurred(code: Int32, message: String) -> Self
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
