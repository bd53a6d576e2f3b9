/// A group as hosts list it (PROTOCOL.md §11).
public struct GroupInfo: Sendable, Equatable {
    /// The group's id (b64u, 22 characters).
    public var id: String
    /// The effective name.
    public var name: String
    /// The effective members, in key order.
    public var members: [GroupMemberInfo]
    /// Whether the user is a member, left or was removed.
    public var status: GroupStatus
    /// Whether the user is an admin (may change the group).
    public var isAdmin: Bool
    /// Whether two admins changed the group at the same time (§11.4): the state shown is the safe
    /// side of both until the next change.
    public var inConflict: Bool
    /// The head's epoch (how many changes the group has seen).
    public var epoch: UInt32
    /// Whether the user shares positions with the group (§11.7).
    public var sharing: Bool
}

/// One member of a ``GroupInfo``.
public struct GroupMemberInfo: Sendable, Equatable {
    /// The member's id (b64u identity key).
    public var id: String
    /// The friend's display name; nil for the user and for members who are not the user's friends.
    public var name: String?
    /// Whether the member is an admin.
    public var isAdmin: Bool
    /// Whether this is the user.
    public var isSelf: Bool
    /// Whether the member is the user's friend (only friends' messages are read, §11.7).
    public var isFriend: Bool
}

/// What a change of a group queued.
public struct GroupChangeResult: Sendable, Equatable {
    /// The group after the change.
    public var group: GroupInfo
    /// The statement and sender-key envelopes queued in the outbox (send them now or let it retry).
    public var queued: [OutboxEntry]
    /// Members who are not the user's friends: they cannot be told (add them as friends).
    public var unreachable: [String]
}

/// A group message sealed and queued, one envelope per member.
public struct SentGroupMessage: Sendable, Equatable {
    /// The message as stored (status ``MessageStatus/queued``; ``MessageRecord/group`` set).
    public var message: MessageRecord
    /// One entry per member reached (kind `group-message`, reference = message id).
    public var queued: [OutboxEntry]
    /// Members who are not the user's friends: they get no copy.
    public var unreachable: [String]
}

/// What the groups manager tells the host, after the fact.
public enum GroupsManagerReconcileMessage: Sendable, Equatable, ReconcileMessage {
    /// The manager's name in its log lines and in the C ABI's update records (`"manager"`).
    public static let manager = "groups"

    /// The user was added to a group (or created one) by `by` (an admin's id).
    case joined(groupID: String, name: String, by: String)
    /// A group's effective state changed: members added and removed (ids), renamed or not.
    case changed(groupID: String, name: String, epoch: UInt32, added: [String], removed: [String], renamed: Bool)
    /// Two admins changed the group at the same time (§11.4): the safe side of both applies.
    case conflict(groupID: String, name: String)
    /// An admin removed the user from the group.
    case removed(groupID: String, name: String)
    /// The user left the group.
    case left(groupID: String, name: String)
    /// Sharing positions with the group was turned on or off.
    case sharingChanged(groupID: String, sharing: Bool)
    /// A membership statement was refused: the failure's code and why.
    case statementRefused(groupID: String, code: Int32, message: String)
    /// A dispatched action failed: the failure's stable code and its description.
    case errorOccurred(code: Int32, message: String)
}

/// Errors of groups. Codes 660–671, stable.
public enum GroupsManagerError: CoordsCoreError, Equatable {
    /// No group with this id (or name) is kept.
    case notFound(id: String)
    /// The user (or the sender) is not a member of the group's effective state.
    case notAMember(id: String)
    /// Only an admin may make this change.
    case notAnAdmin(id: String)
    /// The user keeps ``Groups/maximumGroups`` groups already (left and removed ones count until deleted).
    case tooManyGroups(maximum: Int)
    /// The members given cannot make this change (not friends, the user, twice, beyond 256, …).
    case invalidMembers(String)
    /// The text is longer than ``Groups/maximumTextBytes``.
    case messageTooLong(bytes: Int, maximum: Int)
    /// A statement that would make the user a member does not come from an admin friend, or is not
    /// above the epochs kept (§11.4 rule 2).
    case notInvited(String)
    /// A statement builds on a history this member pruned or never had (§11.4 rule 3).
    case staleStatement(epoch: UInt32)
    /// More than ``Groups/maximumForks`` statements for one epoch (§11.4 rule 5).
    case forkLimit(epoch: UInt32)
    /// A group message from a chain not received yet: held by the client until it arrives
    /// (bounded per sender and in time, §11.6).
    case unknownChain(String)
    /// A sender key names a chain already kept with another signing key (§11.5).
    case chainConflict(String)
    /// The group is still active: leave it before deleting it.
    case stillMember(id: String)
    /// A held group message was dropped: its sender key did not come within
    /// ``Groups/waitingKeep``, or its sender (or everyone) held more than the bound (§11.6).
    case waitingDropped(String)

    public var code: Int32 {
        switch self {
        case .notFound: 660
        case .notAMember: 661
        case .notAnAdmin: 662
        case .tooManyGroups: 663
        case .invalidMembers: 664
        case .messageTooLong: 665
        case .notInvited: 666
        case .staleStatement: 667
        case .forkLimit: 668
        case .unknownChain: 669
        case .chainConflict: 670
        case .stillMember: 671
        case .waitingDropped: 672
        }
    }

    public var description: String {
        switch self {
        case .notFound(let id): "no group \"\(id.prefix(40))\" (see `coords groups`)"
        case .notAMember(let id): "\(id.prefix(12))… is not a member of this group"
        case .notAnAdmin(let id): "only an admin may change group \(id.prefix(12))…; ask one of its admins"
        case .tooManyGroups(let maximum): "already \(maximum) groups, the most one keeps; delete a group you left first"
        case .invalidMembers(let why): "these members cannot make this change: \(why)"
        case .messageTooLong(let bytes, let maximum): "the message is \(bytes) bytes; at most \(maximum) fit in a group message"
        case .notInvited(let why): "refused group statement: \(why)"
        case .staleStatement(let epoch): "a group statement at epoch \(epoch) builds on a history this device no longer keeps: refused"
        case .forkLimit(let epoch): "more than 4 changes of one group claim epoch \(epoch): refused"
        case .unknownChain(let why): "a group message waits for its sender's key (\(why)); it is held on this device until the key arrives"
        case .chainConflict(let why): "refused sender key: \(why)"
        case .stillMember(let id): "you are still a member of group \(id.prefix(12))…; leave it first"
        case .waitingDropped(let why): "a group message whose sender key never came was dropped: \(why)"
        }
    }
}

/// Groups (PROTOCOL.md §11): circles of friends that share positions and talk as one.
///
/// - ``create(name:members:)``, ``add(groupID:members:)``, ``remove(groupID:members:)``,
///   ``leave(groupID:)``, ``rename(groupID:to:)`` and ``setAdmin(groupID:member:isAdmin:)`` sign a
///   membership statement and queue it, sealed 1:1, for every member; the user's sender key
///   follows to whoever needs it, all in the transaction that records the change.
/// - ``send(_:to:)`` seals a text once with the user's sender chain and queues one version-4
///   envelope per member.
/// - Incoming statements, sender keys and group messages arrive through
///   ``MessagesManager/processFetchResponse(_:)``, which hands them to this manager's rules.
/// - ``setSharing(groupID:_:)`` shares positions with the members (§11.7).
public actor GroupsManager {
    static let conversationLabel = Array("coords-group-conversation".utf8)

    /// Reconcile messages, after the change they describe was committed.
    public nonisolated var updates: Receiver<GroupsManagerReconcileMessage> { reconciler.updates }

    // MARK: Reading

    /// Every group kept, by name.
    /// - Throws: store errors.
    public nonisolated func groups() throws -> [GroupInfo] {
        let me = try context.identity.get().id
        let all = try context.database.read { tx -> [GroupInfo] in
            let friends = try tx.open(Tables.friends)
            var list: [GroupInfo] = []
            for (key, record) in try tx.open(Tables.groups).entries() {
                // A damaged id is not a group anyone can address.
                guard let id = try? GroupID(bytes: key) else { continue }
                list.append(try Self.info(id, record, me: me) { try friends.get($0) })
            }
            return list
        }
        return all.sorted { a, b in a.name == b.name ? a.id < b.id : a.name < b.name }
    }

    /// One group, by id (b64u) or by its exact name.
    /// - Throws: ``GroupsManagerError/notFound(id:)`` (also when two groups share the name), store errors.
    public nonisolated func group(_ idOrName: String) throws -> GroupInfo {
        let me = try context.identity.get().id
        let id = try resolve(idOrName)
        return try context.database.read { tx in
            guard let record = try tx.open(Tables.groups).get(id.bytes) else { throw GroupsManagerError.notFound(id: idOrName) }
            let friends = try tx.open(Tables.friends)
            return try Self.info(id, record, me: me) { try friends.get($0) }
        }
    }

    /// The id of the group named by id (b64u) or by its exact name, reading only group records.
    /// - Throws: ``GroupsManagerError/notFound(id:)`` (also when two groups share the name), store errors.
    nonisolated func resolve(_ idOrName: String) throws -> GroupID {
        try context.database.read { tx in
            let table = try tx.open(Tables.groups)
            // Not an id: then it is a name.
            if let id = try? GroupID(base64URL: idOrName), try table.contains(id.bytes) { return id }
            var found: [GroupID] = []
            for (key, record) in try table.entries() where record.name == idOrName {
                // A damaged id is not a group anyone can address.
                if let id = try? GroupID(bytes: key) { found.append(id) }
            }
            guard found.count == 1, let id = found.first else { throw GroupsManagerError.notFound(id: idOrName) }
            return id
        }
    }

    /// A group's messages in the order they were written (by `sentAt`; messages written in the
    /// same millisecond in the order they arrived), the last `limit` when given. A relay that
    /// delivers a sender's messages out of order, or one late, does not reorder the conversation.
    /// - Throws: ``GroupsManagerError/notFound(id:)``, store errors.
    public nonisolated func history(groupID: String, limit: Int? = nil) throws -> [MessageRecord] {
        let id = try resolve(groupID)
        let now = context.clock.now()
        let stored = try context.database.read { tx in
            try tx.open(Tables.messages).entries(prefix: Self.conversationKey(id)).map(\.value).filter { !$0.hasDisappeared(at: now) }
        }
        // Stable: ties keep the arrival order.
        let all = stored.enumerated().sorted { ($0.element.sentAt, $0.offset) < ($1.element.sentAt, $1.offset) }.map(\.element)
        return limit.map { Array(all.suffix(max(0, $0))) } ?? all
    }

    static func info(_ id: GroupID, _ record: GroupRecord, me: String, friend: (Ed25519PublicKey) throws -> FriendRecord?) throws -> GroupInfo {
        let members = try record.members.map { member -> GroupMemberInfo in
            // A stored key that does not parse is shown without a name.
            let friendRecord = try (try? Ed25519PublicKey(base64URL: member.key)).flatMap { try friend($0) }
            return GroupMemberInfo(
                id: member.key, name: friendRecord?.name, isAdmin: member.admin, isSelf: member.key == me, isFriend: friendRecord != nil)
        }
        return GroupInfo(
            id: id.base64URL, name: record.name, members: members, status: record.status, isAdmin: record.isAdmin(me),
            inConflict: record.inConflict, epoch: record.epoch, sharing: record.sharing)
    }

    /// The `messages` prefix of a group's conversation: SHA-256 of the label and the id.
    static func conversationKey(_ group: GroupID) -> [UInt8] { SHA256.hash(conversationLabel + group.bytes) }

    // MARK: Changing a group

    /// Creates a group with the user as its admin and `members` (friends' ids), signs its first
    /// statement and queues it for every member.
    /// - Throws: ``GroupsManagerError/invalidMembers(_:)``, ``GroupsManagerError/tooManyGroups(maximum:)``,
    ///   ``WireError/malformedGroupStatement(_:)`` (a bad name), ``WalletManagerError/noIdentity``, store errors.
    public func create(name: String, members: [String]) async throws -> GroupChangeResult {
        let identity = try context.identity.get()
        let group = try GroupID.random(using: context.random)
        return try await change(group, creating: true) { tx, _ in
            let keys = try Self.friendKeys(members, tx, identity: identity)
            return try GroupState(
                name: name, members: [GroupMember(key: identity.publicKey, isAdmin: true)] + keys.map { GroupMember(key: $0, isAdmin: false) })
        }
    }

    /// Adds friends to a group (admins only). They read only what is sent after they joined.
    /// - Throws: ``GroupsManagerError/notFound(id:)``, ``GroupsManagerError/notAnAdmin(id:)``,
    ///   ``GroupsManagerError/invalidMembers(_:)``, store errors.
    public func add(groupID: String, members: [String]) async throws -> GroupChangeResult {
        let identity = try context.identity.get()
        return try await change(try resolve(groupID)) { tx, before in
            let keys = try Self.friendKeys(members, tx, identity: identity)
            guard let fresh = Optional(keys.filter { !before.contains($0) }), !fresh.isEmpty else {
                throw GroupsManagerError.invalidMembers("every one of them is a member already")
            }
            return try GroupState(name: before.name, members: before.members + fresh.map { GroupMember(key: $0, isAdmin: false) })
        }
    }

    /// Removes members (admins only). Every remaining member replaces its sender key, so the
    /// removed read nothing sent after they processed the removal (§11.4).
    /// - Throws: ``GroupsManagerError/notFound(id:)``, ``GroupsManagerError/notAnAdmin(id:)``,
    ///   ``GroupsManagerError/invalidMembers(_:)`` (not members, the user — use ``leave(groupID:)`` —,
    ///   or no admin would be left), store errors.
    public func remove(groupID: String, members: [String]) async throws -> GroupChangeResult {
        let identity = try context.identity.get()
        return try await change(try resolve(groupID)) { _, before in
            var keys: [Ed25519PublicKey] = []
            for id in members {
                guard let key = try? Ed25519PublicKey(base64URL: id), before.contains(key) else {
                    throw GroupsManagerError.invalidMembers("\(id.prefix(12))… is not a member")
                }
                guard key != identity.publicKey else { throw GroupsManagerError.invalidMembers("to remove yourself, leave the group") }
                keys.append(key)
            }
            do {
                return try GroupState(name: before.name, members: before.members.filter { !keys.contains($0.key) })
            } catch {
                throw GroupsManagerError.invalidMembers("no admin would be left")
            }
        }
    }

    /// Renames a group (admins only).
    /// - Throws: ``GroupsManagerError/notFound(id:)``, ``GroupsManagerError/notAnAdmin(id:)``,
    ///   ``WireError/malformedGroupStatement(_:)`` (a bad name), store errors.
    public func rename(groupID: String, to name: String) async throws -> GroupChangeResult {
        try await change(try resolve(groupID)) { _, before in
            try GroupState(name: name, members: before.members)
        }
    }

    /// Makes a member an admin or not (admins only; one admin always remains).
    /// - Throws: ``GroupsManagerError/notFound(id:)``, ``GroupsManagerError/notAnAdmin(id:)``,
    ///   ``GroupsManagerError/invalidMembers(_:)``, store errors.
    public func setAdmin(groupID: String, member: String, isAdmin: Bool) async throws -> GroupChangeResult {
        try await change(try resolve(groupID)) { _, before in
            guard let key = try? Ed25519PublicKey(base64URL: member), before.contains(key) else {
                throw GroupsManagerError.invalidMembers("\(member.prefix(12))… is not a member")
            }
            do {
                return try GroupState(name: before.name, members: before.members.map { $0.key == key ? GroupMember(key: key, isAdmin: isAdmin) : $0 })
            } catch {
                throw GroupsManagerError.invalidMembers("no admin would be left")
            }
        }
    }

    /// Leaves a group: a statement without the user goes to the remaining members (the last admin
    /// makes the first remaining member an admin in it), then sending and sharing stop and the
    /// group's sender keys are erased. The history stays until ``delete(groupID:)``.
    /// - Throws: ``GroupsManagerError/notFound(id:)``, ``GroupsManagerError/notAMember(id:)``, store errors.
    public func leave(groupID: String) async throws -> GroupChangeResult {
        let identity = try context.identity.get()
        return try await change(try resolve(groupID), leaving: true) { _, before in
            let rest = before.members.filter { $0.key != identity.publicKey }
            if let left = before.removing(identity.publicKey) { return left }
            // The last admin leaves: the first remaining member becomes an admin in the same statement.
            guard let first = rest.first else { throw GroupsManagerError.invalidMembers("nobody else is in the group") }
            return try GroupState(name: before.name, members: [GroupMember(key: first.key, isAdmin: true)] + rest.dropFirst())
        }
    }

    /// Forgets a group the user left, was removed from or is the last member of (nobody is left to
    /// tell, and a last member cannot leave), with its history.
    /// - Throws: ``GroupsManagerError/notFound(id:)``, ``GroupsManagerError/stillMember(id:)``, store errors.
    public func delete(groupID: String) throws {
        let id = try resolve(groupID)
        let me = try context.identity.get().id
        try context.database.write { tx in
            let groups = try tx.open(Tables.groups)
            guard let record = try groups.get(id.bytes) else { throw GroupsManagerError.notFound(id: groupID) }
            guard record.status != .member || record.members.allSatisfy({ $0.key == me }) else {
                throw GroupsManagerError.stillMember(id: id.base64URL)
            }
            try Self.forgetStatements(tx, id)
            try Self.eraseChains(tx, id, members: record.members.map(\.key) + [me])
            for (key, message) in try tx.open(Tables.messages).entries(prefix: Self.conversationKey(id)) {
                try tx.open(Tables.messages).delete(key)
                try tx.open(Tables.messageIDs).delete(message.id)
            }
            try groups.delete(id.bytes)
        }
    }

    /// Shares positions with the group's members, or stops (§11.7), and queues the last fix sealed
    /// for the new set of readers at once (kind `reseal`; nil when nothing was shared yet or
    /// nothing changed).
    /// - Throws: ``GroupsManagerError/notFound(id:)``, ``GroupsManagerError/notAMember(id:)``,
    ///   the errors of ``LocationManager/prepareReseal(force:)``, store errors.
    @discardableResult
    public func setSharing(groupID: String, _ sharing: Bool) async throws -> OutboxEntry? {
        let me = try context.identity.get().id
        let id = try resolve(groupID)
        let changed = try reconciler.write(context.database) { tx, messages -> Bool in
            let groups = try tx.open(Tables.groups)
            guard var record = try groups.get(id.bytes) else { throw GroupsManagerError.notFound(id: groupID) }
            guard record.status == .member else { throw GroupsManagerError.notAMember(id: me) }
            guard record.sharing != sharing else { return false }
            record.sharing = sharing
            try groups.put(id.bytes, record)
            messages.append(.sharingChanged(groupID: id.base64URL, sharing: sharing))
            return true
        }
        return changed ? try await finish(queued: [], reseal: true).last : nil
    }

    /// Makes, stores and queues one statement: `make` turns the head state into the new one.
    private func change(
        _ group: GroupID, creating: Bool = false, leaving: Bool = false,
        _ make: @escaping (borrowing WriteTransaction, GroupState) throws -> GroupState
    ) async throws -> GroupChangeResult {
        let identity = try context.identity.get()
        let now = context.clock.now()
        let random = context.random
        var queuedIDs: [UInt64] = []
        var unreachable: [String] = []
        var reseal = false
        let info = try reconciler.write(context.database) { tx, messages -> GroupInfo in
            queuedIDs = []
            unreachable = []
            let groups = try tx.open(Tables.groups)
            let record = try groups.get(group.bytes)
            var heads: [GroupStatement] = []
            let before: GroupState
            if creating {
                guard try groups.count() < Groups.maximumGroups else { throw GroupsManagerError.tooManyGroups(maximum: Groups.maximumGroups) }
                before = try GroupState(name: "-", members: [GroupMember(key: identity.publicKey, isAdmin: true)])
            } else {
                guard let record, record.status == .member else { throw GroupsManagerError.notAMember(id: identity.id) }
                heads = try Self.heads(tx, group, record)
                guard let head = heads.first else { throw GroupsManagerError.notFound(id: group.base64URL) }
                // In a conflict, the next change builds on the candidate with the lowest hash (§11.4).
                before = head.state
                guard leaving || before.isAdmin(identity.publicKey) else { throw GroupsManagerError.notAnAdmin(id: group.base64URL) }
            }
            let after = try make(tx, before)
            guard creating || after != before else { throw GroupsManagerError.invalidMembers("nothing would change") }
            let head = heads.first
            let epoch = (head?.epoch).map { $0 + 1 } ?? 0  // a kept statement's epoch is below 2^32-1 (parser)
            let statement = try GroupStatement.make(
                group: group, epoch: epoch, previous: head?.hash ?? [UInt8](repeating: 0, count: 32), author: identity.signing, at: now,
                state: after)
            try tx.open(Tables.groupStatements).put(group.bytes + statement.hash, statement.bytes)
            // The statement (and up to three before it) to everyone in the old or the new state.
            let carried = try Self.carried(tx, group, newest: statement)
            let extra = JSONObject([("group", .string(group.base64URL)), ("statements", .array(carried.map { .string(Base64.encode($0.bytes)) }))])
            let recipients = Set(before.keys + after.keys).subtracting([identity.publicKey]).sorted { $0.base64URL < $1.base64URL }
            for key in recipients {
                // One id per envelope: a relay's mailbox ids are unique across recipients.
                let payload = MessagePayload(kind: "group-statement", id: try Envelope.newUUID(using: random), text: "", sentAt: now, extra: extra)
                guard let id = try Self.queue(tx, payload: payload, to: key, identity: identity, now: now, random: random) else {
                    unreachable.append(key.base64URL)
                    continue
                }
                queuedIDs.append(id)
            }
            var effects = Effects()
            let oldRecord = record
            let newRecord = try Self.recompute(tx, group, previous: record, now: now)
            if creating { effects.joined = true }
            try Self.apply(
                tx, group, old: oldRecord, new: newRecord, identity: identity, author: identity.publicKey, now: now, random: random,
                effects: &effects, messages: &messages)
            queuedIDs += effects.queued
            reseal = effects.reseal
            return try Self.info(group, try groups.get(group.bytes) ?? newRecord, me: identity.id) { try tx.open(Tables.friends).get($0) }
        }
        let queued = try await finish(queued: queuedIDs, reseal: reseal)
        return GroupChangeResult(group: info, queued: queued, unreachable: unreachable)
    }

    /// After a commit that queued envelopes (ids) and may have changed who a shared group's
    /// members are: tells the outbox's listeners, and queues the last fix sealed for the new
    /// readers (kind `reseal`, §11.7) when `reseal`.
    /// - Returns: the entries queued, the reseal last.
    func finish(queued ids: [UInt64], reseal: Bool) async throws -> [OutboxEntry] {
        reconciler.spine?.send(ids.map { .outbox(.queued(id: $0, kind: .message)) })
        var ids = ids
        if reseal, let upload = try await location.prepareReseal(force: true) {
            ids.append(try await outbox.enqueue(kind: .reseal, request: upload.request, reference: String(upload.fixTimestamp)))
        }
        return try outbox.entries(ids: ids)
    }

    /// Friends' keys from ids: each a friend, not the user, not blocked, no repeats.
    static func friendKeys(_ ids: [String], _ tx: borrowing WriteTransaction, identity: Identity) throws -> [Ed25519PublicKey] {
        let friends = try tx.open(Tables.friends)
        var keys: [Ed25519PublicKey] = []
        for id in ids {
            guard let key = try? Ed25519PublicKey(base64URL: id), let record = try friends.get(key) else {
                throw GroupsManagerError.invalidMembers("\(id.prefix(12))… is not a friend")
            }
            guard key != identity.publicKey else { throw GroupsManagerError.invalidMembers("you are in the group already") }
            guard record.trust != .blocked else { throw GroupsManagerError.invalidMembers("\(record.name) is blocked") }
            guard !keys.contains(key) else { throw GroupsManagerError.invalidMembers("\(record.name) is named twice") }
            keys.append(key)
        }
        guard keys.count < Groups.maximumMembers else {
            throw GroupsManagerError.invalidMembers("\(keys.count + 1) members; at most \(Groups.maximumMembers)")
        }
        return keys
    }

    /// Seals `payload` 1:1 for `key` and queues it; nil when `key` is not a friend (or blocked,
    /// or has no usable prekeys): they cannot be reached.
    static func queue(
        _ tx: borrowing WriteTransaction, payload: MessagePayload, to key: Ed25519PublicKey, identity: Identity, now: UInt64,
        random: any RandomSource
    ) throws -> UInt64? {
        guard let friend = try tx.open(Tables.friends).get(key), friend.trust != .blocked else { return nil }
        let request: PreparedRequest
        do {
            request = try SessionsManager.sealEnvelope(tx, payload: payload, to: key, identity: identity, now: now, random: random)
        } catch WireError.prekeysUnavailable {
            return nil
        }
        return try OutboxQueue.enqueue(tx, kind: .message, request: request, reference: payload.id, now: now)
    }

    // MARK: Statements (§11.4)

    /// What accepting statements leads to, gathered in the transaction.
    struct Effects {
        var joined = false
        var queued: [UInt64] = []
        var reseal = false
    }

    /// The kept statements of a group (read back without checking signatures again: they were
    /// verified when accepted, and the sealed store authenticates them since).
    static func kept(_ tx: borrowing WriteTransaction, _ group: GroupID) throws -> [GroupStatement] {
        try tx.open(Tables.groupStatements).entries(prefix: group.bytes).compactMap { _, bytes in
            try GroupStatement(storedBytes: bytes)
        }
    }

    /// The head statements, lowest hash first.
    static func heads(_ tx: borrowing WriteTransaction, _ group: GroupID, _ record: GroupRecord) throws -> [GroupStatement] {
        let table = try tx.open(Tables.groupStatements)
        return try record.heads.compactMap { hex -> GroupStatement? in
            // A damaged hash in the record names nothing.
            guard let hash = Hex.decode(hex), let bytes = try table.get(group.bytes + hash) else { return nil }
            return try GroupStatement(storedBytes: bytes)
        }
    }

    /// The newest statement and up to ``Groups/statementsCarried`` − 1 of its predecessors kept,
    /// oldest first.
    static func carried(_ tx: borrowing WriteTransaction, _ group: GroupID, newest: GroupStatement) throws -> [GroupStatement] {
        let table = try tx.open(Tables.groupStatements)
        var chain = [newest]
        while chain.count < Groups.statementsCarried, let last = chain.last, last.epoch > 0,
            let bytes = try table.get(group.bytes + last.previous)
        {
            chain.append(try GroupStatement(storedBytes: bytes))
        }
        return chain.reversed()
    }

    /// The record after the kept statements changed: the head and the effective state (§11.4).
    static func recompute(_ tx: borrowing WriteTransaction, _ group: GroupID, previous: GroupRecord?, now: UInt64) throws -> GroupRecord {
        let all = try kept(tx, group)
        guard let top = all.map(\.epoch).max() else { throw GroupsManagerError.notFound(id: group.base64URL) }
        // Prune epochs beyond the newest STATEMENTS_KEPT.
        let table = try tx.open(Tables.groupStatements)
        for statement in all where top - statement.epoch >= Groups.epochsKept { try table.delete(group.bytes + statement.hash) }
        let heads = all.filter { $0.epoch == top }.sorted { $0.hash.lexicographicallyPrecedes($1.hash) }
        guard let first = heads.first else { throw GroupsManagerError.notFound(id: group.base64URL) }
        let members = first.state.members.filter { member in heads.allSatisfy { $0.state.contains(member.key) } }.map { member in
            GroupMemberRecord(key: member.key.base64URL, admin: heads.allSatisfy { $0.state.isAdmin(member.key) })
        }
        var record =
            previous
            ?? GroupRecord(
                name: first.state.name, members: [], status: .member, heads: [], epoch: top, highestEpoch: top, sharing: false, joinedAt: now,
                changedAt: now, ownChain: nil)
        record.name = first.state.name
        record.members = members
        record.heads = heads.map { Hex.encode($0.hash) }
        record.epoch = top
        record.highestEpoch = max(record.highestEpoch, top)
        record.changedAt = now
        try tx.open(Tables.groups).put(group.bytes, record)
        return record
    }

    /// The consequences of a state change for the user (§11.4 "Effects"): standing, sender keys
    /// owed, chains erased, reconcile messages, whether shares must be sealed again.
    static func apply(
        _ tx: borrowing WriteTransaction, _ group: GroupID, old: GroupRecord?, new: GroupRecord, identity: Identity, author: Ed25519PublicKey,
        now: UInt64, random: any RandomSource, effects: inout Effects, messages: inout [GroupsManagerReconcileMessage]
    ) throws {
        let me = identity.id
        var record = new
        let groups = try tx.open(Tables.groups)
        let wasMember = effects.joined ? false : (old.map { $0.status == .member && $0.isMember(me) } ?? false)
        let oldKeys = Set((effects.joined ? [] : old?.members ?? []).map(\.key))
        let newKeys = Set(new.members.map(\.key))
        guard new.isMember(me) else {
            // Removed (or left): stop, erase the chains, keep the history.
            record.status = author == identity.publicKey ? .left : .removed
            if record.sharing { effects.reseal = true }
            record.sharing = false
            record.ownChain = nil
            try groups.put(group.bytes, record)
            try eraseChains(tx, group, members: Array(oldKeys.union(newKeys)) + [me])
            if wasMember || effects.joined {
                messages.append(record.status == .left ? .left(groupID: group.base64URL, name: new.name) : .removed(groupID: group.base64URL, name: new.name))
            }
            return
        }
        record.status = .member
        let added = new.members.map(\.key).filter { !oldKeys.contains($0) && $0 != me }
        let removed = (old?.members ?? []).map(\.key).filter { !newKeys.contains($0) }
        // Stored ids that do not parse are nobody to send to.
        let others = new.members.map(\.key).filter { $0 != me }.compactMap { try? Ed25519PublicKey(base64URL: $0) }
        if !wasMember {
            // Joined (created, invited or re-added): a fresh chain for every other member.
            let chain = try makeChain(tx, group, identity: identity, now: now, random: random, record: &record)
            try groups.put(group.bytes, record)
            effects.queued += try sendChain(tx, group, chain, to: others, identity: identity, now: now, random: random)
            messages.append(.joined(groupID: group.base64URL, name: new.name, by: author.base64URL))
            if record.sharing { effects.reseal = true }
            return
        }
        if !removed.isEmpty {
            // Someone left or was removed: a new chain for the rest, the removed members' chains erased.
            try eraseChains(tx, group, members: removed)
            let chain = try makeChain(tx, group, identity: identity, now: now, random: random, record: &record)
            try groups.put(group.bytes, record)
            effects.queued += try sendChain(tx, group, chain, to: others, identity: identity, now: now, random: random)
        } else if !added.isEmpty, let chain = try ownChain(tx, group, identity: identity, record: record) {
            // Someone joined: our current chain, at its current iteration, to them only.
            // Stored ids that do not parse are nobody to send to.
            let keys = added.compactMap { try? Ed25519PublicKey(base64URL: $0) }
            effects.queued += try sendChain(tx, group, chain, to: keys, identity: identity, now: now, random: random)
        }
        try groups.put(group.bytes, record)
        if record.sharing, !added.isEmpty || !removed.isEmpty { effects.reseal = true }
        let renamed = old.map { $0.name != new.name } ?? false
        if !added.isEmpty || !removed.isEmpty || renamed || old?.members != new.members {
            messages.append(.changed(groupID: group.base64URL, name: new.name, epoch: new.epoch, added: added, removed: removed, renamed: renamed))
        }
        if new.inConflict, old?.inConflict != true { messages.append(.conflict(groupID: group.base64URL, name: new.name)) }
    }

    /// Accepts the statements of one `group-statement` payload from `sender` (§11.4) in `tx`.
    /// - Returns: the effects to report after the commit.
    /// - Throws: store errors; a refused statement is a reconcile message, not an error.
    static func processStatements(
        _ tx: borrowing WriteTransaction, _ payload: MessagePayload, sender: Ed25519PublicKey, identity: Identity, now: UInt64,
        random: any RandomSource, messages: inout [GroupsManagerReconcileMessage]
    ) throws -> Effects {
        var effects = Effects()
        // A payload without a usable group id or statement list is refused as a whole, reported below.
        guard let groupText = payload.extra["group"]?.stringValue, let group = try? GroupID(base64URL: groupText),
            let list = payload.extra["statements"]?.arrayValue, (1...Groups.statementsCarried).contains(list.count)
        else {
            messages.append(
                .statementRefused(
                    groupID: "", code: WireError.malformedGroupStatement("").code, message: "a group-statement payload needs group and 1–4 statements"))
            return effects
        }
        var statements: [GroupStatement] = []
        for item in list {
            do {
                guard let text = item.stringValue else { throw WireError.malformedGroupStatement("a statement is a base64 string") }
                let statement = try GroupStatement(bytes: try Base64.decode(text, variant: .urlSafeNoPadding, field: "statement"))
                guard statement.group == group else { throw WireError.malformedGroupStatement("a statement of another group") }
                statements.append(statement)
            } catch {
                let failure = error as? any CoordsCoreError
                messages.append(.statementRefused(groupID: group.base64URL, code: failure?.code ?? 393, message: failure?.description ?? "\(error)"))
                return effects
            }
        }
        let groups = try tx.open(Tables.groups)
        let old = try groups.get(group.bytes)
        // Not a member now: only the newest statement that lists the user can make it one (rule 2).
        if old?.status != .member {
            guard let invitation = statements.last(where: { $0.state.contains(identity.publicKey) }) else {
                messages.append(.statementRefused(groupID: group.base64URL, code: 666, message: GroupsManagerError.notInvited("you are not in it").description))
                return effects
            }
            do {
                try join(tx, group, invitation, old: old, sender: sender, identity: identity)
            } catch let error as GroupsManagerError {
                messages.append(.statementRefused(groupID: group.base64URL, code: error.code, message: error.description))
                return effects
            }
            effects.joined = true
            // Re-added: the old preferences do not widen anything (sharing starts off, §9.3).
            let rejoined = old.map { previous -> GroupRecord in
                var record = previous
                record.status = .member
                record.sharing = false
                record.ownChain = nil
                return record
            }
            let record = try recompute(tx, group, previous: rejoined, now: now)
            try apply(
                tx, group, old: old, new: record, identity: identity, author: invitation.author, now: now, random: random, effects: &effects,
                messages: &messages)
            return effects
        }
        var accepted: GroupStatement?
        for statement in statements {
            do {
                if try accept(tx, group, statement) { accepted = statement }
            } catch let error as GroupsManagerError {
                messages.append(.statementRefused(groupID: group.base64URL, code: error.code, message: error.description))
            } catch let error as GroupStatement.Refusal {
                let failure: GroupsManagerError =
                    error == .notAMember ? .notAMember(id: statement.author.base64URL) : .notAnAdmin(id: group.base64URL)
                messages.append(.statementRefused(groupID: group.base64URL, code: failure.code, message: failure.description))
            }
        }
        // Statements waiting for these: tried again until none more fits.
        var progress = accepted != nil
        while progress {
            progress = false
            let pending = try tx.open(Tables.groupPending)
            for (key, bytes) in try pending.entries(prefix: group.bytes) {
                let statement = try GroupStatement(storedBytes: bytes)
                let fits: Bool
                do {
                    fits = try accept(tx, group, statement, retrying: true)
                } catch {
                    // A pending statement that no longer fits (stale, refused) is dropped.
                    try pending.delete(key)
                    continue
                }
                guard fits else { continue }
                try pending.delete(key)
                accepted = statement
                progress = true
            }
        }
        guard let accepted else { return effects }
        let record = try recompute(tx, group, previous: old, now: now)
        try apply(
            tx, group, old: old, new: record, identity: identity, author: accepted.author, now: now, random: random, effects: &effects, messages: &messages)
        return effects
    }

    /// Rule 2: makes `statement` the user's new starting point in `group`, forgetting what was kept.
    static func join(
        _ tx: borrowing WriteTransaction, _ group: GroupID, _ statement: GroupStatement, old: GroupRecord?, sender: Ed25519PublicKey,
        identity: Identity
    ) throws {
        guard statement.state.isAdmin(statement.author) else { throw GroupsManagerError.notInvited("its author is not an admin") }
        guard try tx.open(Tables.friends).get(statement.author) != nil, statement.author == sender else {
            throw GroupsManagerError.notInvited("its author is not the friend who sent it")
        }
        if let old {
            guard statement.epoch > old.highestEpoch else { throw GroupsManagerError.notInvited("epoch \(statement.epoch) is not above the last one kept") }
        } else {
            guard try tx.open(Tables.groups).count() < Groups.maximumGroups else { throw GroupsManagerError.tooManyGroups(maximum: Groups.maximumGroups) }
        }
        // One friend may not take every place: groups the user is in with the inviter as an admin are counted.
        let inviter = sender.base64URL
        var administered = 0
        try tx.open(Tables.groups).forEach { key, record in
            if key != group.bytes, record.status == .member, record.members.contains(where: { $0.key == inviter && $0.admin }) { administered += 1 }
            return true
        }
        guard administered < Groups.maximumGroupsPerInviter else {
            throw GroupsManagerError.notInvited(
                "\(inviter.prefix(8))… already made you a member of \(Groups.maximumGroupsPerInviter) groups they run, the most one friend may; leave one first"
            )
        }
        try forgetStatements(tx, group)
        try tx.open(Tables.groupStatements).put(group.bytes + statement.hash, statement.bytes)
    }

    /// Rules 1 and 3–6 for one statement of a group the user is a member of: true when it was
    /// accepted, false for a replay or when it waits for its predecessor.
    /// - Throws: ``GroupsManagerError`` (stale, fork limit), ``GroupStatement/Refusal``.
    static func accept(_ tx: borrowing WriteTransaction, _ group: GroupID, _ statement: GroupStatement, retrying: Bool = false) throws -> Bool {
        let table = try tx.open(Tables.groupStatements)
        let hash = statement.hash
        if try table.get(group.bytes + hash) != nil { return false }
        let all = try kept(tx, group)
        guard let previous = all.first(where: { $0.hash == statement.previous }), statement.epoch > 0, previous.epoch == statement.epoch - 1 else {
            let newest = all.map(\.epoch).max() ?? 0
            guard statement.epoch > newest else { throw GroupsManagerError.staleStatement(epoch: statement.epoch) }
            if !retrying { try hold(tx, group, statement) }
            return false
        }
        try statement.checkAuthority(over: previous.state)
        guard all.filter({ $0.epoch == statement.epoch }).count < Groups.maximumForks else { throw GroupsManagerError.forkLimit(epoch: statement.epoch) }
        try table.put(group.bytes + hash, statement.bytes)
        return true
    }

    /// Keeps a statement whose predecessor has not arrived (at most ``Groups/maximumPending``;
    /// beyond, the lowest epoch goes).
    static func hold(_ tx: borrowing WriteTransaction, _ group: GroupID, _ statement: GroupStatement) throws {
        let pending = try tx.open(Tables.groupPending)
        try pending.put(group.bytes + statement.hash, statement.bytes)
        var entries = try pending.entries(prefix: group.bytes).map { (key: $0.key, statement: try GroupStatement(storedBytes: $0.value)) }
        entries.sort { $0.statement.epoch < $1.statement.epoch }
        while entries.count > Groups.maximumPending, let lowest = entries.first {
            try pending.delete(lowest.key)
            entries.removeFirst()
        }
    }

    static func forgetStatements(_ tx: borrowing WriteTransaction, _ group: GroupID) throws {
        for table in [Tables.groupStatements, Tables.groupPending] {
            let handle = try tx.open(table)
            for (key, _) in try handle.entries(prefix: group.bytes) { try handle.delete(key) }
        }
    }

    // MARK: Sender chains (§11.5)

    static func chainKey(_ group: GroupID, _ member: Ed25519PublicKey, _ chain: UInt32) -> [UInt8] {
        var key = group.bytes + member.rawRepresentation
        key.appendBigEndian(chain)
        return key
    }

    /// The user's current chain: (id, record), if one was made.
    static func ownChain(
        _ tx: borrowing WriteTransaction, _ group: GroupID, identity: Identity, record: GroupRecord
    ) throws -> (id: UInt32, chain: SenderChainRecord)? {
        guard let id = record.ownChain, let chain = try tx.open(Tables.groupChains).get(chainKey(group, identity.publicKey, id)) else { return nil }
        return (id, chain)
    }

    /// A new own chain (random id, signing key and chain key); the previous own chains are erased.
    static func makeChain(
        _ tx: borrowing WriteTransaction, _ group: GroupID, identity: Identity, now: UInt64, random: any RandomSource, record: inout GroupRecord
    ) throws -> (id: UInt32, chain: SenderChainRecord) {
        let table = try tx.open(Tables.groupChains)
        let previous = try table.entries(prefix: group.bytes + identity.publicKey.rawRepresentation).map(\.key)
        var id: UInt32 = 0
        while id == 0 || previous.contains(chainKey(group, identity.publicKey, id)) {
            id = try ByteReader.bigEndian(UInt32.self, in: try random.bytes(4), at: 0)
        }
        for key in previous { try table.delete(key) }
        let signing = try Ed25519SigningKey.generate(using: random)
        let chain = SenderChainRecord(
            isOwn: true, created: now, chainKey: SecretBytes(copying: try random.bytes(32)), next: 0, signing: signing.seed)
        try table.put(chainKey(group, identity.publicKey, id), chain)
        record.ownChain = id
        return (id, chain)
    }

    /// Queues the `group-sender-key` payload of `chain` for each of `members` (friends only).
    static func sendChain(
        _ tx: borrowing WriteTransaction, _ group: GroupID, _ chain: (id: UInt32, chain: SenderChainRecord), to members: [Ed25519PublicKey],
        identity: Identity, now: UInt64, random: any RandomSource
    ) throws -> [UInt64] {
        guard !members.isEmpty else { return [] }
        let signing = try chain.chain.signingPublicKey()
        var queued: [UInt64] = []
        for member in members {
            let payload = MessagePayload(
                kind: "group-sender-key", id: try Envelope.newUUID(using: random), text: "", sentAt: now,
                extra: JSONObject([
                    ("group", .string(group.base64URL)), ("chain", .integer(UInt64(chain.id))), ("iteration", .integer(UInt64(chain.chain.next))),
                    ("chainKey", .string(Base64.encode(chain.chain.chainKey.copyBytes()))), ("signingKey", .string(signing.base64URL))
                ]))
            if let id = try queue(tx, payload: payload, to: member, identity: identity, now: now, random: random) { queued.append(id) }
        }
        return queued
    }

    /// Erases every chain of `members` (b64u ids or keys) in `group`.
    static func eraseChains(_ tx: borrowing WriteTransaction, _ group: GroupID, members: [String]) throws {
        let table = try tx.open(Tables.groupChains)
        for member in Set(members) {
            // A stored id that does not parse has no chains under it.
            guard let key = try? Ed25519PublicKey(base64URL: member) else { continue }
            for (chain, _) in try table.entries(prefix: group.bytes + key.rawRepresentation) { try table.delete(chain) }
        }
    }

    static func eraseChains(_ tx: borrowing WriteTransaction, _ group: GroupID, members: [Ed25519PublicKey]) throws {
        try eraseChains(tx, group, members: members.map(\.base64URL))
    }

    /// What became of a sender key.
    enum SenderKeyOutcome: Equatable {
        /// Stored, or ignored as an earlier copy of a chain kept.
        case stored
        /// For a group the user is not (yet) a member of: tried again at the end of the fetch,
        /// after the statements it carried, then ignored.
        case unknownGroup
        /// Refused, with the update that says why.
        case refused(GroupsManagerReconcileMessage)
    }

    /// Stores a received `group-sender-key` payload from `sender` (§11.5).
    static func processSenderKey(_ tx: borrowing WriteTransaction, _ payload: MessagePayload, sender: Ed25519PublicKey, now: UInt64) throws
        -> SenderKeyOutcome
    {
        let extra = payload.extra
        // Any field missing or malformed makes the whole payload a refusal, reported below.
        guard let groupText = extra["group"]?.stringValue, let group = try? GroupID(base64URL: groupText),
            let chainNumber = extra["chain"]?.uint64Value, let chainID = UInt32(exactly: chainNumber), chainID != 0,
            let iterationNumber = extra["iteration"]?.uint64Value, let iteration = UInt32(exactly: iterationNumber),
            let keyText = extra["chainKey"]?.stringValue, let keyBytes = try? Base64.decode(keyText, variant: .urlSafeNoPadding, field: "chainKey"),
            keyBytes.count == 32, let signingText = extra["signingKey"]?.stringValue, let signing = try? Ed25519PublicKey(base64URL: signingText)
        else {
            let error = GroupsManagerError.chainConflict("not a group-sender-key payload (group, chain, iteration, chainKey, signingKey)")
            return .refused(.statementRefused(groupID: "", code: error.code, message: error.description))
        }
        guard let record = try tx.open(Tables.groups).get(group.bytes), record.status == .member else { return .unknownGroup }
        let table = try tx.open(Tables.groupChains)
        let key = chainKey(group, sender, chainID)
        let received = SenderChainRecord(
            isOwn: false, created: now, chainKey: SecretBytes(copying: keyBytes), next: iteration, signing: SecretBytes(copying: signing.rawRepresentation))
        if let existing = try table.get(key) {
            guard existing.signing.copyBytes() == signing.rawRepresentation else {
                let error = GroupsManagerError.chainConflict("chain \(chainID) of \(sender.base64URL.prefix(8))… is kept with another signing key")
                return .refused(.statementRefused(groupID: group.base64URL, code: error.code, message: error.description))
            }
            // A chain only moves forward: an earlier copy replaces it only if nothing was opened yet.
            guard iteration < existing.next, !existing.opened else { return .stored }
        }
        try table.put(key, received)
        // At most CHAINS_KEPT chains per member and group: the oldest go.
        var chains = try table.entries(prefix: group.bytes + sender.rawRepresentation)
        chains.sort { $0.value.created < $1.value.created }
        while chains.count > Groups.chainsKept, let oldest = chains.first {
            try table.delete(oldest.key)
            chains.removeFirst()
        }
        return .stored
    }

    // MARK: Group messages (§11.6)

    /// Opens a version-4 envelope from friend `sender` in `tx`, advances the chain and stores the
    /// message (§11.6). Nothing is written unless the message opens.
    /// - Throws: ``GroupsManagerError/unknownChain(_:)`` (leave it in the mailbox),
    ///   ``GroupsManagerError/notAMember(id:)``, ``WireError`` (signatures, tampering, duplicates,
    ///   gaps), store errors.
    /// - Parameter cache: group records and sender chains read (and chains advanced) so far in
    ///   this transaction: a fetch of many messages of one group reads its record and each chain
    ///   once and writes each chain once (``FetchCache/flush(_:)``, before anything else touches them).
    static func openGroupMessage(
        _ tx: borrowing WriteTransaction, _ envelope: Envelope, sender: Ed25519PublicKey, identity: Identity, now: UInt64,
        policy: NotificationPolicy = NotificationPolicy(), cache: inout FetchCache, memo: SignatureMemo = SignatureMemo()
    ) throws -> MessageRecord {
        let message = try envelope.groupMessage(as: identity.signing, from: sender, now: now / 1000, memo: memo)
        let known: GroupRecord?
        if let cached = cache.records[message.group] {
            known = cached
        } else {
            known = try tx.open(Tables.groups).get(message.group.bytes)
            if let known { cache.records[message.group] = known }
        }
        guard let record = known, record.status == .member, record.isMember(identity.id)
        else { throw GroupsManagerError.notAMember(id: identity.id) }
        guard record.isMember(sender.base64URL) else { throw GroupsManagerError.notAMember(id: sender.base64URL) }
        let key = chainKey(message.group, sender, message.chain)
        guard var chain = try cache.chains[key] ?? tx.open(Tables.groupChains).get(key), !chain.isOwn else {
            throw GroupsManagerError.unknownChain("chain \(message.chain) of \(sender.base64URL.prefix(8))…")
        }
        try message.verify(sender: sender, signingKey: try chain.signingPublicKey(), memo: memo)
        let messageKey: SecretBytes
        if let index = chain.skipped.firstIndex(where: { $0.iteration == message.iteration }) {
            messageKey = chain.skipped[index].key
            chain.skipped.remove(at: index)
        } else {
            guard message.iteration >= chain.next else { throw WireError.duplicateMessage }
            let gap = UInt64(message.iteration - chain.next)  // ≥ 0: checked above
            guard gap <= UInt64(Groups.maximumSkippedKeys) else { throw WireError.tooManySkipped(gap: gap) }
            var current = chain.chainKey
            var iteration = chain.next
            while iteration < message.iteration {
                let (next, skippedKey) = try SenderChain.step(current)
                chain.skipped.append(SenderChainRecord.Skipped(iteration: iteration, storedAt: now, key: skippedKey))
                current = next
                iteration += 1
            }
            let (next, key) = try SenderChain.step(current)
            messageKey = key
            chain.chainKey = next
            chain.next = message.iteration == .max ? .max : message.iteration + 1
        }
        let cutoff = now.subtractingSaturating(Groups.skippedKeyKeep)
        chain.skipped = Array(chain.skipped.filter { $0.storedAt > cutoff }.suffix(Groups.maximumSkippedKeys))
        let plaintext = try message.open(sender: sender, messageKey: messageKey)
        let payload = try MessagePayload(json: plaintext)
        guard Envelope.isUUID(payload.id) else { throw WireError.malformedGroupMessage("the message id is not a UUID") }
        let messageID = payload.id.lowercased()
        // Every member's copy carries the same message in its own envelope: one copy counts.
        guard try !tx.open(Tables.messageIDs).contains(messageID) else { throw WireError.duplicateMessage }
        chain.opened = true
        cache.chains[key] = chain
        guard payload.text.utf8.count <= Groups.maximumTextBytes else {
            throw GroupsManagerError.messageTooLong(bytes: payload.text.utf8.count, maximum: Groups.maximumTextBytes)
        }
        let stored = MessageRecord(
            id: messageID, peer: sender.base64URL, outgoing: false, kind: payload.kind, text: payload.text, sentAt: payload.sentAt,
            storedAt: now, status: .received, disappearsAt: nil, group: message.group.base64URL,
            notify: policy.shouldNotify(kind: payload.kind, mutedUntil: record.mutedUntil, at: now),
            file: payload.kind == FileAttachment.kind ? try? FileAttachment(payload: payload) : nil)  // nil: malformed, kept without it
        try store(stored, group: message.group, tx)
        try tx.open(Tables.messageIDs).put(envelope.id.lowercased(), [])
        return stored
    }

    /// The two signatures of every group message in a mailbox answer (the envelope's, by the key it
    /// names, and the chain's, by the sender chain's key as stored), checked on all cores before the
    /// messages are opened one by one (which needs them in order). Only a cache: a message whose
    /// chain arrives later in the answer, or that names another key, is checked on the spot.
    static func signatureMemo(_ envelopes: [Envelope?], _ tx: borrowing ReadTransaction) throws -> SignatureMemo {
        var checks: [SignatureMemo.Check] = []
        var signingKeys: [[UInt8]: Ed25519PublicKey] = [:]
        let chains = try tx.open(Tables.groupChains)
        for case let envelope? in envelopes {
            // Anything that does not parse is refused with its reason by the loop that opens them.
            guard envelope.version == Envelope.groupProtocolVersion,
                let check = envelope.signatureCheck, let sender = try? Ed25519PublicKey(base64URL: envelope.senderKey ?? ""),
                let payload = try? Base64.decode(envelope.sealedPayloadBase64, variant: .standard, field: "sealedPayloadBase64"),
                let message = try? GroupMessage(bytes: payload)
            else { continue }
            checks.append(check)
            let key = chainKey(message.group, sender, message.chain)
            if signingKeys[key] == nil, let chain = try chains.get(key), !chain.isOwn {
                signingKeys[key] = try? chain.signingPublicKey()  // nil: checked on the spot, which refuses it
            }
            if let signingKey = signingKeys[key] { checks.append(message.signatureCheck(sender: sender, signingKey: signingKey)) }
        }
        return SignatureMemo(verifying: checks)
    }

    /// What ``openGroupMessage(_:_:sender:identity:now:policy:cache:memo:)`` keeps between the messages of one
    /// fetch. Chains changed here are written by ``flush(_:)``: the caller flushes before anything
    /// else reads or writes chains or group records in the same transaction, and at its end.
    struct FetchCache {
        var records: [GroupID: GroupRecord] = [:]
        /// Advanced chains not written yet, by store key.
        var chains: [[UInt8]: SenderChainRecord] = [:]

        /// Writes the advanced chains and forgets everything (statements and keys may change them next).
        mutating func flush(_ tx: borrowing WriteTransaction) throws {
            if !chains.isEmpty {
                let table = try tx.open(Tables.groupChains)
                for (key, chain) in chains { try table.put(key, chain) }
            }
            chains = [:]
            records = [:]
        }
    }

    /// Stores a group message under the group's conversation and indexes its id.
    static func store(_ record: MessageRecord, group: GroupID, _ tx: borrowing WriteTransaction) throws {
        let settings = try tx.open(Tables.settings)
        let sequence = try settings.get(SettingKey.messageNextSequence) ?? 1
        guard sequence < .max else { throw StoreError.encodingFailed(type: "message sequence", reason: "the message sequence numbers are used up") }
        try settings.put(SettingKey.messageNextSequence, sequence + 1)
        var key = conversationKey(group)
        key.appendBigEndian(sequence)
        try tx.open(Tables.messages).put(key, record)
        try tx.open(Tables.messageIDs).put(record.id, key)
    }

    /// Seals `text` once with the user's sender chain and queues one version-4 envelope per member
    /// who is a friend (§11.6), in one transaction with the stored message.
    /// - Throws: ``GroupsManagerError/notFound(id:)``, ``GroupsManagerError/notAMember(id:)``,
    ///   ``GroupsManagerError/messageTooLong(bytes:maximum:)``, store and crypto errors.
    public func send(_ text: String, to groupID: String) async throws -> SentGroupMessage {
        guard text.utf8.count <= Groups.maximumTextBytes else {
            throw GroupsManagerError.messageTooLong(bytes: text.utf8.count, maximum: Groups.maximumTextBytes)
        }
        return try await send(to: groupID) { id, now in MessagePayload(kind: "text", id: id, text: text, sentAt: now) }
    }

    /// Announces a finished upload (PROTOCOL.md §12.3) to a group: a `file` message with
    /// `caption` as its text, sealed and queued like ``send(_:to:)``. Every member downloads the
    /// object from our relay.
    /// - Throws: ``WireError/objectMismatch(_:)`` (the upload has not finished),
    ///   ``WireError/malformedFile(_:)`` (type or name), and as ``send(_:to:)``.
    public func sendFile(_ upload: ObjectUpload, type: String, name: String, caption: String, to groupID: String) async throws
        -> SentGroupMessage
    {
        guard caption.utf8.count <= Groups.maximumTextBytes else {
            throw GroupsManagerError.messageTooLong(bytes: caption.utf8.count, maximum: Groups.maximumTextBytes)
        }
        let attachment = try upload.attachment(type: type, name: name)
        return try await send(to: groupID) { id, now in attachment.payload(id: id, caption: caption, sentAt: now) }
    }

    /// Seals the payload `make` builds (from the message id and the time) with our sender chain
    /// and queues one envelope per member who is a friend, in one transaction with the stored message.
    private func send(to groupID: String, _ make: (String, UInt64) -> MessagePayload) async throws -> SentGroupMessage {
        let identity = try context.identity.get()
        let group = try resolve(groupID)
        let now = context.clock.now()
        let random = context.random
        let id = try Envelope.newUUID(using: random)
        var unreachable: [String] = []
        var queued: [OutboxEntry] = []
        let stored = try context.database.write { tx -> MessageRecord in
            unreachable = []
            let groups = try tx.open(Tables.groups)
            guard var record = try cachedRecord(tx, group), record.status == .member, record.isMember(identity.id) else {
                throw GroupsManagerError.notAMember(id: identity.id)
            }
            let existing = try Self.ownChain(tx, group, identity: identity, record: record)
            var (chainID, chain) = try existing ?? Self.makeChain(tx, group, identity: identity, now: now, random: random, record: &record)
            if existing == nil { try groups.put(group.bytes, record) }
            guard chain.next < .max else { throw GroupsManagerError.invalidMembers("the sender chain is used up; leave and rejoin") }
            let (next, messageKey) = try SenderChain.step(chain.chainKey)
            let payload = make(id, now)
            let unsigned = try GroupMessage.sealUnsigned(
                payload.json, sender: identity.publicKey, group: group, chain: chainID, iteration: chain.next, epoch: record.epoch,
                messageKey: messageKey)
            let chainSigner = try signer(for: Self.chainKey(group, identity.publicKey, chainID), seed: chain.signing)
            chain.chainKey = next
            chain.next += 1
            var copies: [(envelopeID: String, mailbox: Mailbox)] = []
            let mailboxes = try mailboxView(tx)
            // Each copy has its own envelope id (mailbox ids are unique across recipients); the message id is the payload's.
            var ids = try Envelope.newUUIDs(record.members.count, using: random).makeIterator()
            copies.reserveCapacity(record.members.count)
            for member in record.members where member.key != identity.id {
                // A non-friend or a blocked friend gets no copy (reported as unreachable).
                guard let mailbox = mailboxes[member.key], let envelopeID = ids.next() else {
                    unreachable.append(member.key)
                    continue
                }
                copies.append((envelopeID, mailbox))
            }
            let message = MessageRecord(
                id: id, peer: identity.id, outgoing: true, kind: payload.kind, text: payload.text, sentAt: now, storedAt: now,
                status: copies.isEmpty ? .sent : .queued, disappearsAt: nil, group: group.base64URL,
                file: try? FileAttachment(payload: payload))  // nil for a text
            try tx.open(Tables.groupChains).put(Self.chainKey(group, identity.publicKey, chainID), chain)
            try Self.store(message, group: group, tx)
            // The copies wrap the one chain-signed message; each copy's envelope is signed on
            // this thread, in turn (the core starts no thread of its own).
            let batch = try GroupEnvelopeBatch(
                unsigned.signed(by: chainSigner).bytes, from: identity.signing, createdAt: now / 1000,
                expiresAt: now / 1000 + SessionsManager.envelopeLifetimeSeconds)
            let headers = [PreparedRequest.Header(name: "Content-Type", value: "application/json")]
            queued = try OutboxQueue.enqueue(tx, count: copies.count) { add in
                for copy in copies {
                    let body = batch.body(id: copy.envelopeID, recipientID: copy.mailbox.recipientID)
                    let request = PreparedRequest(url: copy.mailbox.url, method: "POST", headers: headers, body: body)
                    try add(OutboxItem(kind: .groupMessage, request: request, nextAttemptAt: now, createdAt: now, reference: id))
                }
            }
            return message
        }
        reconciler.spine?.send(queued.map { .outbox(.queued(id: $0.id, kind: .groupMessage)) })
        return SentGroupMessage(message: stored, queued: queued, unreachable: unreachable)
    }

    /// `group`'s record as of `tx`, decoded again only when the groups table's change stamp moved
    /// (a send to a big group decodes its member list once, not per message).
    private func cachedRecord(_ tx: borrowing WriteTransaction, _ group: GroupID) throws -> GroupRecord? {
        let stamp = try tx.changeStamp(of: Tables.groups)
        if let cache = records, cache.stamp == stamp, let record = cache.byGroup[group] { return record }
        guard let record = try tx.open(Tables.groups).get(group.bytes) else { return nil }
        var byGroup = records?.stamp == stamp ? records?.byGroup ?? [:] : [:]
        byGroup[group] = record
        records = (stamp, byGroup)
        return record
    }

    /// The signing key of an own chain, derived from its seed once (a derivation costs as much as
    /// a signature). Kept per chain while its seed stays the same; at most 64 are kept.
    private func signer(for chain: [UInt8], seed: SecretBytes) throws -> Ed25519SigningKey {
        if let known = signers[chain], known.seed == seed { return known.key }
        let key = try Ed25519SigningKey(seed: seed)
        if signers.count >= 64 { signers.removeAll() }
        signers[chain] = (seed, key)
        return key
    }

    /// Where a member's copy goes: their relay's mailbox URL and their peer id (§7.1).
    struct Mailbox: Sendable {
        let url: String
        let recipientID: String
    }

    /// Friends who can receive group copies (not blocked) → their ``Mailbox``, read again only
    /// when the friends table's change stamp moved (a send to 256 members decodes no friend and
    /// hashes no key).
    private func mailboxView(_ tx: borrowing WriteTransaction) throws -> [String: Mailbox] {
        let stamp = try tx.changeStamp(of: Tables.friends)
        if let view = mailboxes, view.stamp == stamp { return view.boxes }
        var boxes: [String: Mailbox] = [:]
        try tx.open(Tables.friends).forEach { key, record in
            // A friend whose relay URL does not parse has no mailbox to post to (unreachable).
            if record.trust != .blocked, let url = try? RelayAPI.endpoint(server: record.server, path: "/v1/relay/messages") {
                boxes[key.base64URL] = Mailbox(url: url, recipientID: PeerID(key).hex)
            }
            return true
        }
        mailboxes = (stamp, boxes)
        return boxes
    }

    // MARK: Wiring

    let context: AppContext
    let reconciler: Reconciler<GroupsManagerReconcileMessage>
    let outbox: OutboxManager
    let location: LocationManager
    /// ``mailboxView(_:)`` as of a change stamp of the friends table.
    private var mailboxes: (stamp: UInt64, boxes: [String: Mailbox])?
    /// ``cachedRecord(_:_:)``'s records as of a change stamp of the groups table.
    private var records: (stamp: UInt64, byGroup: [GroupID: GroupRecord])?
    /// ``signer(for:seed:)``'s keys by chain (store key).
    private var signers: [[UInt8]: (seed: SecretBytes, key: Ed25519SigningKey)] = [:]

    init(context: AppContext, outbox: OutboxManager, location: LocationManager, spine: UpdateSpine) {
        self.context = context
        self.outbox = outbox
        self.location = location
        reconciler = Reconciler(spine, as: AppUpdate.groups, from: \.groups, logger: context.logger)
    }
}
