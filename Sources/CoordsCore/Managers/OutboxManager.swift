/// A queued request with its id.
public struct OutboxEntry: Sendable, Equatable {
    /// The entry's id (increasing, never reused).
    public var id: UInt64
    /// The request and its retry state.
    public var item: OutboxItem
}

/// What a host can ask the outbox to do.
public enum OutboxManagerAction: Sendable {
    /// OutboxManager/enqueue(kind:request:reference:location:).
    case enqueue(kind: OutboxKind, request: PreparedRequest, reference: String?, location: Location?)
    /// OutboxManager/markDelivered(id:).
    case markDelivered(id: UInt64)
    /// OutboxManager/markFailed(id:error:).
    case markFailed(id: UInt64, error: String)
    /// OutboxManager/remove(id:).
    case remove(id: UInt64)
}

/// What the outbox tells the host, after the fact.
public enum OutboxManagerReconcileMessage: Sendable, Equatable, ReconcileMessage {
    /// The manager's name in its log lines and in the C ABI's update records (`"manager"`).
    public static let manager = "outbox"

    /// A request was queued with this id.
    case queued(id: UInt64, kind: OutboxKind)
    /// The request with this id was delivered and left the outbox.
    case delivered(id: UInt64, kind: OutboxKind)
    /// Sending failed; the next attempt is not before `nextAttemptAt` (ms since the epoch).
    case retryScheduled(id: UInt64, attempts: UInt32, nextAttemptAt: UInt64)
    /// The entry with this id was removed.
    case removed(id: UInt64)
    /// The relay refused the request for good (or a newer one replaced it): it left the outbox
    /// without being delivered. `reason` says why, for the user.
    case dropped(id: UInt64, kind: OutboxKind, reason: String)
    /// A dispatched action failed: the failure's stable code (``InternalError``, 199, for an error from outside CoordsCore) and its description.
    case errorOccurred(code: Int32, message: String)
}

/// Requests that could not be sent yet (offline, relay down), kept in the store until they are
/// delivered: nothing is lost across restarts. Failed attempts back off exponentially from
/// 1 s to 60 s, with up to 20 % random jitter so many devices do not retry in lockstep.
///
/// The host only carries bytes: it asks for ``due(now:ignoringBackoff:)`` requests (signed again
/// by the core when their signature would be stale), sends each, hands the answer to
/// ``report(id:status:body:)`` — the core decides delivered, retry, sign again or drop, and does
/// the follow-up in the same transaction — and sleeps until ``nextWake()``.
public actor OutboxManager {
    /// The first retry delay (``Backoff/initial``).
    public static var initialBackoff: UInt64 { Backoff.initial }
    /// The longest retry delay (``Backoff/maximum``).
    public static var maximumBackoff: UInt64 { Backoff.maximum }

    /// Reconcile messages, after the change they describe was committed.
    public nonisolated var updates: Receiver<OutboxManagerReconcileMessage> { reconciler.updates }

    /// Performs `action`; a failure is reported as ``OutboxManagerReconcileMessage/errorOccurred(code:message:)``.
    public func dispatch(_ action: OutboxManagerAction) {
        reconciler.reportingFailure {
            switch action {
            case .enqueue(let kind, let request, let reference, let location):
                _ = try enqueue(kind: kind, request: request, reference: reference, location: location)
            case .markDelivered(let id): try markDelivered(id: id)
            case .markFailed(let id, let error): try markFailed(id: id, error: error)
            case .remove(let id): try remove(id: id)
            }
        }
    }

    /// The delay before retry number `attempts` (1 s, 2 s, 4 s … capped at 60 s), without jitter:
    /// ``Backoff/delay(attempts:)``.
    public nonisolated static func backoff(attempts: UInt32) -> UInt64 { Backoff.delay(attempts: attempts) }

    /// Queues `request`, due at once.
    /// - Parameters:
    ///   - request: the prepared HTTP request to deliver.
    ///   - kind: what it is; the delivery decisions depend on it.
    ///   - reference: the host's handle on it (an upload's fix timestamp, a message id).
    ///   - location: for uploads, the fix, so it can be sealed again if the signature expires.
    /// - Returns: the entry's id (strictly increasing, never reused).
    /// - Throws: store errors.
    public func enqueue(kind: OutboxKind, request: PreparedRequest, reference: String? = nil, location: Location? = nil) throws -> UInt64 {
        let now = context.clock.now()
        return try reconciler.write(context.database) { tx, messages in
            let id = try OutboxQueue.enqueue(tx, kind: kind, request: request, reference: reference, location: location, now: now)
            messages.append(.queued(id: id, kind: kind))
            return id
        }
    }

    /// Removes a delivered entry and records its follow-up in the same transaction, as
    /// ``report(id:status:body:)`` does for a 2xx: an upload or reseal is acknowledged, a message
    /// marked sent, and a `rotation` entry (PROTOCOL.md §9.1) takes its friend off the rotation's
    /// pending list (when nobody is left, the previous identity's seed is wiped from the keychain).
    /// A friend owed several statements (the identity rotated again before they had the first)
    /// gets them one at a time, oldest first: after this one, call
    /// ``MessagesManager/queueRotationStatements(onlyFor:)`` again to queue the next
    /// (``report(id:status:body:)`` does it itself).
    /// - Throws: store errors (an unknown id is not an error: delivery may be reported twice).
    public func markDelivered(id: UInt64) throws {
        try deliver(id: id)
    }

    /// A delivered rotation statement's bookkeeping inside `tx`: its friend leaves the pending
    /// list of the statement owed to them. Returns the keychain names to wipe after the commit
    /// (the seed of a key nobody waits for any more).
    static func recordRotationDelivered(_ item: OutboxItem, _ tx: borrowing WriteTransaction) throws -> [String] {
        guard item.kind == .rotation, let friend = item.reference else { return [] }
        let rotation = try tx.open(Tables.rotation)
        guard var state = try rotation.get(RotationState.key) else { return [] }
        // The oldest statement owed to this friend is the one that was queued for them.
        var older = state.older ?? []
        if let index = older.firstIndex(where: { $0.pending.contains(friend) }) {
            older[index].pending.removeAll { $0 == friend }
            let done = older[index].pending.isEmpty ? older.remove(at: index) : nil
            state.older = older.isEmpty ? nil : older
            try rotation.put(RotationState.key, state)
            return done.map { [RotationLink.keychainName(for: $0.from)] } ?? []
        }
        guard state.pending.contains(friend) else { return [] }
        state.pending.removeAll { $0 == friend }
        if state.pending.isEmpty { state.statement = nil }
        try rotation.put(RotationState.key, state)
        return state.pending.isEmpty ? [IdentityHolder.previousKeychainName] : []
    }

    /// Records a failed attempt and schedules the next one (1 s → 60 s, plus up to 20 % jitter).
    /// - Parameters:
    ///   - id: the entry.
    ///   - error: what went wrong, for display (cut to 500 characters).
    ///   - needsSignature: sign the request again before the next attempt (the relay refused its time).
    /// - Returns: when the next attempt is due (ms since the epoch).
    /// - Throws: store errors (an unknown id is not an error; the time is then now).
    @discardableResult
    public func markFailed(id: UInt64, error: String, needsSignature: Bool = false) throws -> UInt64 {
        let now = context.clock.now()
        // Jitter only spreads retries: without random bytes (never expected) the retry is on the schedule.
        let jitterSeed = (try? context.random.bytes(2)) ?? [0, 0]
        let jitter = jitterSeed.count == 2 ? UInt64(UInt16(jitterSeed[0]) << 8 | UInt16(jitterSeed[1])) : 0
        return try reconciler.write(context.database) { tx, messages -> UInt64 in
            let table = try tx.open(Tables.outbox)
            guard var item = try table.get(id) else { return now }
            item.attempts = item.attempts.addingSaturating(1)
            let delay = Self.backoff(attempts: item.attempts)
            // delay ≤ 60,000, jitter < 65,536: the product fits easily; 20 % of the delay at most.
            item.nextAttemptAt = now.addingSaturating(delay).addingSaturating(delay * jitter / 65_535 / 5)
            item.lastError = String(error.prefix(500))
            if needsSignature {
                item.needsSignature = true
                item.timeRefusals = (item.timeRefusals ?? 0).addingSaturating(1)
            }
            try table.put(id, item)
            messages.append(.retryScheduled(id: id, attempts: item.attempts, nextAttemptAt: item.nextAttemptAt))
            return item.nextAttemptAt
        }
    }

    /// Replaces a queued entry's request (an upload sealed again with a fresh timestamp).
    /// - Throws: store errors.
    public func replaceRequest(id: UInt64, with request: PreparedRequest, reference: String? = nil) throws {
        try reconciler.write(context.database) { tx, _ in
            let table = try tx.open(Tables.outbox)
            guard var item = try table.get(id) else { return }
            item.request = request
            item.needsSignature = nil
            if let reference { item.reference = reference }
            try table.put(id, item)
        }
    }

    /// Drops an entry without delivering it.
    /// - Throws: store errors.
    public func remove(id: UInt64) throws {
        try reconciler.write(context.database) { tx, messages in
            guard try tx.open(Tables.outbox).delete(id) else { return }
            messages.append(.removed(id: id))
        }
    }

    /// The entries with these ids, in the order given (ids no longer queued are left out): what a
    /// manager just queued, without reading the whole outbox.
    /// - Throws: store errors.
    nonisolated func entries(ids: [UInt64]) throws -> [OutboxEntry] {
        guard !ids.isEmpty else { return [] }
        return try context.database.read { tx in
            let table = try tx.open(Tables.outbox)
            return try ids.compactMap { id in try table.get(id).map { OutboxEntry(id: id, item: $0) } }
        }
    }

    /// Every queued entry, oldest first.
    /// - Throws: store errors.
    public nonisolated func pending() throws -> [OutboxEntry] {
        try context.database.read { tx in try tx.open(Tables.outbox).entries().map { OutboxEntry(id: $0.key, item: $0.value) } }
    }

    /// The entries whose next attempt is due now, oldest first, as stored (for a listing: to
    /// send, ask ``due(now:ignoringBackoff:)``, which signs stale requests again).
    /// - Throws: store errors.
    public nonisolated func listDue() throws -> [OutboxEntry] {
        let now = context.clock.now()
        return try pending().filter { $0.item.nextAttemptAt <= now }
    }

    // MARK: Wiring

    let context: AppContext
    let reconciler: Reconciler<OutboxManagerReconcileMessage>
    /// Signs queued uploads and deletes again, and records their delivery.
    let location: LocationManager

    init(context: AppContext, spine: UpdateSpine, location: LocationManager) {
        self.context = context
        self.location = location
        reconciler = Reconciler(spine, as: AppUpdate.outbox, from: \.outbox, logger: context.logger)
    }
}
