/// A conversation as hosts list it.
public struct Conversation: Sendable, Equatable {
    /// The friend (base64url public key).
    public var friendID: String
    /// The friend's display name.
    public var name: String
    /// The newest message, or nil when there is none.
    public var lastMessage: MessageRecord?
    /// How many messages the store keeps for this friend.
    public var messageCount: Int
    /// Local copies disappear this many seconds after they were stored; nil keeps them.
    public var disappearAfterSeconds: UInt64?
}

/// A message sealed and queued for sending.
public struct SentMessage: Sendable, Equatable {
    /// The message as stored (status ``MessageStatus/queued``).
    public var message: MessageRecord
    /// `POST <friend's relay>/v1/relay/messages`: send it now, or let the outbox retry it.
    public var request: PreparedRequest
    /// Its outbox entry (kind `message`; reference = message id).
    public var outboxID: UInt64
}

/// An envelope the reader refused, and why.
public struct MessageRejection: Sendable, Equatable {
    /// The envelope id as the mailbox listed it (empty when the entry had none).
    public var id: String
    /// The failure's stable code (as at the C ABI).
    public var code: Int32
    /// Why, in words.
    public var reason: String
}

/// What processing one mailbox response did.
public struct MessagesOutcome: Sendable, Equatable {
    /// New messages stored (texts, and unknown kinds).
    public var received: [MessageRecord] = []
    /// Ids of our messages the friend confirmed (receipts).
    public var delivered: [String] = []
    /// Envelopes already processed (the relay had not seen our ack yet).
    public var duplicates: [String] = []
    /// Envelopes refused: unknown or blocked sender, forged, tampered, expired, malformed.
    public var rejected: [MessageRejection] = []
    /// Acks to send to our relay, one per envelope — prepared after everything was stored, so
    /// nothing is acknowledged that was not kept.
    public var acks: [PreparedRequest] = []
    /// Receipts for the texts received, queued in the outbox (send them now or let it retry).
    public var receipts: [OutboxEntry] = []
    /// Friends (their old ids) whose rotation statement was applied or found in conflict (§9):
    /// their records changed, and a share may have ended (call ``LocationManager/prepareReseal(force:)``).
    public var rotated: [String] = []
    /// Friends (their current ids) a rotation put in conflict (§9.2): tell the user, once.
    public var conflicts: [String] = []
    /// Friends whose forward-secret session was reset (§10.8): messages may have been lost; the
    /// new session is as protected as before. Tell the user.
    public var resets: [String] = []
    /// Session messages that no kept session opens (our state was lost): a reset was sent to
    /// these friends in a new session when their bundle allowed it (§10.8).
    public var broken: [String] = []
    /// Group messages (envelope ids) whose sender key has not arrived yet (§11.6): held on this
    /// device (bounded per sender and in time), acknowledged on the relay so they never block the
    /// mailbox, and opened when the key comes. One dropped from the held set is in ``rejected``.
    public var waiting: [String] = []
    /// The answer held as many envelopes as a fetch asks for (``MessagesManager/fetchLimit``), all
    /// of them distinct and new: more may be waiting on the relay. Send the acks, then fetch again
    /// at once. (An answer that repeats an id or brings one already kept is a relay that does not
    /// forget: fetching again would bring the same.)
    public var more = false
    /// Envelopes the group rules queued (sender keys for members who joined or after a removal,
    /// §11.4) and the reseal of a shared group whose members changed (§11.7): send them now or let
    /// the outbox retry them.
    public var groupQueued: [OutboxEntry] = []

    /// An empty outcome.
    public init() {}

    /// Adds what a later answer of the same sync brought (``more`` is the later answer's).
    public mutating func merge(_ later: MessagesOutcome) {
        received += later.received
        delivered += later.delivered
        duplicates += later.duplicates
        rejected += later.rejected
        acks += later.acks
        receipts += later.receipts
        rotated += later.rotated
        conflicts += later.conflicts
        resets += later.resets
        broken += later.broken
        waiting += later.waiting
        groupQueued += later.groupQueued
        more = later.more
    }
}

/// What the messages manager tells the host, after the fact.
public enum MessagesManagerReconcileMessage: Sendable, Equatable, ReconcileMessage {
    /// The manager's name in its log lines and in the C ABI's update records (`"manager"`).
    public static let manager = "messages"

    /// A message was sealed and queued in the outbox.
    case messageQueued(MessageRecord)
    /// The friend's relay accepted the message with this id.
    case messageSent(id: String)
    /// New messages were stored (texts, and kinds this build does not know).
    case messagesReceived([MessageRecord])
    /// The friend's app confirmed the message with this id (a receipt).
    case messageDelivered(id: String)
    /// An envelope was refused: its id, the failure's code and why.
    case messageRejected(id: String, code: Int32, message: String)
    /// Disappearing messages with these ids were deleted.
    case messagesExpired(ids: [String])
    /// A friend's disappearing-messages setting changed (nil: messages are kept).
    case disappearingChanged(friendID: String, seconds: UInt64?)
    /// A friend rotated their key (PROTOCOL.md §9.1): their record moved from `from` to `to`.
    case friendRotated(from: String, to: String, name: String)
    /// Two different rotations of one friend's key arrived (§9.2): sharing with them is paused.
    case friendConflict(id: String, name: String)
    /// A friend's forward-secret session was reset (§10.8): messages may have been lost.
    case sessionReset(friendID: String, name: String)
    /// A dispatched action failed: the failure's stable code (``InternalError``, 199, for an error from outside CoordsCore) and its description.
    case errorOccurred(code: Int32, message: String)
}

/// Errors of messaging. Codes 630–639, stable.
public enum MessagesManagerError: CoordsCoreError, Equatable {
    /// The friend is blocked: nothing is sent to or accepted from them.
    case friendBlocked(id: String)
    /// The text is longer than an envelope carries.
    case messageTooLong(bytes: Int, maximum: Int)
    /// The mailbox response is not `{"packets": [...]}`.
    case invalidMailboxResponse(String)
    /// The push endpoint is not an `https://` URL of at most 1,024 printable ASCII bytes
    /// (`http://` only for a loopback host, for tests).
    case invalidPushEndpoint(String)
    /// Quiet hours that cannot be kept: a time outside 00:00–23:59, an empty window, or an offset
    /// from UTC beyond 14 hours.
    case invalidQuietHours(String)
    /// A conversation to mute is neither a friend's id nor a known group's id.
    case unknownConversation(String)
    /// No stored message has this id (or its disappearing timer ran out).
    case unknownMessage(String)
    /// The message carries no attachment that can be fetched: not a file message, a malformed
    /// one, past its `expiresAt`, or an upload that has not finished.
    case noAttachment(String)

    public var code: Int32 {
        switch self {
        case .friendBlocked: 630
        case .messageTooLong: 631
        case .invalidMailboxResponse: 632
        case .invalidPushEndpoint: 633
        case .invalidQuietHours: 634
        case .unknownConversation: 635
        case .unknownMessage: 636
        case .noAttachment: 637
        }
    }

    public var description: String {
        switch self {
        case .friendBlocked(let id): "friend \(id.prefix(12))… is blocked; unblock them (verify --reset) to exchange messages"
        case .messageTooLong(let bytes, let maximum): "the message is \(bytes) bytes; at most \(maximum) fit in one envelope"
        case .invalidMailboxResponse(let why): "the relay's mailbox response is not valid: \(why)"
        case .invalidPushEndpoint(let why): "the push endpoint is not usable: \(why)"
        case .invalidQuietHours(let why): "invalid quiet hours: \(why)"
        case .unknownConversation(let id): "\"\(id.prefix(44))\" is neither a friend nor a group of yours"
        case .unknownMessage(let id): "no message \"\(id.prefix(40))\" is stored (or it disappeared)"
        case .noAttachment(let why): "no attachment to fetch: \(why)"
        }
    }
}

/// Sealed 1:1 messages through the relay (PROTOCOL.md §7).
///
/// - ``send(_:to:)`` seals a text for a friend, stores it, and queues the POST in the outbox
///   (retried with backoff 1 s → 60 s until the relay takes it; nothing lost across restarts).
/// - ``prepareFetch()`` signs a GET of our own mailbox; ``processFetchResponse(_:)`` verifies each
///   envelope with the friend's key, opens it, de-duplicates by id, stores it, and only then
///   prepares the ack. Texts get a delivery receipt back; receipts mark our messages delivered.
/// - Conversations can have disappearing messages: local copies are deleted after a per-friend
///   timer (``setDisappearing(friendID:after:)``, applied by ``sweepExpired()``).
public actor MessagesManager {
    /// How long envelopes live on the relay (the relay's default maximum, 24 h).
    public static let envelopeLifetimeSeconds: UInt64 = SessionsManager.envelopeLifetimeSeconds
    /// Largest text (UTF-8 bytes) a message carries.
    public static let maximumTextBytes = 64 * 1024
    /// Envelopes asked for per fetch. An answer with more packets is refused whole
    /// (``MessagesManagerError/invalidMailboxResponse(_:)``): a relay cannot make the core sign
    /// more acks than it asked for.
    public static let fetchLimit = ClientLimits.mailboxPackets
    /// How far ahead of the clock a mailbox signature's timestamp may run (seconds, PROTOCOL.md
    /// §7.3): signatures in one second take successive timestamps, but never more than this
    /// ahead, so nothing a relay answers can move the counter out of other relays' ±300 s window.
    public static let maximumSignatureLead: UInt64 = SignedTime.maximumLead

    /// Reconcile messages, after the change they describe was committed.
    public nonisolated var updates: Receiver<MessagesManagerReconcileMessage> { reconciler.updates }

    // MARK: Send

    /// Seals `text` for a friend, stores it (status `queued`), and queues the request.
    /// - Throws: ``FriendsManagerError/notFound(id:)``, ``MessagesManagerError/friendBlocked(id:)``,
    ///   ``MessagesManagerError/messageTooLong(bytes:maximum:)``, ``WalletManagerError/noIdentity``,
    ///   ``WireError/invalidServerURL(_:)``, store and crypto errors.
    public func send(_ text: String, to friendID: String) async throws -> SentMessage {
        guard text.utf8.count <= Self.maximumTextBytes else {
            throw MessagesManagerError.messageTooLong(bytes: text.utf8.count, maximum: Self.maximumTextBytes)
        }
        let id = try Envelope.newUUID(using: context.random)
        return try await queue(MessagePayload(kind: "text", id: id, text: text, sentAt: context.clock.now()), to: friendID)
    }

    /// Seals `payload` for a friend, stores it (status `queued`, with the conversation's
    /// disappearing timer) and queues the request.
    func queue(_ payload: MessagePayload, to friendID: String) async throws -> SentMessage {
        // Sealed in the transaction that stores it: a session advances only with the message it sent (§10.10).
        let (stored, request) = try reconciler.write(context.database) { tx, messages -> (MessageRecord, PreparedRequest) in
            var (message, request) = try seal(tx, payload, to: friendID)
            message.disappearsAt = try Self.disappearance(tx, peer: message.peer, storedAt: message.storedAt)
            try Self.store(message, tx)
            messages.append(.messageQueued(message))
            return (message, request)
        }
        let outboxID = try await outbox.enqueue(kind: .message, request: request, reference: payload.id)
        return SentMessage(message: stored, request: request, outboxID: outboxID)
    }

    /// Seals one payload for a friend in `tx`: the stored record and the POST to their relay. A
    /// friend who announced forward secrecy gets a session message (§10.7), never version 2.
    nonisolated func seal(
        _ tx: borrowing WriteTransaction, _ payload: MessagePayload, to friendID: String
    ) throws -> (MessageRecord, PreparedRequest) {
        let now = payload.sentAt
        let request = try SessionsManager.sealEnvelope(
            tx, payload: payload, to: try Ed25519PublicKey(base64URL: friendID), identity: try context.identity.get(), now: now,
            random: context.random)
        let record = MessageRecord(
            id: payload.id, peer: friendID, outgoing: true, kind: payload.kind, text: payload.text, sentAt: now, storedAt: now,
            status: .queued, disappearsAt: nil, file: try? FileAttachment(payload: payload))  // nil for every kind but `file`
        return (record, request)
    }

    /// Records that the relay took a message (202, or 409 because it already had it) and removes
    /// its outbox entry.
    /// - Throws: store errors (an unknown id is not an error).
    public func markSent(id: String) async throws {
        let id = id.lowercased()
        try reconciler.write(context.database) { tx, messages in
            guard try MessageStore.update(id, tx, { if $0.status == .queued { $0.status = .sent } }) else { return }
            messages.append(.messageSent(id: id))
        }
        for entry in try outbox.pending() where entry.item.reference == id && (entry.item.kind == .message || entry.item.kind == .receipt) {
            try await outbox.markDelivered(id: entry.id)
        }
    }

    // MARK: Fetch

    /// A signed `GET <own relay>/v1/relay/messages?recipientID=…&limit=100` (§7.3). Sign a fresh
    /// one for every attempt: the relay accepts each signature once.
    /// - Throws: ``WalletManagerError/noIdentity``, ``WalletManagerError/noServer``.
    public nonisolated func prepareFetch() throws -> PreparedRequest {
        let identity = try context.identity.get()
        let path = "/v1/relay/messages?recipientID=\(PeerID(identity.publicKey).hex)&limit=\(Self.fetchLimit)"
        return try signedRequest(method: "GET", path: path, identity: identity)
    }

    // MARK: Push (§8.7)

    /// A signed `PUT <own relay>/v1/relay/push` registering `endpoint` (the URL the phone's
    /// UnifiedPush distributor gave the app) for our mailbox, so the relay wakes the app when an
    /// envelope arrives. Call it again whenever the distributor hands out a new endpoint. The
    /// relay answers 200 `{"endpoint", "expiresAt"}`, 400 `endpoint_refused` (not https, or not a
    /// public address), or 404 when it has no push (keep polling).
    ///
    /// The core remembers the endpoint and renews the registration itself, silently: at
    /// ``pushRenewalAt()`` (a day later, or half the `ttlSeconds` when that is shorter)
    /// ``OutboxManager/due(now:ignoringBackoff:)`` queues a fresh registration, and
    /// ``OutboxManager/nextWake()`` includes that time, so a host that sleeps until the outbox's
    /// next wake renews on time. A 400 or 404 to a renewal ends it.
    /// - Parameters:
    ///   - endpoint: an `https://` URL; `http://` is accepted here only for a loopback host
    ///     (127.0.0.1, [::1], localhost), for tests against a relay run with `--push-allow-loopback`.
    ///   - ttlSeconds: how long the registration lives (the relay's default, 7 days, when nil).
    /// - Throws: ``MessagesManagerError/invalidPushEndpoint(_:)``, ``WalletManagerError/noIdentity``,
    ///   ``WalletManagerError/noServer``.
    public nonisolated func preparePushRegistration(endpoint: String, ttlSeconds: UInt64? = nil) throws -> PreparedRequest {
        try Self.checkPushEndpoint(endpoint)
        var fields: [(String, JSONValue)] = [("endpoint", .string(endpoint))]
        if let ttlSeconds { fields.append(("ttl", .number(String(ttlSeconds)))) }
        var request = try signedRequest(method: "PUT", path: "/v1/relay/push", identity: try context.identity.get())
        request.headers.append(.init(name: "Content-Type", value: "application/json"))
        request.body = JSONValue.object(JSONObject(fields)).serialized()
        let renewAt = context.clock.now().addingSaturating(Self.pushRenewalInterval(ttlSeconds: ttlSeconds))
        try context.database.write { tx in
            let settings = try tx.open(Tables.settings)
            try settings.put(SettingKey.pushEndpoint, endpoint)
            if let ttlSeconds { try settings.put(SettingKey.pushTTLSeconds, ttlSeconds) } else { _ = try settings.delete(SettingKey.pushTTLSeconds.name) }
            try settings.put(SettingKey.pushRenewAt, renewAt)
        }
        return request
    }

    /// How long after a registration it is renewed (ms): a day, or half its lifetime when that
    /// is shorter (at least a minute).
    static func pushRenewalInterval(ttlSeconds: UInt64?) -> UInt64 {
        let day: UInt64 = 86_400_000
        guard let ttlSeconds else { return day }
        return max(60_000, min(day, ttlSeconds.multipliedSaturating(by: 500)))
    }

    /// When the core registers the push endpoint again (ms since the epoch), or nil when no
    /// endpoint is registered (see ``preparePushRegistration(endpoint:ttlSeconds:)``).
    /// - Throws: store errors.
    public nonisolated func pushRenewalAt() throws -> UInt64? {
        try context.database.read { tx in
            let settings = try tx.open(Tables.settings)
            return try settings.get(SettingKey.pushEndpoint) == nil ? nil : try settings.get(SettingKey.pushRenewAt)
        }
    }

    /// The renewal of the push registration when it is due at `now` (the next one is then
    /// scheduled), else nil. Used by the outbox.
    nonisolated func duePushRenewal(now: UInt64) throws -> PreparedRequest? {
        let due = try context.database.read { tx -> (String, UInt64?)? in
            let settings = try tx.open(Tables.settings)
            guard let endpoint = try settings.get(SettingKey.pushEndpoint), let at = try settings.get(SettingKey.pushRenewAt), at <= now else {
                return nil
            }
            return (endpoint, try settings.get(SettingKey.pushTTLSeconds))
        }
        guard let (endpoint, ttl) = due else { return nil }
        return try preparePushRegistration(endpoint: endpoint, ttlSeconds: ttl)
    }

    /// Forgets the push endpoint: no more renewals.
    nonisolated func forgetPushRegistration() throws {
        try context.database.write { tx in
            let settings = try tx.open(Tables.settings)
            _ = try settings.delete(SettingKey.pushEndpoint.name)
            _ = try settings.delete(SettingKey.pushTTLSeconds.name)
            _ = try settings.delete(SettingKey.pushRenewAt.name)
        }
    }

    /// A signed `DELETE <own relay>/v1/relay/push`: the relay stops waking this mailbox
    /// (200 `{"deleted": bool}`).
    /// - Throws: ``WalletManagerError/noIdentity``, ``WalletManagerError/noServer``.
    public nonisolated func preparePushUnregistration() throws -> PreparedRequest {
        let request = try signedRequest(method: "DELETE", path: "/v1/relay/push", identity: try context.identity.get())
        try forgetPushRegistration()
        return request
    }

    static func checkPushEndpoint(_ endpoint: String) throws {
        let bytes = Array(endpoint.utf8)
        guard !bytes.isEmpty, bytes.count <= 1024, bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw MessagesManagerError.invalidPushEndpoint("it must be 1…1024 printable ASCII bytes without spaces")
        }
        let lower = endpoint.lowercased()
        if lower.hasPrefix("https://"), lower.count > 8 { return }
        for host in ["http://127.0.0.1", "http://localhost", "http://[::1]"] where lower.hasPrefix(host) {
            let rest = lower.dropFirst(host.count)
            if rest.isEmpty || rest.hasPrefix(":") || rest.hasPrefix("/") { return }
        }
        throw MessagesManagerError.invalidPushEndpoint("it must be an https:// URL")
    }

    /// The timestamp (Unix seconds) of the next mailbox signature: later than the last one signed
    /// (kept in the store, so also across processes), so two requests or live proofs in the same
    /// second never carry the same signature, which the relay would refuse as a replay — but at
    /// most ``maximumSignatureLead`` ahead of the clock (a counter found further ahead, by a burst
    /// or a clock that went back, is pulled back to that lead).
    nonisolated func nextSignedTimestamp() throws -> UInt64 {
        try nextSignedTimestamps(1)[0]
    }

    /// `count` (≥ 1) successive signature timestamps taken in one transaction (a fetch's acks).
    nonisolated func nextSignedTimestamps(_ count: Int) throws -> [UInt64] {
        let now = context.clock.now() / 1000
        return try context.database.write { tx in
            let settings = try tx.open(Tables.settings)
            var last = try settings.get(SettingKey.mailboxLastSignedTimestamp)
            var taken: [UInt64] = []
            for _ in 0..<max(1, count) {
                let next = SignedTime.next(after: last, now: now)
                taken.append(next)
                last = next
            }
            try settings.put(SettingKey.mailboxLastSignedTimestamp, taken[taken.count - 1])
            return taken
        }
    }

    private nonisolated func signedRequest(method: String, path: String, identity: Identity) throws -> PreparedRequest {
        try signedRequests(method: method, paths: [path], identity: identity)[0]
    }

    /// Signed requests for `paths` (at least one), their timestamps taken in one transaction.
    private nonisolated func signedRequests(method: String, paths: [String], identity: Identity) throws -> [PreparedRequest] {
        guard let server = try context.database.read({ tx in try tx.open(Tables.settings).get(SettingKey.server) }), !server.isEmpty else {
            throw WalletManagerError.noServer
        }
        let timestamps = try nextSignedTimestamps(paths.count)
        let signer = identity.signing
        let signed = zip(paths, timestamps).map { path, timestamp in
            MailboxAuth.headers(signer: signer, method: method, path: path, timestamp: timestamp)
        }
        return try zip(paths, signed).map { path, headers in
            PreparedRequest(
                url: try RelayAPI.endpoint(server: server, path: path), method: method,
                headers: ["X-Coords-Key", "X-Coords-Timestamp", "X-Coords-Signature"].map { .init(name: $0, value: headers[$0] ?? "") })
        }
    }

    /// Processes the relay's `{"packets": [...]}` through the inbox (Inbox.swift): each envelope
    /// classified once (text, file, receipt, rotation, session reset, group statement, sender key,
    /// group message, refused, unknown kind) and handed to its owner, in one transaction; then one
    /// ack per distinct envelope id is signed and receipts and session resets are queued. Refused envelopes are acknowledged too (they can never become valid) and reported.
    /// - Throws: ``MessagesManagerError/invalidMailboxResponse(_:)`` (not that shape, or more than
    ///   ``fetchLimit`` packets: nothing is stored and nothing signed), ``WalletManagerError/noIdentity``,
    ///   store errors. Individual bad envelopes never throw: they are in ``MessagesOutcome/rejected``.
    public func processFetchResponse(_ body: [UInt8]) async throws -> MessagesOutcome {
        let identity = try context.identity.get()
        guard let packets = (try? JSONValue.parse(body))?.objectValue?["packets"]?.arrayValue else {
            throw MessagesManagerError.invalidMailboxResponse("expected {\"packets\": [...]}")
        }
        guard packets.count <= Self.fetchLimit else {
            throw MessagesManagerError.invalidMailboxResponse("\(packets.count) packets, more than the \(Self.fetchLimit) asked for")
        }
        let now = context.clock.now()
        // The group messages' signatures are checked ahead, in one batch; the inbox opens them in order.
        let parsed = packets.map { try? Envelope(json: $0) }  // nil: parsed again by the inbox, for the reason it is refused
        let memo = try context.database.read { tx in try GroupsManager.signatureMemo(parsed, tx) }
        // One transaction: each packet classified once and handed to its owner (Inbox.swift); the
        // pass is made inside the body, so a body that runs again starts from nothing.
        let pass = try reconciler.write(context.database, keychain: context.keychain) { tx, effects in
            var pass = try InboxPass(tx, identity: identity, now: now, random: context.random, memo: memo)
            for (packet, envelope) in zip(packets, parsed) { try pass.take(packet, parsed: envelope, tx) }
            try pass.finish(tx)
            effects.updates = pass.updates
            return pass
        }
        var outcome = pass.outcome
        outcome.groupQueued = try await groups.finish(queued: pass.groupQueued, reseal: pass.groupReseal)
        // Our state for these sessions is lost: end them and tell each friend in a new session (§10.8).
        try await resetSessions(with: Set(pass.brokenFriends))
        // A full answer of envelopes all distinct and new may leave more on the relay. One that repeats
        // an id, or brings one already kept, is a relay that does not forget: asking again would bring the same.
        outcome.more = packets.count >= Self.fetchLimit && pass.ackIDs.count == packets.count && outcome.duplicates.isEmpty
        // Committed: now it is safe to tell the relay to forget them.
        if !pass.ackIDs.isEmpty {
            outcome.acks = try signedRequests(method: "POST", paths: pass.ackIDs.map { "/v1/relay/messages/\($0)/ack" }, identity: identity)
        }
        for (friendID, messageID) in pass.receiptsFor {
            let receiptID = try Envelope.newUUID(using: context.random)
            guard
                // A receipt is a courtesy: one that cannot be sealed (the friend was removed or blocked meanwhile) is not sent.
                let request = try? context.database.write({ tx in
                    try seal(tx, MessagePayload(kind: "receipt", id: receiptID, text: "", sentAt: context.clock.now(), ack: messageID), to: friendID).1
                })
            else { continue }
            let outboxID = try await outbox.enqueue(kind: .receipt, request: request, reference: messageID)
            if let entry = try outbox.pending().first(where: { $0.id == outboxID }) { outcome.receipts.append(entry) }
        }
        return outcome
    }

    /// Ends the sessions with `friends` (a message no kept session opens: our state was lost) and
    /// queues each a `session-reset` in a new session (§10.8). Without a valid bundle for a friend
    /// the reset waits: the next message to them makes the new session.
    private func resetSessions(with friends: Set<String>) async throws {
        for friendID in friends {
            let friend = try Ed25519PublicKey(base64URL: friendID)
            try context.database.write { tx in try SessionsManager.endSessions(tx, friend: friend) }
            let resetID = try Envelope.newUUID(using: context.random)
            // No valid bundle (or the friend went away meanwhile): nothing to send now, see above.
            let request = try? context.database.write { tx in
                try seal(tx, MessagePayload(kind: "session-reset", id: resetID, text: "", sentAt: context.clock.now()), to: friendID).1
            }
            if let request { _ = try await outbox.enqueue(kind: .message, request: request, reference: resetID) }
        }
    }

    // MARK: Rotations (PROTOCOL.md §9)

    /// Applies a friend's rotation statement inside the fetch's transaction; nil when it was
    /// applied (or was a replay), else why it was refused. The first valid statement for a key
    /// moves the friend to the new key in place; a different one for a key already rotated puts
    /// the friend in conflict.
    static func processRotation(
        _ payload: MessagePayload, sender: Ed25519PublicKey, _ tx: borrowing WriteTransaction, _ messages: inout [MessagesManagerReconcileMessage],
        _ byPeerID: inout [String: (key: Ed25519PublicKey, record: FriendRecord)], conflicts: inout [String], now: UInt64
    ) throws -> WireError? {
        let statement: RotationStatement
        do {
            guard let json = payload.rotation else { throw WireError.invalidRotation("the payload has no rotation statement") }
            statement = try RotationStatement(json: json)
            guard statement.old == sender else { throw WireError.invalidRotation("the statement is not for the sender's key") }
            try statement.verify()
        } catch let error as WireError {
            return error
        }
        let friends = try tx.open(Tables.friends)
        let retired = try tx.open(Tables.retiredKeys)
        let newID = statement.new.base64URL
        if var known = try retired.get(statement.old) {
            if known.successor == newID { return nil }  // the same rotation again
            // A second, different rotation of one key: keep neither silently.
            guard let current = try? Ed25519PublicKey(base64URL: known.successor), var record = try friends.get(current) else {
                return WireError.retiredKey(id: statement.old.base64URL)
            }
            var candidates = record.conflict ?? [RotationCandidate(key: known.successor, server: record.server)]
            if !candidates.contains(where: { $0.key == newID }) { candidates.append(RotationCandidate(key: newID, server: statement.server)) }
            record.conflict = candidates
            record.trust = .conflict
            try friends.put(current, record)
            byPeerID[PeerID(current).hex] = (current, record)
            if statement.revokes, !known.revoked {
                known.revoked = true
                try retired.put(statement.old, known)
            }
            messages.append(.friendConflict(id: known.successor, name: record.name))
            conflicts.append(known.successor)
            // A conflict pauses sharing at once: the reseal that keeps both keys from the newest blob.
            _ = try FriendsManager.ShareChange.queueReseal(tx, .ended(friend: known.successor), now: now)
            return nil
        }
        guard let record = try friends.get(statement.old) else { return WireError.invalidRotation("the statement is for someone who is not a friend") }
        guard try !friends.contains(statement.new) else { return WireError.invalidRotation("the new key is already another friend") }
        try FriendsManager.move(from: statement.old, to: statement.new, server: statement.server, tx)
        try SessionsManager.forget(tx, friend: statement.old)
        try retired.put(statement.old, RetiredKey(successor: newID, revoked: statement.revokes))
        byPeerID[PeerID(statement.old).hex] = nil
        if let moved = try friends.get(statement.new) { byPeerID[PeerID(statement.new).hex] = (statement.new, moved) }
        messages.append(.friendRotated(from: statement.old.base64URL, to: newID, name: record.name))
        return nil
    }

    /// Seals the pending rotation statement (PROTOCOL.md §9.1) to every friend still waiting for
    /// it, from the previous identity (its seed is kept in the keychain until all are delivered),
    /// and queues each in the outbox (kind `rotation`, reference = the friend's id, which is also
    /// how ``OutboxManager/markDelivered(id:)`` knows whom it reached). A friend still owed an
    /// earlier statement (the identity rotated again before it reached them) gets that one first,
    /// sealed from the key it rotated from; ``OutboxManager/report(id:status:body:)`` queues the
    /// next after a delivery (a host using ``OutboxManager/markDelivered(id:)`` calls this again).
    /// - Parameter onlyFor: queue for this friend only (their previous statement was just
    ///   delivered); the other friends' queued entries are left as they are.
    /// - Returns: the outbox entries to send now.
    /// - Throws: ``WalletManagerError/noIdentity``, keychain and store errors.
    public func queueRotationStatements(onlyFor: String? = nil) async throws -> [OutboxEntry] {
        guard let state = try context.database.read({ tx in try tx.open(Tables.rotation).get(RotationState.key) }) else { return [] }
        // Friends removed (or who rotated themselves) since no longer wait: no seed is kept for them.
        let present = try context.database.read { tx -> Set<String> in
            let friends = try tx.open(Tables.friends)
            let owed = Set(state.pending + (state.older ?? []).flatMap(\.pending))
            // An owed id that is not a key (a damaged row) is nobody to send a statement to.
            return try owed.filter { id in try (try? Ed25519PublicKey(base64URL: id)).map { try friends.contains($0) } ?? false }
        }
        let wipe = try context.database.write { tx -> [String] in
            let rotation = try tx.open(Tables.rotation)
            guard var current = try rotation.get(RotationState.key) else { return [] }
            var wipe: [String] = []
            let hadPending = !current.pending.isEmpty
            current.pending = current.pending.filter { present.contains($0) }
            if current.pending.isEmpty {
                current.statement = nil
                if hadPending { wipe.append(IdentityHolder.previousKeychainName) }
            }
            var older: [RotationLink] = []
            for var link in current.older ?? [] {
                link.pending = link.pending.filter { present.contains($0) }
                if link.pending.isEmpty { wipe.append(RotationLink.keychainName(for: link.from)) } else { older.append(link) }
            }
            current.older = older.isEmpty ? nil : older
            if current != state || !wipe.isEmpty { try rotation.put(RotationState.key, current) }
            return wipe
        }
        for name in wipe { try context.keychain.delete(name: name) }
        guard let state = try context.database.read({ tx in try tx.open(Tables.rotation).get(RotationState.key) }) else { return [] }
        let now = context.clock.now()
        var queued: [OutboxEntry] = []
        for friendID in present.sorted() where onlyFor == nil || onlyFor == friendID {
            // The oldest statement this friend is owed, and the seed of the key it rotated from.
            let owed: (text: String, seedName: String)
            if let link = (state.older ?? []).first(where: { $0.pending.contains(friendID) }) {
                owed = (link.statement, RotationLink.keychainName(for: link.from))
            } else if let text = state.statement, state.pending.contains(friendID) {
                owed = (text, IdentityHolder.previousKeychainName)
            } else {
                continue
            }
            guard let seed = try context.keychain.load(name: owed.seedName) else { continue }
            let old = try Ed25519SigningKey(seed: seed)
            let statement = try JSONValue.parse(Array(owed.text.utf8))
            let key = try Ed25519PublicKey(base64URL: friendID)
            guard let friend = try context.database.read({ tx in try tx.open(Tables.friends).get(key) }) else { continue }
            for entry in try outbox.pending() where entry.item.kind == .rotation && entry.item.reference == friendID {
                try await outbox.remove(id: entry.id)
            }
            let id = try Envelope.newUUID(using: context.random)
            let payload = MessagePayload(kind: "rotation", id: id, text: "", sentAt: now, rotation: statement)
            let envelope = try Envelope.seal(
                payload.json, id: id, from: old, to: key, createdAt: now / 1000, expiresAt: now / 1000 + Self.envelopeLifetimeSeconds,
                random: context.random)
            let request = PreparedRequest(
                url: try RelayAPI.endpoint(server: friend.server, path: "/v1/relay/messages"), method: "POST",
                headers: [.init(name: "Content-Type", value: "application/json")], body: envelope.json.serialized())
            let outboxID = try await outbox.enqueue(kind: .rotation, request: request, reference: friendID)
            if let entry = try outbox.pending().first(where: { $0.id == outboxID }) { queued.append(entry) }
        }
        return queued
    }

    // MARK: Conversations

    /// Sets (or clears, with nil) the disappearing-messages timer of a conversation. Applies to
    /// messages stored from now on.
    /// - Throws: ``FriendsManagerError/notFound(id:)``, store errors.
    public func setDisappearing(friendID: String, after seconds: UInt64?) throws {
        let key = try Ed25519PublicKey(base64URL: friendID)
        try reconciler.write(context.database) { tx, messages in
            guard try tx.open(Tables.friends).contains(key) else { throw FriendsManagerError.notFound(id: friendID) }
            let conversations = try tx.open(Tables.conversations)
            var settings = try conversations.get(key) ?? ConversationSettings()
            settings.disappearAfterSeconds = seconds
            try conversations.put(key, settings)
            messages.append(.disappearingChanged(friendID: friendID, seconds: seconds))
        }
    }

    // MARK: Notification policy (issue 43)

    /// Mutes the conversation with a friend or a group until `until` (Unix ms;
    /// ``NotificationPolicy/forever`` until unmuted), or unmutes it (nil). Messages keep arriving
    /// and are stored; they only stop notifying (``MessageRecord/notify`` is false).
    /// - Parameters:
    ///   - conversation: a friend's id (b64u key) or a group's id (b64u, 22 characters).
    ///   - until: Unix ms the mute ends at (``NotificationPolicy/forever``: never), or nil to unmute.
    /// - Throws: ``MessagesManagerError/unknownConversation(_:)``, store errors.
    public func mute(_ conversation: String, until: UInt64?) throws {
        try context.database.write { tx in
            if conversation.utf8.count == 22, let group = try? GroupID(base64URL: conversation) {  // not a group id: tried as a friend below
                let groups = try tx.open(Tables.groups)
                guard var record = try groups.get(group.bytes) else { throw MessagesManagerError.unknownConversation(conversation) }
                record.mutedUntil = until
                try groups.put(group.bytes, record)
                return
            }
            // Not a key: thrown below as an unknown conversation, with the id the caller gave.
            guard let key = try? Ed25519PublicKey(base64URL: conversation), try tx.open(Tables.friends).contains(key) else {
                throw MessagesManagerError.unknownConversation(conversation)
            }
            let conversations = try tx.open(Tables.conversations)
            var settings = try conversations.get(key) ?? ConversationSettings()
            settings.mutedUntil = until
            try conversations.put(key, settings)
        }
    }

    /// Until when the conversation with a friend or group is muted (Unix ms; ``NotificationPolicy/forever``
    /// until unmuted), or nil when it is not muted now.
    /// - Throws: ``MessagesManagerError/unknownConversation(_:)``, store errors.
    public func mutedUntil(_ conversation: String) throws -> UInt64? {
        let now = context.clock.now()
        let until: UInt64? = try context.database.read { tx in
            if conversation.utf8.count == 22, let group = try? GroupID(base64URL: conversation) {  // not a group id: tried as a friend below
                guard let record = try tx.open(Tables.groups).get(group.bytes) else { throw MessagesManagerError.unknownConversation(conversation) }
                return record.mutedUntil
            }
            // Not a key: thrown below as an unknown conversation, with the id the caller gave.
            guard let key = try? Ed25519PublicKey(base64URL: conversation), try tx.open(Tables.friends).contains(key) else {
                throw MessagesManagerError.unknownConversation(conversation)
            }
            return try tx.open(Tables.conversations).get(key)?.mutedUntil
        }
        return until.flatMap { $0 > now ? $0 : nil }
    }

    /// Sets quiet hours (nil: none). Messages received inside the window are stored and do not
    /// notify. Set it again when the user's offset from UTC changes.
    /// - Throws: store errors.
    public func setQuietHours(_ hours: QuietHours?) throws {
        try context.database.write { tx in
            let settings = try tx.open(Tables.settings)
            if let hours { try settings.put(SettingKey.quietHours, hours) } else { _ = try settings.delete(SettingKey.quietHours.name) }
        }
    }

    /// Turns delivery receipts for received texts on (the default) or off. Off, no receipt tells
    /// a friend (or the relay) when this app fetched; their messages stay "sent" on their side.
    /// - Throws: store errors.
    public func setDeliveryReceipts(_ on: Bool) throws {
        try context.database.write { tx in try tx.open(Tables.settings).put(SettingKey.deliveryReceipts, on) }
    }

    /// The notification policy in force: quiet hours and delivery receipts.
    /// - Throws: store errors.
    public nonisolated func notificationPolicy() throws -> NotificationPolicy {
        try context.database.read { tx in try NotificationPolicy.stored(reading: tx) }
    }

    /// Deletes local copies whose disappearing timer ran out, then destroys the keys they were
    /// sealed under once their minute has passed (crypto-shredding: docs/STORE.md), so they open
    /// in no copy of the store taken later; returns their ids (also sent as
    /// ``MessagesManagerReconcileMessage/messagesExpired(ids:)``). Call it at ``nextExpiry()``.
    /// - Throws: store and keychain errors.
    @discardableResult
    public func sweepExpired() throws -> [String] {
        let now = context.clock.now()
        let ids = try deleteExpired(now: now)
        try context.database.destroyShredGroups(endingBy: now, tables: [Tables.messages.erased])
        return ids
    }

    /// When ``sweepExpired()`` should run next (ms since the epoch), or nil when no stored
    /// message disappears: the earliest message's own expiry, then the end of its minute, when
    /// the key of every message expiring in that minute is destroyed (docs/STORE.md). Schedule
    /// one wake-up for it and ask again after the sweep. ``history(with:limit:)`` hides a message
    /// from its own expiry on, swept or not.
    /// - Throws: store errors.
    public nonisolated func nextExpiry() throws -> UInt64? {
        try context.database.nextExpiry(after: context.clock.now())
    }

    private func deleteExpired(now: UInt64) throws -> [String] {
        try reconciler.write(context.database) { tx, messages in
            let ids = try tx.open(Tables.messages).removeAll { _, record in record.hasDisappeared(at: now) }.map(\.value.id)
            if !ids.isEmpty { messages.append(.messagesExpired(ids: ids)) }
            return ids
        }
    }

    /// Every friend with messages (or a timer), most recent conversation first.
    /// - Throws: store errors.
    public nonisolated func conversations() throws -> [Conversation] {
        try context.database.read { tx in
            let messages = try tx.open(Tables.messages)
            let settings = try tx.open(Tables.conversations)
            var result: [Conversation] = []
            let now = context.clock.now()
            for (key, friend) in try tx.open(Tables.friends).entries() {
                let history = try messages.entries(prefix: key.rawRepresentation).filter { !$0.value.hasDisappeared(at: now) }
                let timer = try settings.get(key)?.disappearAfterSeconds
                guard !history.isEmpty || timer != nil else { continue }
                result.append(
                    Conversation(
                        friendID: key.base64URL, name: friend.name, lastMessage: history.last?.value,
                        messageCount: history.count, disappearAfterSeconds: timer))
            }
            return result.sorted { ($0.lastMessage?.storedAt ?? 0) > ($1.lastMessage?.storedAt ?? 0) }
        }
    }

    /// A conversation's messages, oldest first (the last `limit` when given). A message whose
    /// disappearing timer ran out is never returned, swept or not.
    /// - Throws: ``WireError/invalidPublicKeyID(_:)``, store errors.
    public nonisolated func history(with friendID: String, limit: Int? = nil) throws -> [MessageRecord] {
        let key = try Ed25519PublicKey(base64URL: friendID)
        let now = context.clock.now()
        let all = try context.database.read { tx in
            try tx.open(Tables.messages).entries(prefix: key.rawRepresentation).map(\.value).filter { !$0.hasDisappeared(at: now) }
        }
        return limit.map { Array(all.suffix(max(0, $0))) } ?? all
    }

    // MARK: Store helpers

    /// Stores a message under `peer key | sequence` and indexes its id.
    static func store(_ record: MessageRecord, _ tx: borrowing WriteTransaction) throws {
        let settings = try tx.open(Tables.settings)
        let sequence = try settings.get(SettingKey.messageNextSequence) ?? 1
        guard sequence < .max else { throw StoreError.encodingFailed(type: "message sequence", reason: "the message sequence numbers are used up") }
        try settings.put(SettingKey.messageNextSequence, sequence + 1)
        var key = try Ed25519PublicKey(base64URL: record.peer).rawRepresentation
        key.appendBigEndian(sequence)
        try tx.open(Tables.messages).put(key, record, expiringAt: record.disappearsAt)
        try tx.open(Tables.messageIDs).put(record.id, key)
    }

    /// When a message stored now in `peer`'s conversation disappears (nil: never).
    static func disappearance(_ tx: borrowing WriteTransaction, peer: String, storedAt: UInt64) throws -> UInt64? {
        let key = try Ed25519PublicKey(base64URL: peer)
        return try tx.open(Tables.conversations).get(key)?.disappearAfterSeconds.map { storedAt.addingSaturating($0.multipliedSaturating(by: 1000)) }
    }

    // MARK: Wiring

    let context: AppContext
    let reconciler: Reconciler<MessagesManagerReconcileMessage>
    let outbox: OutboxManager
    /// The groups manager: group statements, sender keys and messages a fetch carries (§11) are
    /// handed to it.
    let groups: GroupsManager

    init(context: AppContext, outbox: OutboxManager, groups: GroupsManager, spine: UpdateSpine) {
        self.context = context
        self.outbox = outbox
        self.groups = groups
        reconciler = Reconciler(spine, as: AppUpdate.messages, from: \.messages, logger: context.logger)
    }
}
