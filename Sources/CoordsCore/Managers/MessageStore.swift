/// Stored messages, changed inside any manager's write transaction: the outbox marks a message
/// sent in the transaction that records its delivery. It depends on no manager, so every
/// manager may use it (docs/ARCHITECTURE.md, Manager order).
enum MessageStore {
    /// Applies `change` to the stored message `id`; false when there is no such message (or the
    /// change changed nothing).
    /// - Throws: store errors.
    static func update(_ id: String, _ tx: borrowing WriteTransaction, _ change: (inout MessageRecord) -> Void) throws -> Bool {
        guard let key = try tx.open(Tables.messageIDs).get(id), !key.isEmpty else { return false }
        let table = try tx.open(Tables.messages)
        guard var record = try table.get(key) else { return false }
        let before = record
        change(&record)
        guard record != before else { return false }
        try table.put(key, record, expiringAt: record.disappearsAt)
        return true
    }

    /// Marks our message `id` sent (the relay took it); false when it is not queued (already
    /// sent, delivered, or unknown).
    /// - Throws: store errors.
    static func markSent(_ id: String, _ tx: borrowing WriteTransaction) throws -> Bool {
        try update(id, tx) { if $0.status == .queued { $0.status = .sent } }
    }
}
