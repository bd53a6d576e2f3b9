import CoordsCore

/// What the relay keeps for one key: the latest upload, exactly as signed, and when it arrived.
public struct RelayRecord: Sendable, Equatable {
    /// The sealed location blob (opaque to the relay).
    public var blob: [UInt8]
    /// The uploader's signed upload time (Unix seconds).
    public var timestamp: UInt64
    /// The uploader's Ed25519 signature over `blob ‖ timestamp`.
    public var signature: [UInt8]
    /// The relay's clock when it stored the upload (Unix seconds): `updated` in fetch answers.
    public var updated: UInt64

    /// A record from its parts.
    public init(blob: [UInt8], timestamp: UInt64, signature: [UInt8], updated: UInt64) {
        self.blob = blob
        self.timestamp = timestamp
        self.signature = signature
        self.updated = updated
    }
}

/// Outcome of storing an upload.
public enum PutResult: Sendable, Equatable {
    /// Stored: it replaced an older upload or a deletion, or was the key's first.
    case stored
    /// Refused: the stored upload (or a deletion) is as new or newer (replay / rollback, 409).
    case stale(current: UInt64)
}

/// Outcome of a signed delete.
public enum DeleteResult: Sendable, Equatable {
    /// The upload was removed and a tombstone keeps the delete's time.
    case deleted
    /// Nothing was stored for the key.
    case notFound
    /// Refused: the stored upload is newer than the delete request (409).
    case stale(current: UInt64)
}

/// The store could not reach its database (down, restarting, unreachable): the relay answers
/// 503 with a JSON reason and keeps serving once the database is back.
public struct RelayStoreUnavailable: Error, CustomStringConvertible {
    public var description: String
}

/// Where the relay keeps uploads. ``LMDBRelayStore`` persists them (durable before the 204);
/// ``MemoryRelayStore`` is for tests. Both apply ``RelayStoreRules`` so they behave the same.
public protocol RelayStore: MailboxStore, PushStore, PrekeyStore, ObjectStore {
    /// Stores `record` under `key` unless something at least as new is there.
    func put(key: Bytes32, record: RelayRecord) async throws -> PutResult
    /// The records of `keys` updated at or after `updatedSince` (older ones are expired).
    func get(keys: [Bytes32], updatedSince: UInt64) async throws -> [Bytes32: RelayRecord]
    /// Removes `key`'s record for a delete signed at `timestamp`, leaving a tombstone (relay time
    /// `now`) so an older upload cannot be replayed afterwards.
    func delete(key: Bytes32, timestamp: UInt64, now: UInt64) async throws -> DeleteResult
    /// Removes records updated before `updatedBefore` and tombstones written before
    /// `tombstonesBefore`; returns the number of records removed.
    func sweep(updatedBefore: UInt64, tombstonesBefore: UInt64) async throws -> Int
    /// Number of stored records (expired ones included until swept).
    func count() async throws -> Int
    /// Returns when the store can serve requests now (one cheap round trip to a database);
    /// throws the store's error otherwise (``RelayStoreUnavailable`` when it cannot be reached).
    /// `GET /readyz` answers with it.
    func checkReady() async throws
    /// Finishes pending writes and releases the store.
    func close() async
    /// Tells the other relay nodes sharing this store about an accepted write (live channel,
    /// PROTOCOL.md §8.6). Returns at once; delivery is best effort. No-op for single-node stores.
    func announce(_ payload: String)
    /// What the nodes sharing this store announce (this node's own announcements included), or
    /// nil when the store is not shared (LMDB, memory: the fan-out is in process).
    func announcements() -> AsyncStream<String>?
}

extension RelayStore {
    /// Local stores (LMDB, memory) are ready when they can count their records.
    public func checkReady() async throws { _ = try await count() }
    public func announce(_ payload: String) {}
    public func announcements() -> AsyncStream<String>? { nil }
}

/// A deletion marker: the signed time of the delete, and when the relay recorded it.
public struct Tombstone: Sendable, Equatable {
    /// The delete request's signed time (Unix seconds): older uploads are refused.
    public var timestamp: UInt64
    /// When the relay recorded the deletion (Unix seconds; old tombstones are swept).
    public var recordedAt: UInt64
}

/// The decisions both stores share.
public enum RelayStoreRules {
    /// Whether an upload signed at `timestamp` may replace what is there.
    public static func put(timestamp: UInt64, existing: RelayRecord?, tombstone: Tombstone?) -> PutResult {
        let current = max(existing?.timestamp ?? 0, tombstone?.timestamp ?? 0)
        if existing != nil || tombstone != nil, timestamp <= current { return .stale(current: current) }
        return .stored
    }

    /// Whether a delete signed at `timestamp` may remove what is there.
    public static func delete(timestamp: UInt64, existing: RelayRecord?, tombstone: Tombstone?) -> DeleteResult {
        if let existing, timestamp <= existing.timestamp { return .stale(current: existing.timestamp) }
        if existing == nil, let tombstone, timestamp <= tombstone.timestamp { return .stale(current: tombstone.timestamp) }
        return existing == nil ? .notFound : .deleted
    }
}

/// A store error the routes report as 500 (the store is broken, not the request).
public struct RelayStoreError: Error, CustomStringConvertible {
    public var description: String
}

// MARK: Mailbox (PROTOCOL.md §7.3)

/// One stored envelope: its lowercase id and recipient id, its expiry, and the JSON exactly as
/// posted (the sender's signature covers the strings as they appear, so the relay never
/// rewrites it).
public struct MailboxEntry: Sendable, Equatable {
    /// The envelope id (lowercase UUID).
    public var id: String
    /// The recipient's peer id (64 lowercase hex).
    public var recipient: String
    /// When the relay forgets it (Unix seconds, from the envelope's `expiresAt`).
    public var expiresAt: UInt64
    /// The envelope JSON, byte for byte as posted.
    public var envelope: [UInt8]
    /// Whether the relay checked the sender's signature (`senderKey` present and valid). Such
    /// envelopes and the unchecked ones count against separate per-recipient quotas.
    public var authenticated: Bool

    /// An entry from its parts; signature-checked unless said otherwise.
    public init(id: String, recipient: String, expiresAt: UInt64, envelope: [UInt8], authenticated: Bool = true) {
        self.id = id
        self.recipient = recipient
        self.expiresAt = expiresAt
        self.envelope = envelope
        self.authenticated = authenticated
    }
}

/// Caps of the mailbox.
public struct MailboxLimits: Sendable, Equatable {
    /// Most unexpired signature-checked envelopes waiting for one recipient.
    public var perRecipient: Int
    /// Most envelopes stored in total.
    public var total: Int
    /// Most unexpired envelopes *without* a checked sender signature waiting for one recipient
    /// (a separate quota: unsigned junk can never fill the room kept for signed messages).
    public var perRecipientUnauthenticated: Int

    /// Caps; the unauthenticated quota is the authenticated one unless given.
    public init(perRecipient: Int, total: Int, perRecipientUnauthenticated: Int? = nil) {
        self.perRecipient = perRecipient
        self.total = total
        self.perRecipientUnauthenticated = perRecipientUnauthenticated ?? perRecipient
    }

    /// The per-recipient quota of `entry`'s class.
    public func quota(for entry: MailboxEntry) -> Int { entry.authenticated ? perRecipient : perRecipientUnauthenticated }
}

/// Outcome of posting an envelope.
public enum MailboxPostResult: Sendable, Equatable {
    /// Stored: 202.
    case stored
    /// The id is stored or was acknowledged (tombstone): 409.
    case duplicate
    /// The recipient's quota for this class of envelope (authenticated or not) is full: 429.
    case recipientFull
    /// The relay holds its maximum: 507.
    case relayFull
}

/// The mailbox side of a relay store: both stores implement it with the same rules.
public protocol MailboxStore: Sendable {
    /// Stores `entry` unless its id is known (stored or tombstoned) or a cap is reached.
    func mailboxPost(_ entry: MailboxEntry, limits: MailboxLimits, now: UInt64) async throws -> MailboxPostResult
    /// Up to `limit` unexpired envelopes for `recipient`, oldest first.
    func mailboxList(recipient: String, now: UInt64, limit: Int) async throws -> [MailboxEntry]
    /// Removes `id` if it is stored for `recipient` (true), and records a tombstone valid until
    /// `tombstoneUntil` so the id can never be posted again (unless it belongs to someone else).
    func mailboxAck(id: String, recipient: String, tombstoneUntil: UInt64) async throws -> Bool
    /// Removes expired envelopes and tombstones; returns how many envelopes were removed.
    func mailboxSweep(now: UInt64) async throws -> Int
    /// Envelopes stored (expired ones included until swept).
    func mailboxCount() async throws -> Int
    /// Records that a recipient request signature was used (§7.3: each is accepted once):
    /// `r` is its first 32 bytes (Ed25519's `R`, unique per key and message), kept until `until`
    /// (Unix seconds; after that the timestamp window refuses the request anyway). Persistent
    /// stores keep it on disk, so a replay is refused across restarts, and on PostgreSQL across
    /// every node. `capacity` bounds how many live signatures the memory and LMDB stores hold
    /// (past it: `.full`, never an early forget); on PostgreSQL the database's disk bounds it.
    /// Expired signatures go in ``mailboxSweep(now:)``.
    func acceptSignature(_ r: Bytes32, until: UInt64, now: UInt64, capacity: Int) async throws -> SignatureAcceptance
    /// Request signatures remembered (expired ones included until swept).
    func seenSignatureCount() async throws -> Int
}

/// What ``MailboxStore/acceptSignature(_:until:now:capacity:)`` decided.
public enum SignatureAcceptance: Sendable, Equatable {
    /// First use: the request goes on.
    case accepted
    /// Used before and not yet expired: 401 `replayed_signature`.
    case replayed
    /// The store holds `capacity` live signatures: 503, retry later.
    case full
}

// MARK: Push endpoints (PROTOCOL.md §8.7)

/// A mailbox's push endpoint: the URL the relay POSTs wakes to, and when the registration ends.
public struct PushRegistration: Sendable, Equatable {
    /// The endpoint URL exactly as registered.
    public var endpoint: String
    /// Unix seconds; the registration is gone from then on (swept with the mailbox).
    public var expiresAt: UInt64
    /// The normalised address of the client that registered it (``AddressPolicy``: an IPv6
    /// client by its prefix), at most ``maximumRegistrantBytes`` bytes; empty when unknown (a
    /// registration stored by an older relay). Wakes are shared fairly per registering address.
    public var registeredBy: String

    /// The longest ``registeredBy`` stored; a longer one is stored empty.
    public static let maximumRegistrantBytes = 255

    /// A registration from its parts.
    public init(endpoint: String, expiresAt: UInt64, registeredBy: String = "") {
        self.endpoint = endpoint
        self.expiresAt = expiresAt
        self.registeredBy = registeredBy.utf8.count <= Self.maximumRegistrantBytes ? registeredBy : ""
    }
}

/// The push side of a relay store: one registration per mailbox, all stores alike.
public protocol PushStore: Sendable {
    /// Stores `registration` for `recipient` (replacing any earlier one). Returns false, storing
    /// nothing, when the store holds `capacity` registrations and `recipient` has none.
    func pushRegister(recipient: String, _ registration: PushRegistration, capacity: Int) async throws -> Bool
    /// `recipient`'s registration if it has not expired at `now`.
    func pushRegistration(recipient: String, now: UInt64) async throws -> PushRegistration?
    /// Removes `recipient`'s registration — only if its endpoint is still `endpoint`, when given
    /// (so dropping a failing endpoint never removes a newer registration). True if one went.
    func pushRemove(recipient: String, endpoint: String?) async throws -> Bool
    /// Removes registrations that expired before `now`; returns how many.
    func pushSweep(now: UInt64) async throws -> Int
    /// Registrations stored (expired ones included until swept).
    func pushCount() async throws -> Int
}
