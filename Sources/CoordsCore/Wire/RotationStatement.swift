/// A key rotation (PROTOCOL.md §9.1): the old key, the new key, the new server and a time,
/// signed by both keys over the same bytes, so friends move to a key the owner of the old one
/// chose and the holder of the new one accepted. `revokes` marks the old key compromised (§9.2).
/// Made by ``make(old:new:server:at:revokes:)`` or parsed from JSON; the memberwise initialiser
/// is internal.
public struct RotationStatement: Sendable, Equatable {
    static let domain = Array("coords-rotate-v1".utf8)
    /// Longest new-server string, in UTF-8 bytes.
    public static let maximumServerBytes = 2048

    /// The key rotated away from.
    public var old: Ed25519PublicKey
    /// The key rotated to.
    public var new: Ed25519PublicKey
    /// The relay the new identity publishes to.
    public var server: String
    /// When the rotation was made (Unix ms).
    public var at: UInt64
    /// The old key is compromised (a lost device): friends refuse anything it signs from now on.
    public var revokes: Bool
    /// The old key's signature over ``signedBytes(old:new:server:at:revokes:)`` (64 bytes).
    public var oldSignature: [UInt8]
    /// The new key's signature over the same bytes (64 bytes).
    public var newSignature: [UInt8]

    /// `"coords-rotate-v1" ‖ old ‖ new ‖ at (u64 BE) ‖ flags (u8) ‖ server length (u16 BE) ‖ server`.
    /// - Throws: ``WireError/invalidRotation(_:)`` for a server longer than 2,048 bytes.
    public static func signedBytes(old: Ed25519PublicKey, new: Ed25519PublicKey, server: String, at: UInt64, revokes: Bool) throws -> [UInt8] {
        let serverBytes = Array(server.utf8)
        guard serverBytes.count <= maximumServerBytes else {
            throw WireError.invalidRotation("the server is \(serverBytes.count) bytes; at most \(maximumServerBytes)")
        }
        var writer = ByteWriter(capacity: domain.count + 64 + 11 + serverBytes.count)
        writer.write(domain)
        writer.write(old.rawRepresentation)
        writer.write(new.rawRepresentation)
        writer.write(at)
        writer.write(UInt8(revokes ? 1 : 0))
        writer.write(UInt16(serverBytes.count))
        writer.write(serverBytes)
        return writer.bytes
    }

    /// A statement signed by both keys.
    /// - Throws: ``WireError/invalidRotation(_:)`` (same key twice, server too long or not a URL).
    public static func make(old: Ed25519SigningKey, new: Ed25519SigningKey, server: String, at: UInt64, revokes: Bool) throws -> RotationStatement {
        guard old.publicKey != new.publicKey else { throw WireError.invalidRotation("the new key is the old key") }
        guard (try? RelayAPI.endpoint(server: server, path: "")) != nil else { throw WireError.invalidRotation("the server is not an http(s) URL") }
        let bytes = try signedBytes(old: old.publicKey, new: new.publicKey, server: server, at: at, revokes: revokes)
        return RotationStatement(
            old: old.publicKey, new: new.publicKey, server: server, at: at, revokes: revokes,
            oldSignature: old.signature(for: bytes), newSignature: new.signature(for: bytes))
    }

    /// Checks both signatures, that the keys differ and that the server is an http(s) URL.
    /// - Throws: ``WireError/invalidRotation(_:)`` naming what failed.
    public func verify() throws {
        guard old != new else { throw WireError.invalidRotation("the new key is the old key") }
        guard (try? RelayAPI.endpoint(server: server, path: "")) != nil else { throw WireError.invalidRotation("the server is not an http(s) URL") }
        let bytes = try Self.signedBytes(old: old, new: new, server: server, at: at, revokes: revokes)
        guard old.isValidSignature(oldSignature, for: bytes) else { throw WireError.invalidRotation("the old key's signature does not verify") }
        guard new.isValidSignature(newSignature, for: bytes) else { throw WireError.invalidRotation("the new key's signature does not verify") }
    }
}

// MARK: JSON (in an extension, so the memberwise initialiser stays)

extension RotationStatement {
    /// The `"rotation"` object of a §9.1 payload.
    public var json: JSONValue {
        .object(
            JSONObject([
                ("old", .string(old.base64URL)), ("new", .string(new.base64URL)), ("server", .string(server)), ("at", .integer(at)),
                ("revokes", .bool(revokes)), ("oldSignature", .string(Base64.encode(oldSignature))),
                ("newSignature", .string(Base64.encode(newSignature)))
            ]))
    }

    /// Parses the `"rotation"` object (signatures are checked by ``verify()``).
    /// - Throws: ``WireError/invalidRotation(_:)`` naming the bad field.
    public init(json: JSONValue) throws {
        guard let object = json.objectValue else { throw WireError.invalidRotation("not a JSON object") }
        func key(_ name: String) throws -> Ed25519PublicKey {
            guard let text = object[name]?.stringValue, let key = try? Ed25519PublicKey(base64URL: text) else {
                throw WireError.invalidRotation("\(name) is not a b64u Ed25519 public key")
            }
            return key
        }
        func signature(_ name: String) throws -> [UInt8] {
            guard let text = object[name]?.stringValue, let bytes = try? Base64.decode(text, field: name), bytes.count == 64 else {
                throw WireError.invalidRotation("\(name) is not a b64u 64-byte signature")
            }
            return bytes
        }
        guard let server = object["server"]?.stringValue else { throw WireError.invalidRotation("server is missing") }
        guard let at = object["at"]?.uint64Value else { throw WireError.invalidRotation("at is not a Unix time in ms") }
        guard let revokes = object["revokes"]?.boolValue else { throw WireError.invalidRotation("revokes is not a boolean") }
        self.init(
            old: try key("old"), new: try key("new"), server: server, at: at, revokes: revokes,
            oldSignature: try signature("oldSignature"), newSignature: try signature("newSignature"))
    }
}
