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

    public init(blob: [UInt8], timestamp: UInt64, signature: [UInt8], updated: UInt64) {
        self.blob = blob
        self.timestamp = timestamp
        self.signature = signature
        self.updated = updated
    }
}

/// Outcome of storing an upload.
public enum PutResult: Sendable, Equatable {
    case stored
    /// Refused: the stored upload (or a deletion) is as new or newer (replay / rollback, 409).
    case stale(current: UInt64)
}

/// Outcome of a signed delete.
public enum DeleteResult: Sendable, Equatable {
    case deleted
    case notFound
    /// Refused: the stored upload is newer than the delete request (409).
    case stale(current: UInt64)
}

/// Where the relay keeps uploads. ``LMDBRelayStore`` persists them (durable before the 204);
/// ``MemoryRelayStore`` is for tests. Both apply ``RelayStoreRules`` so they behave the same.
public protocol RelayStore: Sendable {
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
    /// Finishes pending writes and releases the store.
    func close() async
}

/// A deletion marker: the signed time of the delete, and when the relay recorded it.
public struct Tombstone: Sendable, Equatable {
    public var timestamp: UInt64
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
