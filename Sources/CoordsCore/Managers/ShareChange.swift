extension FriendsManager {
    /// The reseal a change of who is shared with owes (PROTOCOL.md §9.3), owned by the core. When a
    /// friend who could open the last sealed blob stops being shared with — ``FriendsManager/pause(id:)``,
    /// ``FriendsManager/remove(id:)``, blocking, a key conflict (§9.2) or the share's `until` passing —
    /// or a friend who could not starts being shared with (an add, a resumed share), an outbox entry of
    /// kind ``OutboxKind/reseal`` is queued in the same write transaction. It carries no request yet:
    /// the last sealed fix is sealed again and signed when a host takes the entry
    /// (``OutboxManager/due(now:ignoringBackoff:)``, ``CoordsApp/due(now:only:ignoringBackoff:)``), for the friends shared
    /// with at that moment — so a friend whose share ended cannot open the newest blob, and a new one
    /// can. At most one such entry waits at a time; one that is no longer needed when taken (a newer
    /// upload was sealed for the same friends) leaves the outbox unsent.
    enum ShareChange {
        /// The reference of the waiting reseal entry (until it is signed; then it names its fix).
        static let reference = "share-changed"

        /// What changed: one friend's share ended or began, or (`recipients`) who is shared with
        /// now, to compare with the last blob's recipients (after a share's `until` passed).
        enum Change {
            case ended(friend: String)
            case began(friend: String)
            case recipients(Set<String>)
        }

        /// Queues, in `tx`, the reseal owed because of `change` — only when it matters (the friend
        /// whose share ended could open the last sealed blob; the one whose share began could not;
        /// the last blob's recipients differ from those shared with now) and no owed reseal waits
        /// already. Nothing is queued before a first fix was sealed.
        /// - Returns: the new entry's id, or nil when nothing is owed.
        /// - Throws: store errors.
        static func queueReseal(_ tx: borrowing WriteTransaction, _ change: Change, now: UInt64) throws -> UInt64? {
            guard owes(change, try tx.open(Tables.uploadState).get(UploadState.key) ?? UploadState()) else { return nil }
            var waiting = false
            try tx.open(Tables.outbox).forEach { _, item in
                waiting = item.kind == .reseal && item.reference == reference
                return !waiting
            }
            guard !waiting else { return nil }
            var item = OutboxItem(
                kind: .reseal, request: PreparedRequest(url: "", method: "PUT"), nextAttemptAt: now, createdAt: now, reference: reference)
            item.needsSignature = true
            return try OutboxQueue.enqueue(tx, [item]).first?.id
        }

        /// Whether a share whose `until` passed (or any change nothing queued a reseal for) owes
        /// one now: who is shared with at `now` differs from the last blob's recipients. A read, so a
        /// host's every wake writes nothing when nothing is owed; the change to queue, or nil.
        /// - Throws: store errors.
        static func owed(_ tx: borrowing ReadTransaction, now: UInt64, me: String) throws -> Change? {
            var view: SharingView?
            return try owed(tx, now: now, me: me, view: &view, uploads: UploadStateCache())
        }

        /// Who is shared with, as of the change stamps of the friends and groups tables: the same
        /// until one of them moves or `until` (the next end of a share) passes.
        struct SharingView: Sendable {
            var stamps: [UInt64]
            var recipients: Set<String>
            var until: UInt64
        }

        /// ``owed(_:now:me:)`` reusing `view` when the friends and groups are unchanged and no share
        /// ended since (so a wake does not read and decode every friend); `view` is renewed when not.
        static func owed(
            _ tx: borrowing ReadTransaction, now: UInt64, me: String, view: inout SharingView?, uploads: UploadStateCache
        ) throws -> Change? {
            let state = try uploads.read(tx)
            guard state.lastSealedWire != nil else { return nil }  // nothing sealed: nothing to reseal
            let stamps = [try tx.changeStamp(of: Tables.friends), try tx.changeStamp(of: Tables.groups)]
            if let known = view, known.stamps == stamps, now < known.until {
                let current = Change.recipients(known.recipients)
                return owes(current, state) ? current : nil
            }
            let candidates = try FriendsManager.shareCandidates(in: tx, me: me)
            let recipients = Set(FriendsManager.sharing(candidates, at: now).map(\.id))
            view = SharingView(stamps: stamps, recipients: recipients, until: candidates.compactMap(\.until).filter { $0 > now }.min() ?? .max)
            let current = Change.recipients(recipients)
            return owes(current, state) ? current : nil
        }

        /// Whether `change` matters for the last sealed blob (nothing does before one was sealed).
        private static func owes(_ change: Change, _ state: UploadState) -> Bool {
            guard state.lastSealedWire != nil, let sealedFor = state.lastSealedFor else { return false }
            switch change {
            case .ended(let friend): return sealedFor.contains(friend)
            case .began(let friend): return !sealedFor.contains(friend)
            case .recipients(let current): return current != Set(sealedFor)
            }
        }
    }
}
