/// The outbox table's queueing, inside a write transaction, for any manager that queues requests
/// in the transaction that makes them (a group change, a reseal a change of sharing owes). It
/// depends on no manager, so every manager may use it (docs/ARCHITECTURE.md, Manager order).
enum OutboxQueue {
    /// ``OutboxManager/enqueue(kind:request:reference:location:)`` inside `tx`, for a manager that queues
    /// requests in the transaction that makes them (group changes, §11); it sends the
    /// ``OutboxManagerReconcileMessage/queued(id:kind:)`` messages after its commit.
    /// - Returns: the new entry's id.
    /// - Throws: store errors.
    static func enqueue(
        _ tx: borrowing WriteTransaction, kind: OutboxKind, request: PreparedRequest, reference: String?, location: Location? = nil, now: UInt64
    ) throws -> UInt64 {
        let item = OutboxItem(kind: kind, request: request, nextAttemptAt: now, createdAt: now, reference: reference, location: location)
        return try enqueue(tx, [item])[0].id
    }

    /// Queues `items` (at least one) in `tx` under successive new ids, in order.
    /// - Returns: the entries as queued.
    /// - Throws: store errors.
    static func enqueue(_ tx: borrowing WriteTransaction, _ items: [OutboxItem]) throws -> [OutboxEntry] {
        try enqueue(tx, count: items.count) { add in
            for item in items { try add(item) }
        }
    }

    /// Queues the items `fill` hands to its `add` (at most `count` of them), in `tx`, under
    /// successive new ids in the order added: for a caller that makes its items one at a time
    /// (a group send queues each copy as soon as it is signed). `fill` is called once, even when
    /// `count` is 0.
    /// - Returns: the entries as queued.
    /// - Throws: store errors; `StoreError.encodingFailed` when `fill` adds more than `count`; what
    ///   `fill` throws.
    static func enqueue(
        _ tx: borrowing WriteTransaction, count: Int, _ fill: (_ add: (OutboxItem) throws -> Void) throws -> Void
    ) throws -> [OutboxEntry] {
        let tooMany = StoreError.encodingFailed(type: "outbox id", reason: "more items than the \(max(count, 0)) announced")
        guard count > 0 else {
            try fill { _ in throw tooMany }
            return []
        }
        let table = try tx.open(Tables.outbox)
        // Ids are never reused (a host may still hold an old one): a counter in the settings.
        let settings = try tx.open(Tables.settings)
        // A damaged counter is an error (reading it as 1 would hand out ids again).
        let stored = try settings.get(SettingKey.outboxNextID) ?? 1
        let first = max(stored, (try table.lastKey() ?? 0).addingSaturating(1))
        guard first < UInt64.max - UInt64(count) else {
            throw StoreError.encodingFailed(type: "outbox id", reason: "the outbox ids are used up")
        }
        var entries: [OutboxEntry] = []
        entries.reserveCapacity(count)
        try fill { item in
            guard entries.count < count else { throw tooMany }
            let id = first + UInt64(entries.count)  // below UInt64.max − count: checked above
            try table.append(id, item)  // above every id in the table: `first` is past the last key
            entries.append(OutboxEntry(id: id, item: item))
        }
        if !entries.isEmpty { try settings.put(SettingKey.outboxNextID, first + UInt64(entries.count)) }
        return entries
    }
}
