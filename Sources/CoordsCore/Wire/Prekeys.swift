/// The constants of PROTOCOL.md §10.1 that concern prekeys and sessions, in one place.
public enum ForwardSecrecy {
    /// One day in milliseconds.
    public static let day: UInt64 = 86_400_000
    /// A signed prekey this old (ms) is replaced (`SPK_ROTATE`).
    public static let signedPrekeyRotation: UInt64 = 7 * day
    /// `expires = created + signedPrekeyValidity` (`SPK_VALID`).
    public static let signedPrekeyValidity: UInt64 = 9 * day
    /// A replaced signed prekey's private half is erased this long after its `expires` (`SPK_KEEP`).
    public static let signedPrekeyKeep: UInt64 = 7 * day
    /// A bundle claiming a longer validity is refused (`SPK_MAX_VALID`).
    public static let signedPrekeyMaximumValidity: UInt64 = 30 * day
    /// A bundle made this far in the future (ms) is still accepted (clock skew).
    public static let allowedFutureSkew: UInt64 = 300_000
    /// One-time prekeys per upload, at most (`OPK_BATCH`).
    public static let oneTimePrekeyBatch = 100
    /// The owner uploads a new batch when the relay's stock is below this (`OPK_LOW`).
    public static let oneTimePrekeyLow = 20
    /// One-time prekeys a relay keeps per identity, at most (`OPK_STOCK`).
    public static let oneTimePrekeyStock = 200
    /// Skipped message keys per session, and the largest gap accepted (`MAX_SKIP`).
    public static let maximumSkippedKeys = 1000
    /// A skipped message key is erased this long after it was stored (`SKIP_KEEP`, ms).
    public static let skippedKeyKeep: UInt64 = 7 * day
    /// Sessions kept per friend (`MAX_SESSIONS`).
    public static let maximumSessions = 3
    /// An inactive session unused this long (ms) is erased (`SESSION_KEEP`).
    public static let sessionKeep: UInt64 = 7 * day
    /// Handshake base keys are remembered this long (ms) to refuse a replayed handshake (`BASE_KEEP`).
    public static let baseKeyKeep: UInt64 = 16 * day
}

/// A medium-term X25519 key published by an identity and signed by it (PROTOCOL.md §10.2).
public struct SignedPrekey: Sendable, Equatable {
    static let domain = Array("coords-prekey-v1".utf8)
    /// The prekey's id, unique among the ids its owner keeps.
    public var id: UInt32
    /// The X25519 public key.
    public var key: X25519PublicKey
    /// When it was made (Unix ms).
    public var created: UInt64
    /// Nobody seals to it at or after this time (Unix ms).
    public var expires: UInt64
    /// Ed25519 signature by the owner's identity over ``signedBytes``.
    public var signature: [UInt8]

    /// Wraps the parts (not verified; see ``verify(owner:now:)``).
    public init(id: UInt32, key: X25519PublicKey, created: UInt64, expires: UInt64, signature: [UInt8]) {
        self.id = id
        self.key = key
        self.created = created
        self.expires = expires
        self.signature = signature
    }

    /// `"coords-prekey-v1" ‖ id (u32) ‖ key (32) ‖ created (u64) ‖ expires (u64)`.
    public var signedBytes: [UInt8] {
        var writer = ByteWriter(capacity: Self.domain.count + 52)
        writer.write(Self.domain)
        writer.write(id)
        writer.write(key.rawRepresentation)
        writer.write(created)
        writer.write(expires)
        return writer.bytes
    }

    /// Signs a prekey with the owner's identity.
    /// - Parameters:
    ///   - id: the prekey id.
    ///   - key: the public half.
    ///   - created: when it was made (Unix ms).
    ///   - expires: Unix ms; `created + ForwardSecrecy.signedPrekeyValidity` when nil.
    ///   - identity: the owner's identity key.
    public static func make(id: UInt32, key: X25519PublicKey, created: UInt64, expires: UInt64? = nil, identity: Ed25519SigningKey) -> SignedPrekey {
        var prekey = SignedPrekey(
            id: id, key: key, created: created,
            expires: expires ?? created.addingSaturating(ForwardSecrecy.signedPrekeyValidity), signature: [])
        prekey.signature = identity.signature(for: prekey.signedBytes)
        return prekey
    }

    /// Checks the signature under `owner`, that the key is not of small order, and the times of
    /// §10.2 (at `now`, Unix ms).
    /// - Throws: ``WireError/invalidPrekeyBundle(_:)`` naming the rule that failed;
    ///   ``WireError/prekeyBundleExpired(expires:)`` when `now ≥ expires`.
    public func verify(owner: Ed25519PublicKey, now: UInt64) throws {
        guard owner.isValidSignature(signature, for: signedBytes) else {
            throw WireError.invalidPrekeyBundle("the signed prekey's signature does not verify under the friend's identity key")
        }
        guard !key.isSmallOrder else {
            throw WireError.invalidPrekeyBundle("the signed prekey is a small-order point (every key agreement with it is all-zero)")
        }
        guard created < expires else { throw WireError.invalidPrekeyBundle("the signed prekey expires before it was made") }
        guard expires - created <= ForwardSecrecy.signedPrekeyMaximumValidity else {
            throw WireError.invalidPrekeyBundle("the signed prekey claims a validity longer than 30 days")
        }
        guard created <= now.addingSaturating(ForwardSecrecy.allowedFutureSkew) else {
            throw WireError.invalidPrekeyBundle("the signed prekey was made in the future")
        }
        guard now < expires else { throw WireError.prekeyBundleExpired(expires: expires) }
    }
}

/// A one-time X25519 key, handed out once by the relay (PROTOCOL.md §10.2).
public struct OneTimePrekey: Sendable, Equatable {
    static let domain = Array("coords-onetime-prekey-v1".utf8)
    /// The prekey's id, unique among the ids its owner keeps.
    public var id: UInt32
    /// The X25519 public key.
    public var key: X25519PublicKey
    /// Ed25519 signature by the owner's identity over ``signedBytes``.
    public var signature: [UInt8]

    /// Wraps the parts (not verified; see ``verify(owner:)``).
    public init(id: UInt32, key: X25519PublicKey, signature: [UInt8]) {
        self.id = id
        self.key = key
        self.signature = signature
    }

    /// `"coords-onetime-prekey-v1" ‖ id (u32) ‖ key (32)`.
    public var signedBytes: [UInt8] {
        var writer = ByteWriter(capacity: Self.domain.count + 36)
        writer.write(Self.domain)
        writer.write(id)
        writer.write(key.rawRepresentation)
        return writer.bytes
    }

    /// Signs a one-time prekey with the owner's identity.
    public static func make(id: UInt32, key: X25519PublicKey, identity: Ed25519SigningKey) -> OneTimePrekey {
        var prekey = OneTimePrekey(id: id, key: key, signature: [])
        prekey.signature = identity.signature(for: prekey.signedBytes)
        return prekey
    }

    /// Checks the signature under `owner`.
    /// - Throws: ``WireError/invalidPrekeyBundle(_:)``.
    public func verify(owner: Ed25519PublicKey) throws {
        guard owner.isValidSignature(signature, for: signedBytes) else {
            throw WireError.invalidPrekeyBundle("a one-time prekey's signature does not verify under the friend's identity key")
        }
        guard !key.isSmallOrder else {
            throw WireError.invalidPrekeyBundle("a one-time prekey is a small-order point (every key agreement with it is all-zero)")
        }
    }
}

/// What a relay hands out for one identity (PROTOCOL.md §10.2): its signed prekey and, at most
/// once each, a one-time prekey.
public struct PrekeyBundle: Sendable, Equatable {
    /// The identity the bundle claims to belong to.
    public var identity: Ed25519PublicKey
    /// The current signed prekey.
    public var signedPrekey: SignedPrekey
    /// A one-time prekey, or `nil` (stock empty, anonymous request, or rate limit).
    public var oneTimePrekey: OneTimePrekey?

    /// Wraps the parts (not verified; see ``verify(for:now:cached:)``).
    public init(identity: Ed25519PublicKey, signedPrekey: SignedPrekey, oneTimePrekey: OneTimePrekey?) {
        self.identity = identity
        self.signedPrekey = signedPrekey
        self.oneTimePrekey = oneTimePrekey
    }

    /// The §10.2 acceptance rules for friend `friend` (their key as we know it) at `now` (ms).
    /// - Parameters:
    ///   - friend: the identity key the client knows for this friend (never the relay's word).
    ///   - now: Unix ms.
    ///   - cached: the signed prekey already accepted for this friend, if any.
    /// - Throws: ``WireError/invalidPrekeyBundle(_:)`` (someone else's bundle, bad signature, bad
    ///   times, a rollback or a conflict with the cached prekey), ``WireError/prekeyBundleExpired(expires:)``.
    public func verify(for friend: Ed25519PublicKey, now: UInt64, cached: SignedPrekey? = nil) throws {
        guard identity == friend else {
            throw WireError.invalidPrekeyBundle("the bundle belongs to another identity than the one asked for")
        }
        try signedPrekey.verify(owner: friend, now: now)
        try oneTimePrekey?.verify(owner: friend)
        if let cached {
            guard signedPrekey.created >= cached.created else {
                throw WireError.invalidPrekeyBundle("the signed prekey is older than the one already accepted (a rollback)")
            }
            if signedPrekey.id == cached.id, signedPrekey != cached {
                throw WireError.invalidPrekeyBundle("the signed prekey reuses the id of the accepted one with other bytes")
            }
        }
    }
}

// MARK: JSON

extension SignedPrekey {
    /// The `"signedPrekey"` JSON object.
    public var json: JSONValue {
        .object([
            "id": .integer(UInt64(id)), "key": .string(Base64.encode(key.rawRepresentation)),
            "created": .integer(created), "expires": .integer(expires), "signature": .string(Base64.encode(signature))
        ])
    }

    /// Parses a `"signedPrekey"` object (the signature is checked by ``verify(owner:now:)``).
    /// - Throws: ``WireError/invalidPrekeyBundle(_:)`` naming the bad member.
    public init(json: JSONValue) throws {
        guard let object = json.objectValue else { throw WireError.invalidPrekeyBundle("signedPrekey is not a JSON object") }
        self.init(
            id: try PrekeyJSON.id(object, "signedPrekey"), key: try PrekeyJSON.key(object, "signedPrekey"),
            created: try PrekeyJSON.time(object, "created"), expires: try PrekeyJSON.time(object, "expires"),
            signature: try PrekeyJSON.signature(object, "signedPrekey"))
    }
}

extension OneTimePrekey {
    /// The `"oneTimePrekey"` JSON object.
    public var json: JSONValue {
        .object(["id": .integer(UInt64(id)), "key": .string(Base64.encode(key.rawRepresentation)), "signature": .string(Base64.encode(signature))])
    }

    /// Parses a `"oneTimePrekey"` object (the signature is checked by ``verify(owner:)``).
    /// - Throws: ``WireError/invalidPrekeyBundle(_:)`` naming the bad member.
    public init(json: JSONValue) throws {
        guard let object = json.objectValue else { throw WireError.invalidPrekeyBundle("oneTimePrekey is not a JSON object") }
        self.init(
            id: try PrekeyJSON.id(object, "oneTimePrekey"), key: try PrekeyJSON.key(object, "oneTimePrekey"),
            signature: try PrekeyJSON.signature(object, "oneTimePrekey"))
    }
}

extension PrekeyBundle {
    /// The bundle as a relay serves it: `{"key", "signedPrekey", "oneTimePrekey"}`.
    public var json: JSONValue {
        .object(["key": .string(identity.base64URL), "signedPrekey": signedPrekey.json, "oneTimePrekey": oneTimePrekey?.json ?? .null])
    }

    /// Parses a relay's bundle answer (at most 16 KiB; checked by ``verify(for:now:cached:)``).
    /// - Throws: ``WireError/invalidPrekeyBundle(_:)`` for anything malformed.
    public init(json bytes: [UInt8]) throws {
        guard bytes.count <= 16_384 else { throw WireError.invalidPrekeyBundle("the bundle is \(bytes.count) bytes; at most 16384") }
        let value: JSONValue
        do { value = try JSONValue.parse(bytes, maximumDepth: 4) } catch { throw WireError.invalidPrekeyBundle("not JSON: \(error)") }
        try self.init(json: value)
    }

    /// Parses a bundle object.
    /// - Throws: ``WireError/invalidPrekeyBundle(_:)``.
    public init(json value: JSONValue) throws {
        guard let object = value.objectValue else { throw WireError.invalidPrekeyBundle("the bundle is not a JSON object") }
        guard let text = object["key"]?.stringValue, let identity = try? Ed25519PublicKey(base64URL: text) else {
            throw WireError.invalidPrekeyBundle("key is not a b64u Ed25519 public key")
        }
        guard let signed = object["signedPrekey"] else { throw WireError.invalidPrekeyBundle("signedPrekey is missing") }
        let oneTime: OneTimePrekey?
        switch object["oneTimePrekey"] {
        case nil, .some(.null): oneTime = nil
        case .some(let member): oneTime = try OneTimePrekey(json: member)
        }
        self.init(identity: identity, signedPrekey: try SignedPrekey(json: signed), oneTimePrekey: oneTime)
    }
}

/// Member readers shared by the prekey types.
enum PrekeyJSON {
    static func id(_ object: JSONObject, _ what: String) throws -> UInt32 {
        guard let value = object["id"]?.uint64Value, let id = UInt32(exactly: value) else {
            throw WireError.invalidPrekeyBundle("\(what).id is not an integer 0…4294967295")
        }
        return id
    }

    static func key(_ object: JSONObject, _ what: String) throws -> X25519PublicKey {
        guard let text = object["key"]?.stringValue, let bytes = try? Base64.decode(text, field: "key"), bytes.count == 32,
            let key = try? X25519PublicKey(rawRepresentation: bytes)
        else { throw WireError.invalidPrekeyBundle("\(what).key is not a b64u 32-byte X25519 key") }
        return key
    }

    static func time(_ object: JSONObject, _ name: String) throws -> UInt64 {
        guard let value = object[name]?.uint64Value else { throw WireError.invalidPrekeyBundle("signedPrekey.\(name) is not a Unix time in ms") }
        return value
    }

    static func signature(_ object: JSONObject, _ what: String) throws -> [UInt8] {
        guard let text = object["signature"]?.stringValue, let bytes = try? Base64.decode(text, field: "signature"), bytes.count == 64 else {
            throw WireError.invalidPrekeyBundle("\(what).signature is not a b64u 64-byte signature")
        }
        return bytes
    }
}
