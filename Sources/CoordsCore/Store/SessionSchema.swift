/// The records of forward secrecy (PROTOCOL.md §10.10): own prekeys, friends' prekeys, sessions
/// and handshake base keys. Every value is sealed at rest like every other value of the store,
/// and none is in a backup.
extension Tables {
    /// Own signed prekeys still kept, by id (private halves).
    public static let ownSignedPrekeys = TableDefinition<UInt32, OwnPrekey>("own_signed_prekeys", stamped: true)
    /// Own one-time prekeys not used yet, by id (private halves). A separate table, so reading the
    /// few signed prekeys (every upload and fetch) never walks the hundreds of one-time ones.
    public static let ownOneTimePrekeys = TableDefinition<UInt32, OwnPrekey>("own_one_time_prekeys")
    /// Friends' accepted prekeys and whether they announced forward secrecy (§10.4).
    public static let friendPrekeys = TableDefinition<Ed25519PublicKey, FriendPrekeys>("friend_prekeys")
    /// Sessions by `friend key (32) | base key (32)`: a prefix scan lists a friend's sessions.
    public static let sessions = TableDefinition<[UInt8], StoredSession>("sessions", keys: .hiddenPrefix(32))
    /// Handshake base keys accepted (§10.5) → when (Unix ms), kept ``ForwardSecrecy/baseKeyKeep``.
    public static let baseKeys = TableDefinition<Bytes32, UInt64>("base_keys")
}

/// One of the identity's own prekeys (value of ``Tables/ownSignedPrekeys`` and ``Tables/ownOneTimePrekeys``):
/// `kind u8 | flags u8 (bit 0: replaced) | created u64 | expires u64 | private (32) | public (32)`.
public struct OwnPrekey: StoreValue, Sendable {
    public static var storeTypeName: String { "own-prekey/1" }

    /// Signed (medium-term) or one-time.
    public enum Kind: UInt8, Sendable {
        /// A signed prekey.
        case signed = 1
        /// A one-time prekey.
        case oneTime = 2
    }

    /// Which kind.
    public var kind: Kind
    /// The private scalar (wiped memory); ``key()`` makes the key pair when it is needed.
    public var secret: SecretBytes
    /// The public half.
    public var publicKey: X25519PublicKey
    /// When it was made (Unix ms).
    public var created: UInt64
    /// Signed prekeys: nobody seals to it from then on (Unix ms); 0 for one-time prekeys.
    public var expires: UInt64
    /// Signed prekeys: a newer one has been made (this one is kept only until its erase time).
    public var replaced: Bool

    /// A prekey from its parts.
    public init(kind: Kind, key: X25519PrivateKey, created: UInt64, expires: UInt64, replaced: Bool = false) {
        self.kind = kind
        self.secret = key.rawRepresentation
        self.publicKey = key.publicKey
        self.created = created
        self.expires = expires
        self.replaced = replaced
    }

    /// The key pair (the stored public half: no base-point multiplication).
    public func key() -> X25519PrivateKey { X25519PrivateKey(storedScalar: secret, publicKey: publicKey) }

    /// When the private half is erased (signed prekeys: `expires + SPK_KEEP`).
    public var eraseAt: UInt64 { expires.addingSaturating(ForwardSecrecy.signedPrekeyKeep) }

    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        let bytes = SecretBytes(count: 82) { out in
            out[0] = kind.rawValue
            out[1] = replaced ? 1 : 0
            withUnsafeBytes(of: created.bigEndian) { UnsafeMutableRawBufferPointer(rebasing: out[2..<10]).copyMemory(from: $0) }
            withUnsafeBytes(of: expires.bigEndian) { UnsafeMutableRawBufferPointer(rebasing: out[10..<18]).copyMemory(from: $0) }
            secret.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[18..<50]).copyMemory(from: $0) }
            publicKey.rawRepresentation.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[50..<82]).copyMemory(from: $0) }
        }
        return try bytes.withUnsafeBytes { try body($0) }
    }

    public init(storeBytes: UnsafeRawBufferPointer) throws {
        guard storeBytes.count == 82, let kind = Kind(rawValue: storeBytes[0]), storeBytes[1] <= 1 else {
            throw StoreCodecError("not an own-prekey/1 value")
        }
        var reader = ByteReader(UnsafeRawBufferPointer(rebasing: storeBytes[2..<18]))
        self.kind = kind
        self.secret = SecretBytes(borrowing: UnsafeRawBufferPointer(rebasing: storeBytes[18..<50]))
        self.publicKey = try X25519PublicKey(rawRepresentation: Array(storeBytes[50..<82]))
        self.created = try reader.read(UInt64.self)
        self.expires = try reader.read(UInt64.self)
        self.replaced = storeBytes[1] == 1
    }
}

/// What the client knows of a friend's prekeys (value of ``Tables/friendPrekeys``):
/// `flags u8 (1 signed, 2 one-time, 4 announced) | checked u64 | announced u64 | [signed (116)] | [one-time: id u32 | key (32) | signature (64)]`.
public struct FriendPrekeys: StoreValue, Sendable, Equatable {
    public static var storeTypeName: String { "friend-prekeys/1" }

    /// The last accepted signed prekey.
    public var signed: SignedPrekey?
    /// A one-time prekey from the last bundle, not used yet (used by the next handshake, then gone).
    public var oneTime: OneTimePrekey?
    /// When the friend first announced forward secrecy (Unix ms); never unset for this key.
    public var announcedAt: UInt64?
    /// When the client last asked the friend's relay for a bundle (Unix ms).
    public var checkedAt: UInt64

    /// A record from its parts.
    public init(signed: SignedPrekey? = nil, oneTime: OneTimePrekey? = nil, announcedAt: UInt64? = nil, checkedAt: UInt64 = 0) {
        self.signed = signed
        self.oneTime = oneTime
        self.announcedAt = announcedAt
        self.checkedAt = checkedAt
    }

    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        var writer = ByteWriter(capacity: 233)
        writer.write(UInt8((signed == nil ? 0 : 1) | (oneTime == nil ? 0 : 2) | (announcedAt == nil ? 0 : 4)))
        writer.write(checkedAt)
        writer.write(announcedAt ?? 0)
        if let signed { try signed.withStoreBytes { writer.write($0) } }
        if let oneTime {
            writer.write(oneTime.id)
            writer.write(oneTime.key.rawRepresentation)
            writer.write(oneTime.signature)
        }
        return try writer.bytes.withUnsafeBytes { try body($0) }
    }

    public init(storeBytes: UnsafeRawBufferPointer) throws {
        var reader = ByteReader(storeBytes)
        let flags = try reader.read(UInt8.self)
        guard flags & ~7 == 0 else { throw StoreCodecError("not a friend-prekeys/1 value") }
        checkedAt = try reader.read(UInt64.self)
        let announced = try reader.read(UInt64.self)
        announcedAt = flags & 4 != 0 ? announced : nil
        signed = flags & 1 != 0 ? try SignedPrekey(storeBytes: try reader.readBuffer(count: 116)) : nil
        if flags & 2 != 0 {
            let id = try reader.read(UInt32.self)
            let key = try X25519PublicKey(rawRepresentation: try reader.read(count: 32))
            oneTime = OneTimePrekey(id: id, key: key, signature: try reader.read(count: 64))
        } else {
            oneTime = nil
        }
        guard reader.isAtEnd else { throw StoreCodecError("trailing bytes in a friend-prekeys/1 value") }
    }

    /// The signed prekey to seal to at `now` (accepted and not expired), if any.
    public func usableSignedPrekey(at now: UInt64) -> SignedPrekey? {
        guard let signed, now < signed.expires else { return nil }
        return signed
    }
}

/// `signed-prekey/1`: `id u32 | key (32) | created u64 | expires u64 | signature (64)`.
extension SignedPrekey: StoreValue {
    public static var storeTypeName: String { "signed-prekey/1" }

    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        var writer = ByteWriter(capacity: 116)
        writer.write(id)
        writer.write(key.rawRepresentation)
        writer.write(created)
        writer.write(expires)
        writer.write(signature)
        return try writer.bytes.withUnsafeBytes { try body($0) }
    }

    public init(storeBytes: UnsafeRawBufferPointer) throws {
        guard storeBytes.count == 116 else { throw StoreCodecError("a signed prekey is 116 bytes") }
        var reader = ByteReader(storeBytes)
        let id = try reader.read(UInt32.self)
        let key = try X25519PublicKey(rawRepresentation: try reader.read(count: 32))
        self.init(
            id: id, key: key, created: try reader.read(UInt64.self), expires: try reader.read(UInt64.self),
            signature: try reader.read(count: 64))
    }
}

/// A session and whether it is the one used for sending (value of ``Tables/sessions``):
/// `flags u8 (bit 0: active) | stored session (RatchetSession.serialized())`.
public struct StoredSession: StoreValue, Sendable {
    public static var storeTypeName: String { "session/1" }

    /// The Double Ratchet state.
    public var session: RatchetSession
    /// The session this side sends on.
    public var active: Bool

    /// A record from its parts.
    public init(session: RatchetSession, active: Bool) {
        self.session = session
        self.active = active
    }

    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        let state = session.serialized()
        let bytes = SecretBytes(count: state.count + 1) { out in
            out[0] = active ? 1 : 0
            state.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[1...]).copyMemory(from: $0) }
        }
        return try bytes.withUnsafeBytes { try body($0) }
    }

    public init(storeBytes: UnsafeRawBufferPointer) throws {
        guard let flags = storeBytes.first, flags <= 1 else { throw StoreCodecError("not a session/1 value") }
        do {
            session = try RatchetSession(serialized: SecretBytes(borrowing: UnsafeRawBufferPointer(rebasing: storeBytes[1...])))
        } catch {
            throw StoreCodecError("a stored session is damaged: \(error)")
        }
        active = flags == 1
    }

    /// The table key of a friend's session: `friend (32) | base key (32)`.
    public static func key(friend: Ed25519PublicKey, baseKey: X25519PublicKey) -> [UInt8] {
        friend.rawRepresentation + baseKey.rawRepresentation
    }
}
