extension MessagesManager {
    /// The inbox: a mailbox answer (§7.3) classified once, item by item, and each item handed to the
    /// domain that owns it, in one write transaction (``MessagesManager/processFetchResponse(_:)``).
    ///
    /// ```
    /// packet ──► classify ──► InboxItem ──► handle
    ///              parse, duplicate?,          .message / .file / .unknownKind → stored (+ receipt owed)
    ///              whose?, blocked?,           .receipt                      → our message delivered
    ///              open (session or v2)        .sessionReset                 → reported
    ///                                          .rotation / .retiredRotation  → friend moved, or a conflict (§9)
    ///                                          .groupStatement / .senderKey  → GroupsManager (§11)
    ///                                          .groupMessage                 → opened, or held for its key (§11.6)
    ///                                          .refused / .duplicate          → reported
    /// ```
    ///
    /// Everything one answer produces lives in one ``InboxPass`` made inside the transaction's body:
    /// a body that runs again (the store grew) starts from a new pass, and nothing is reset by hand.
    /// Items that must wait (a group message before its sender key, a key before its group's
    /// statement) wait in the pass until the whole answer was seen, then in the bounded held set
    /// (`GroupWaiting.swift`), which never blocks the others.
    enum InboxItem {
        /// A 1:1 payload opened from a friend: a text, a file, or a kind this version does not know.
        case message(Opened)
        /// A delivery receipt for one of our messages.
        case receipt(Opened)
        /// A friend lost our session and starts a new one (§10.8).
        case sessionReset(Opened)
        /// A friend's rotation statement (§9.1).
        case rotation(Opened)
        /// A second rotation statement from a key a friend already rotated away from (§9.2).
        case retiredRotation(id: String, payload: MessagePayload, retired: Ed25519PublicKey)
        /// A group membership statement (§11.4).
        case groupStatement(Opened)
        /// A group sender key (§11.5).
        case senderKey(Opened)
        /// A group message (§11.6): opened with the sender's chain, or held until its key comes.
        case groupMessage(Envelope, sender: Ed25519PublicKey)
        /// Refused for good (unparsable, not a friend's, blocked, forged, a broken session: `broken`
        /// names the friend whose session must be reset). `seen`: the envelope id recorded as seen.
        case refused(MessageRejection, broken: String? = nil, seen: String? = nil)
        /// An envelope (or message) already kept.
        case duplicate(id: String)

        /// A 1:1 envelope opened: its id (lowercased), the payload, the friend, and whether opening
        /// it started a new session (a reset, §10.8).
        struct Opened {
            let id: String
            let payload: MessagePayload
            let sender: Ed25519PublicKey
            let reset: Bool
        }
    }

    /// What one mailbox answer does inside its transaction: the friends and keys it is judged
    /// against, and everything it produces (the outcome, updates for any manager, what is owed after
    /// the commit). Made fresh by each run of the transaction's body.
    struct InboxPass {
        let identity: Identity
        let now: UInt64
        let random: any RandomSource
        let policy: NotificationPolicy
        let memo: SignatureMemo
        var outcome = MessagesOutcome()
        /// Updates for any manager, sent after the commit (``WriteEffects``).
        var updates: [AppUpdate] = []
        /// Envelope ids to acknowledge on the relay, each once, in order.
        var ackIDs: [String] = []
        private var acked = Set<String>()
        /// Delivery receipts owed after the commit: (friend, message id).
        var receiptsFor: [(friendID: String, messageID: String)] = []
        /// Friends whose session is lost: reset after the commit (§10.8).
        var brokenFriends: [String] = []
        /// Envelopes the group changes queued, and whether a shared group's readers changed (§11.7).
        var groupQueued: [UInt64] = []
        var groupReseal = false
        private var byPeerID: [String: (key: Ed25519PublicKey, record: FriendRecord)] = [:]
        private var retiredByPeerID: [String: Ed25519PublicKey] = [:]
        private var groupCache = GroupsManager.FetchCache()
        /// Sender keys for a group not known yet, and group messages whose chain has not come: tried
        /// again after the whole answer, since a statement or key later in it may be what they need.
        private var laterKeys: [(MessagePayload, Ed25519PublicKey)] = []
        private var laterMessages: [(Envelope, Ed25519PublicKey)] = []
        /// A sender key or statement came: held messages are tried again after this answer.
        private var groupChanged = false

        init(_ tx: borrowing WriteTransaction, identity: Identity, now: UInt64, random: any RandomSource, memo: SignatureMemo) throws {
            self.identity = identity
            self.now = now
            self.random = random
            self.memo = memo
            policy = try NotificationPolicy.stored(tx)
            for (key, record) in try tx.open(Tables.friends).entries() { byPeerID[PeerID(key).hex] = (key, record) }
            for (key, _) in try tx.open(Tables.retiredKeys).entries() { retiredByPeerID[PeerID(key).hex] = key }
        }

        // MARK: The loop

        /// Takes one packet: acknowledged (when it has an envelope id), classified, handed to its owner.
        mutating func take(_ packet: JSONValue, parsed: Envelope?, _ tx: borrowing WriteTransaction) throws {
            let rawID = packet.objectValue?["id"]?.stringValue ?? ""
            if Envelope.isUUID(rawID), acked.insert(rawID.lowercased()).inserted { ackIDs.append(rawID.lowercased()) }
            try handle(try classify(packet, parsed: parsed, rawID: rawID, tx), rawID: rawID, tx)
        }

        /// After the last packet: what waited for the whole answer, and the held set (§11.6).
        mutating func finish(_ tx: borrowing WriteTransaction) throws {
            try groupCache.flush(tx)
            for (payload, sender) in laterKeys {
                // Still for a group we are not in: ignored (§11.5).
                switch try GroupsManager.processSenderKey(tx, payload, sender: sender, now: now) {
                case .stored: groupChanged = true
                case .unknownGroup: break
                case .refused(let update): updates.append(.groups(update))
                }
            }
            // Messages held from earlier answers: opened when their key came, dropped when held too long.
            if groupChanged {
                let retried = try GroupsManager.retryWaiting(tx, identity: identity, now: now, policy: policy, cache: &groupCache)
                outcome.received += retried.opened
                for rejection in retried.refused { try release(rejection, tx) }
            }
            for dropped in try GroupsManager.expireWaiting(tx, now: now) { try release(dropped.rejection, tx) }
            for (envelope, sender) in laterMessages {
                let id = envelope.id.lowercased()
                do {
                    outcome.received.append(
                        try GroupsManager.openGroupMessage(tx, envelope, sender: sender, identity: identity, now: now, policy: policy, cache: &groupCache))
                } catch GroupsManagerError.unknownChain {
                    // Its sender key may still be on its way: held here (bounded), acknowledged on the relay.
                    try groupCache.flush(tx)
                    for dropped in try GroupsManager.holdWaiting(tx, envelope, sender: sender, now: now) { try release(dropped.rejection, tx) }
                    outcome.waiting.append(id)
                } catch {
                    refuse(Self.rejection(id, error))
                }
            }
            try groupCache.flush(tx)
            if !outcome.received.isEmpty { updates.append(.messages(.messagesReceived(outcome.received))) }
        }

        // MARK: Classifying

        /// What a packet is, opened when it is a friend's 1:1 envelope (its session advances in `tx`).
        private mutating func classify(_ packet: JSONValue, parsed: Envelope?, rawID: String, _ tx: borrowing WriteTransaction) throws -> InboxItem {
            let envelope: Envelope
            do { envelope = try parsed ?? Envelope(json: packet) } catch {
                return .refused(MessageRejection(id: rawID, code: (error as? WireError)?.code ?? 360, reason: "\(error)"))
            }
            let id = envelope.id.lowercased()
            if try tx.open(Tables.messageIDs).contains(id) { return .duplicate(id: id) }
            let peer = envelope.senderID.lowercased()
            if byPeerID[peer] == nil, let retired = retiredByPeerID[peer] {
                // A key a friend rotated away from: only a second rotation statement counts (a conflict, §9.2).
                try tx.open(Tables.messageIDs).put(id, [])
                // Anything from a retired key that does not open as a rotation statement is refused, with its reason.
                guard let payload = try? MessagePayload(json: try envelope.open(as: identity.signing, from: retired, now: now / 1000)),
                    payload.kind == "rotation"
                else {
                    return .refused(
                        MessageRejection(id: rawID, code: WireError.retiredKey(id: "").code, reason: WireError.retiredKey(id: retired.base64URL).description))
                }
                return .retiredRotation(id: id, payload: payload, retired: retired)
            }
            guard let sender = byPeerID[peer] else {
                return .refused(
                    MessageRejection(
                        id: rawID, code: FriendsManagerError.notFound(id: "").code, reason: "from \(envelope.senderID.prefix(12))…, who is not a friend"))
            }
            guard sender.record.trust != .blocked else {
                return .refused(
                    MessageRejection(id: rawID, code: MessagesManagerError.friendBlocked(id: "").code, reason: "from \(sender.record.name), who is blocked"))
            }
            if envelope.version == Envelope.groupProtocolVersion { return .groupMessage(envelope, sender: sender.key) }
            let opened: InboxItem.Opened
            do {
                if envelope.version == Envelope.sessionProtocolVersion {
                    let session = try SessionsManager.openMessage(tx, identity: identity, friend: sender.key, envelope: envelope, now: now, random: random)
                    opened = .init(id: id, payload: try MessagePayload(json: session.payload), sender: sender.key, reset: session.reset)
                } else {
                    // Version 2 is accepted from anyone who holds the friend's key: only they can sign it, and a
                    // friend who restored a backup or rotated knows no bundle of ours yet (§10.4).
                    let payload = try MessagePayload(json: try envelope.open(as: identity.signing, from: sender.key, now: now / 1000))
                    opened = .init(id: id, payload: payload, sender: sender.key, reset: false)
                }
            } catch let error as WireError where error == .sessionBroken || error.code == WireError.unknownPrekey("").code {
                return .refused(MessageRejection(id: rawID, code: error.code, reason: error.description), broken: sender.key.base64URL, seen: id)
            } catch {
                return .refused(Self.rejection(rawID, error))
            }
            try openedFrom(sender, peer: peer, opened, tx)
            switch opened.payload.kind {
            case "session-reset": return .sessionReset(opened)
            case "rotation": return .rotation(opened)
            case "group-statement": return .groupStatement(opened)
            case "group-sender-key": return .senderKey(opened)
            case "receipt": return .receipt(opened)
            default: return .message(opened)  // text, file, or a kind a newer app sent
            }
        }

        /// What any opened 1:1 envelope says besides its payload: the friend added us back (they
        /// sealed it for us), and a new session is a reset to report (once per friend and answer).
        private mutating func openedFrom(
            _ sender: (key: Ed25519PublicKey, record: FriendRecord), peer: String, _ opened: InboxItem.Opened, _ tx: borrowing WriteTransaction
        ) throws {
            if sender.record.addedBackAt == nil {
                var record = sender.record
                record.addedBackAt = now
                try tx.open(Tables.friends).put(sender.key, record)
                byPeerID[peer] = (sender.key, record)
            }
            let friendID = sender.key.base64URL
            if opened.reset || opened.payload.kind == "session-reset", !outcome.resets.contains(friendID) {
                outcome.resets.append(friendID)
                updates.append(.messages(.sessionReset(friendID: friendID, name: sender.record.name)))
            }
        }

        // MARK: Handing each item to its owner

        private mutating func handle(_ item: InboxItem, rawID: String, _ tx: borrowing WriteTransaction) throws {
            let ids = try tx.open(Tables.messageIDs)
            switch item {
            case .duplicate(let id):
                outcome.duplicates.append(id)
            case .refused(let rejection, let broken, let seen):
                if let seen { try ids.put(seen, []) }
                if let broken {
                    outcome.broken.append(broken)
                    brokenFriends.append(broken)
                }
                refuse(rejection)
            case .sessionReset(let opened):
                try ids.put(opened.id, [])
            case .retiredRotation(_, let payload, let retired):
                try rotate(payload, sender: retired, rawID: rawID, tx) { $0.outcome.rotated.append(retired.base64URL) }
            case .rotation(let opened):
                try ids.put(opened.id, [])
                let key = opened.sender
                try rotate(opened.payload, sender: key, rawID: rawID, tx) { pass in
                    pass.outcome.rotated.append(key.base64URL)
                    // Later envelopes from the old key in this same answer are the retired key's.
                    if pass.byPeerID[PeerID(key).hex] == nil { pass.retiredByPeerID[PeerID(key).hex] = key }
                }
            case .groupStatement(let opened):
                try ids.put(opened.id, [])
                try groupCache.flush(tx)
                groupChanged = true
                var groupUpdates: [GroupsManagerReconcileMessage] = []
                let effects = try GroupsManager.processStatements(
                    tx, opened.payload, sender: opened.sender, identity: identity, now: now, random: random, messages: &groupUpdates)
                updates += groupUpdates.map(AppUpdate.groups)
                // A refused statement is the user's to see (inbox `rejected`), not only the groups manager's
                // update — but a stale one (history already passed, a replay) is ordinary catching up, not news.
                for case .statementRefused(let group, let code, let message) in groupUpdates
                where code != GroupsManagerError.staleStatement(epoch: 0).code {
                    refuse(MessageRejection(id: rawID, code: code, reason: group.isEmpty ? message : "group \(group.prefix(8))…: \(message)"))
                }
                groupQueued += effects.queued
                groupReseal = groupReseal || effects.reseal
            case .senderKey(let opened):
                try ids.put(opened.id, [])
                try groupCache.flush(tx)
                switch try GroupsManager.processSenderKey(tx, opened.payload, sender: opened.sender, now: now) {
                case .stored: groupChanged = true
                case .unknownGroup: laterKeys.append((opened.payload, opened.sender))
                case .refused(let update): updates.append(.groups(update))
                }
            case .groupMessage(let envelope, let sender):
                do {
                    outcome.received.append(
                        try GroupsManager.openGroupMessage(
                            tx, envelope, sender: sender, identity: identity, now: now, policy: policy, cache: &groupCache, memo: memo))
                } catch GroupsManagerError.unknownChain, GroupsManagerError.notAMember {
                    // No chain yet, or a sender (or we) not a member yet: a statement or key later in this answer may change it.
                    laterMessages.append((envelope, sender))
                } catch {
                    refuse(Self.rejection(rawID, error))
                }
            case .receipt(let opened):
                try ids.put(opened.id, [])
                let friendID = opened.sender.base64URL
                if let acked = opened.payload.ack?.lowercased(),
                    try MessageStore.update(acked, tx, { if $0.outgoing && $0.peer == friendID { $0.status = .delivered } })
                {
                    outcome.delivered.append(acked)
                    updates.append(.messages(.messageDelivered(id: acked)))
                }
            case .message(let opened):
                try store(opened, tx)
            }
        }

        /// A rotation statement applied (or refused, with its reason); `applied` records it.
        private mutating func rotate(
            _ payload: MessagePayload, sender: Ed25519PublicKey, rawID: String, _ tx: borrowing WriteTransaction, applied: (inout InboxPass) -> Void
        ) throws {
            try groupCache.flush(tx)  // a rotation may change group records and chains
            var messages: [MessagesManagerReconcileMessage] = []
            let refusal = try MessagesManager.processRotation(payload, sender: sender, tx, &messages, &byPeerID, conflicts: &outcome.conflicts, now: now)
            updates += messages.map(AppUpdate.messages)
            if let refusal { refuse(MessageRejection(id: rawID, code: refusal.code, reason: refusal.description)) } else { applied(&self) }
        }

        /// Stores a text, a file or a kind this version does not know, once per message id (§7.2: the
        /// payload's `id`, the same the sender keeps and a receipt names; the envelope id only names
        /// the delivery — a payload id that is no UUID falls back to it).
        private mutating func store(_ opened: InboxItem.Opened, _ tx: borrowing WriteTransaction) throws {
            let ids = try tx.open(Tables.messageIDs)
            let payload = opened.payload
            let messageID = Envelope.isUUID(payload.id) ? payload.id.lowercased() : opened.id
            if messageID != opened.id {
                try ids.put(opened.id, [])  // the delivery, seen
                if try ids.contains(messageID) {
                    outcome.duplicates.append(opened.id)
                    return
                }
            }
            let friendID = opened.sender.base64URL
            let conversation = try tx.open(Tables.conversations).get(opened.sender)
            // A file message breaking a §12.3 rule is kept as a message of an unknown kind: no attachment, no notification.
            let file = payload.kind == FileAttachment.kind ? try? FileAttachment(payload: payload) : nil  // nil: malformed, kept without it
            let notifies = payload.kind != FileAttachment.kind || file != nil
            let record = MessageRecord(
                id: messageID, peer: friendID, outgoing: false, kind: payload.kind, text: payload.text,
                sentAt: payload.sentAt, storedAt: now, status: .received,
                disappearsAt: conversation?.disappearAfterSeconds.map { now.addingSaturating($0.multipliedSaturating(by: 1000)) },
                notify: notifies && policy.shouldNotify(kind: payload.kind, mutedUntil: conversation?.mutedUntil, at: now), file: file)
            try MessagesManager.store(record, tx)
            outcome.received.append(record)
            if payload.kind == "text" || file != nil, policy.deliveryReceipts { receiptsFor.append((friendID, messageID)) }
        }

        // MARK: Refusals

        private mutating func refuse(_ rejection: MessageRejection) {
            outcome.rejected.append(rejection)
            updates.append(.messages(.messageRejected(id: rejection.id, code: rejection.code, message: rejection.reason)))
        }

        /// A held message let go for good (dropped, or refused when tried again): its envelope is
        /// recorded as seen, so a copy delivered again is a duplicate, not held anew.
        private mutating func release(_ rejection: MessageRejection, _ tx: borrowing WriteTransaction) throws {
            try tx.open(Tables.messageIDs).put(rejection.id, [])
            refuse(rejection)
        }

        /// A refusal for `error`, with its stable code (364, a tampered envelope, for one from outside).
        private static func rejection(_ id: String, _ error: any Error) -> MessageRejection {
            let failure = error as? any CoordsCoreError
            return MessageRejection(id: id, code: failure?.code ?? 364, reason: failure?.description ?? "\(error)")
        }
    }
}
