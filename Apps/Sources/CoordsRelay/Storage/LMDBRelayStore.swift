import CoordsCore
import Logging

/// Binary encoding of a ``RelayRecord`` in LMDB (type name `relay-record/1`):
/// `version 1 | timestamp u64 | updated u64 | signature (64) | blob`.
extension RelayRecord: StoreValue {
    public static var storeTypeName: String { "relay-record/1" }

    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        var writer = ByteWriter(capacity: 81 + blob.count)
        writer.write(UInt8(1))
        writer.write(timestamp)
        writer.write(updated)
        writer.write(signature)
        writer.write(blob)
        return try writer.bytes.withUnsafeBytes { try body($0) }
    }

    public init(storeBytes: UnsafeRawBufferPointer) throws {
        var reader = ByteReader(storeBytes)
        guard storeBytes.count >= 81, try reader.read(UInt8.self) == 1 else { throw StoreCodecError("not a relay-record/1 value") }
        let timestamp = try reader.read(UInt64.self)
        let updated = try reader.read(UInt64.self)
        let signature = try reader.read(count: 64)
        self.init(blob: reader.readRemaining(), timestamp: timestamp, signature: signature, updated: updated)
    }
}

/// Binary encoding of a ``Tombstone`` (`tombstone/1`): `timestamp u64 | recordedAt u64`.
extension Tombstone: StoreValue {
    public static var storeTypeName: String { "tombstone/1" }

    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try withUnsafeBytes(of: (timestamp.bigEndian, recordedAt.bigEndian)) { try body($0) }
    }

    public init(storeBytes: UnsafeRawBufferPointer) throws {
        guard storeBytes.count == 16 else { throw StoreCodecError("a tombstone is 16 bytes") }
        var reader = ByteReader(storeBytes)
        self.init(timestamp: try reader.read(UInt64.self), recordedAt: try reader.read(UInt64.self))
    }
}

/// The relay's tables.
enum RelayTables {
    static let records = TableDefinition<Bytes32, RelayRecord>("relay_records")
    static let tombstones = TableDefinition<Bytes32, Tombstone>("relay_tombstones")
    /// Mailbox queues: key `recipient id (32 bytes) | sequence u64 BE` (so a prefix scan lists a
    /// recipient's envelopes oldest first), value ``MailboxEntry`` (`mailbox-entry/1`).
    static let mailbox = TableDefinition<[UInt8], MailboxEntry>("mailbox_queue")
    /// Envelope id → its queue key.
    static let mailboxIndex = TableDefinition<String, [UInt8]>("mailbox_index")
    /// Acknowledged ids → kept until (Unix seconds).
    static let mailboxTombstones = TableDefinition<String, UInt64>("mailbox_tombstones")
    /// `next_sequence`.
    static let mailboxMeta = TableDefinition<String, UInt64>("mailbox_meta")
    /// Recipient request signatures accepted (`R`, 32 bytes) → kept until (Unix seconds).
    static let seenSignatures = TableDefinition<Bytes32, UInt64>("seen_signatures")
    /// Recipient id (64 hex digits) → its push endpoint (§8.7).
    static let pushEndpoints = TableDefinition<String, PushRegistration>("push_endpoints")
    /// Owner key → its signed prekey (§10.3).
    static let signedPrekeys = TableDefinition<Bytes32, SignedPrekey>("prekeys_signed")
    /// `owner (32) | id u32 BE` → a one-time prekey in stock (§10.3).
    static let oneTimePrekeys = TableDefinition<[UInt8], StoredOneTimePrekey>("prekeys_one_time")
    /// Object id (16 bytes) → its record (§12.4); the bytes are files (``ObjectFiles``).
    static let objects = TableDefinition<[UInt8], StoredObject>("objects")
    /// Version 2 added the mailbox tables, version 3 the seen signatures, version 4 the push
    /// endpoints (created at open; nothing to convert), version 5 the registering address in push
    /// registrations (their second layout; the first still reads, so nothing is converted — the
    /// bump keeps an older relay, which cannot read the second layout, from opening the file),
    /// version 6 the prekey tables, version 7 the object table (created at open; the bytes are
    /// files in `objects/`).
    static let schema = Schema(
        version: 7,
        tables: [
            records.erased, tombstones.erased, mailbox.erased, mailboxIndex.erased,
            mailboxTombstones.erased, mailboxMeta.erased, seenSignatures.erased, pushEndpoints.erased,
            signedPrekeys.erased, oneTimePrekeys.erased, objects.erased
        ],
        migrations: [
            Migration(to: 2) { _ in }, Migration(to: 3) { _ in }, Migration(to: 4) { _ in }, Migration(to: 5) { _ in },
            Migration(to: 6) { _ in }, Migration(to: 7) { _ in }
        ])
}

/// The schema versions this relay writes, for `--version`, the `build_info` metric and
/// docs/UPGRADING.md: a store written by a newer schema is refused at start.
public enum RelaySchemaVersions {
    /// The LMDB store's schema (its metadata table).
    public static var lmdb: UInt32 { RelayTables.schema.version }
    /// The PostgreSQL store's schema (`coords_relay_migrations`).
    public static var postgres: Int { PostgresRelayStore.schemaVersion }
    /// "LMDB schema 7, PostgreSQL schema 7".
    public static var summary: String { "LMDB schema \(lmdb), PostgreSQL schema \(postgres)" }
}

/// `mailbox-entry/1` (the table's type name; the value carries its own version byte):
/// version 1: `1 | expiresAt u64 BE | id length u8 | id | recipient (64) | envelope` (written
/// before the split quotas; read as unauthenticated, the cautious reading);
/// version 2: `2 | flags u8 (bit 0: authenticated) | expiresAt u64 BE | id length u8 | id | recipient (64) | envelope`.
extension MailboxEntry: StoreValue {
    public static var storeTypeName: String { "mailbox-entry/1" }

    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        let idBytes = Array(id.utf8)
        let recipientBytes = Array(recipient.utf8)
        guard idBytes.count <= 255, recipientBytes.count == 64 else { throw StoreCodecError("mailbox entry id or recipient too long") }
        var writer = ByteWriter(capacity: 75 + idBytes.count + envelope.count)
        writer.write(UInt8(2))
        writer.write(UInt8(authenticated ? 1 : 0))
        writer.write(expiresAt)
        writer.write(UInt8(idBytes.count))
        writer.write(idBytes)
        writer.write(recipientBytes)
        writer.write(envelope)
        return try writer.bytes.withUnsafeBytes { try body($0) }
    }

    public init(storeBytes: UnsafeRawBufferPointer) throws {
        var reader = ByteReader(storeBytes)
        let (flags, expiresAt) = try Self.readHeader(&reader)
        let idLength = Int(try reader.read(UInt8.self))
        // Strict UTF-8: a lossy decode would turn a damaged value into a different one silently.
        guard let id = String(validating: try reader.read(count: idLength), as: UTF8.self),
            let recipient = String(validating: try reader.read(count: 64), as: UTF8.self), recipient.utf8.count == 64
        else {
            throw StoreCodecError("mailbox entry id or recipient is not UTF-8")
        }
        self.init(id: id, recipient: recipient, expiresAt: expiresAt, envelope: reader.readRemaining(), authenticated: flags & 1 == 1)
    }

    /// What a quota check needs of a stored entry — whether its sender was checked, and when it
    /// expires — read from the first bytes alone (posting scans the recipient's whole queue, so
    /// decoding every envelope made a post cost grow with the queue).
    /// - Throws: ``StoreError/decodingFailed(table:type:reason:)`` for a damaged entry, as a full decode would.
    static func quotaFields(storeBytes: UnsafeRawBufferPointer) throws -> (authenticated: Bool, expiresAt: UInt64) {
        var reader = ByteReader(storeBytes)
        do {
            let (flags, expiresAt) = try readHeader(&reader)
            return (flags & 1 == 1, expiresAt)
        } catch {
            throw StoreError.decodingFailed(table: RelayTables.mailbox.name, type: storeTypeName, reason: "\(error)")
        }
    }

    /// Version, flags (version 2) and expiry.
    private static func readHeader(_ reader: inout ByteReader) throws -> (flags: UInt8, expiresAt: UInt64) {
        let version = try reader.read(UInt8.self)
        guard version == 1 || version == 2 else { throw StoreCodecError("not a mailbox-entry value (version \(version))") }
        let flags = version == 2 ? try reader.read(UInt8.self) : 0
        guard flags & ~1 == 0 else { throw StoreCodecError("unknown mailbox entry flags \(flags)") }
        return (flags, try reader.read(UInt64.self))
    }
}

/// `push-registration/1`, written in its second layout:
/// `2 | expiresAt u64 BE | n u8 | registeredBy (n bytes UTF-8) | endpoint (UTF-8)`.
/// The first layout, `1 | expiresAt u64 BE | endpoint (UTF-8)` (relays before the registering
/// address was kept), still reads, with an empty `registeredBy`.
extension PushRegistration: StoreValue {
    public static var storeTypeName: String { "push-registration/1" }

    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        let registrant = Array(registeredBy.utf8.count <= Self.maximumRegistrantBytes ? registeredBy.utf8 : "".utf8)
        var writer = ByteWriter(capacity: 10 + registrant.count + endpoint.utf8.count)
        writer.write(UInt8(2))
        writer.write(expiresAt)
        writer.write(UInt8(truncatingIfNeeded: registrant.count))
        writer.write(registrant)
        writer.write(Array(endpoint.utf8))
        return try writer.bytes.withUnsafeBytes { try body($0) }
    }

    public init(storeBytes: UnsafeRawBufferPointer) throws {
        var reader = ByteReader(storeBytes)
        let layout = try reader.read(UInt8.self)
        guard layout == 1 || layout == 2 else { throw StoreCodecError("not a push-registration/1 value (layout \(layout))") }
        let expiresAt = try reader.read(UInt64.self)
        var registeredBy = ""
        if layout == 2 {
            let count = Int(try reader.read(UInt8.self))
            guard let text = String(validating: try reader.read(count: count), as: UTF8.self) else {
                throw StoreCodecError("a push registrant is not UTF-8")
            }
            registeredBy = text
        }
        guard let endpoint = String(validating: reader.readRemaining(), as: UTF8.self) else {
            throw StoreCodecError("a push endpoint is not UTF-8")
        }
        self.init(endpoint: endpoint, expiresAt: expiresAt, registeredBy: registeredBy)
    }
}

extension MailboxEntry {
    /// The queue key prefix of a recipient: the 32 bytes its hex id spells (zeros if it is not 64
    /// hex digits; stored recipients always are, lowercase).
    static func queuePrefix(_ recipient: String) -> [UInt8] {
        guard recipient.utf8.count == 64, let bytes = Hex.decode(recipient) else { return [UInt8](repeating: 0, count: 32) }
        return bytes
    }
}

/// `stored-object/1`: `owner (32) | size u64 BE | expiresAt u64 BE | stored u64 BE`.
extension StoredObject: StoreValue {
    public static var storeTypeName: String { "stored-object/1" }

    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        var writer = ByteWriter(capacity: 56)
        writer.write(owner.bytes)
        writer.write(size)
        writer.write(expiresAt)
        writer.write(stored)
        return try writer.bytes.withUnsafeBytes { try body($0) }
    }

    public init(storeBytes: UnsafeRawBufferPointer) throws {
        guard storeBytes.count == 56 else { throw StoreCodecError("a stored object is 56 bytes") }
        var reader = ByteReader(storeBytes)
        let owner = try Bytes32(try reader.read(count: 32))
        let size = try reader.read(UInt64.self)
        let expiresAt = try reader.read(UInt64.self)
        let stored = try reader.read(UInt64.self)
        guard stored <= size else { throw StoreCodecError("a stored object holds more than its size") }
        self.init(owner: owner, size: size, expiresAt: expiresAt, stored: stored)
    }
}

/// A persistent ``RelayStore`` on LMDB (CoordsCore's Store layer).
///
/// Writes are **durable before they are acknowledged** and **group-committed**: callers hand
/// their operation to one committer thread, which takes everything queued, applies it in one
/// write transaction (one fsync), and then resumes every caller with its own result. Under load
/// a commit carries many uploads, so durability costs one fsync per batch, not per upload.
/// Reads are LMDB snapshots and never wait for the committer.
public final class LMDBRelayStore: RelayStore, @unchecked Sendable {
    private enum Operation {
        case put(Bytes32, RelayRecord)
        case delete(Bytes32, timestamp: UInt64, now: UInt64)
        case sweep(updatedBefore: UInt64, tombstonesBefore: UInt64)
        case mailboxPost(MailboxEntry, MailboxLimits, now: UInt64)
        case mailboxAck(id: String, recipient: String, tombstoneUntil: UInt64)
        case mailboxSweep(now: UInt64)
        case acceptSignature(Bytes32, until: UInt64, now: UInt64, capacity: Int)
        case pushRegister(recipient: String, PushRegistration, capacity: Int)
        case pushRemove(recipient: String, endpoint: String?)
        case pushSweep(now: UInt64)
        case prekeyPut(owner: Bytes32, SignedPrekey, [OneTimePrekey], stockLimit: Int)
        case prekeyTake(owner: Bytes32, now: UInt64)
        case prekeySweep(now: UInt64)
        case objectPut(ObjectPart, ObjectLimits, now: UInt64)
        case objectDelete(ObjectID, owner: Bytes32, now: UInt64)
        case objectSweep(now: UInt64)
    }

    private enum Outcome {
        case put(PutResult)
        case delete(DeleteResult)
        case swept(Int)
        case posted(MailboxPostResult)
        case acked(Bool)
        case signature(SignatureAcceptance)
        case done(Bool)
        case prekeyPut(PrekeyPutResult)
        case bundle((SignedPrekey, OneTimePrekey?)?)
        case objectPut(ObjectPutResult)
        case objectDeleted(ObjectDeleteResult)
        /// A part whose bytes could not be written (nothing of it kept).
        case objectFailed(full: Bool, reason: String)
    }

    private struct Job: Sendable {
        let operation: Operation
        let continuation: CheckedContinuation<Outcome, any Error>
    }

    /// Most operations one commit takes.
    static let maximumBatch = 512

    private let database: Database
    private let files: ObjectFiles
    private let jobs: (sender: Sender<Job>, receiver: Receiver<Job>)
    private let logger: Logger
    /// Closed by the committer thread when it has drained the queue and exited.
    private let committerFinished = Channel.bounded(1, of: Bool.self)

    /// Opens (creating if needed) the store in `directory`.
    /// - Parameter durability: `.durable` (default) fsyncs each commit.
    /// - Throws: ``StoreError``.
    public init(directory: String, durability: Database.Durability = .durable, logger: Logger = Logger(label: "coords.relay.store")) throws {
        var options = Database.Options()
        options.durability = durability
        database = try Database.open(path: directory, options: options, schema: RelayTables.schema)
        files = try ObjectFiles(dataDirectory: directory, sync: durability != .noSync)
        jobs = Channel.unbounded(of: Job.self)
        self.logger = logger
        do {
            try OSThread.start { [self] in runCommitter() }.detach()
        } catch {
            throw RelayStoreError(description: "cannot start the relay's commit thread: \(error)")
        }
    }

    public func put(key: Bytes32, record: RelayRecord) async throws -> PutResult {
        guard case .put(let result) = try await submit(.put(key, record)) else { throw RelayStoreError(description: "unexpected outcome") }
        return result
    }

    public func delete(key: Bytes32, timestamp: UInt64, now: UInt64) async throws -> DeleteResult {
        guard case .delete(let result) = try await submit(.delete(key, timestamp: timestamp, now: now)) else {
            throw RelayStoreError(description: "unexpected outcome")
        }
        return result
    }

    public func sweep(updatedBefore: UInt64, tombstonesBefore: UInt64) async throws -> Int {
        guard case .swept(let count) = try await submit(.sweep(updatedBefore: updatedBefore, tombstonesBefore: tombstonesBefore)) else {
            throw RelayStoreError(description: "unexpected outcome")
        }
        return count
    }

    public func get(keys: [Bytes32], updatedSince: UInt64) async throws -> [Bytes32: RelayRecord] {
        try database.read { tx in
            let records = try tx.open(RelayTables.records)
            var found: [Bytes32: RelayRecord] = [:]
            for key in keys {
                if let record = try records.get(key), record.updated >= updatedSince { found[key] = record }
            }
            return found
        }
    }

    public func count() async throws -> Int {
        try database.read { tx in try tx.open(RelayTables.records).count() }
    }

    // MARK: Mailbox

    public func mailboxPost(_ entry: MailboxEntry, limits: MailboxLimits, now: UInt64) async throws -> MailboxPostResult {
        guard case .posted(let result) = try await submit(.mailboxPost(entry, limits, now: now)) else {
            throw RelayStoreError(description: "unexpected outcome")
        }
        return result
    }

    public func mailboxAck(id: String, recipient: String, tombstoneUntil: UInt64) async throws -> Bool {
        guard case .acked(let deleted) = try await submit(.mailboxAck(id: id, recipient: recipient, tombstoneUntil: tombstoneUntil)) else {
            throw RelayStoreError(description: "unexpected outcome")
        }
        return deleted
    }

    public func mailboxSweep(now: UInt64) async throws -> Int {
        guard case .swept(let count) = try await submit(.mailboxSweep(now: now)) else { throw RelayStoreError(description: "unexpected outcome") }
        return count
    }

    public func acceptSignature(_ r: Bytes32, until: UInt64, now: UInt64, capacity: Int) async throws -> SignatureAcceptance {
        guard case .signature(let result) = try await submit(.acceptSignature(r, until: until, now: now, capacity: capacity)) else {
            throw RelayStoreError(description: "unexpected outcome")
        }
        return result
    }

    public func seenSignatureCount() async throws -> Int {
        try database.read { tx in try tx.open(RelayTables.seenSignatures).count() }
    }

    public func mailboxList(recipient: String, now: UInt64, limit: Int) async throws -> [MailboxEntry] {
        try database.read { tx in
            var found: [MailboxEntry] = []
            try tx.open(RelayTables.mailbox).forEach(prefix: MailboxEntry.queuePrefix(recipient)) { _, entry in
                if entry.expiresAt > now, entry.recipient == recipient { found.append(entry) }
                return found.count < limit
            }
            return found
        }
    }

    public func mailboxCount() async throws -> Int {
        try database.read { tx in try tx.open(RelayTables.mailboxIndex).count() }
    }

    // MARK: Push endpoints

    public func pushRegister(recipient: String, _ registration: PushRegistration, capacity: Int) async throws -> Bool {
        guard case .done(let stored) = try await submit(.pushRegister(recipient: recipient, registration, capacity: capacity)) else {
            throw RelayStoreError(description: "unexpected outcome")
        }
        return stored
    }

    public func pushRegistration(recipient: String, now: UInt64) async throws -> PushRegistration? {
        try database.read { tx in try tx.open(RelayTables.pushEndpoints).get(recipient) }.flatMap { $0.expiresAt > now ? $0 : nil }
    }

    public func pushRemove(recipient: String, endpoint: String?) async throws -> Bool {
        guard case .done(let removed) = try await submit(.pushRemove(recipient: recipient, endpoint: endpoint)) else {
            throw RelayStoreError(description: "unexpected outcome")
        }
        return removed
    }

    public func pushSweep(now: UInt64) async throws -> Int {
        guard case .swept(let count) = try await submit(.pushSweep(now: now)) else { throw RelayStoreError(description: "unexpected outcome") }
        return count
    }

    public func pushCount() async throws -> Int {
        try database.read { tx in try tx.open(RelayTables.pushEndpoints).count() }
    }

    // MARK: Prekeys

    public func prekeyPut(owner: Bytes32, signed: SignedPrekey, oneTime: [OneTimePrekey], stockLimit: Int) async throws -> PrekeyPutResult {
        guard case .prekeyPut(let result) = try await submit(.prekeyPut(owner: owner, signed, oneTime, stockLimit: stockLimit)) else {
            throw RelayStoreError(description: "unexpected outcome")
        }
        return result
    }

    public func prekeyBundle(owner: Bytes32, takeOneTime: Bool, now: UInt64) async throws -> (signed: SignedPrekey, oneTime: OneTimePrekey?)? {
        guard takeOneTime else {
            return try database.read { tx in try tx.open(RelayTables.signedPrekeys).get(owner) }.flatMap { $0.expires > now ? ($0, nil) : nil }
        }
        guard case .bundle(let found) = try await submit(.prekeyTake(owner: owner, now: now)) else {
            throw RelayStoreError(description: "unexpected outcome")
        }
        return found.map { ($0.0, $0.1) }
    }

    public func prekeyStock(owner: Bytes32) async throws -> PrekeyStock {
        try database.read { tx in
            var count = 0
            try tx.open(RelayTables.oneTimePrekeys).forEachValue(prefix: owner.bytes) { _ in
                count += 1
                return true
            }
            return PrekeyStock(signed: try tx.open(RelayTables.signedPrekeys).get(owner), oneTime: count)
        }
    }

    public func prekeySweep(now: UInt64) async throws -> Int {
        guard case .swept(let count) = try await submit(.prekeySweep(now: now)) else { throw RelayStoreError(description: "unexpected outcome") }
        return count
    }

    public func prekeyTotals() async throws -> (owners: Int, oneTime: Int) {
        try database.read { tx in (try tx.open(RelayTables.signedPrekeys).count(), try tx.open(RelayTables.oneTimePrekeys).count()) }
    }

    /// The prekey operations of one commit.
    private static func applyPrekeys(_ operation: Operation, _ tx: borrowing WriteTransaction) throws -> Outcome? {
        switch operation {
        case .prekeyPut(let owner, let signed, let oneTime, let stockLimit):
            let signedTable = try tx.open(RelayTables.signedPrekeys)
            let stockTable = try tx.open(RelayTables.oneTimePrekeys)
            var stock = 0
            try stockTable.forEachValue(prefix: owner.bytes) { _ in
                stock += 1
                return true
            }
            let decision = try PrekeyStoreRules.decide(
                existing: try signedTable.get(owner),
                storedOneTime: { id in try stockTable.get(OneTimePrekey.tableKey(owner: owner, id: id))?.prekey(id: id) },
                stock: stock, signed: signed, oneTime: oneTime, stockLimit: stockLimit)
            guard case .stored = decision.result else { return .prekeyPut(decision.result) }
            if decision.writeSigned { try signedTable.put(owner, signed) }
            for prekey in decision.add { try stockTable.put(OneTimePrekey.tableKey(owner: owner, id: prekey.id), StoredOneTimePrekey(prekey)) }
            return .prekeyPut(decision.result)
        case .prekeyTake(let owner, let now):
            guard let signed = try tx.open(RelayTables.signedPrekeys).get(owner), signed.expires > now else { return .bundle(nil) }
            let stockTable = try tx.open(RelayTables.oneTimePrekeys)
            guard let first = try stockTable.entries(prefix: owner.bytes, limit: 1).first else { return .bundle((signed, nil)) }
            _ = try stockTable.delete(first.key)
            let id = try ByteReader.bigEndian(UInt32.self, in: first.key, at: 32)
            return .bundle((signed, try first.value.prekey(id: id)))
        case .prekeySweep(let now):
            let expired = try tx.open(RelayTables.signedPrekeys).removeAll { _, signed in signed.expires <= now }
            let stockTable = try tx.open(RelayTables.oneTimePrekeys)
            for owner in expired {
                for entry in try stockTable.entries(prefix: owner.key.bytes) { _ = try stockTable.delete(entry.key) }
            }
            return .swept(expired.count)
        default:
            return nil
        }
    }

    // MARK: Objects

    public func objectPut(_ part: ObjectPart, limits: ObjectLimits, now: UInt64) async throws -> ObjectPutResult {
        switch try await submit(.objectPut(part, limits, now: now)) {
        case .objectPut(let result): return result
        case .objectFailed(true, _): throw ObjectStoreFull()
        case .objectFailed(false, let reason): throw RelayStoreError(description: reason)
        default: throw RelayStoreError(description: "unexpected outcome")
        }
    }

    public func objectInfo(_ object: ObjectID, now: UInt64) async throws -> StoredObject? {
        // A record whose file is missing or short (a restored backup holds `data.mdb` alone) is
        // no object: serving it would end short of its Content-Length.
        try database.read { tx in try tx.open(RelayTables.objects).get(object.bytes) }.flatMap {
            $0.expiresAt > now && (files.length(object) ?? 0) >= $0.stored ? $0 : nil
        }
    }

    public func objectRead(_ object: ObjectID, offset: UInt64, count: Int) async throws -> [UInt8] {
        try files.read(object, offset: offset, count: count)
    }

    public func objectDelete(_ object: ObjectID, owner: Bytes32, now: UInt64) async throws -> ObjectDeleteResult {
        guard case .objectDeleted(let result) = try await submit(.objectDelete(object, owner: owner, now: now)) else {
            throw RelayStoreError(description: "unexpected outcome")
        }
        return result
    }

    public func objectSweep(now: UInt64) async throws -> Int {
        guard case .swept(let count) = try await submit(.objectSweep(now: now)) else { throw RelayStoreError(description: "unexpected outcome") }
        return count
    }

    public func objectTotals() async throws -> (objects: Int, bytes: UInt64) {
        try database.read { tx in
            var bytes: UInt64 = 0
            var count = 0
            try tx.open(RelayTables.objects).forEach { _, record in
                bytes = bytes.addingSaturating(record.size)
                count += 1
                return true
            }
            return (count, bytes)
        }
    }

    /// The object operations of one commit. A part's bytes are written and synced before its
    /// record (the committed length) is put in the transaction; an I/O failure answers that part
    /// alone and changes nothing. Deleted objects' files go after the commit (`removeAfterCommit`).
    private static func applyObjects(
        _ operation: Operation, _ tx: borrowing WriteTransaction, _ files: ObjectFiles, removeAfterCommit: inout [ObjectID]
    ) throws -> Outcome? {
        switch operation {
        case .objectPut(let part, let limits, let now):
            let records = try tx.open(RelayTables.objects)
            var existing = try records.get(part.object.bytes)
            // A record whose file lost bytes (a store restored from a backup of `data.mdb` alone)
            // is no object, as for readers: the upload starts again from 0.
            if let record = existing, record.expiresAt > now, (files.length(part.object) ?? 0) < record.stored {
                existing = nil
            }
            let decision = try ObjectStoreRules.decide(
                existing: existing, part: part,
                usage: {
                    // Every record: the relay's total is needed too (a few thousand 56-byte values).
                    var usage = ObjectUsage(ownerBytes: 0, ownerObjects: 0, totalBytes: 0)
                    try records.forEach { _, record in
                        guard record.expiresAt > now else { return true }
                        usage.totalBytes = usage.totalBytes.addingSaturating(record.stored)
                        if record.owner == part.owner {
                            usage.ownerBytes = usage.ownerBytes.addingSaturating(record.size)
                            usage.ownerObjects += 1
                        }
                        return true
                    }
                    return usage
                }, limits: limits, now: now)
            guard case .stored(let record) = decision.result else { return .objectPut(decision.result) }
            // The free-space floor: objects never take the room the mailbox and the blobs need.
            if decision.append, files.wouldPassFloor(adding: part.bytes.count, floor: limits.minimumFreeDiskBytes) {
                return .objectFailed(full: true, reason: "free-space floor")
            }
            do {
                if decision.create { try files.create(part.object) }
                if decision.append { try files.append(part.object, at: part.offset, part.bytes) }
            } catch is ObjectStoreFull {
                return .objectFailed(full: true, reason: "disk full")
            } catch {
                return .objectFailed(full: false, reason: "\(error)")
            }
            try records.put(part.object.bytes, record)
            return .objectPut(decision.result)
        case .objectDelete(let object, let owner, let now):
            let records = try tx.open(RelayTables.objects)
            guard let record = try records.get(object.bytes), record.expiresAt > now else { return .objectDeleted(.none) }
            guard record.owner == owner else { return .objectDeleted(.notOwner) }
            try records.delete(object.bytes)
            removeAfterCommit.append(object)
            return .objectDeleted(.deleted)
        case .objectSweep(let now):
            let expired = try tx.open(RelayTables.objects).removeAll { _, record in record.expiresAt <= now }
            for entry in expired {
                if let object = try? ObjectID(bytes: entry.key) { removeAfterCommit.append(object) }  // keys are ids: always 16 bytes
            }
            return .swept(expired.count)
        default:
            return nil
        }
    }

    // MARK: Export (coords-relay migrate)

    /// Up to `limit` uploads with keys after `after` (nil: from the start), in key order: one
    /// page of a consistent walk that never holds a read transaction across pages.
    /// - Throws: ``StoreError``.
    public func exportRecords(after: Bytes32?, limit: Int) throws -> [(key: Bytes32, record: RelayRecord)] {
        try page(RelayTables.records, after: after, limit: limit).map { ($0.key, $0.value) }
    }

    /// Up to `limit` deletion tombstones with keys after `after`, in key order.
    public func exportTombstones(after: Bytes32?, limit: Int) throws -> [(key: Bytes32, tombstone: Tombstone)] {
        try page(RelayTables.tombstones, after: after, limit: limit).map { ($0.key, $0.value) }
    }

    /// Up to `limit` mailbox envelopes after queue position `after`, oldest first per recipient.
    /// The position is opaque (pass back the last one returned).
    public func exportMailbox(after: [UInt8]?, limit: Int) throws -> [(position: [UInt8], entry: MailboxEntry)] {
        try page(RelayTables.mailbox, after: after, limit: limit).map { ($0.key, $0.value) }
    }

    /// Up to `limit` acknowledged envelope ids (and how long they stay refused) after `after`.
    public func exportMailboxTombstones(after: String?, limit: Int) throws -> [(id: String, until: UInt64)] {
        try page(RelayTables.mailboxTombstones, after: after, limit: limit).map { ($0.key, $0.value) }
    }

    /// Up to `limit` used request signatures (`R`, kept until) after `after`.
    public func exportSeenSignatures(after: Bytes32?, limit: Int) throws -> [(r: Bytes32, until: UInt64)] {
        try page(RelayTables.seenSignatures, after: after, limit: limit).map { ($0.key, $0.value) }
    }

    /// The number of entries of each table the export walks.
    public func exportCounts() throws -> RelayExportCounts {
        try database.read { tx in
            RelayExportCounts(
                records: try tx.open(RelayTables.records).count(), tombstones: try tx.open(RelayTables.tombstones).count(),
                envelopes: try tx.open(RelayTables.mailbox).count(),
                envelopeTombstones: try tx.open(RelayTables.mailboxTombstones).count(),
                seenSignatures: try tx.open(RelayTables.seenSignatures).count())
        }
    }

    private func page<K: StoreKey & Equatable, V: StoreValue>(_ table: TableDefinition<K, V>, after: K?, limit: Int) throws -> [(key: K, value: V)] {
        try database.read { tx in
            // `from` is inclusive: ask for one more and drop the key we already have.
            var entries = try tx.open(table).entries(from: after, limit: max(limit, 1).addingSaturating(1))
            if let after, entries.first?.key == after { entries.removeFirst() }
            return Array(entries.prefix(max(limit, 1)))
        }
    }

    /// The mailbox operations of one commit (inside the committer's write transaction).
    private static func apply(_ operation: Operation, _ tx: borrowing WriteTransaction) throws -> Outcome? {
        switch operation {
        case .mailboxPost(let entry, let limits, let now):
            let index = try tx.open(RelayTables.mailboxIndex)
            if try index.contains(entry.id) || (try tx.open(RelayTables.mailboxTombstones).contains(entry.id)) { return .posted(.duplicate) }
            if try index.count() >= limits.total { return .posted(.relayFull) }
            let queue = try tx.open(RelayTables.mailbox)
            let prefix = MailboxEntry.queuePrefix(entry.recipient)
            // Both quotas together bound this scan.
            let quota = limits.quota(for: entry)
            var waiting = 0
            try queue.forEachValue(prefix: prefix) { bytes in
                let stored = try MailboxEntry.quotaFields(storeBytes: bytes)
                if stored.expiresAt > now, stored.authenticated == entry.authenticated { waiting += 1 }
                return waiting < quota
            }
            if waiting >= quota { return .posted(.recipientFull) }
            let meta = try tx.open(RelayTables.mailboxMeta)
            let sequence = try meta.get("next_sequence") ?? 1
            guard sequence < .max else { throw StoreCodecError("the mailbox sequence numbers are used up") }
            try meta.put("next_sequence", sequence + 1)
            var key = prefix
            key.appendBigEndian(sequence)
            try queue.put(key, entry)
            try index.put(entry.id, key)
            return .posted(.stored)
        case .mailboxAck(let id, let recipient, let until):
            let index = try tx.open(RelayTables.mailboxIndex)
            let tombstones = try tx.open(RelayTables.mailboxTombstones)
            if let key = try index.get(id) {
                let queue = try tx.open(RelayTables.mailbox)
                guard let entry = try queue.get(key), entry.recipient == recipient else { return .acked(false) }
                try queue.delete(key)
                try index.delete(id)
                try tombstones.put(id, until)
                return .acked(true)
            }
            try tombstones.put(id, max(until, try tombstones.get(id) ?? 0))
            return .acked(false)
        case .mailboxSweep(let now):
            let expired = try tx.open(RelayTables.mailbox).removeAll { _, entry in entry.expiresAt <= now }
            let index = try tx.open(RelayTables.mailboxIndex)
            for entry in expired { try index.delete(entry.value.id) }
            try tx.open(RelayTables.mailboxTombstones).removeAll { _, until in until < now }
            try tx.open(RelayTables.seenSignatures).removeAll { _, until in until < now }
            return .swept(expired.count)
        case .acceptSignature(let r, let until, let now, let capacity):
            let seen = try tx.open(RelayTables.seenSignatures)
            if let kept = try seen.get(r), kept >= now { return .signature(.replayed) }
            // Expired entries still count until the sweep; the sweep runs every minute.
            if try seen.count() >= capacity { return .signature(.full) }
            try seen.put(r, until)
            return .signature(.accepted)
        case .pushRegister(let recipient, let registration, let capacity):
            let endpoints = try tx.open(RelayTables.pushEndpoints)
            if try !endpoints.contains(recipient), try endpoints.count() >= capacity { return .done(false) }
            try endpoints.put(recipient, registration)
            return .done(true)
        case .pushRemove(let recipient, let endpoint):
            let endpoints = try tx.open(RelayTables.pushEndpoints)
            guard let current = try endpoints.get(recipient), endpoint == nil || current.endpoint == endpoint else { return .done(false) }
            try endpoints.delete(recipient)
            return .done(true)
        case .pushSweep(let now):
            return .swept(try tx.open(RelayTables.pushEndpoints).removeAll { _, registration in registration.expiresAt <= now }.count)
        default:
            return nil
        }
    }

    /// Stops accepting writes, lets the committer finish what is queued, and closes LMDB.
    public func close() async {
        jobs.sender.close()
        _ = try? await committerFinished.receiver.receive()  // ends when the committer exits
        database.close()
    }

    private func submit(_ operation: Operation) async throws -> Outcome {
        try await withCheckedThrowingContinuation { continuation in
            do {
                try jobs.sender.send(Job(operation: operation, continuation: continuation))
            } catch {
                continuation.resume(throwing: StoreError.closed)
            }
        }
    }

    /// The committer thread: one write transaction per batch of queued operations.
    private func runCommitter() {
        // Disconnection (recv's only error) means the store closed: the committer ends.
        while let first = try? jobs.receiver.recv() {
            var batch = [first]
            // Empty or closed: the batch is what arrived so far.
            while batch.count < Self.maximumBatch, let next = try? jobs.receiver.tryRecv() { batch.append(next) }
            // Files of objects deleted in this commit: removed once it has committed.
            var removeAfterCommit: [ObjectID] = []
            do {
                let outcomes = try database.write { tx -> [Outcome] in
                    let records = try tx.open(RelayTables.records)
                    let tombstones = try tx.open(RelayTables.tombstones)
                    return try batch.map { job -> Outcome in
                        if let outcome = try Self.apply(job.operation, tx) { return outcome }
                        if let outcome = try Self.applyPrekeys(job.operation, tx) { return outcome }
                        if let outcome = try Self.applyObjects(job.operation, tx, files, removeAfterCommit: &removeAfterCommit) {
                            return outcome
                        }
                        switch job.operation {
                        case .put(let key, let record):
                            let result = RelayStoreRules.put(
                                timestamp: record.timestamp, existing: try records.get(key),
                                tombstone: try tombstones.get(key))
                            if result == .stored {
                                try records.put(key, record)
                                try tombstones.delete(key)
                            }
                            return .put(result)
                        case .delete(let key, let timestamp, let now):
                            let existingTombstone = try tombstones.get(key)
                            let result = RelayStoreRules.delete(timestamp: timestamp, existing: try records.get(key), tombstone: existingTombstone)
                            if case .stale = result { return .delete(result) }
                            try records.delete(key)
                            try tombstones.put(key, Tombstone(timestamp: max(timestamp, existingTombstone?.timestamp ?? 0), recordedAt: now))
                            return .delete(result)
                        case .sweep(let updatedBefore, let tombstonesBefore):
                            let expired = try records.removeAll { _, record in record.updated < updatedBefore }
                            try tombstones.removeAll { _, tombstone in tombstone.recordedAt < tombstonesBefore }
                            return .swept(expired.count)
                        case .mailboxPost, .mailboxAck, .mailboxSweep, .acceptSignature, .pushRegister, .pushRemove, .pushSweep,
                            .prekeyPut, .prekeyTake, .prekeySweep, .objectPut, .objectDelete, .objectSweep:
                            throw RelayStoreError(description: "mailbox operation not applied")
                        }
                    }
                }
                for object in removeAfterCommit { files.remove(object) }
                for (job, outcome) in zip(batch, outcomes) { job.continuation.resume(returning: outcome) }
            } catch {
                logger.error("relay store commit failed", metadata: ["error": "\(error)", "batch": "\(batch.count)"])
                for job in batch { job.continuation.resume(throwing: error) }
            }
        }
        committerFinished.sender.close()
    }
}
