import CoordsCore

/// How many entries of each kind a relay store holds (``LMDBRelayStore/exportCounts()``), or a
/// migration copied.
public struct RelayExportCounts: Sendable, Equatable, CustomStringConvertible {
    /// Stored uploads (one per key).
    public var records = 0
    /// Deletion tombstones.
    public var tombstones = 0
    /// Mailbox envelopes waiting for their recipient.
    public var envelopes = 0
    /// Acknowledged envelope ids (refused if posted again).
    public var envelopeTombstones = 0
    /// Used mailbox request signatures (accepted once).
    public var seenSignatures = 0

    /// Counts, zero unless given.
    public init(records: Int = 0, tombstones: Int = 0, envelopes: Int = 0, envelopeTombstones: Int = 0, seenSignatures: Int = 0) {
        self.records = records
        self.tombstones = tombstones
        self.envelopes = envelopes
        self.envelopeTombstones = envelopeTombstones
        self.seenSignatures = seenSignatures
    }

    /// All entries together.
    public var total: Int {
        [records, tombstones, envelopes, envelopeTombstones, seenSignatures].reduce(0) { $0.addingSaturating($1) }
    }

    public var description: String {
        "\(records) uploads, \(tombstones) deletions, \(envelopes) envelopes, \(envelopeTombstones) acknowledged ids, \(seenSignatures) request signatures"
    }
}

/// What one run of ``RelayMigration/copy(from:to:progress:)`` did.
public struct RelayMigrationReport: Sendable, Equatable {
    /// Entries read from the source.
    public var read = RelayExportCounts()
    /// Entries the target did not have yet (the rest were already there: a second run copies
    /// nothing). Acknowledged ids count as copied on every run: rewriting one can only extend
    /// how long it stays refused, and the store does not tell whether it was there.
    public var copied = RelayExportCounts()
}

/// Copies everything a relay keeps from an LMDB store into another store (PostgreSQL, for
/// `coords-relay migrate`): uploads, deletion tombstones, mailbox envelopes, acknowledged ids and
/// used request signatures.
///
/// The copy goes through the target's own rules (``RelayStoreRules``: newest timestamp wins,
/// tombstones refuse older uploads, ids are accepted once), so it is **idempotent** and safe to
/// run again: against a target that already holds some of the data, or while the source relay
/// still serves (run it once live, stop the LMDB relay, run it again for the last minutes, then
/// start the PostgreSQL relays). Nothing in the target is ever rolled back to an older version.
public enum RelayMigration {
    /// Progress after each page: entries read so far and the source's totals.
    public typealias Progress = @Sendable (_ read: RelayExportCounts, _ total: RelayExportCounts) -> Void

    /// Entries per page read from the source.
    static let pageSize = 512
    /// Writes in flight at once against the target (lets PostgreSQL group their commits).
    static let concurrency = 16

    /// Copies `source` into `target` (both stay open; the caller closes them).
    /// - Throws: ``StoreError`` from the source, ``RelayStoreError``/``RelayStoreUnavailable``
    ///   from the target. A failed run can simply be started again.
    public static func copy(from source: LMDBRelayStore, to target: any RelayStore, progress: Progress = { _, _ in }) async throws
        -> RelayMigrationReport
    {
        let total = try source.exportCounts()
        var report = RelayMigrationReport()
        let unlimited = MailboxLimits(perRecipient: .max, total: .max, perRecipientUnauthenticated: .max)

        /// Reads one kind of entry page by page (each page resumes after the previous page's last
        /// item) until a page is empty; `copy` writes a page and counts it in `report`, then the
        /// progress is reported.
        func copyPages<Item, Cursor>(
            _ export: (_ after: Cursor?, _ limit: Int) throws -> [Item], after cursor: KeyPath<Item, Cursor>, _ copy: ([Item]) async throws -> Void
        ) async throws {
            var after: Cursor?
            while case let page = try export(after, pageSize), let last = page.last {
                after = last[keyPath: cursor]
                try await copy(page)
                progress(report.read, total)
            }
        }

        // Tombstones before uploads: a deleted key's old upload can then never come back.
        try await copyPages(source.exportTombstones(after:limit:), after: \.key) { page in
            report.read.tombstones += page.count
            report.copied.tombstones += try await count(page) { item in
                // Stale: the target already has this deletion (or a newer upload or deletion).
                if case .stale = try await target.delete(key: item.key, timestamp: item.tombstone.timestamp, now: item.tombstone.recordedAt) {
                    return false
                }
                return true
            }
        }
        try await copyPages(source.exportRecords(after:limit:), after: \.key) { page in
            report.read.records += page.count
            report.copied.records += try await count(page) { item in
                try await target.put(key: item.key, record: item.record) == .stored
            }
        }
        try await copyPages(source.exportMailbox(after:limit:), after: \.position) { page in
            report.read.envelopes += page.count
            // In queue order, one at a time: the target keeps each recipient's envelopes oldest first.
            for item in page where try await target.mailboxPost(item.entry, limits: unlimited, now: 0) == .stored {
                report.copied.envelopes += 1
            }
        }
        try await copyPages(source.exportMailboxTombstones(after:limit:), after: \.id) { page in
            report.read.envelopeTombstones += page.count
            _ = try await count(page) { item in
                // An id no one holds: acknowledging it only records (or extends) its tombstone.
                try await target.mailboxAck(id: item.id, recipient: "", tombstoneUntil: item.until)
            }
            report.copied.envelopeTombstones += page.count
        }
        try await copyPages(source.exportSeenSignatures(after:limit:), after: \.r) { page in
            report.read.seenSignatures += page.count
            report.copied.seenSignatures += try await count(page) { item in
                try await target.acceptSignature(item.r, until: item.until, now: 0, capacity: .max) == .accepted
            }
        }
        return report
    }

    /// Runs `body` for every item, ``concurrency`` at a time; the number that returned true.
    private static func count<Item: Sendable>(_ items: [Item], _ body: @escaping @Sendable (Item) async throws -> Bool) async throws -> Int {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            var next = items.makeIterator()
            var counted = 0
            var running = 0
            while running < concurrency, let item = next.next() {
                group.addTask { try await body(item) }
                running += 1
            }
            while let done = try await group.next() {
                if done { counted += 1 }
                if let item = next.next() { group.addTask { try await body(item) } }
            }
            return counted
        }
    }
}
