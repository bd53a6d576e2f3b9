/// What the core decided about the relay's answer to one outbox request
/// (``OutboxManager/report(id:status:body:)``).
public enum OutboxDecision: Sendable, Equatable {
    /// The relay took it (2xx; for an envelope also 409: the relay already has that id). The
    /// entry left the outbox and its follow-up was recorded in the same transaction.
    case delivered
    /// Worth trying again (no answer, 408, 425, 429, 5xx): not before `at` (ms since the epoch).
    /// `reason` says what went wrong, for the user.
    case retry(at: UInt64, reason: String)
    /// The relay refused the signed time (401 about the timestamp): the next
    /// ``OutboxManager/due(now:ignoringBackoff:)`` signs it again; not before `at`.
    case signAgain(at: UInt64, reason: String)
    /// Retrying cannot help (another 4xx): the entry left the outbox. `reason` says why.
    case dropped(reason: String)
    /// No entry has this id (already reported, or removed): nothing changed.
    case unknown
}

/// One request's fate after ``OutboxManager/report(id:status:body:)``.
public struct OutboxReport: Sendable, Equatable {
    /// The entry's id.
    public var id: UInt64
    /// What the entry was (nil for ``OutboxDecision/unknown``).
    public var kind: OutboxKind?
    /// What the core decided and recorded.
    public var decision: OutboxDecision
}

extension OutboxManager {
    /// A time-signed request (``OutboxKind/isTimeSigned``) whose signature is older than this
    /// (seconds) is signed again before it is handed out: a minute inside the relay's window.
    public static let signAgainAfterSeconds: UInt64 = RelayAPI.signatureWindowSeconds - 60

    /// The requests to send now, oldest first — each signed again first when its signed time
    /// is older than ``signAgainAfterSeconds`` or the relay refused its time. An upload whose fix
    /// a newer acknowledged upload replaced, or a reseal with nothing left to seal, leaves the
    /// outbox instead (``OutboxManagerReconcileMessage/dropped(id:kind:reason:)``); one that
    /// cannot be signed now (no identity, no server) is scheduled like a failed attempt.
    /// - Parameters:
    ///   - now: the time to judge by (ms since the epoch); nil: the app's clock.
    ///   - ignoringBackoff: hand out entries still backing off from a failure too (a person
    ///     asked now, e.g. a CLI command); a long-running host leaves it false.
    /// - Returns: the entries, with the request to send in `item.request`.
    /// - Throws: store errors.
    public func due(now: UInt64? = nil, ignoringBackoff: Bool = false) async throws -> [OutboxEntry] {
        let now = now ?? context.clock.now()
        var due: [OutboxEntry] = []
        for var entry in try pending() where ignoringBackoff || entry.item.nextAttemptAt <= now {
            guard entry.item.kind.isTimeSigned, needsSignature(entry.item, now: now) else {
                due.append(entry)
                continue
            }
            do {
                guard let (fresh, reference) = try await signAgain(entry.item) else {
                    let owed = entry.item.reference == FriendsManager.ShareChange.reference
                    try drop(
                        entry.id, kind: entry.item.kind,
                        reason: owed ? "the last upload already reaches exactly the friends shared with now" : "a newer upload replaced it")
                    continue
                }
                entry.item.request = fresh
                entry.item.needsSignature = nil
                if let reference { entry.item.reference = reference }
                try replaceRequest(id: entry.id, with: fresh, reference: reference)
                due.append(entry)
            } catch let error as StoreError {
                throw error
            } catch is OutboxUnsignable {
                try drop(entry.id, kind: entry.item.kind, reason: "its signature is too old and it was queued without its fix (use queueUpload)")
            } catch {
                // Not signable now (no identity or server yet): the entry waits like a failed attempt.
                try markFailed(id: entry.id, error: "could not sign it again: \(error)")
            }
        }
        return due
    }

    /// Takes the relay's answer to the request of entry `id` and decides:
    /// - 2xx, or 409 to an envelope (the relay already has it): delivered. The entry leaves the
    ///   outbox and, in the same transaction, an upload or reseal is recorded as acknowledged
    ///   (``LocationManager/markUploadSucceeded(fixTimestamp:)``), a message is marked sent, a
    ///   rotation statement leaves the rotation's pending list; after a rotation the next
    ///   statements of a chain are queued (due at once).
    /// - `status` 0 (no answer: connection refused, timeout, TLS failure), 408, 425, 429 or 5xx:
    ///   retry after the backoff (1 s → 60 s, up to 20 % jitter).
    /// - 401 about the timestamp to a time-signed request: signed again, then retried.
    /// - any other status: dropped, with the relay's reason.
    /// - Parameters:
    ///   - id: the entry's id from ``due(now:ignoringBackoff:)``.
    ///   - status: the HTTP status, or 0 when no answer came.
    ///   - body: the answer's body (at most what the host read; only error bodies are read), or
    ///     for status 0 a UTF-8 description of the failure.
    /// - Returns: what was decided and recorded.
    /// - Throws: store and keychain errors (the decision is then not recorded; report again).
    @discardableResult
    public func report(id: UInt64, status: Int, body: [UInt8] = []) async throws -> OutboxReport {
        guard let item = try context.database.read({ tx in try tx.open(Tables.outbox).get(id) }) else {
            return OutboxReport(id: id, kind: nil, decision: .unknown)
        }
        let kind = item.kind
        if (200..<300).contains(status) || (kind.isEnvelope && status == 409) {
            try deliver(id: id)
            return OutboxReport(id: id, kind: kind, decision: .delivered)
        }
        let reason = Self.reason(status: status, body: body)
        if kind.isUploadOfFix, let fix = item.reference.flatMap(UInt64.init) {
            await location.markUploadFailed(fixTimestamp: fix, reason: reason)
        }
        if Self.isTransient(status) {
            let at = try markFailed(id: id, error: reason)
            return OutboxReport(id: id, kind: kind, decision: .retry(at: at, reason: reason))
        }
        if kind.isTimeSigned, status == 401, Self.isAboutTime(status: status, body: body),
            item.timeRefusals ?? 0 < Self.signAgainLimit
        {
            let at = try markFailed(id: id, error: reason, needsSignature: true)
            return OutboxReport(id: id, kind: kind, decision: .signAgain(at: at, reason: reason))
        }
        try drop(id, kind: kind, reason: reason)
        return OutboxReport(id: id, kind: kind, decision: .dropped(reason: reason))
    }

    /// Seals and signs an upload of `fix` (``LocationManager/prepareUpload(_:)``) and queues it
    /// with its fix, so the outbox can sign it again when it grows stale.
    /// - Returns: the upload and its outbox id; send it through ``due(now:ignoringBackoff:)`` or
    ///   at once, then ``report(id:status:body:)``.
    /// - Throws: the errors of ``LocationManager/prepareUpload(_:)``, store errors.
    public func queueUpload(_ fix: Location) async throws -> (upload: PreparedUpload, id: UInt64) {
        // Sealed, recorded and queued in one transaction.
        let prepared = try await location.prepareUpload(fix, queueing: true)
        // Queueing always names the entry; were it ever missing, that is the core's fault, not the host's.
        guard let id = prepared.id else { throw InternalError(OutboxError.entryNotQueued) }
        reconciler.send(.queued(id: id, kind: .upload))
        return (prepared.upload, id)
    }

    /// After a friend was added (``FriendsManager/add(id:server:name:shareWith:fetchFrom:)`` calls
    /// it): the last sealed fix sealed again for every friend shared with now and queued (kind
    /// `reseal`), when one of them could not open the last blob — or nil when nothing was sealed
    /// yet or everyone could.
    /// - Returns: the upload and its outbox id; send it through ``due(now:ignoringBackoff:)`` or
    ///   at once, then ``report(id:status:body:)``.
    /// - Throws: the errors of ``LocationManager/prepareShareWithNewFriends()``, store errors.
    public func queueShareWithNewFriends() async throws -> (upload: PreparedUpload, id: UInt64)? {
        guard let upload = try await location.prepareShareWithNewFriends() else { return nil }
        let id = try enqueue(kind: .reseal, request: upload.request, reference: String(upload.fixTimestamp))
        return (upload, id)
    }

    /// When to call ``due(now:ignoringBackoff:)`` next (ms since the epoch; at or before now
    /// when something is due already), or nil when the outbox is empty. (The push
    /// registration's renewal is the app's: ``CoordsApp/outboxNextWake()``.)
    /// - Throws: store errors.
    public nonisolated func nextWake() throws -> UInt64? {
        try context.database.read { tx in try tx.open(Tables.outbox).entries().map(\.value.nextAttemptAt).min() }
    }

    /// The reference of the outbox entry that renews the push registration.
    static let pushRenewalReference = "push-renewal"

    // MARK: Rules

    /// How many times in a row a request is signed again after the relay refused its time,
    /// before a refusal drops it (a clock that is far off does not loop forever).
    public static let signAgainLimit: UInt32 = 3

    /// Statuses worth retrying unchanged: no answer (0), 408, 425, 429 and 5xx.
    static func isTransient(_ status: Int) -> Bool {
        status == 0 || status == 408 || status == 425 || status == 429 || (500..<600).contains(status)
    }

    /// Whether a 401 is about the signed time (our relay's codes; any message naming the timestamp).
    static func isAboutTime(status: Int, body: [UInt8]) -> Bool {
        guard case .relayError(_, let code, let message) = RelayAPI.error(status: status, body: body) else { return false }
        return code == "timestamp_too_old" || code == "timestamp_in_future" || code == "timestamp_out_of_window"
            || message.contains("timestamp")
    }

    /// The failure in one line: the transport's description for status 0, else the relay's error.
    static func reason(status: Int, body: [UInt8]) -> String {
        guard status != 0 else {
            let text = RelayAPI.sanitize(String(decoding: body.prefix(500), as: UTF8.self))
            return text.isEmpty ? "no answer from the relay" : text
        }
        return "\(RelayAPI.error(status: status, body: body))"
    }

    /// The signed time (Unix seconds) in a time-signed request's JSON body, or nil.
    static func signedAt(_ request: PreparedRequest) -> UInt64? {
        (try? JSONValue.parse(request.body))?.objectValue?["timestamp"]?.uint64Value  // a body without one is signed again
    }

    private func needsSignature(_ item: OutboxItem, now: UInt64) -> Bool {
        guard item.needsSignature != true, let signed = Self.signedAt(item.request) else { return true }
        return now / 1000 > signed.addingSaturating(Self.signAgainAfterSeconds)
    }

    /// A freshly signed request for a time-signed entry (and, for a reseal, the fix it now
    /// carries), or nil when it is no longer needed. A reseal a change of sharing owed
    /// (`FriendsManager.ShareChange`) is sealed here for the first time, for the friends shared with now.
    private func signAgain(_ item: OutboxItem) async throws -> (PreparedRequest, reference: String?)? {
        switch item.kind {
        case .upload:
            // An upload queued through the C ABI has no fix to seal again; its old signature is all there is.
            guard let fix = item.location else { throw OutboxUnsignable() }
            do {
                return (try await location.prepareUpload(fix).request, nil)
            } catch WireError.staleLocation {
                return nil
            }
        case .reseal:
            let owed = item.reference == FriendsManager.ShareChange.reference
            guard let upload = try await (owed ? location.prepareOwedReseal() : location.prepareReseal(force: true)) else { return nil }
            return (upload.request, String(upload.fixTimestamp))
        case .delete: return (try await location.prepareDelete(), nil)
        case .message, .receipt, .rotation, .groupMessage, .request: return (item.request, nil)
        }
    }

    /// Removes entry `id` as delivered and records its follow-up in the same transaction.
    func deliver(id: UInt64) throws {
        let now = context.clock.now()
        let uploads = context.uploadStates
        let written = try reconciler.write(context.database, keychain: context.keychain) { tx, effects -> (state: UploadState, stamp: UInt64)? in
            guard let item = try tx.open(Tables.outbox).remove(id) else { return nil }
            effects.updates.append(.outbox(.delivered(id: id, kind: item.kind)))
            switch item.kind {
            case .upload, .reseal:
                // A fix the store no longer lists as pending (an older upload acknowledged after a
                // newer one) has nothing to record.
                if let fix = item.reference.flatMap(UInt64.init),
                    let written = try LocationManager.recordUploadSucceeded(fixTimestamp: fix, now: now, tx, uploads: uploads)
                {
                    effects.updates.append(.location(.uploadSucceeded(fixTimestamp: fix)))
                    return written
                }
            case .message, .groupMessage:
                if let message = item.reference, try MessageStore.markSent(message, tx) {
                    effects.updates.append(.messages(.messageSent(id: message)))
                }
            case .rotation:
                effects.wipe += try Self.recordRotationDelivered(item, tx)
            case .delete, .receipt, .request:
                break
            }
            return nil
        }
        if let written { uploads.committed(written.state, stamp: written.stamp) }
    }

    /// Removes entry `id` undelivered, telling the host why.
    private func drop(_ id: UInt64, kind: OutboxKind, reason: String) throws {
        try reconciler.write(context.database) { tx, messages in
            guard try tx.open(Tables.outbox).delete(id) else { return }
            messages.append(.dropped(id: id, kind: kind, reason: reason))
        }
    }
}

/// An upload queued without its fix (``OutboxManager/enqueue(kind:request:reference:location:)``
/// with no location) cannot be sealed and signed again.
struct OutboxUnsignable: Error {}

extension OutboxKind {
    /// Whether the entry's reference is the timestamp of the fix it uploads.
    var isUploadOfFix: Bool { self == .upload || self == .reseal }
}

/// Failures of the outbox's own bookkeeping (reported as ``InternalError``).
enum OutboxError: Error, CustomStringConvertible {
    /// An upload queued in the transaction that sealed it came back without its entry.
    case entryNotQueued

    var description: String { "the upload was sealed but its outbox entry is missing" }
}
