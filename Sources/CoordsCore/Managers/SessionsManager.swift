/// How a friend's messages and positions are protected (PROTOCOL.md §10.4).
public enum Protection: String, Sendable, Equatable {
    /// The friend announced forward secrecy: messages travel in sessions, and blob entries are
    /// sealed to their signed prekey while it is valid.
    case forwardSecret = "forward-secret"
    /// Sealed to identity keys (§3, §7): a stolen keychain opens recordings.
    case legacy
}

/// What processing a friend's bundle answer decided.
public enum BundleOutcome: Sendable, Equatable {
    /// Accepted and stored; `oneTime` says whether it carried a one-time prekey.
    case accepted(oneTime: Bool)
    /// The relay holds no prekeys for them (404): they have not announced (or it is hiding them;
    /// a friend who announced before is never downgraded).
    case notOffered
    /// Refused: a wrong, unsigned, stale or someone else's bundle, or an error status. Nothing stored.
    case refused(code: Int32, reason: String)
}

/// Forward secrecy (PROTOCOL.md §10): the identity's own prekeys, friends' bundles, and the
/// sessions messages travel in. The messages and location managers call its internal
/// transaction helpers (`sealMessage`, `openMessage`, `ownSignedPrekeys`), so a session advances in the
/// transaction that stores or queues the message.
public actor SessionsManager {
    let context: AppContext

    init(context: AppContext) {
        self.context = context
    }

    // MARK: Own prekeys

    /// The `PUT /v1/relay/prekeys` that publishes what is due (§10.2): a new signed prekey when
    /// there is none or the current one is ``ForwardSecrecy/signedPrekeyRotation`` old, and a
    /// batch of one-time prekeys when the relay's last reported stock is below
    /// ``ForwardSecrecy/oneTimePrekeyLow`` (or was never reported). The private halves are stored
    /// before the request is returned. Send it, then hand the answer to ``processPrekeyUpload(status:body:)``.
    /// - Parameter force: publish the current signed prekey even if nothing is due.
    /// - Returns: the request, or nil when nothing is due.
    /// - Throws: ``WalletManagerError/noIdentity``, ``WalletManagerError/noServer``, store and crypto errors.
    public nonisolated func preparePrekeyUpload(force: Bool = false) throws -> PreparedRequest? {
        let identity = try context.identity.get()
        let now = context.clock.now()
        let random = context.random
        let prepared: (SignedPrekey, [OneTimePrekey], String)? = try context.database.write { tx in
            let settings = try tx.open(Tables.settings)
            guard let server = try settings.get(SettingKey.server), !server.isEmpty else { throw WalletManagerError.noServer }
            let own = try tx.open(Tables.ownSignedPrekeys)
            let oneTimeTable = try tx.open(Tables.ownOneTimePrekeys)
            let entries = try own.entries()
            var used = Set(entries.map(\.key))
            var current = entries.filter { !$0.value.replaced }.max { $0.value.created < $1.value.created }
            var changed = force
            if current == nil || now.subtractingSaturating(current?.value.created ?? 0) >= ForwardSecrecy.signedPrekeyRotation {
                if let old = current {
                    var replaced = old.value
                    replaced.replaced = true
                    try own.put(old.key, replaced)
                }
                used.formUnion(try oneTimeTable.entries().map(\.key))
                let id = try Self.freshID(existing: used, random: random)
                used.insert(id)
                let key = try X25519PrivateKey.generate(using: random)
                let prekey = OwnPrekey(
                    kind: .signed, key: key, created: now, expires: now.addingSaturating(ForwardSecrecy.signedPrekeyValidity))
                try own.put(id, prekey)
                current = (id, prekey)
                changed = true
            }
            guard let current else { return nil }
            if try settings.get(SettingKey.prekeysPublishedSignedID) != UInt64(current.key) { changed = true }
            var oneTime: [OneTimePrekey] = []
            let stock = try settings.get(SettingKey.prekeysRelayStock)
            // Unused one-time prekeys kept here are bounded too: uploads the relay never confirmed
            // do not pile up batches (at most OPK_STOCK are kept).
            if stock.map({ $0 < UInt64(ForwardSecrecy.oneTimePrekeyLow) }) ?? true,
                try oneTimeTable.count() + ForwardSecrecy.oneTimePrekeyBatch <= ForwardSecrecy.oneTimePrekeyStock
            {
                used.formUnion(try oneTimeTable.entries().map(\.key))
                for _ in 0..<ForwardSecrecy.oneTimePrekeyBatch {
                    let id = try Self.freshID(existing: used, random: random)
                    used.insert(id)
                    let key = try X25519PrivateKey.generate(using: random)
                    try oneTimeTable.put(id, OwnPrekey(kind: .oneTime, key: key, created: now, expires: 0))
                    oneTime.append(OneTimePrekey.make(id: id, key: key.publicKey, identity: identity.signing))
                }
                changed = true
            }
            guard changed else { return nil }
            let signed = SignedPrekey.make(
                id: current.key, key: current.value.publicKey, created: current.value.created, expires: current.value.expires,
                identity: identity.signing)
            return (signed, oneTime, server)
        }
        guard let (signed, oneTime, server) = prepared else { return nil }
        let body = JSONValue.object(["signedPrekey": signed.json, "oneTimePrekeys": .array(oneTime.map(\.json))]).serialized()
        return try signedRequest(method: "PUT", server: server, path: "/v1/relay/prekeys", identity: identity, body: body)
    }

    /// Records the relay's answer to ``preparePrekeyUpload(force:)``: on 200 the published
    /// signed prekey and the stock it reports; 409 `prekey_stock_full` counts as a full stock.
    /// - Returns: the relay's stock after the upload, or nil when it was refused.
    /// - Throws: store errors.
    public nonisolated func processPrekeyUpload(status: Int, body: [UInt8]) throws -> Int? {
        let object = (try? JSONValue.parse(body))?.objectValue  // anything else is no answer we can use
        try context.database.write { tx in
            let settings = try tx.open(Tables.settings)
            if (200..<300).contains(status), let id = object?["signedPrekeyID"]?.uint64Value, let stock = object?["oneTimePrekeys"]?.uint64Value {
                try settings.put(SettingKey.prekeysPublishedSignedID, id)
                try settings.put(SettingKey.prekeysRelayStock, stock)
            } else if status == 409, object?["error"]?.stringValue == "prekey_stock_full" {
                try settings.put(SettingKey.prekeysRelayStock, UInt64(ForwardSecrecy.oneTimePrekeyStock))
            }
        }
        guard (200..<300).contains(status) else { return nil }
        return object?["oneTimePrekeys"]?.uint64Value.map { Int(clamping: $0) }
    }

    /// A signed `GET /v1/relay/prekeys`: the relay's stock of our one-time prekeys. Hand the
    /// answer to ``processStock(status:body:)``.
    /// - Throws: ``WalletManagerError/noIdentity``, ``WalletManagerError/noServer``.
    public nonisolated func prepareStockRequest() throws -> PreparedRequest {
        let identity = try context.identity.get()
        guard let server = try context.database.read({ tx in try tx.open(Tables.settings).get(SettingKey.server) }), !server.isEmpty else {
            throw WalletManagerError.noServer
        }
        return try signedRequest(method: "GET", server: server, path: "/v1/relay/prekeys", identity: identity, body: nil)
    }

    /// Records the stock the relay reports (200 `{"oneTimePrekeys": n, …}`), so the next
    /// ``preparePrekeyUpload(force:)`` refills it when low.
    /// - Returns: the stock, or nil for any other answer.
    /// - Throws: store errors.
    public nonisolated func processStock(status: Int, body: [UInt8]) throws -> Int? {
        // Not a stock answer: nothing learnt.
        guard (200..<300).contains(status), let stock = (try? JSONValue.parse(body))?.objectValue?["oneTimePrekeys"]?.uint64Value else { return nil }
        try context.database.write { tx in try tx.open(Tables.settings).put(SettingKey.prekeysRelayStock, stock) }
        return Int(clamping: stock)
    }

    // MARK: Friends' bundles

    /// Friends whose bundle should be fetched now (§10.4): none accepted yet, or the accepted
    /// signed prekey expires within 2 days — each asked at most once an hour.
    /// - Throws: store errors.
    public nonisolated func bundlesDue() throws -> [String] {
        let now = context.clock.now()
        return try context.database.read { tx in
            let known = try tx.open(Tables.friendPrekeys)
            var due: [String] = []
            for (key, friend) in try tx.open(Tables.friends).entries() where friend.trust != .blocked {
                let record = try known.get(key) ?? FriendPrekeys()
                guard now.subtractingSaturating(record.checkedAt) >= Self.bundleRetryInterval || record.checkedAt > now else { continue }
                if let signed = record.usableSignedPrekey(at: now), now < signed.expires.subtractingSaturating(2 * ForwardSecrecy.day) {
                    continue
                }
                due.append(key.base64URL)
            }
            return due
        }
    }

    /// How often a friend's relay is asked for their bundle at most (ms).
    public static let bundleRetryInterval: UInt64 = 3_600_000

    /// A signed `GET <friend's relay>/v1/relay/prekeys/<key>` (signed, so the answer may carry a
    /// one-time prekey). Hand the answer to ``processBundle(for:status:body:)``.
    /// - Throws: ``FriendsManagerError/notFound(id:)``, ``WalletManagerError/noIdentity``,
    ///   ``WireError/invalidServerURL(_:)``.
    public nonisolated func prepareBundleRequest(for friendID: String) throws -> PreparedRequest {
        let identity = try context.identity.get()
        let key = try Ed25519PublicKey(base64URL: friendID)
        guard let friend = try context.database.read({ tx in try tx.open(Tables.friends).get(key) }) else {
            throw FriendsManagerError.notFound(id: friendID)
        }
        return try signedRequest(method: "GET", server: friend.server, path: "/v1/relay/prekeys/\(friendID)", identity: identity, body: nil)
    }

    /// Checks a bundle answer against the friend's key as we know it (§10.2) and stores it: the
    /// friend has now announced forward secrecy. A refused bundle stores nothing but the time asked.
    /// - Throws: ``FriendsManagerError/notFound(id:)``, store errors (a bad answer is an outcome, not an error).
    public nonisolated func processBundle(for friendID: String, status: Int, body: [UInt8]) throws -> BundleOutcome {
        let key = try Ed25519PublicKey(base64URL: friendID)
        let now = context.clock.now()
        return try context.database.write { tx in
            guard try tx.open(Tables.friends).get(key) != nil else { throw FriendsManagerError.notFound(id: friendID) }
            let table = try tx.open(Tables.friendPrekeys)
            var record = try table.get(key) ?? FriendPrekeys()
            record.checkedAt = now
            defer { _ = try? table.put(key, record) }  // the time asked is a hint; failing to store it only means asking sooner
            guard status == 200 else {
                if status == 404 {
                    // A relay that hides the bundle of a friend who announced is a downgrade attempt (§10.4).
                    guard record.announcedAt != nil else { return .notOffered }
                    return .refused(code: WireError.downgradeRefused.code, reason: WireError.downgradeRefused.description)
                }
                let error = RelayAPI.error(status: status, body: body)
                return .refused(code: error.code, reason: error.description)
            }
            do {
                let bundle = try PrekeyBundle(json: body)
                try bundle.verify(for: key, now: now, cached: record.signed)
                if bundle.signedPrekey.created >= record.signed?.created ?? 0 { record.signed = bundle.signedPrekey }
                if let oneTime = bundle.oneTimePrekey { record.oneTime = oneTime }
                if record.announcedAt == nil { record.announcedAt = now }
                return .accepted(oneTime: bundle.oneTimePrekey != nil)
            } catch let error as WireError {
                return .refused(code: error.code, reason: error.description)
            }
        }
    }

    /// The protection of a friend's messages and positions.
    /// - Throws: ``WireError/invalidPublicKeyID(_:)``, store errors.
    public nonisolated func protection(of friendID: String) throws -> Protection {
        let key = try Ed25519PublicKey(base64URL: friendID)
        return try context.database.read { tx in
            try tx.open(Tables.friendPrekeys).get(key)?.announcedAt == nil ? .legacy : .forwardSecret
        }
    }

    /// Erases what §10 says goes: signed prekeys past `expires + SPK_KEEP` (the ones replaced),
    /// inactive sessions unused for ``ForwardSecrecy/sessionKeep``, base keys older than
    /// ``ForwardSecrecy/baseKeyKeep``, skipped message keys older than ``ForwardSecrecy/skippedKeyKeep``.
    /// - Returns: how many prekeys and sessions were erased.
    /// - Throws: store errors.
    @discardableResult
    public nonisolated func sweep() throws -> Int {
        let now = context.clock.now()
        return try context.database.write { tx in
            var erased = try tx.open(Tables.ownSignedPrekeys).removeAll { _, prekey in prekey.replaced && prekey.eraseAt <= now }.count
            let sessions = try tx.open(Tables.sessions)
            for (key, var stored) in try sessions.entries() {
                if !stored.active, stored.session.lastUsed.addingSaturating(ForwardSecrecy.sessionKeep) <= now {
                    _ = try sessions.delete(key)
                    erased += 1
                } else if stored.session.skippedKeyCount > 0 {
                    stored.session.prune(now: now)
                    try sessions.put(key, stored)
                }
            }
            _ = try tx.open(Tables.baseKeys).removeAll { _, at in at.addingSaturating(ForwardSecrecy.baseKeyKeep) <= now }
            return erased
        }
    }

    // MARK: Helpers

    static func freshID(existing: Set<UInt32>, random: any RandomSource) throws -> UInt32 {
        for _ in 0..<64 {
            let bytes = try random.bytes(4)
            let id = bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            if !existing.contains(id) { return id }
        }
        throw CryptoError.invalidParameter("no free prekey id after 64 draws")
    }

    nonisolated func signedRequest(method: String, server: String, path: String, identity: Identity, body: [UInt8]?) throws -> PreparedRequest {
        let now = context.clock.now() / 1000
        // The same counter as every mailbox signature (MessagesManager.nextSignedTimestamp): each is accepted once.
        let timestamp = try context.database.write { tx in
            let settings = try tx.open(Tables.settings)
            let next = SignedTime.next(after: try settings.get(SettingKey.mailboxLastSignedTimestamp), now: now)
            try settings.put(SettingKey.mailboxLastSignedTimestamp, next)
            return next
        }
        let signed = MailboxAuth.headers(signer: identity.signing, method: method, path: path, timestamp: timestamp)
        var headers = ["X-Coords-Key", "X-Coords-Timestamp", "X-Coords-Signature"].map { PreparedRequest.Header(name: $0, value: signed[$0] ?? "") }
        if body != nil { headers.append(.init(name: "Content-Type", value: "application/json")) }
        return PreparedRequest(url: try RelayAPI.endpoint(server: server, path: path), method: method, headers: headers, body: body ?? [])
    }
}

// MARK: Sessions inside other managers' transactions

extension SessionsManager {
    /// How long envelopes live on the relay (the relay's default maximum, 24 h).
    static let envelopeLifetimeSeconds: UInt64 = 86_400

    /// Seals `payload` for friend `key` in `tx` (a session message to a friend who announced
    /// forward secrecy, §10.7; else version 2) and returns the POST to their relay.
    /// - Throws: ``FriendsManagerError/notFound(id:)``, ``MessagesManagerError/friendBlocked(id:)``,
    ///   ``WireError/prekeysUnavailable``, ``WireError/invalidServerURL(_:)``, store and crypto errors.
    static func sealEnvelope(
        _ tx: borrowing WriteTransaction, payload: MessagePayload, to key: Ed25519PublicKey, identity: Identity, now: UInt64,
        random: any RandomSource
    ) throws -> PreparedRequest {
        guard let friend = try tx.open(Tables.friends).get(key) else { throw FriendsManagerError.notFound(id: key.base64URL) }
        guard friend.trust != .blocked else { throw MessagesManagerError.friendBlocked(id: key.base64URL) }
        let createdAt = now / 1000
        let expiresAt = now / 1000 + envelopeLifetimeSeconds
        let envelope =
            try SessionsManager.sealMessage(
                tx, identity: identity, friend: key, payload: payload.json, id: payload.id, createdAt: createdAt, expiresAt: expiresAt,
                now: now, random: random)
            ?? Envelope.seal(payload.json, id: payload.id, from: identity.signing, to: key, createdAt: createdAt, expiresAt: expiresAt, random: random)
        return PreparedRequest(
            url: try RelayAPI.endpoint(server: friend.server, path: "/v1/relay/messages"), method: "POST",
            headers: [.init(name: "Content-Type", value: "application/json")], body: envelope.json.serialized())
    }
}

extension SessionsManager {
    /// Seals `payload` for `friend` in their active session (made from their accepted bundle when
    /// there is none, §10.5) and advances it in `tx`: the caller stores or queues the envelope in
    /// the same transaction. Returns nil for a friend who has not announced forward secrecy (the
    /// caller seals version 2).
    /// - Throws: ``WireError/prekeysUnavailable`` (announced, but no session and no valid bundle:
    ///   never sealed the old way), crypto and store errors.
    static func sealMessage(
        _ tx: borrowing WriteTransaction, identity: Identity, friend: Ed25519PublicKey, payload: [UInt8], id: String,
        createdAt: UInt64, expiresAt: UInt64, now: UInt64, random: any RandomSource
    ) throws -> Envelope? {
        let prekeys = try tx.open(Tables.friendPrekeys)
        guard var known = try prekeys.get(friend), known.announcedAt != nil else { return nil }
        let sessions = try tx.open(Tables.sessions)
        let kept = try sessions.entries(prefix: friend.rawRepresentation)
        var chosen: (key: [UInt8], session: RatchetSession)?
        if let active = kept.first(where: { $0.value.active }), active.value.session.canSend {
            chosen = (active.key, active.value.session)
        } else {
            guard let signed = known.usableSignedPrekey(at: now) else { throw WireError.prekeysUnavailable }
            let base = try X25519PrivateKey.generate(using: random)
            let bundle = PrekeyBundle(identity: friend, signedPrekey: signed, oneTimePrekey: known.oneTime)
            let secret = try X3DH.initiate(identity: identity.signing, bundle: bundle, baseKey: base)
            let handshake = SessionMessage.Handshake(signedPrekeyID: signed.id, oneTimePrekeyID: known.oneTime?.id, baseKey: base.publicKey)
            let session = try RatchetSession.initiate(
                sharedSecret: secret, remoteSignedPrekey: signed.key, handshake: handshake, now: now, using: random)
            known.oneTime = nil  // a one-time prekey is used by one handshake only
            try prekeys.put(friend, known)
            chosen = (StoredSession.key(friend: friend, baseKey: base.publicKey), session)
        }
        guard let (key, chosenSession) = chosen else { throw WireError.prekeysUnavailable }
        var session = chosenSession
        let envelope = try Envelope.sealSession(id: id, from: identity.signing, to: friend, createdAt: createdAt, expiresAt: expiresAt) { ad in
            try session.seal(payload, context: SessionContext(sender: identity.publicKey, recipient: friend, envelopeAssociatedData: ad), now: now)
                .payload
        }
        try store(session, at: key, friend: friend, kept: kept, tx)
        return envelope
    }

    /// Opens a version-3 envelope from `friend` (§10.7–§10.8) and advances (or makes) the session
    /// in `tx`, erasing a used one-time prekey: the caller stores the message in the same
    /// transaction. Returns the payload and whether this replaced a session in which something
    /// had been opened (a session reset the user is told about).
    /// - Throws: ``WireError/sessionBroken`` (no kept session opens it), ``WireError/unknownPrekey(_:)``,
    ///   ``WireError/replayedHandshake``, ``WireError/duplicateMessage``, ``WireError/tooManySkipped(gap:)``,
    ///   ``WireError/envelopeTampered``, the envelope checks of ``Envelope/sessionMessage(as:from:now:)``.
    static func openMessage(
        _ tx: borrowing WriteTransaction, identity: Identity, friend: Ed25519PublicKey, envelope: Envelope, now: UInt64,
        random: any RandomSource
    ) throws -> (payload: [UInt8], reset: Bool) {
        let message = try envelope.sessionMessage(as: identity.signing, from: friend, now: now / 1000)
        let context = SessionContext(sender: friend, recipient: identity.publicKey, envelopeAssociatedData: envelope.associatedData)
        let sessions = try tx.open(Tables.sessions)
        let kept = try sessions.entries(prefix: friend.rawRepresentation)
        let prekeys = try tx.open(Tables.friendPrekeys)
        var known = try prekeys.get(friend) ?? FriendPrekeys()
        if known.announcedAt == nil {
            known.announcedAt = now
            try prekeys.put(friend, known)
        }
        if let handshake = message.handshake {
            let key = StoredSession.key(friend: friend, baseKey: handshake.baseKey)
            if let existing = kept.first(where: { $0.key == key }) {
                var session = existing.value.session
                let plaintext = try session.open(message, context: context, now: now, using: random)
                try store(session, at: key, friend: friend, kept: kept, tx)
                return (plaintext, false)
            }
            let baseKeys = try tx.open(Tables.baseKeys)
            let base = try Bytes32(handshake.baseKey.rawRepresentation)
            guard try baseKeys.get(base) == nil else { throw WireError.replayedHandshake }
            guard let signedRecord = try tx.open(Tables.ownSignedPrekeys).get(handshake.signedPrekeyID) else {
                throw WireError.unknownPrekey("signed prekey \(handshake.signedPrekeyID)")
            }
            let signed = signedRecord.key()
            let own = try tx.open(Tables.ownOneTimePrekeys)
            var oneTime: X25519PrivateKey?
            if let id = handshake.oneTimePrekeyID {
                guard let found = try own.get(id) else { throw WireError.unknownPrekey("one-time prekey \(id)") }
                oneTime = found.key()
            }
            let secret = try X3DH.respond(
                identity: identity.signing, signedPrekey: signed, oneTimePrekey: oneTime, initiator: friend,
                baseKey: handshake.baseKey)
            var session = RatchetSession.respond(sharedSecret: secret, signedPrekey: signed, handshake: handshake, now: now)
            let plaintext = try session.open(message, context: context, now: now, using: random)
            if let id = handshake.oneTimePrekeyID { _ = try own.delete(id) }
            try baseKeys.put(base, now)
            try store(session, at: key, friend: friend, kept: kept, tx)
            return (plaintext, kept.contains { $0.value.session.confirmed })
        }
        // The active session first, then the most recently used.
        let ordered = kept.sorted { a, b in a.value.active != b.value.active ? a.value.active : a.value.session.lastUsed > b.value.session.lastUsed }
        for candidate in ordered {
            var session = candidate.value.session
            do {
                let plaintext = try session.open(message, context: context, now: now, using: random)
                try store(session, at: candidate.key, friend: friend, kept: kept, tx)
                return (plaintext, false)
            } catch WireError.duplicateMessage {
                throw WireError.duplicateMessage
            } catch {
                continue  // not this session's message: the next one may open it
            }
        }
        throw WireError.sessionBroken
    }

    /// Ends every session with `friend` (none active): the next message makes a new handshake.
    static func endSessions(_ tx: borrowing WriteTransaction, friend: Ed25519PublicKey) throws {
        let sessions = try tx.open(Tables.sessions)
        for (key, var stored) in try sessions.entries(prefix: friend.rawRepresentation) where stored.active {
            stored.active = false
            try sessions.put(key, stored)
        }
    }

    /// Forgets everything about `friend`'s prekeys and sessions (a friend removed, or one who
    /// rotated away from this key: §10.11 — the new key has announced nothing yet).
    static func forget(_ tx: borrowing WriteTransaction, friend: Ed25519PublicKey) throws {
        _ = try tx.open(Tables.friendPrekeys).delete(friend)
        let sessions = try tx.open(Tables.sessions)
        for (key, _) in try sessions.entries(prefix: friend.rawRepresentation) { _ = try sessions.delete(key) }
    }

    /// Ends the identity's own forward secrecy (§10.11, a rotation or revocation): every session
    /// and every own prekey, private halves included, and what the relay was told.
    static func endIdentity(_ tx: borrowing WriteTransaction) throws {
        try tx.open(Tables.sessions).removeAll()
        try tx.open(Tables.ownSignedPrekeys).removeAll()
        try tx.open(Tables.ownOneTimePrekeys).removeAll()
        try tx.open(Tables.baseKeys).removeAll()
        let settings = try tx.open(Tables.settings)
        _ = try settings.delete(SettingKey.prekeysPublishedSignedID.name)
        _ = try settings.delete(SettingKey.prekeysRelayStock.name)
    }

    /// Stores `session` at `key` as the active one, deactivates the others and keeps at most
    /// ``ForwardSecrecy/maximumSessions`` (the least recently used go).
    static func store(
        _ session: RatchetSession, at key: [UInt8], friend: Ed25519PublicKey, kept: [(key: [UInt8], value: StoredSession)],
        _ tx: borrowing WriteTransaction
    ) throws {
        let sessions = try tx.open(Tables.sessions)
        var others = kept.filter { $0.key != key }
        for index in others.indices where others[index].value.active {
            others[index].value.active = false
            try sessions.put(others[index].key, others[index].value)
        }
        try sessions.put(key, StoredSession(session: session, active: true))
        let excess = others.count + 1 - ForwardSecrecy.maximumSessions
        if excess > 0 {
            for old in others.sorted(by: { $0.value.session.lastUsed < $1.value.session.lastUsed }).prefix(excess) {
                _ = try sessions.delete(old.key)
            }
        }
    }

    // MARK: Keys for location blobs (§10.9)

    /// Own signed prekeys still kept, newest first (the current one is the first unless none).
    static func ownSignedPrekeys(_ tx: borrowing ReadTransaction) throws -> [OwnPrekey] {
        try tx.open(Tables.ownSignedPrekeys).entries().map(\.value).sorted { $0.created > $1.created }
    }
}

extension RatchetSession {
    /// Whether ``seal(_:context:now:)`` can send now (a sending chain with numbers left).
    public var canSend: Bool { sendingChain != nil && sentCount < UInt64(UInt32.max) }
}
