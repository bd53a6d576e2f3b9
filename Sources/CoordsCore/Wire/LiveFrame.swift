/// One frame of the live channel (PROTOCOL.md §8): a JSON object in a WebSocket text frame.
/// The client and the relay share this type, so both read and write the same bytes.
public enum LiveFrame: Sendable, Equatable {
    // Client → relay (§8.2)
    /// Watch these keys (at most ``LiveFrame/maximumIDsPerFrame``) and, with a proof, the mailbox.
    case subscribe(ids: [String], mailbox: MailboxProof?)
    /// Stop watching these keys.
    case unsubscribe(ids: [String])

    // Relay → client (§8.3)
    /// The answer to a subscribe or unsubscribe: keys now watched on the connection.
    case subscribed(ids: Int, mailbox: Bool)
    /// An accepted upload of a watched key: the fetch entry's fields.
    case location(LocationNotice)
    /// An accepted signed delete of a watched key, with the delete's own signed values.
    case deleted(id: String, timestamp: UInt64, signature: [UInt8])
    /// An envelope accepted for the watched mailbox (its id only).
    case message(id: String)
    /// An accepted upload of a watched key whose `location` notice would not fit in
    /// ``maximumFrameBytes``: the client fetches it (§4) instead.
    case changed(id: String)

    /// The path of the live endpoint.
    public static let path = "/v1/relay/live"
    /// The largest frame either side sends or accepts (bytes of JSON).
    public static let maximumFrameBytes = 16_384
    /// The most ids one subscribe or unsubscribe frame may carry (the fetch limit, §4).
    public static let maximumIDsPerFrame = RelayAPI.maximumFetchBatch

    /// A proof that the subscriber owns the mailbox it watches: the §7.3 request signature over
    /// `coords-mailbox-v1|GET|/v1/relay/live|<timestamp>`.
    public struct MailboxProof: Sendable, Equatable {
        /// The mailbox owner's public key; the recipient id is SHA-256 of it.
        public var key: Ed25519PublicKey
        /// Unix seconds; the relay accepts ±300 s.
        public var timestamp: UInt64
        /// 64 bytes, Ed25519 by `key`.
        public var signature: [UInt8]

        /// A proof from its parts (checked by the relay, not here).
        public init(key: Ed25519PublicKey, timestamp: UInt64, signature: [UInt8]) {
            (self.key, self.timestamp, self.signature) = (key, timestamp, signature)
        }

        /// Signs a fresh proof for `signer`'s mailbox at `timestamp` (Unix seconds).
        public init(signer: Ed25519SigningKey, timestamp: UInt64) {
            let message = MailboxAuth.signedBytes(method: "GET", path: LiveFrame.path, timestamp: timestamp)
            self.init(key: signer.publicKey, timestamp: timestamp, signature: signer.signature(for: message))
        }

        /// Whether the signature is `key`'s over this proof's signed string (the freshness window
        /// and the replay cache are the relay's to check).
        public var isValidSignature: Bool {
            key.isValidSignature(signature, for: MailboxAuth.signedBytes(method: "GET", path: LiveFrame.path, timestamp: timestamp))
        }

        /// The mailbox (§7.1 peer id) this proof opens.
        public var recipientID: String { PeerID(key).hex }
    }

    /// What a `location` notice carries: exactly a CoordsCore fetch entry (§6).
    public struct LocationNotice: Sendable, Equatable {
        /// The uploader's id (base64url public key).
        public var id: String
        /// The sealed location blob (§3).
        public var blob: [UInt8]
        /// The relay's storage time (Unix seconds).
        public var updated: UInt64
        /// The uploader's signed upload time (Unix seconds).
        public var timestamp: UInt64
        /// The uploader's signature over `blob ‖ timestamp`.
        public var signature: [UInt8]

        /// A notice from its parts.
        public init(id: String, blob: [UInt8], updated: UInt64, timestamp: UInt64, signature: [UInt8]) {
            (self.id, self.blob, self.updated, self.timestamp, self.signature) = (id, blob, updated, timestamp, signature)
        }

        /// The notice as the value of a fetch answer's entry (`{blob, updated, timestamp, signature}`).
        public var fetchEntry: JSONValue {
            .object([
                "blob": .string(Base64.encode(blob)), "updated": .integer(updated), "timestamp": .integer(timestamp),
                "signature": .string(Base64.encode(signature))
            ])
        }
    }

    // MARK: Encoding

    /// The frame's JSON.
    public var json: JSONValue {
        switch self {
        case .subscribe(let ids, let mailbox):
            var members: [(String, JSONValue)] = [("type", .string("subscribe")), ("ids", .array(ids.map(JSONValue.string)))]
            if let mailbox {
                members.append(
                    (
                        "mailbox",
                        .object([
                            "key": .string(mailbox.key.base64URL), "timestamp": .integer(mailbox.timestamp),
                            "signature": .string(Base64.encode(mailbox.signature))
                        ])
                    ))
            }
            return .object(JSONObject(members))
        case .unsubscribe(let ids):
            return .object(["type": .string("unsubscribe"), "ids": .array(ids.map(JSONValue.string))])
        case .subscribed(let ids, let mailbox):
            return .object(["type": .string("subscribed"), "ids": .integer(UInt64(clamping: ids)), "mailbox": .bool(mailbox)])
        case .location(let notice):
            var members: [(String, JSONValue)] = [("type", .string("location")), ("id", .string(notice.id))]
            if let fields = notice.fetchEntry.objectValue { members += fields.members.map { ($0.key, $0.value) } }
            return .object(JSONObject(members))
        case .deleted(let id, let timestamp, let signature):
            return .object([
                "type": .string("deleted"), "id": .string(id), "timestamp": .integer(timestamp), "signature": .string(Base64.encode(signature))
            ])
        case .message(let id):
            return .object(["type": .string("message"), "id": .string(id)])
        case .changed(let id):
            return .object(["type": .string("changed"), "id": .string(id)])
        }
    }

    /// The frame as the UTF-8 text of a WebSocket text frame.
    public var text: String { json.serializedString }

    // MARK: Decoding

    /// Parses one frame. Ids of `subscribe`/`unsubscribe` must be b64u of 32 bytes (§8.2).
    /// - Throws: ``WireError/invalidJSON(_:)``; ``WireError/unexpectedJSON(_:)`` for a frame over
    ///   ``maximumFrameBytes``, a missing or wrong field or an unknown `type`; ``WireError/invalidPublicKeyID(_:)`` for a bad id;
    ///   ``WireError/tooManyRecipients(count:maximum:)`` for more than 50 ids in one frame.
    public init(parsing bytes: [UInt8]) throws {
        guard bytes.count <= Self.maximumFrameBytes else {
            throw WireError.unexpectedJSON("a live frame is at most \(Self.maximumFrameBytes) bytes, got \(bytes.count)")
        }
        guard let object = try JSONValue.parse(bytes, maximumDepth: 4).objectValue else {
            throw WireError.unexpectedJSON("a live frame must be a JSON object")
        }
        let type = try Self.field(object, "type", \.stringValue)
        switch type {
        case "subscribe", "unsubscribe":
            let ids = try Self.ids(object)
            if type == "unsubscribe" {
                self = .unsubscribe(ids: ids)
                return
            }
            var proof: MailboxProof?
            if let mailbox = object["mailbox"], !mailbox.isNull {
                guard let fields = mailbox.objectValue else { throw WireError.unexpectedJSON("\"mailbox\" must be an object") }
                let key = try Ed25519PublicKey(base64URL: try Self.field(fields, "key", \.stringValue))
                let signature = try Base64.decode(try Self.field(fields, "signature", \.stringValue), field: "mailbox.signature")
                guard signature.count == 64 else { throw WireError.unexpectedJSON("\"mailbox.signature\" must be 64 bytes") }
                proof = MailboxProof(key: key, timestamp: try Self.field(fields, "timestamp", \.uint64Value), signature: signature)
            }
            self = .subscribe(ids: ids, mailbox: proof)
        case "subscribed":
            let count = try Self.field(object, "ids", \.uint64Value)
            self = .subscribed(ids: Int(clamping: count), mailbox: try Self.field(object, "mailbox", \.boolValue))
        case "location":
            let id = try Self.field(object, "id", \.stringValue)
            self = .location(
                LocationNotice(
                    id: id, blob: try Base64.decode(try Self.field(object, "blob", \.stringValue), field: "blob"),
                    updated: try Self.field(object, "updated", \.uint64Value), timestamp: try Self.field(object, "timestamp", \.uint64Value),
                    signature: try Base64.decode(try Self.field(object, "signature", \.stringValue), field: "signature")))
        case "deleted":
            self = .deleted(
                id: try Self.field(object, "id", \.stringValue), timestamp: try Self.field(object, "timestamp", \.uint64Value),
                signature: try Base64.decode(try Self.field(object, "signature", \.stringValue), field: "signature"))
        case "message":
            self = .message(id: try Self.field(object, "id", \.stringValue))
        case "changed":
            self = .changed(id: try Self.field(object, "id", \.stringValue))
        default:
            throw WireError.unexpectedJSON("unknown live frame type \"\(type.prefix(32))\"")
        }
    }

    private static func field<T>(_ object: JSONObject, _ name: String, _ value: (JSONValue) -> T?) throws -> T {
        guard let field = object[name], let typed = value(field) else {
            throw WireError.unexpectedJSON("live frame field \"\(name)\" is missing or of the wrong type")
        }
        return typed
    }

    /// The `ids` array: at most 50 b64u keys of 32 bytes, duplicates removed (first kept).
    private static func ids(_ object: JSONObject) throws -> [String] {
        let values = try field(object, "ids", \.arrayValue)
        guard values.count <= maximumIDsPerFrame else { throw WireError.tooManyRecipients(count: values.count, maximum: maximumIDsPerFrame) }
        var seen = Set<String>()
        var ids: [String] = []
        for value in values {
            guard let id = value.stringValue, Self.isKeyShaped(id) else {
                throw WireError.invalidPublicKeyID(value.stringValue.map { String($0.prefix(64)) } ?? "(not a string)")
            }
            if seen.insert(id).inserted { ids.append(id) }
        }
        return ids
    }

    /// Whether `id` is b64u of exactly 32 bytes, as every id of a subscribe frame must be (a
    /// fetch may name a key that is not a curve point; it is then simply never uploaded).
    public static func isKeyShaped(_ id: String) -> Bool {
        // Not base64url: not key-shaped (this is the answer, not a failure).
        id.utf8.count == 43 && (try? Base64.decode(id, field: "id"))?.count == 32
    }
}
