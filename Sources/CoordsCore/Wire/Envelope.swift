import CPlatform

/// A peer id (PROTOCOL.md §7.1): lowercase hex of SHA-256 of an Ed25519 public key.
public struct PeerID: Sendable, Hashable, CustomStringConvertible {
    /// 64 lowercase hex characters.
    public let hex: String

    /// The peer id of `key`.
    public init(_ key: Ed25519PublicKey) {
        hex = Hex.encode(SHA256.hash(key.rawRepresentation))
    }

    /// Parses a peer id, accepting any case (stored lowercase).
    /// - Throws: ``WireError/invalidEnvelope(_:)`` unless it is 64 hex digits.
    public init(parsing text: String) throws {
        let lower = text.lowercased()
        guard lower.utf8.count == 64, lower.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            throw WireError.invalidEnvelope("a peer id must be 64 hex digits, got \"\(text.prefix(70))\"")
        }
        hex = lower
    }

    public var description: String { String(hex.prefix(12)) + "…" }
}

extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}

/// RFC 3339 timestamps (§7.1): producers write whole-second UTC with `Z`; readers accept any
/// offset and fractional seconds.
public enum RFC3339 {
    /// `2026-11-22T10:00:00Z` for Unix seconds.
    public static func format(_ seconds: UInt64) -> String {
        var time = time_t(Int64(clamping: seconds))
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ v: Int32) -> String { String(v).leftPadded(to: 2) }
        return "\(String(parts.tm_year + 1900).leftPadded(to: 4))-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }

    /// Unix seconds (fractions dropped) of an RFC 3339 date-time with `Z` or `±hh:mm`.
    /// - Throws: ``WireError/invalidEnvelope(_:)`` for anything else.
    public static func parse(_ text: String) throws -> UInt64 {
        let b = Array(text.utf8)
        func fail() -> WireError { .invalidEnvelope("\"\(text.prefix(40))\" is not an RFC 3339 date-time") }
        func number(_ range: Range<Int>) throws -> Int {
            guard range.upperBound <= b.count else { throw fail() }
            var value = 0
            for c in b[range] {
                guard (0x30...0x39).contains(c) else { throw fail() }
                value = value * 10 + Int(c - 0x30)
            }
            return value
        }
        guard b.count >= 20, b[4] == 0x2D, b[7] == 0x2D, b[10] == 0x54 || b[10] == 0x74, b[13] == 0x3A, b[16] == 0x3A else { throw fail() }
        let (year, month, day) = (try number(0..<4), try number(5..<7), try number(8..<10))
        let (hour, minute, second) = (try number(11..<13), try number(14..<16), try number(17..<19))
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second <= 60 else { throw fail() }
        var i = 19
        if b[i] == 0x2E {  // fraction
            i += 1
            let start = i
            while i < b.count, (0x30...0x39).contains(b[i]) { i += 1 }
            guard i > start else { throw fail() }
        }
        guard i < b.count else { throw fail() }
        var offset = 0
        if b[i] == 0x5A || b[i] == 0x7A {
            i += 1
        } else if b[i] == 0x2B || b[i] == 0x2D {
            guard i + 6 == b.count, b[i + 3] == 0x3A else { throw fail() }
            let (h, m) = (try number(i + 1..<i + 3), try number(i + 4..<i + 6))
            guard h < 24, m < 60 else { throw fail() }
            offset = (h * 60 + m) * 60 * (b[i] == 0x2D ? -1 : 1)
            i += 6
        } else {
            throw fail()
        }
        guard i == b.count else { throw fail() }
        // Days from civil (Howard Hinnant's algorithm).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset
        guard seconds >= 0 else { throw fail() }
        return UInt64(seconds)
    }
}

/// What a sealed payload says (§7.2): a text, a receipt, or a kind this build does not know.
public struct MessagePayload: Sendable, Equatable {
    /// `"text"`, `"receipt"`, or another kind (kept and reported, not dropped).
    public var kind: String
    /// The message id (UUID).
    public var id: String
    /// The text (empty for receipts).
    public var text: String
    /// When the sender wrote it (Unix ms).
    public var sentAt: UInt64
    /// For receipts: the id of the message it confirms.
    public var ack: String?
    /// For `"rotation"` payloads: the statement object (PROTOCOL.md §9.1).
    public var rotation: JSONValue?
    /// Members beyond the ones above, in order (the group kinds of §11.3 and §11.5: `group`,
    /// `statements`, `chain`, …); kept when parsed, written after them.
    public var extra: JSONObject

    /// A payload; `ack`, `rotation` and `extra` only for the kinds that carry them.
    public init(
        kind: String, id: String, text: String, sentAt: UInt64, ack: String? = nil, rotation: JSONValue? = nil, extra: JSONObject = JSONObject()
    ) {
        self.kind = kind
        self.id = id
        self.text = text
        self.sentAt = sentAt
        self.ack = ack
        self.rotation = rotation
        self.extra = extra
    }

    /// The UTF-8 JSON plaintext, keys in the §7.2 order.
    public var json: [UInt8] {
        var object = JSONObject()
        object["kind"] = .string(kind)
        object["id"] = .string(id)
        object["text"] = .string(text)
        object["sentAt"] = .integer(sentAt)
        if let ack { object["ack"] = .string(ack) }
        if let rotation { object["rotation"] = rotation }
        for member in extra.members where object[member.key] == nil { object[member.key] = member.value }
        return JSONValue.object(object).serialized()
    }

    /// Parses a plaintext.
    /// - Throws: ``WireError/invalidEnvelope(_:)`` when it is not the §7.2 JSON.
    public init(json bytes: [UInt8]) throws {
        guard let object = (try? JSONValue.parse(bytes))?.objectValue, let kind = object["kind"]?.stringValue,
            let id = object["id"]?.stringValue, let sentAt = object["sentAt"]?.uint64Value
        else {
            throw WireError.invalidEnvelope("the payload is not {\"kind\",\"id\",\"text\",\"sentAt\"} JSON")
        }
        let known: Set<String> = ["kind", "id", "text", "sentAt", "ack", "rotation"]
        self.init(
            kind: kind, id: id, text: object["text"]?.stringValue ?? "", sentAt: sentAt, ack: object["ack"]?.stringValue,
            rotation: object["rotation"], extra: JSONObject(object.members.filter { !known.contains($0.key) }.map { ($0.key, $0.value) }))
    }
}

/// A sealed 1:1 message as the relay stores it (PROTOCOL.md §7.1). The relay can read the
/// header (who to whom, when) but not the payload, and cannot forge the sender's signature.
/// Made by ``seal(_:id:from:to:createdAt:expiresAt:includeSenderKey:random:)`` or parsed from JSON,
/// never assembled field by field: the memberwise initialiser is internal.
public struct Envelope: Sendable, Equatable {
    /// The `protocolVersion` of envelopes sealed to identity keys (§7.1).
    public static let protocolVersion: UInt64 = 2
    /// The `protocolVersion` of envelopes carrying a forward-secret session message (§10.7).
    public static let sessionProtocolVersion: UInt64 = 3
    /// The `protocolVersion` of envelopes carrying a group message (§11.6).
    public static let groupProtocolVersion: UInt64 = 4
    static let hkdfSalt = Array("CoordsCore/envelope/v2".utf8)
    /// The largest sealed payload a relay accepts (decoded bytes).
    public static let maximumPayloadBytes = 131_072

    /// The envelope id (lowercase UUID v4; the message id too).
    public var id: String
    /// The sender's peer id: lowercase hex of SHA-256 of their Ed25519 key (``PeerID``).
    public var senderID: String
    /// The recipient's peer id.
    public var recipientID: String
    /// The sealed ``MessagePayload`` (standard base64 with padding); only the recipient opens it.
    public var sealedPayloadBase64: String
    /// The sender's Ed25519 signature over the header and the sealed payload (standard base64).
    public var signatureBase64: String
    /// When it was sealed (RFC 3339, as it came on the wire).
    public var createdAt: String
    /// When relays forget it (RFC 3339, as it came on the wire).
    public var expiresAt: String
    /// The sender's Ed25519 key (base64url), a CoordsCore extension letting the relay check the
    /// signature; optional on the wire.
    public var senderKey: String?
    /// 2 (§7), 3 (§10.7: the payload is a session message) or 4 (§11.6: a group message);
    /// `senderKey` is required from 3 on.
    public var version: UInt64 = Envelope.protocolVersion

    /// The bytes the sender signs (§7.1, §10.7), strings exactly as in the JSON:
    /// `CoordsCore/envelope/v<version>|<version>|<id>|…|<sealedPayloadBase64>`.
    public var signedBytes: [UInt8] {
        Array("CoordsCore/envelope/v\(version)|\(version)|\(id)|\(senderID)|\(recipientID)|\(createdAt)|\(expiresAt)|\(sealedPayloadBase64)".utf8)
    }

    /// The AEAD associated data (§7.2): the header, so a payload cannot move to another envelope.
    public var associatedData: [UInt8] { Array("\(id)|\(senderID)|\(recipientID)|\(createdAt)|\(expiresAt)".utf8) }

    // MARK: Seal

    /// Seals `payload` from `sender` to `recipient` and signs the envelope.
    /// - Parameters:
    ///   - payload: the §7.2 plaintext (UTF-8 JSON).
    ///   - id: the envelope id (a lowercase UUID v4; ``newUUID(using:)`` makes one).
    ///   - sender: the sender's identity key (signs the envelope).
    ///   - recipient: the recipient's Ed25519 public key.
    ///   - createdAt: Unix seconds, written as whole-second UTC.
    ///   - expiresAt: Unix seconds, written as whole-second UTC.
    ///   - includeSenderKey: whether to add `senderKey` so relays can check the signature.
    ///   - random: draws the ephemeral X25519 key (32 bytes), then the nonce (12 bytes).
    /// - Throws: ``WireError/invalidEnvelope(_:)`` (expiry not after creation, payload too large),
    ///   ``CryptoError``.
    public static func seal(
        _ payload: [UInt8], id: String, from sender: Ed25519SigningKey, to recipient: Ed25519PublicKey,
        createdAt: UInt64, expiresAt: UInt64, includeSenderKey: Bool = true,
        random: any RandomSource = SystemRandomSource()
    ) throws -> Envelope {
        guard expiresAt > createdAt else { throw WireError.invalidEnvelope("expiresAt must be after createdAt") }
        guard payload.count + 60 <= maximumPayloadBytes else {
            throw WireError.invalidEnvelope("the payload is \(payload.count) bytes; at most \(maximumPayloadBytes - 60) fit in an envelope")
        }
        let ephemeral = try X25519PrivateKey(rawRepresentation: SecretBytes(copying: try random.bytes(32)))
        let nonce = try random.bytes(AES256GCM.nonceByteCount)
        var envelope = Envelope(
            id: id, senderID: PeerID(sender.publicKey).hex, recipientID: PeerID(recipient).hex,
            sealedPayloadBase64: "", signatureBase64: "", createdAt: RFC3339.format(createdAt),
            expiresAt: RFC3339.format(expiresAt), senderKey: includeSenderKey ? sender.publicKey.base64URL : nil)
        let senderX = try X25519PrivateKey(ed25519: sender)
        let recipientX = try X25519PublicKey(ed25519: recipient)
        let key = try messageKey(
            first: ephemeral.sharedSecret(with: recipientX), second: senderX.sharedSecret(with: recipientX),
            ephemeral: ephemeral.publicKey, sender: senderX.publicKey, recipient: recipientX)
        let sealed = try AES256GCM.seal(payload, key: key, nonce: try AES256GCM.Nonce(nonce), associatedData: envelope.associatedData)
        envelope.sealedPayloadBase64 = Base64.encode(ephemeral.publicKey.rawRepresentation + nonce + sealed, variant: .standard)
        envelope.signatureBase64 = Base64.encode(sender.signature(for: envelope.signedBytes), variant: .standard)
        return envelope
    }

    /// `HKDF-SHA256(X25519(e, R) ‖ X25519(S, R), salt, info = E_pub ‖ S_pub ‖ R_pub)` (§7.2).
    static func messageKey(
        first: SecretBytes, second: SecretBytes, ephemeral: X25519PublicKey, sender: X25519PublicKey,
        recipient: X25519PublicKey
    ) throws -> SecretBytes {
        let ikm = SecretBytes(count: first.count + second.count) { out in
            first.withUnsafeBytes { out.copyMemory(from: $0) }
            second.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[first.count...]).copyMemory(from: $0) }
        }
        return try HKDF.deriveKey(
            inputKeyMaterial: ikm, salt: hkdfSalt,
            info: ephemeral.rawRepresentation + sender.rawRepresentation + recipient.rawRepresentation,
            outputByteCount: 32)
    }

    /// Seals a version-3 envelope (§10.7): `sealSession` gets the envelope's associated data and
    /// returns the session message's payload (``RatchetSession/seal(_:context:now:)``).
    /// - Parameters:
    ///   - id: the envelope id (lowercase UUID v4).
    ///   - sender: signs the envelope; its key goes in `senderKey`.
    ///   - recipient: the recipient's identity.
    ///   - createdAt: Unix seconds.
    ///   - expiresAt: Unix seconds, after `createdAt`.
    ///   - sealSession: seals the payload for the given associated data.
    /// - Throws: ``WireError/invalidEnvelope(_:)`` (times, payload too large), errors of `sealSession`.
    public static func sealSession(
        id: String, from sender: Ed25519SigningKey, to recipient: Ed25519PublicKey, createdAt: UInt64, expiresAt: UInt64,
        _ sealSession: ([UInt8]) throws -> [UInt8]
    ) throws -> Envelope {
        guard expiresAt > createdAt else { throw WireError.invalidEnvelope("expiresAt must be after createdAt") }
        var envelope = Envelope(
            id: id, senderID: PeerID(sender.publicKey).hex, recipientID: PeerID(recipient).hex,
            sealedPayloadBase64: "", signatureBase64: "", createdAt: RFC3339.format(createdAt),
            expiresAt: RFC3339.format(expiresAt), senderKey: sender.publicKey.base64URL, version: sessionProtocolVersion)
        let payload = try sealSession(envelope.associatedData)
        guard payload.count <= maximumPayloadBytes else {
            throw WireError.invalidEnvelope("the payload is \(payload.count) bytes; at most \(maximumPayloadBytes)")
        }
        envelope.sealedPayloadBase64 = Base64.encode(payload, variant: .standard)
        envelope.signatureBase64 = Base64.encode(sender.signature(for: envelope.signedBytes), variant: .standard)
        return envelope
    }

    /// Checks a version-3 envelope addressed to `recipient` from `senderKey` (recipient, expiry,
    /// signature) and returns its session payload, still sealed.
    /// - Throws: ``WireError/envelopeNotForMe``, ``WireError/envelopeExpired(expiresAt:)``,
    ///   ``WireError/envelopeSignatureInvalid``, ``WireError/invalidEnvelope(_:)`` (not version 3,
    ///   payload not base64), ``WireError/malformedSessionMessage(_:)``.
    public func sessionMessage(as recipient: Ed25519SigningKey, from senderKey: Ed25519PublicKey, now: UInt64) throws -> SessionMessage {
        try SessionMessage(payload: try checkedPayload(version: Self.sessionProtocolVersion, as: recipient, from: senderKey, now: now))
    }

    /// The sealed payload of an envelope of `version` (3 or 4) after the recipient, expiry and
    /// signature checks.
    private func checkedPayload(
        version expected: UInt64, as recipient: Ed25519SigningKey, from senderKey: Ed25519PublicKey, now: UInt64,
        memo: SignatureMemo = SignatureMemo()
    ) throws -> [UInt8] {
        guard version == expected else {
            throw WireError.invalidEnvelope(expected == Self.sessionProtocolVersion ? "not a version-3 (session) envelope" : "not a version-4 (group) envelope")
        }
        guard recipientID.lowercased() == PeerID(recipient.publicKey).hex else { throw WireError.envelopeNotForMe }
        let expiry = try RFC3339.parse(expiresAt)
        guard expiry > now else { throw WireError.envelopeExpired(expiresAt: expiry) }
        try verify(senderKey: senderKey, memo: memo)
        guard let payload = try? Base64.decode(sealedPayloadBase64, variant: .standard, field: "sealedPayloadBase64") else {
            throw WireError.invalidEnvelope("the sealed payload is not standard base64")
        }
        return payload
    }

    /// Wraps one member's copy of a group message in a version-4 envelope (§11.6) and signs it:
    /// the same times and payload for every member, one envelope id and signature per recipient.
    /// A send to many members uses ``GroupEnvelopeBatch``, which makes the same bytes.
    /// - Parameters:
    ///   - message: the group message, sealed once.
    ///   - id: this copy's envelope id (lowercase UUID v4; mailbox ids are unique across recipients).
    ///   - sender: signs the envelope; its key goes in `senderKey`.
    ///   - recipient: the member.
    ///   - createdAt: Unix seconds.
    ///   - expiresAt: Unix seconds, after `createdAt`.
    /// - Throws: ``WireError/invalidEnvelope(_:)`` (times, payload too large).
    public static func sealGroup(
        _ message: [UInt8], id: String, from sender: Ed25519SigningKey, to recipient: Ed25519PublicKey, createdAt: UInt64,
        expiresAt: UInt64
    ) throws -> Envelope {
        guard expiresAt > createdAt else { throw WireError.invalidEnvelope("expiresAt must be after createdAt") }
        guard message.count <= maximumPayloadBytes else {
            throw WireError.invalidEnvelope("the payload is \(message.count) bytes; at most \(maximumPayloadBytes)")
        }
        var envelope = Envelope(
            id: id, senderID: PeerID(sender.publicKey).hex, recipientID: PeerID(recipient).hex,
            sealedPayloadBase64: Base64.encode(message, variant: .standard), signatureBase64: "", createdAt: RFC3339.format(createdAt),
            expiresAt: RFC3339.format(expiresAt), senderKey: sender.publicKey.base64URL, version: groupProtocolVersion)
        envelope.signatureBase64 = Base64.encode(sender.signature(for: envelope.signedBytes), variant: .standard)
        return envelope
    }

    /// Checks a version-4 envelope addressed to `recipient` from `senderKey` (recipient, expiry,
    /// signature) and returns its group message, still sealed.
    /// - Throws: ``WireError/envelopeNotForMe``, ``WireError/envelopeExpired(expiresAt:)``,
    ///   ``WireError/envelopeSignatureInvalid``, ``WireError/invalidEnvelope(_:)`` (not version 4,
    ///   payload not base64), ``WireError/malformedGroupMessage(_:)``.
    public func groupMessage(as recipient: Ed25519SigningKey, from senderKey: Ed25519PublicKey, now: UInt64) throws -> GroupMessage {
        try groupMessage(as: recipient, from: senderKey, now: now, memo: SignatureMemo())
    }

    /// ``groupMessage(as:from:now:)`` with the signature check answered from `memo` when it found
    /// this very signature valid ahead.
    /// - Throws: as ``groupMessage(as:from:now:)``.
    public func groupMessage(as recipient: Ed25519SigningKey, from senderKey: Ed25519PublicKey, now: UInt64, memo: SignatureMemo) throws
        -> GroupMessage
    {
        try GroupMessage(bytes: try checkedPayload(version: Self.groupProtocolVersion, as: recipient, from: senderKey, now: now, memo: memo))
    }

    /// A random lowercase UUID v4.
    public static func newUUID(using random: any RandomSource = SystemRandomSource()) throws -> String {
        try newUUIDs(1, using: random)[0]
    }

    /// `count` (≥ 1) random lowercase UUIDs v4 from one draw of the random source.
    public static func newUUIDs(_ count: Int, using random: any RandomSource = SystemRandomSource()) throws -> [String] {
        let all = try random.bytes(16 * max(1, count))
        let digits = Array("0123456789abcdef".utf8)
        return (0..<max(1, count)).map { index in
            var b = Array(all[(16 * index)..<(16 * index + 16)])
            b[6] = b[6] & 0x0F | 0x40
            b[8] = b[8] & 0x3F | 0x80
            var text: [UInt8] = []
            text.reserveCapacity(36)
            for (position, byte) in b.enumerated() {
                if position == 4 || position == 6 || position == 8 || position == 10 { text.append(0x2D) }
                text.append(digits[Int(byte >> 4)])
                text.append(digits[Int(byte & 0x0F)])
            }
            return String(decoding: text, as: UTF8.self)
        }
    }

    // MARK: Verify and open

    /// Checks the signature with the sender's key (whose peer id must be ``senderID``).
    /// - Throws: ``WireError/envelopeSignatureInvalid``, ``WireError/invalidEnvelope(_:)``.
    public func verify(senderKey key: Ed25519PublicKey) throws {
        try verify(senderKey: key, memo: SignatureMemo())
    }

    /// ``verify(senderKey:)``, answered from `memo` when it found this very signature valid ahead.
    /// - Throws: ``WireError/envelopeSignatureInvalid``, ``WireError/invalidEnvelope(_:)``.
    public func verify(senderKey key: Ed25519PublicKey, memo: SignatureMemo) throws {
        guard PeerID(key).hex == senderID.lowercased() else {
            throw WireError.invalidEnvelope("senderID is not the hash of the sender's key")
        }
        guard let signature = try? Base64.decode(signatureBase64, variant: .standard, field: "signatureBase64"), signature.count == 64,
            memo.isValid(signature, by: key, for: signedBytes)
        else {
            throw WireError.envelopeSignatureInvalid
        }
    }

    /// The check of this envelope's signature by the key it names in `senderKey`, for a
    /// ``SignatureMemo`` made ahead; nil when it names none or the signature is not 64 bytes.
    public var signatureCheck: SignatureMemo.Check? {
        // Nothing to check ahead without a key or a signature: the check on the spot says why.
        guard let text = senderKey, let key = try? Ed25519PublicKey(base64URL: text),  // refused on the spot
            let signature = try? Base64.decode(signatureBase64, variant: .standard, field: "signatureBase64"),  // refused on the spot
            signature.count == 64
        else { return nil }
        return SignatureMemo.Check(key: key, signature: signature, message: signedBytes)
    }

    /// Verifies and opens an envelope addressed to `recipient` from `senderKey`.
    /// - Parameters:
    ///   - recipient: our identity key.
    ///   - senderKey: the sender's Ed25519 public key, as we know it.
    ///   - now: Unix seconds; an envelope whose `expiresAt` has passed is refused.
    /// - Throws: ``WireError/envelopeNotForMe``, ``WireError/envelopeExpired(expiresAt:)``,
    ///   ``WireError/envelopeSignatureInvalid``, ``WireError/envelopeTampered`` (payload or header
    ///   changed), ``WireError/invalidEnvelope(_:)``.
    public func open(as recipient: Ed25519SigningKey, from senderKey: Ed25519PublicKey, now: UInt64) throws -> [UInt8] {
        guard version == Self.protocolVersion else {
            throw WireError.invalidEnvelope("a version-\(version) envelope opens in its session (§10.7) or its group (§11.6)")
        }
        guard recipientID.lowercased() == PeerID(recipient.publicKey).hex else { throw WireError.envelopeNotForMe }
        let expiry = try RFC3339.parse(expiresAt)
        _ = try RFC3339.parse(createdAt)
        guard expiry > now else { throw WireError.envelopeExpired(expiresAt: expiry) }
        try verify(senderKey: senderKey)
        guard let sealed = try? Base64.decode(sealedPayloadBase64, variant: .standard, field: "sealedPayloadBase64"),
            sealed.count >= 32 + 12 + 16
        else {
            throw WireError.invalidEnvelope("the sealed payload is not base64 of E_pub | nonce | ciphertext")
        }
        let ephemeral = try X25519PublicKey(rawRepresentation: Array(sealed[0..<32]))
        let recipientX = try X25519PrivateKey(ed25519: recipient)
        let senderX = try X25519PublicKey(ed25519: senderKey)
        let key = try Self.messageKey(
            first: recipientX.sharedSecret(with: ephemeral), second: recipientX.sharedSecret(with: senderX),
            ephemeral: ephemeral, sender: senderX, recipient: recipientX.publicKey)
        do {
            return try AES256GCM.open(
                Array(sealed[44...]), key: key, nonce: try AES256GCM.Nonce(Array(sealed[32..<44])), associatedData: associatedData)
        } catch CryptoError.authenticationFailed {
            throw WireError.envelopeTampered
        }
    }
}

// MARK: JSON (in an extension, so the memberwise initialiser stays)

extension Envelope {
    /// The §7.1 JSON object.
    public var json: JSONValue {
        var object = JSONObject()
        object["protocolVersion"] = .integer(version)
        object["id"] = .string(id)
        object["senderID"] = .string(senderID)
        object["recipientID"] = .string(recipientID)
        object["sealedPayloadBase64"] = .string(sealedPayloadBase64)
        object["signatureBase64"] = .string(signatureBase64)
        object["createdAt"] = .string(createdAt)
        object["expiresAt"] = .string(expiresAt)
        if let senderKey { object["senderKey"] = .string(senderKey) }
        return .object(object)
    }

    /// Parses and checks the shape of an envelope (not its signature or payload).
    /// - Throws: ``WireError/invalidEnvelope(_:)`` naming the first bad field.
    public init(json value: JSONValue) throws {
        guard let object = value.objectValue else { throw WireError.invalidEnvelope("an envelope is a JSON object") }
        guard let version = object["protocolVersion"]?.uint64Value,
            version == Self.protocolVersion || version == Self.sessionProtocolVersion || version == Self.groupProtocolVersion
        else {
            throw WireError.invalidEnvelope("protocolVersion must be 2, 3 or 4")
        }
        func string(_ name: String) throws -> String {
            guard let text = object[name]?.stringValue else { throw WireError.invalidEnvelope("\(name) is missing or not a string") }
            return text
        }
        let id = try string("id")
        guard Self.isUUID(id) else { throw WireError.invalidEnvelope("id must be a UUID, got \"\(id.prefix(40))\"") }
        let sender = try PeerID(parsing: try string("senderID"))
        let recipient = try PeerID(parsing: try string("recipientID"))
        guard sender != recipient else { throw WireError.invalidEnvelope("sender and recipient are the same") }
        let created = try string("createdAt")
        let expires = try string("expiresAt")
        _ = try RFC3339.parse(created)
        _ = try RFC3339.parse(expires)
        var senderKey: String?
        if let key = object["senderKey"], key != .null {
            guard let text = key.stringValue else { throw WireError.invalidEnvelope("senderKey must be a string") }
            senderKey = text
        }
        guard version == Self.protocolVersion || senderKey != nil else { throw WireError.invalidEnvelope("a version-\(version) envelope needs senderKey") }
        self.init(
            id: id, senderID: try string("senderID"), recipientID: try string("recipientID"),
            sealedPayloadBase64: try string("sealedPayloadBase64"), signatureBase64: try string("signatureBase64"),
            createdAt: created, expiresAt: expires, senderKey: senderKey, version: version)
    }

    /// Whether `text` is a UUID (8-4-4-4-12 hex digits, any case).
    public static func isUUID(_ text: String) -> Bool {
        let b = Array(text.utf8)
        guard b.count == 36 else { return false }
        for (i, c) in b.enumerated() {
            if [8, 13, 18, 23].contains(i) {
                guard c == 0x2D else { return false }
            } else {
                guard (0x30...0x39).contains(c) || (0x61...0x66).contains(c) || (0x41...0x46).contains(c) else { return false }
            }
        }
        return true
    }
}

/// Recipient-signed mailbox requests (§7.3): headers proving the caller holds the key whose hash
/// is the mailbox's recipient id.
public enum MailboxAuth {
    static let domain = "coords-mailbox-v1"

    /// The signed string `coords-mailbox-v1|METHOD|path?query|timestamp`.
    public static func signedBytes(method: String, path: String, timestamp: UInt64) -> [UInt8] {
        Array("\(domain)|\(method)|\(path)|\(timestamp)".utf8)
    }

    /// `X-Coords-Key`, `X-Coords-Timestamp`, `X-Coords-Signature` for a request.
    public static func headers(signer: Ed25519SigningKey, method: String, path: String, timestamp: UInt64) -> [String: String] {
        [
            "X-Coords-Key": signer.publicKey.base64URL,
            "X-Coords-Timestamp": String(timestamp),
            "X-Coords-Signature": Base64.encode(signer.signature(for: signedBytes(method: method, path: path, timestamp: timestamp)))
        ]
    }
}

/// The version-4 envelopes of one group message to many members (§11.6): the parts every copy
/// shares (sender id, times, base64 payload and their JSON) are made once, so each copy costs its
/// signature and two copies of bytes. ``body(id:recipientID:)`` returns exactly
/// `Envelope.sealGroup(…).json.serialized()` for the same inputs.
public struct GroupEnvelopeBatch: Sendable {
    /// Signs every copy.
    let sender: Ed25519SigningKey
    /// `|senderID|` of the signed bytes.
    let signedSender: [UInt8]
    /// `|createdAt|expiresAt|payload` of the signed bytes.
    let signedTail: [UInt8]
    /// `,"sealedPayloadBase64":"…","signatureBase64":` of the JSON.
    let jsonPayload: [UInt8]
    /// `,"createdAt":"…","expiresAt":"…","senderKey":"…"}` of the JSON.
    let jsonTail: [UInt8]
    /// `,"senderID":"…","recipientID":` of the JSON.
    let jsonSender: [UInt8]

    /// Prepares the shared parts.
    /// - Parameters:
    ///   - message: the group message, sealed once.
    ///   - sender: signs every copy; its key goes in `senderKey`.
    ///   - createdAt: Unix seconds.
    ///   - expiresAt: Unix seconds, after `createdAt`.
    /// - Throws: ``WireError/invalidEnvelope(_:)`` (times, payload too large).
    public init(_ message: [UInt8], from sender: Ed25519SigningKey, createdAt: UInt64, expiresAt: UInt64) throws {
        guard expiresAt > createdAt else { throw WireError.invalidEnvelope("expiresAt must be after createdAt") }
        guard message.count <= Envelope.maximumPayloadBytes else {
            throw WireError.invalidEnvelope("the payload is \(message.count) bytes; at most \(Envelope.maximumPayloadBytes)")
        }
        self.sender = sender
        let senderID = PeerID(sender.publicKey).hex
        let payload = Base64.encode(message, variant: .standard)
        let created = RFC3339.format(createdAt)
        let expires = RFC3339.format(expiresAt)
        signedSender = Array("|\(senderID)|".utf8)
        signedTail = Array("|\(created)|\(expires)|\(payload)".utf8)
        func member(_ key: String, _ value: String?, into out: inout [UInt8]) {
            out.append(UInt8(ascii: ","))
            JSONValue.writeString(key, to: &out)
            out.append(UInt8(ascii: ":"))
            if let value { JSONValue.writeString(value, to: &out) }
        }
        var json: [UInt8] = []
        member("senderID", senderID, into: &json)
        member("recipientID", nil, into: &json)
        jsonSender = json
        json = []
        member("sealedPayloadBase64", payload, into: &json)
        member("signatureBase64", nil, into: &json)
        jsonPayload = json
        json = []
        member("createdAt", created, into: &json)
        member("expiresAt", expires, into: &json)
        member("senderKey", sender.publicKey.base64URL, into: &json)
        json.append(UInt8(ascii: "}"))
        jsonTail = json
    }

    /// One member's copy as the JSON body of its mailbox POST, signed.
    /// - Parameters:
    ///   - id: this copy's envelope id (lowercase UUID v4).
    ///   - recipientID: the member's ``PeerID/hex``.
    public func body(id: String, recipientID: String) -> [UInt8] {
        var signed = Self.signedHead
        signed.reserveCapacity(signed.count + id.utf8.count + signedSender.count + recipientID.utf8.count + signedTail.count)
        signed.append(contentsOf: id.utf8)
        signed.append(contentsOf: signedSender)
        signed.append(contentsOf: recipientID.utf8)
        signed.append(contentsOf: signedTail)
        let signature = sender.signature(for: signed)
        var out = Self.jsonHead
        out.reserveCapacity(out.count + 2 * id.utf8.count + jsonSender.count + 2 * recipientID.utf8.count + jsonPayload.count + 92 + jsonTail.count)
        JSONValue.writeString(id, to: &out)
        out.append(contentsOf: jsonSender)
        JSONValue.writeString(recipientID, to: &out)
        out.append(contentsOf: jsonPayload)
        // Standard base64 has no character JSON escapes.
        out.append(UInt8(ascii: "\""))
        Base64.append(signature, variant: .standard, to: &out)
        out.append(UInt8(ascii: "\""))
        out.append(contentsOf: jsonTail)
        return out
    }

    /// `CoordsCore/envelope/v4|4|`, the start of every copy's signed bytes.
    static let signedHead = Array("CoordsCore/envelope/v\(Envelope.groupProtocolVersion)|\(Envelope.groupProtocolVersion)|".utf8)
    /// `{"protocolVersion":4,"id":`, the start of every copy's JSON.
    static let jsonHead = Array("{\"protocolVersion\":\(Envelope.groupProtocolVersion),\"id\":".utf8)
}
