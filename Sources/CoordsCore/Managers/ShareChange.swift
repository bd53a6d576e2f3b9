extension FriendsManager {
    /// The reseal a change of who is shared with owes (PROTOCOL.md §9.3), owned by the core. When a
    /// friend who could open the last sealed blob stops being shared with — ``FriendsManager/pause(id:)``,
    /// ``FriendsManager/remove(id:)``, blocking, a key conflict (§9.2) or the share's `until` passing —
    /// or a friend who could not starts being shared with (an add, a resumed share), an outbox entry of
    /// kind ``OutboxKind/reseal`` is queued in the same write transaction. It carries no request yet:
    /// the last sealed fix is sealed again and signed when a host takes the entry
    /// (``OutboxManager/due(now:ignoringBackoff:)``, ``CoordsApp/due(now:)``), for the friends shared
    /// with at that moment — so a friend whose share ended cannot open the newest blob, and a new one
    /// can. At most one such entry waits at a time; one that is no longer needed when taken (a newer
    /// upload was sealed for the same friends) leaves the outbox unsent.
    enum ShareChange {
        /// The reference of the waiting reseal entry (until it is signed; then it names its fix).
        static let reference = "share-changed"

        /// What changed for one friend, or for anyone (`nil`: compare the last blob's recipients
        /// with the friends shared with at `now`, e.g. after a share's `until` passed).
        enum Change {
            case ended(friend: String)
            case began(friend: String)
        }

        /// Queues, in `tx`, the reseal owed because of `change` — only when it matters (the friend
        /// whose share ended could open the last sealed blob; the one whose share began could not;
        /// for `nil`, the last blob's recipients differ from the friends shared with now) and no owed
        /// reseal waits already. Nothing is queued before a first fix was sealed.
        /// - Returns: the new entry's id, or nil when nothing is owed.
        /// - Throws: store errors.
        static func queueReseal(_ tx: borrowing WriteTransaction, _ change: Change?, now: UInt64, me: String?) throws -> UInt64? {
            guard try tx.reading({ read in try isOwed(read, change, now: now, me: me) }) else { return nil }
            var item = OutboxItem(
                kind: .reseal, request: PreparedRequest(url: "", method: "PUT"), nextAttemptAt: now, createdAt: now, reference: reference)
            item.needsSignature = true
            return try OutboxQueue.enqueue(tx, [item]).first?.id
        }

        /// Whether `change` owes a reseal that is not waiting already (see ``queueReseal(_:_:now:me:)``):
        /// a read only, so a host's every wake does not write.
        /// - Throws: store errors.
        static func isOwed(_ tx: borrowing ReadTransaction, _ change: Change?, now: UInt64, me: String?) throws -> Bool {
            let state = try tx.open(Tables.uploadState).get(UploadState.key) ?? UploadState()
            guard state.lastSealedWire != nil, let sealedFor = state.lastSealedFor else { return false }
            switch change {
            case .ended(let friend):
                guard sealedFor.contains(friend) else { return false }
            case .began(let friend):
                guard !sealedFor.contains(friend) else { return false }
            case nil:
                guard let me else { return false }
                let current = Set(FriendsManager.sharing(try FriendsManager.shareCandidates(in: tx, me: me), at: now).map(\.id))
                guard current != Set(sealedFor) else { return false }
            }
            var waiting = false
            try tx.open(Tables.outbox).forEach { _, item in
                waiting = item.kind == .reseal && item.reference == reference
                return !waiting
            }
            return !waiting
        }
    }
}
