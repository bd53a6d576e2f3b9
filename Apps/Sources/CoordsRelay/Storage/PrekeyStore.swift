import CoordsCore

// MARK: Prekeys (PROTOCOL.md §10.3)

/// Outcome of storing an owner's prekeys.
public enum PrekeyPutResult: Sendable, Equatable {
    /// Stored (or already there); `stock` one-time prekeys are held now.
    case stored(stock: Int)
    /// The relay holds a newer signed prekey (409 `stale_prekey`).
    case stale
    /// A prekey id is stored with other bytes (409 `prekey_conflict`).
    case conflict
    /// The one-time stock would pass its cap; nothing was stored (409 `prekey_stock_full`).
    case stockFull
}

/// What the relay holds for one owner, for the owner's own stock request.
public struct PrekeyStock: Sendable, Equatable {
    /// The current signed prekey, if any.
    public var signed: SignedPrekey?
    /// One-time prekeys in stock.
    public var oneTime: Int

    /// A summary from its parts.
    public init(signed: SignedPrekey?, oneTime: Int) {
        self.signed = signed
        self.oneTime = oneTime
    }
}

/// The prekey side of a relay store (all stores alike, through ``PrekeyStoreRules``).
public protocol PrekeyStore: Sendable {
    /// Stores `owner`'s signed prekey and adds `oneTime` to its stock, as ``PrekeyStoreRules/decide(existing:storedOneTime:stock:signed:oneTime:stockLimit:)``
    /// decides, in one transaction.
    func prekeyPut(owner: Bytes32, signed: SignedPrekey, oneTime: [OneTimePrekey], stockLimit: Int) async throws -> PrekeyPutResult
    /// `owner`'s signed prekey (nil when none, or expired at `now`, Unix ms) and, when
    /// `takeOneTime`, one one-time prekey removed from the stock in the same transaction (the one
    /// with the lowest id): handed out exactly once, across nodes and restarts.
    func prekeyBundle(owner: Bytes32, takeOneTime: Bool, now: UInt64) async throws -> (signed: SignedPrekey, oneTime: OneTimePrekey?)?
    /// `owner`'s stock.
    func prekeyStock(owner: Bytes32) async throws -> PrekeyStock
    /// Removes signed prekeys expired at `now` (Unix ms) with their owner's one-time prekeys;
    /// returns how many owners went.
    func prekeySweep(now: UInt64) async throws -> Int
    /// Owners with a signed prekey, and one-time prekeys in stock in total (metrics).
    func prekeyTotals() async throws -> (owners: Int, oneTime: Int)
}

/// The decision every store applies to a prekey upload.
public enum PrekeyStoreRules {
    /// What an upload changes.
    public struct Decision: Sendable, Equatable {
        /// The answer.
        public var result: PrekeyPutResult
        /// Whether the signed prekey is written.
        public var writeSigned: Bool
        /// One-time prekeys to add (new ids only, de-duplicated).
        public var add: [OneTimePrekey]
    }

    /// Decides an upload.
    /// - Parameters:
    ///   - existing: the stored signed prekey.
    ///   - storedOneTime: the stored one-time prekey with an id, if any.
    ///   - stock: one-time prekeys stored now.
    ///   - signed: the uploaded signed prekey (signature already checked).
    ///   - oneTime: the uploaded one-time prekeys (signatures already checked).
    ///   - stockLimit: the cap (`OPK_STOCK`).
    public static func decide(
        existing: SignedPrekey?, storedOneTime: (UInt32) throws -> OneTimePrekey?, stock: Int, signed: SignedPrekey,
        oneTime: [OneTimePrekey], stockLimit: Int
    ) rethrows -> Decision {
        func refuse(_ result: PrekeyPutResult) -> Decision { Decision(result: result, writeSigned: false, add: []) }
        if let existing {
            if signed.created < existing.created { return refuse(.stale) }
            if signed.id == existing.id, signed != existing { return refuse(.conflict) }
        }
        var add: [OneTimePrekey] = []
        var seen: [UInt32: OneTimePrekey] = [:]
        for prekey in oneTime {
            if let earlier = seen[prekey.id] {
                if earlier != prekey { return refuse(.conflict) }
                continue
            }
            seen[prekey.id] = prekey
            if let stored = try storedOneTime(prekey.id) {
                if stored.key != prekey.key { return refuse(.conflict) }
                continue
            }
            add.append(prekey)
        }
        let total = stock.addingSaturating(add.count)
        if !add.isEmpty, total > stockLimit { return refuse(.stockFull) }
        return Decision(result: .stored(stock: total), writeSigned: existing != signed, add: add)
    }
}

// MARK: Store codecs (LMDB)

/// `one-time-prekey/1`: `key (32) | signature (64)` (the id is in the table key).
struct StoredOneTimePrekey: StoreValue, Equatable {
    var key: [UInt8]
    var signature: [UInt8]

    static var storeTypeName: String { "one-time-prekey/1" }

    init(_ prekey: OneTimePrekey) {
        key = prekey.key.rawRepresentation
        signature = prekey.signature
    }

    func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try (key + signature).withUnsafeBytes { try body($0) }
    }

    init(storeBytes: UnsafeRawBufferPointer) throws {
        guard storeBytes.count == 96 else { throw StoreCodecError("a one-time prekey is 96 bytes") }
        key = Array(storeBytes[0..<32])
        signature = Array(storeBytes[32..<96])
    }

    func prekey(id: UInt32) throws -> OneTimePrekey {
        OneTimePrekey(id: id, key: try X25519PublicKey(rawRepresentation: key), signature: signature)
    }
}

extension OneTimePrekey {
    /// The LMDB table key: `owner (32) | id u32 BE`, so a prefix scan lists an owner's stock in id order.
    static func tableKey(owner: Bytes32, id: UInt32) -> [UInt8] {
        var key = owner.bytes
        key.appendBigEndian(id)
        return key
    }
}
