/// A friend as hosts see it.
public struct Friend: Sendable, Equatable {
    /// base64url public key.
    public var id: String
    /// The key itself (what `id` encodes).
    public var publicKey: Ed25519PublicKey
    /// The display name.
    public var name: String
    /// Their relay, exactly as their link gave it.
    public var server: String
    /// Whether our uploads are sealed for them.
    public var shareWith: Bool
    /// Whether we fetch their location.
    public var fetchFrom: Bool
    /// When they were added (ms since the epoch).
    public var addedAt: UInt64
    /// Whether the user compared safety numbers, blocked them, or has a key conflict to settle.
    public var trust: TrustState
    /// The marker colour the apps draw for them (`#RRGGBB`).
    public var markerColor: String
    /// When sharing with them ends (ms since the epoch; nil: no end), PROTOCOL.md §9.3.
    public var shareUntil: UInt64?
    /// Where sharing with them stood when this value was read: see ``SharingState``.
    public var sharing: SharingState
    /// In a key conflict (``TrustState/conflict``, PROTOCOL.md §9.2): the candidate keys, the
    /// current one first; empty otherwise.
    public var conflictKeys: [String]
    /// How their messages and positions are protected (PROTOCOL.md §10.4): forward-secret once
    /// they announced it, legacy otherwise. Filled in by ``FriendsManager/list()`` and
    /// ``FriendsManager/friend(id:)``; update messages carry `legacy`.
    public var protection: Protection = .legacy
    /// Whether they have added us back: something they sealed for us (a position or a message)
    /// has opened. False means they have not shared with us yet — show them your link or QR.
    public var reciprocal: Bool

    init(key: Ed25519PublicKey, record: FriendRecord, now: UInt64) {
        id = key.base64URL
        publicKey = key
        name = record.name
        server = record.server
        shareWith = record.shareWith
        fetchFrom = record.fetchFrom
        addedAt = record.addedAt
        trust = record.trust
        markerColor = MarkerColor(id: id).hex
        shareUntil = record.shareUntil
        conflictKeys = record.conflict?.map(\.key) ?? []
        reciprocal = record.addedBackAt != nil
        sharing =
            !record.shareWith
            ? .paused : record.shareUntil == nil ? .on : FriendRecord.isRunning(until: record.shareUntil, at: now) ? .until : .expired
    }
}

/// Where sharing with a friend stands (PROTOCOL.md §9.3).
public enum SharingState: String, Sendable, Equatable {
    /// Shared, with no end.
    case on
    /// Shared until ``Friend/shareUntil``.
    case until
    /// The share ended at ``Friend/shareUntil``.
    case expired
    /// Paused by the user.
    case paused
}

/// What a host can ask the friends list to do.
public enum FriendsManagerAction: Sendable {
    /// FriendsManager/add(link:).
    case addLink(String)
    /// FriendsManager/add(id:server:name:shareWith:fetchFrom:).
    case add(id: String, server: String, name: String, shareWith: Bool, fetchFrom: Bool)
    /// FriendsManager/update(id:name:shareWith:fetchFrom:) (nil leaves a field as it is).
    case update(id: String, name: String?, shareWith: Bool?, fetchFrom: Bool?)
    /// FriendsManager/setTrust(id:_:).
    case setTrust(id: String, trust: TrustState)
    /// FriendsManager/remove(id:).
    case remove(id: String)
}

/// What the friends list tells the host, after the fact.
public enum FriendsManagerReconcileMessage: Sendable, Equatable, ReconcileMessage {
    /// The manager's name in its log lines and in the C ABI's update records (`"manager"`).
    public static let manager = "friends"

    /// A friend was added.
    case friendAdded(Friend)
    /// A friend's record changed (name, sharing, trust, a rotation).
    case friendUpdated(Friend)
    /// The friend with this id was removed.
    case friendRemoved(id: String)
    /// A dispatched action failed: the failure's stable code (``InternalError``, 199, for an error from outside CoordsCore) and its description.
    case errorOccurred(code: Int32, message: String)
}

/// The friends list: who we share with and fetch from. Each friend's X25519 key is converted
/// once, when they are added, and kept with them, so sealing never converts keys again.
public actor FriendsManager {
    /// Reconcile messages, after the change they describe was committed.
    public nonisolated var updates: Receiver<FriendsManagerReconcileMessage> { reconciler.updates }

    /// Performs `action`; a failure is reported as ``FriendsManagerReconcileMessage/errorOccurred(code:message:)``.
    public func dispatch(_ action: FriendsManagerAction) async {
        do {
            switch action {
            case .addLink(let link): _ = try await add(link: link)
            case .add(let id, let server, let name, let share, let fetch):
                _ = try await add(id: id, server: server, name: name, shareWith: share, fetchFrom: fetch)
            case .update(let id, let name, let share, let fetch): _ = try update(id: id, name: name, shareWith: share, fetchFrom: fetch)
            case .setTrust(let id, let trust): _ = try setTrust(id: id, trust)
            case .remove(let id): try remove(id: id)
            }
        } catch {
            reconciler.report(error)
        }
    }

    /// Adds (or refreshes) the friend a `coord://` link describes; sharing and fetching start on.
    /// Adding someone already on the list updates their name and server and keeps the rest.
    /// A link to the user's own relay keeps the user's exact server string (see `sameRelay`).
    /// - Throws: ``WireError/invalidFriendLink(_:)``, ``WireError/invalidPublicKeyID(_:)``,
    ///   ``FriendsManagerError/cannotAddSelf``, store errors.
    public func add(link: String) async throws -> Friend {
        let parsed = try FriendLink.parse(link)
        return try await add(id: parsed.id, server: try sameRelay(parsed.server) ?? parsed.server, name: parsed.name, shareWith: true, fetchFrom: true)
    }

    /// The user's own server string when `server` (from a link: always `https://` + host) names
    /// the same relay. Friends on one's own relay then share one exact server string, so they are
    /// fetched in the same batches, and a relay reached over plain http (a local or test relay)
    /// keeps working for its users' friends.
    private func sameRelay(_ server: String) throws -> String? {
        guard let own = try context.database.read({ tx in try tx.open(Tables.settings).get(SettingKey.server) }), !own.isEmpty else {
            return nil
        }
        return ServerURL.withoutScheme(own).lowercased() == ServerURL.withoutScheme(server).lowercased() ? own : nil
    }

    /// Adds (or refreshes) a friend from fields. Adding shares at once (the Coords design): when
    /// the user shares with the friend and a fix was sealed before, a reseal is queued in the
    /// outbox in the same transaction (kind `reseal`, sealed for everyone shared with when the
    /// host takes it: `FriendsManager.ShareChange`); the host's loop sends it. Without a fix yet, the next one
    /// reaches them.
    /// - Throws: ``WireError/invalidPublicKeyID(_:)``, ``WireError/invalidServerURL(_:)``,
    ///   ``FriendsManagerError/cannotAddSelf``, store errors.
    public func add(id: String, server: String, name: String, shareWith: Bool = true, fetchFrom: Bool = true) async throws -> Friend {
        try insert(id: id, server: server, name: name, shareWith: shareWith, fetchFrom: fetchFrom)
    }

    private func insert(id: String, server: String, name: String, shareWith: Bool, fetchFrom: Bool) throws -> Friend {
        let key = try Ed25519PublicKey(base64URL: id)
        _ = try RelayAPI.endpoint(server: server, path: "")
        // No identity yet (get's only error): nobody can be oneself.
        if let own = try? context.identity.get(), own.publicKey == key { throw FriendsManagerError.cannotAddSelf }
        guard let x25519 = try? X25519PublicKey(ed25519: key) else { throw WireError.invalidPublicKeyID(id) }
        let now = context.clock.now()
        return try reconciler.write(context.database) { tx, messages in
            let friends = try tx.open(Tables.friends)
            if var existing = try friends.get(key) {
                existing.name = name
                existing.server = server
                try friends.put(key, existing)
                let friend = Friend(key: key, record: existing, now: now)
                messages.append(.friendUpdated(friend))
                return friend
            }
            // A friend removed while their share was paused or limited comes back the same way.
            let limits = try tx.open(Tables.shareLimits)
            let limit = try limits.get(key)
            let record = FriendRecord(
                name: name, server: server, shareWith: shareWith && !(limit?.paused ?? false), fetchFrom: fetchFrom, addedAt: now,
                x25519PublicKey: Base64.encode(x25519.rawRepresentation), shareUntil: limit?.until)
            try limits.delete(key)
            try friends.put(key, record)
            if record.isSharing(at: now) { _ = try ShareChange.queueReseal(tx, .began(friend: id), now: now) }
            let friend = Friend(key: key, record: record, now: now)
            messages.append(.friendAdded(friend))
            return friend
        }
    }

    /// Changes a friend's name, sharing or fetching (nil leaves a field as it is).
    /// - Throws: ``FriendsManagerError/notFound(id:)``, ``WireError/invalidPublicKeyID(_:)``, store errors.
    public func update(id: String, name: String? = nil, shareWith: Bool? = nil, fetchFrom: Bool? = nil) throws -> Friend {
        try modify(id: id) { record in
            if let name { record.name = name }
            if let shareWith { record.shareWith = shareWith }
            if let fetchFrom { record.fetchFrom = fetchFrom }
        }
    }

    /// Shares with a friend until `until` (ms since the epoch; nil: with no end), resuming a
    /// paused share (PROTOCOL.md §9.3). A time not after now ends the share at once. When a share
    /// ends — at its time, on ``pause(id:)``, ``remove(id:)``, blocking or a conflict — the core
    /// queues the reseal itself (`FriendsManager.ShareChange`; at its time, ``CoordsApp/due(now:only:ignoringBackoff:)`` does), so the
    /// last blob the friend can open is the last one they were meant to see. A host only runs its
    /// loop (``CoordsApp/nextWake(now:)``, ``CoordsApp/due(now:only:ignoringBackoff:)``, ``CoordsApp/report(id:status:body:)``).
    /// - Throws: ``FriendsManagerError/notFound(id:)``, ``WireError/invalidPublicKeyID(_:)``, store errors.
    public func share(id: String, until: UInt64?) throws -> Friend {
        try modify(id: id) { record in
            record.shareWith = true
            record.shareUntil = until
        }
    }

    /// Pauses sharing with a friend (fetching from them goes on); ``share(id:until:)`` resumes
    /// it. The reseal that keeps the friend from the newest blob is queued in the same transaction.
    /// - Throws: ``FriendsManagerError/notFound(id:)``, ``WireError/invalidPublicKeyID(_:)``, store errors.
    public func pause(id: String) throws -> Friend {
        try modify(id: id) { $0.shareWith = false }
    }

    /// Sets a friend's trust (verified after comparing safety numbers; blocked friends are
    /// neither shared with nor fetched).
    /// - Throws: ``FriendsManagerError/notFound(id:)``, store errors.
    /// A friend in a key conflict can only be blocked here (``FriendsManagerError/inConflict(id:)``
    /// otherwise): ``resolveConflict(id:keep:)`` picks their key.
    public func setTrust(id: String, _ trust: TrustState) throws -> Friend {
        if trust != .blocked, try friend(id: id)?.trust == .conflict { throw FriendsManagerError.inConflict(id: id) }
        return try modify(id: id) { $0.trust = trust }
    }

    /// Ends a key conflict (PROTOCOL.md §9.2) after the user compared safety numbers again:
    /// `keep` (one of ``Friend/conflictKeys``) becomes the friend's key, verified, and sharing
    /// resumes as it was; the other candidates are retired as revoked, so nothing they sign is
    /// accepted. When sharing resumes, the reseal that reaches the kept key is queued in the same transaction.
    /// - Throws: ``FriendsManagerError/notInConflict(id:)``, ``FriendsManagerError/notFound(id:)``,
    ///   ``WireError/invalidPublicKeyID(_:)``, store errors (a candidate whose stored key is
    ///   damaged is ``StoreError/decodingFailed(table:type:reason:)`` and nothing changes).
    public func resolveConflict(id: String, keep: String) throws -> Friend {
        let key = try Ed25519PublicKey(base64URL: id)
        let kept = try Ed25519PublicKey(base64URL: keep)
        let now = context.clock.now()
        return try reconciler.write(context.database) { tx, messages in
            let friends = try tx.open(Tables.friends)
            guard var record = try friends.get(key) else { throw FriendsManagerError.notFound(id: id) }
            guard record.trust == .conflict, let candidates = record.conflict, let chosen = candidates.first(where: { $0.key == keep }) else {
                throw FriendsManagerError.notInConflict(id: id)
            }
            record.trust = .verified
            record.conflict = nil
            try friends.put(key, record)
            if kept != key { try Self.move(from: key, to: kept, server: chosen.server, tx) }
            let retired = try tx.open(Tables.retiredKeys)
            // Every rejected key is retired, or nothing is: a candidate whose key cannot be read back
            // would otherwise stay usable, and its statements would be accepted again later.
            for candidate in candidates where candidate.key != keep {
                let other: Ed25519PublicKey
                do {
                    other = try Ed25519PublicKey(base64URL: candidate.key)
                } catch {
                    throw StoreError.decodingFailed(
                        table: Tables.friends.name, type: FriendRecord.storeTypeName, reason: "a conflict candidate's key is damaged: \(error)")
                }
                try retired.put(other, RetiredKey(successor: keep, revoked: true))
            }
            guard let moved = try friends.get(kept) else { throw FriendsManagerError.notFound(id: keep) }
            if moved.isSharing(at: now) { _ = try ShareChange.queueReseal(tx, .began(friend: keep), now: now) }
            let friend = Friend(key: kept, record: moved, now: now)
            if kept != key { messages.append(.friendRemoved(id: id)) }
            messages.append(.friendUpdated(friend))
            return friend
        }
    }

    /// Changes a friend's record; when that starts or ends sharing with them, the reseal it owes
    /// is queued in the same transaction (`FriendsManager.ShareChange`).
    private func modify(id: String, _ change: (inout FriendRecord) -> Void) throws -> Friend {
        let key = try Ed25519PublicKey(base64URL: id)
        let now = context.clock.now()
        return try reconciler.write(context.database) { tx, messages in
            let friends = try tx.open(Tables.friends)
            guard var record = try friends.get(key) else { throw FriendsManagerError.notFound(id: id) }
            let wasSharing = record.isSharing(at: now)
            change(&record)
            try friends.put(key, record)
            switch (wasSharing, record.isSharing(at: now)) {
            case (true, false): _ = try ShareChange.queueReseal(tx, .ended(friend: id), now: now)
            case (false, true): _ = try ShareChange.queueReseal(tx, .began(friend: id), now: now)
            default: break
            }
            let friend = Friend(key: key, record: record, now: now)
            messages.append(.friendUpdated(friend))
            return friend
        }
    }

    /// Removes a friend and their cached location. Later uploads are no longer sealed for them,
    /// and the reseal that keeps them from the newest blob is queued in the same transaction. A paused or limited share is
    /// remembered, so adding them again does not widen it.
    /// - Throws: ``FriendsManagerError/notFound(id:)``, store errors.
    public func remove(id: String) throws {
        let key = try Ed25519PublicKey(base64URL: id)
        let now = context.clock.now()
        try reconciler.write(context.database) { tx, messages in
            let friends = try tx.open(Tables.friends)
            guard let record = try friends.get(key) else { throw FriendsManagerError.notFound(id: id) }
            if !record.shareWith || record.shareUntil != nil {
                try tx.open(Tables.shareLimits).put(key, ShareLimit(paused: !record.shareWith, until: record.shareUntil))
            }
            try friends.delete(key)
            try tx.open(Tables.locations).delete(key)  // unread: a damaged cache entry must not block the removal
            try SessionsManager.forget(tx, friend: key)
            // A member of a group shared with still is: the reseal, when taken, seals for whoever is shared with then.
            _ = try ShareChange.queueReseal(tx, .ended(friend: id), now: now)
            messages.append(.friendRemoved(id: id))
        }
    }

    /// Moves a friend from `old` to `new` in place (PROTOCOL.md §9.1): record (name, colour,
    /// sharing, expiry, trust), server, cached location, conversation settings and message
    /// history; the X25519 key is converted for the new key.
    static func move(from old: Ed25519PublicKey, to new: Ed25519PublicKey, server: String, _ tx: borrowing WriteTransaction) throws {
        let friends = try tx.open(Tables.friends)
        guard var record = try friends.get(old) else { return }
        guard let x25519 = try? X25519PublicKey(ed25519: new) else { throw WireError.invalidPublicKeyID(new.base64URL) }
        record.server = server
        record.x25519PublicKey = Base64.encode(x25519.rawRepresentation)
        try friends.delete(old)
        try friends.put(new, record)
        let locations = try tx.open(Tables.locations)
        // A damaged cached position is not carried over (the next fetch refills it); the move itself must not fail on it.
        if let cached = try? locations.get(old) { try locations.put(new, cached) }
        try locations.delete(old)
        let conversations = try tx.open(Tables.conversations)
        if let settings = try conversations.get(old) { try conversations.put(new, settings) }
        try conversations.delete(old)
        let messages = try tx.open(Tables.messages)
        let ids = try tx.open(Tables.messageIDs)
        var history: [([UInt8], MessageRecord)] = []
        try messages.forEach(prefix: old.rawRepresentation) { key, message in
            history.append((key, message))
            return true
        }
        let newID = new.base64URL
        for (key, var message) in history {
            var moved = new.rawRepresentation
            moved.append(contentsOf: key.dropFirst(32))
            message.peer = newID
            try messages.delete(key)
            try messages.put(moved, message, expiringAt: message.disappearsAt)
            try ids.put(message.id, moved)
        }
    }

    // MARK: Getters

    /// Every friend, ordered by name, then id.
    /// - Throws: store errors.
    public nonisolated func list() throws -> [Friend] {
        let now = context.clock.now()
        return try context.database.read { tx in
            let prekeys = try tx.open(Tables.friendPrekeys)
            return try tx.open(Tables.friends).entries().map { entry in
                var friend = Friend(key: entry.key, record: entry.value, now: now)
                if try prekeys.get(entry.key)?.announcedAt != nil { friend.protection = .forwardSecret }
                return friend
            }
        }.sorted { ($0.name, $0.id) < ($1.name, $1.id) }
    }

    /// One friend, or nil.
    /// - Throws: ``WireError/invalidPublicKeyID(_:)``, store errors.
    public nonisolated func friend(id: String) throws -> Friend? {
        let key = try Ed25519PublicKey(base64URL: id)
        let now = context.clock.now()
        return try context.database.read { tx in
            guard let record = try tx.open(Tables.friends).get(key) else { return nil }
            var friend = Friend(key: key, record: record, now: now)
            if try tx.open(Tables.friendPrekeys).get(key)?.announcedAt != nil { friend.protection = .forwardSecret }
            return friend
        }
    }

    /// The cached X25519 keys of everyone we share with now (sharing on and not expired, not
    /// blocked), in key order.
    /// - Throws: store errors; ``StoreError/decodingFailed(table:type:reason:)`` for a damaged cache entry.
    public nonisolated func shareRecipients() throws -> [X25519PublicKey] {
        let now = context.clock.now()
        let me = try context.identity.get().id
        return try context.database.read { tx in Self.sharing(try Self.shareCandidates(in: tx, me: me), at: now) }.map(\.key)
    }

    /// The candidates shared with at `now`, each once: a friend shared with one by one whose share
    /// is running, or a member of a group shared with (PROTOCOL.md §11.7).
    static func sharing(_ candidates: [ShareCandidate], at now: UInt64) -> [(id: String, key: X25519PublicKey)] {
        let running = candidates.filter { $0.isSharing(at: now) }
        // Without groups nobody can appear twice.
        guard running.contains(where: \.viaGroup) else { return running.map { ($0.id, $0.key) } }
        var seen = Set<String>()
        return running.filter { seen.insert($0.id).inserted }.map { ($0.id, $0.key) }
    }

    /// Friends shared with one by one (``shareCandidates(in:)``) and members of groups shared with
    /// (``groupShareCandidates(in:me:)``, §11.7).
    static func shareCandidates(in tx: borrowing ReadTransaction, me: String) throws -> [ShareCandidate] {
        try shareCandidates(in: tx) + groupShareCandidates(in: tx, me: me)
    }

    /// A friend uploads may be sealed for, with what decides it over time: the friends table
    /// reduced to what sealing needs (``LocationManager`` keeps these per change stamp).
    struct ShareCandidate: Sendable {
        let id: String
        let key: X25519PublicKey
        /// The share's end (ms, exclusive), if it has one.
        let until: UInt64?
        /// Shared with as a member of a group (§11.7), not one by one.
        var viaGroup = false

        func isSharing(at now: UInt64) -> Bool { FriendRecord.isRunning(until: until, at: now) }
    }

    /// Every friend whose record shares (``FriendRecord/isSharing(at:)`` apart from the time):
    /// sharing on, not blocked, not in a conflict.
    /// - Throws: ``StoreError/decodingFailed(table:type:reason:)`` for a damaged cached X25519 key, store errors.
    static func shareCandidates(in tx: borrowing ReadTransaction) throws -> [ShareCandidate] {
        var candidates: [ShareCandidate] = []
        try tx.open(Tables.friends).forEach { key, record in
            guard record.sharesApartFromTime else { return true }
            guard let bytes = try? Base64.decode(record.x25519PublicKey), let x = try? X25519PublicKey(rawRepresentation: bytes) else {
                throw StoreError.decodingFailed(
                    table: Tables.friends.name, type: FriendRecord.storeTypeName,
                    reason: "cached X25519 key of \(key.base64URL.prefix(8))… is damaged")
            }
            candidates.append(ShareCandidate(id: key.base64URL, key: x, until: record.shareUntil))
            return true
        }
        return candidates
    }

    // MARK: Sharing through groups (§11.7)

    /// Friends shared with through groups (the groups table, §11.7): members (friends, not blocked, not in conflict) of
    /// every group the user is a member of and shares with.
    static func groupShareCandidates(in tx: borrowing ReadTransaction, me: String) throws -> [ShareCandidate] {
        let friends = try tx.open(Tables.friends)
        var seen = Set<String>()
        var candidates: [ShareCandidate] = []
        for (_, record) in try tx.open(Tables.groups).entries() where record.status == .member && record.sharing {
            for member in record.members where member.key != me && seen.insert(member.key).inserted {
                // A stored key that does not parse is nobody to share with.
                guard let key = try? Ed25519PublicKey(base64URL: member.key), let friend = try friends.get(key),
                    friend.trust != .blocked, friend.trust != .conflict,
                    let bytes = try? Base64.decode(friend.x25519PublicKey), let x = try? X25519PublicKey(rawRepresentation: bytes)
                else { continue }
                candidates.append(ShareCandidate(id: member.key, key: x, until: nil, viaGroup: true))
            }
        }
        return candidates
    }

    /// Everyone we fetch from (not blocked), as (id, server) pairs.
    /// - Throws: store errors.
    public nonisolated func fetchTargets() throws -> [RelayAPI.FetchTarget] {
        try context.database.read { tx in try Self.fetchTargets(in: tx) }
    }

    static func fetchTargets(in tx: borrowing ReadTransaction) throws -> [RelayAPI.FetchTarget] {
        try tx.open(Tables.friends).entries()
            .filter { $0.value.fetchFrom && $0.value.trust != .blocked }
            .map { RelayAPI.FetchTarget(id: $0.key.base64URL, server: $0.value.server) }
    }

    // MARK: Wiring

    let context: AppContext
    let reconciler: Reconciler<FriendsManagerReconcileMessage>

    init(context: AppContext, spine: UpdateSpine) {
        self.context = context
        reconciler = Reconciler(spine, as: AppUpdate.friends, from: \.friends, logger: context.logger)
    }
}
