import CoordsCore

// MARK: Attachment objects (PROTOCOL.md §12.4)

/// What a relay knows about one stored object: who created it, its whole stored length, when it
/// expires, and how many of its bytes are stored (always a prefix: parts are appended in order).
public struct StoredObject: Sendable, Equatable {
    /// The owner: the peer id (SHA-256 of the Ed25519 key) that created the object.
    public var owner: Bytes32
    /// The object's whole stored length `S`, bytes.
    public var size: UInt64
    /// Unix second at which the object goes, complete or not.
    public var expiresAt: UInt64
    /// Bytes `0 ..< stored` are stored (`stored ≤ size`).
    public var stored: UInt64

    /// An object's record from its parts.
    public init(owner: Bytes32, size: UInt64, expiresAt: UInt64, stored: UInt64) {
        self.owner = owner
        self.size = size
        self.expiresAt = expiresAt
        self.stored = stored
    }

    /// Whether every byte is stored (only then is the object served).
    public var complete: Bool { stored == size }
}

/// One upload part, checked by the route (§12.4): the store applies it with ``ObjectStoreRules``.
public struct ObjectPart: Sendable {
    /// The object.
    public var object: ObjectID
    /// The uploader (the signed request's peer id).
    public var owner: Bytes32
    /// Where the part starts in the object.
    public var offset: UInt64
    /// The object's whole stored length the uploader names (`stored=`).
    public var size: UInt64
    /// The expiry the uploader names (`expires=`, Unix seconds).
    public var expiresAt: UInt64
    /// The part's bytes (at most ``ObjectLimits/maximumPartBytes``; empty for a state probe).
    public var bytes: [UInt8]

    /// A part from its fields.
    public init(object: ObjectID, owner: Bytes32, offset: UInt64, size: UInt64, expiresAt: UInt64, bytes: [UInt8]) {
        self.object = object
        self.owner = owner
        self.offset = offset
        self.size = size
        self.expiresAt = expiresAt
        self.bytes = bytes
    }
}

/// The outcome of storing a part.
public enum ObjectPutResult: Sendable, Equatable {
    /// Stored (or, for an empty part, nothing to store): the object's state now.
    case stored(StoredObject)
    /// Another key created the object (403 `not_owner`).
    case notOwner
    /// The object exists with another size or expiry (409 `object_mismatch`).
    case mismatch
    /// The part does not start where the stored bytes end (409 `offset_mismatch`).
    case offsetMismatch(stored: UInt64)
    /// A new object would pass the owner's byte or object quota (429 `quota`).
    case quota
    /// A new object would pass the relay's total (507 `relay_full`).
    case relayFull
}

/// The outcome of deleting an object.
public enum ObjectDeleteResult: Sendable, Equatable {
    /// The object and its bytes are gone.
    case deleted
    /// There was none (or it had expired).
    case none
    /// Another key owns it (403).
    case notOwner
}

/// Limits of the object routes (§12.1 constants; the relay's own totals).
public struct ObjectLimits: Sendable, Equatable {
    /// Whether the routes answer at all (off: 404 `objects_disabled`).
    public var enabled = true
    /// Largest stored object, bytes (`OBJECT_MAX_STORED`).
    public var maximumStoredBytes = Objects.maximumStored
    /// Largest upload part, bytes (`OBJECT_PART_MAX`).
    public var maximumPartBytes = Objects.maximumPartByteCount
    /// Longest lifetime from now, seconds (`OBJECT_TTL_MAX`).
    public var maximumLifetimeSeconds = Objects.maximumLifetimeSeconds
    /// Bytes one owner may hold, every object counted at its whole size (`OBJECT_QUOTA`).
    public var quotaBytes = Objects.defaultQuotaBytes
    /// Objects one owner may hold (`OBJECT_COUNT_MAX`).
    public var maximumObjectsPerOwner = Objects.defaultMaximumObjects
    /// Bytes the relay holds in objects in total, counted as **stored** (507 `relay_full` beyond).
    /// A reservation (an object's announced size `S`) is charged only to its owner's quota, never
    /// to this total: throwaway keys announcing large objects cannot fill the relay for others.
    public var maximumTotalBytes: UInt64 = 10 * 1_073_741_824
    /// Bytes that must stay free on the filesystem that holds the objects after a part is written
    /// (the mailbox and the locations share that disk): a part that would leave less is refused
    /// with 507 `storage_full` and nothing of it is kept. 0 turns the floor off.
    public var minimumFreeDiskBytes: UInt64 = 268_435_456

    /// The defaults of §12.1, and 10 GiB in total.
    public init() {}
}

/// What an owner holds (live objects only), and what the relay holds in total.
public struct ObjectUsage: Sendable, Equatable {
    /// The owner's live objects, counted at their whole sizes.
    public var ownerBytes: UInt64
    /// The owner's live objects.
    public var ownerObjects: Int
    /// The bytes stored of every live object (what is on disk, not what was announced).
    public var totalBytes: UInt64

    /// Usage from its parts.
    public init(ownerBytes: UInt64, ownerObjects: Int, totalBytes: UInt64) {
        self.ownerBytes = ownerBytes
        self.ownerObjects = ownerObjects
        self.totalBytes = totalBytes
    }
}

/// The object side of a relay store (all stores alike, through ``ObjectStoreRules``).
///
/// Every store keeps an object's bytes outside the indexes it searches (memory: one buffer per
/// object; LMDB: a file per object in the data directory; PostgreSQL: rows of at most one part)
/// and applies a part atomically: all of it durably stored before the answer, or none of it.
public protocol ObjectStore: Sendable {
    /// Applies `part` as ``ObjectStoreRules/decide(existing:part:usage:limits:now:)`` decides, at
    /// `now` (Unix seconds): creates the object, appends the bytes, or refuses.
    /// - Throws: the store's I/O errors (a disk full is ``ObjectStoreFull``); nothing of the part
    ///   is kept then.
    func objectPut(_ part: ObjectPart, limits: ObjectLimits, now: UInt64) async throws -> ObjectPutResult
    /// The object's record, or nil when there is none or it expired at `now` (Unix seconds).
    func objectInfo(_ object: ObjectID, now: UInt64) async throws -> StoredObject?
    /// Up to `count` stored bytes from `offset` (fewer only at the end of the stored bytes; empty
    /// when the object has gone).
    func objectRead(_ object: ObjectID, offset: UInt64, count: Int) async throws -> [UInt8]
    /// Removes `owner`'s object and its bytes.
    func objectDelete(_ object: ObjectID, owner: Bytes32, now: UInt64) async throws -> ObjectDeleteResult
    /// Removes every object expired at `now` (Unix seconds), complete or not; returns how many.
    func objectSweep(now: UInt64) async throws -> Int
    /// Objects held, and their whole sizes in total (metrics; expired ones until the sweep).
    func objectTotals() async throws -> (objects: Int, bytes: UInt64)
}

/// The store could not write a part for lack of space (507 `storage_full`); nothing of the part
/// was kept.
public struct ObjectStoreFull: Error, Sendable, CustomStringConvertible {
    /// "the relay's disk is full".
    public var description: String { "the relay's disk is full" }
    /// The error.
    public init() {}
}

/// The decision every store applies to an upload part (§12.4).
public enum ObjectStoreRules {
    /// What storing a part changes.
    public struct Decision: Sendable, Equatable {
        /// The answer.
        public var result: ObjectPutResult
        /// Whether the object is created (any bytes under its id from before are dropped first).
        public var create: Bool
        /// Whether the part's bytes are appended at `part.offset`.
        public var append: Bool
    }

    /// Decides a part. An expired object counts as none (its bytes are replaced).
    ///
    /// The owner's quota counts every live object at its whole size (a key can reserve only its
    /// own quota); the relay's total counts the bytes **stored**, checked on every part that
    /// brings bytes, so reservations never refuse another key's upload.
    /// - Parameters:
    ///   - existing: the stored record under the part's id, expired or not.
    ///   - part: the part (its fields checked by the route: `offset + |bytes| ≤ size`).
    ///   - usage: the owner's and the relay's live usage, asked for only when the object is new or
    ///     the part brings bytes.
    ///   - limits: the quotas.
    ///   - now: Unix seconds.
    public static func decide(
        existing: StoredObject?, part: ObjectPart, usage: () throws -> ObjectUsage, limits: ObjectLimits, now: UInt64
    ) rethrows -> Decision {
        func refuse(_ result: ObjectPutResult) -> Decision { Decision(result: result, create: false, append: false) }
        let partBytes = UInt64(part.bytes.count)
        let partEnd = part.offset.addingSaturating(partBytes)
        guard partEnd <= part.size else { return refuse(.mismatch) }  // the route answers 400 before
        if let existing, existing.expiresAt > now {
            guard existing.owner == part.owner else { return refuse(.notOwner) }
            guard existing.size == part.size, existing.expiresAt == part.expiresAt else { return refuse(.mismatch) }
            guard part.offset == existing.stored else { return refuse(.offsetMismatch(stored: existing.stored)) }
            if partBytes > 0, try usage().totalBytes.addingSaturating(partBytes) > limits.maximumTotalBytes { return refuse(.relayFull) }
            var after = existing
            after.stored = partEnd
            return Decision(result: .stored(after), create: false, append: partBytes > 0)
        }
        guard part.offset == 0 else { return refuse(.offsetMismatch(stored: 0)) }
        let current = try usage()
        if current.ownerObjects >= limits.maximumObjectsPerOwner || current.ownerBytes.addingSaturating(part.size) > limits.quotaBytes {
            return refuse(.quota)
        }
        if current.totalBytes.addingSaturating(partBytes) > limits.maximumTotalBytes { return refuse(.relayFull) }
        let created = StoredObject(owner: part.owner, size: part.size, expiresAt: part.expiresAt, stored: partEnd)
        return Decision(result: .stored(created), create: true, append: partBytes > 0)
    }
}
