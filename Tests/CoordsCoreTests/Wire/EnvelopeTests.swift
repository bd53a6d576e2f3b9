import Foundation
import Testing

@testable import CoordsCore

/// `envelope-v2.json`: known answers for PROTOCOL.md §7 from an independent implementation.
struct EnvelopeVectors: Decodable, Sendable {
    struct Key: Decodable, Sendable { let seed: String, ed25519_public: String, peer_id: String }
    struct Envelope: Decodable, Sendable {
        let protocolVersion: Int, id: String, senderID: String, recipientID: String, createdAt: String, expiresAt: String
        let sealedPayloadBase64: String, signatureBase64: String, senderKey: String?
    }
    struct Sealed: Decodable, Sendable, CustomStringConvertible {
        let sender: Int, recipient: Int, ephemeral_secret: String, nonce: String, plaintext_utf8: String
        let signed_string: String, associated_data: String, envelope: Envelope
        var description: String { "envelope \(envelope.id.suffix(4)) \(sender)→\(recipient)" }
    }
    struct Reject: Decodable, Sendable, CustomStringConvertible {
        let why: String, reader: Int, envelope: Envelope
        var description: String { why }
    }
    struct MailboxAuth: Decodable, Sendable, CustomStringConvertible {
        let seed_index: Int, method: String, path: String, timestamp: UInt64, signed_string: String, headers: [String: String]
        var description: String { "\(method) \(path.prefix(30))" }
    }
    let keys: [Key], envelopes: [Sealed], rejects: [Reject], mailbox_auth: [MailboxAuth]

    static func load() throws -> EnvelopeVectors { try Fixtures.load("envelope-v2.json") }
    func signer(_ i: Int) throws -> Ed25519SigningKey { try Ed25519SigningKey(seed: SecretBytes(copying: Hex.vector(keys[i].seed))) }
}

extension EnvelopeVectors.Envelope {
    /// The vector's JSON re-parsed through our strict parser.
    func parsed() throws -> CoordsCore.Envelope {
        var object = JSONObject()
        object["protocolVersion"] = .integer(UInt64(protocolVersion))
        for (k, v) in [
            ("id", id), ("senderID", senderID), ("recipientID", recipientID), ("createdAt", createdAt), ("expiresAt", expiresAt),
            ("sealedPayloadBase64", sealedPayloadBase64), ("signatureBase64", signatureBase64)
        ] { object[k] = .string(v) }
        if let senderKey { object["senderKey"] = .string(senderKey) }
        return try CoordsCore.Envelope(json: .object(object))
    }
}

@Suite("Envelope v2 (§7)")
struct EnvelopeTests {
    static let vectors = try? EnvelopeVectors.load()
    /// 2026-11-22T10:00:00Z, the vectors' createdAt.
    static let created: UInt64 = 1_795_341_600

    @Test func peerIDsMatchTheVectors() throws {
        let v = try #require(Self.vectors)
        for (i, key) in v.keys.enumerated() {
            #expect(PeerID(try v.signer(i).publicKey).hex == key.peer_id)
            #expect(try PeerID(parsing: key.peer_id.uppercased()).hex == key.peer_id)
        }
        #expect(throws: WireError.self) { try PeerID(parsing: "abc") }
        #expect(throws: WireError.self) { try PeerID(parsing: String(repeating: "g", count: 64)) }
    }

    @Test(arguments: try EnvelopeVectors.load().envelopes)
    func reproducesVectorEnvelopesFromTheirSecrets(_ v: EnvelopeVectors.Sealed) throws {
        let vectors = try #require(Self.vectors)
        let sender = try vectors.signer(v.sender)
        let recipient = try vectors.signer(v.recipient)
        let random = ReplayRandomSource([try Hex.vector(v.ephemeral_secret), try Hex.vector(v.nonce)])
        let created = try RFC3339.parse(v.envelope.createdAt)
        let expires = try RFC3339.parse(v.envelope.expiresAt)
        let envelope = try Envelope.seal(
            Array(v.plaintext_utf8.utf8), id: v.envelope.id, from: sender, to: recipient.publicKey,
            createdAt: created, expiresAt: expires, random: random)
        #expect(String(decoding: envelope.signedBytes, as: UTF8.self) == v.signed_string)
        #expect(String(decoding: envelope.associatedData, as: UTF8.self) == v.associated_data)
        #expect(envelope == (try v.envelope.parsed()))
        #expect(envelope.sealedPayloadBase64 == v.envelope.sealedPayloadBase64)
        #expect(envelope.signatureBase64 == v.envelope.signatureBase64)

        // The recipient opens the vector's envelope; nobody else can.
        let opened = try v.envelope.parsed().open(as: recipient, from: sender.publicKey, now: created + 60)
        #expect(String(decoding: opened, as: UTF8.self) == v.plaintext_utf8)
        let payload = try MessagePayload(json: opened)
        #expect(payload.kind == "text")
        #expect(throws: WireError.envelopeNotForMe) { try v.envelope.parsed().open(as: sender, from: sender.publicKey, now: created) }
        #expect(throws: WireError.envelopeExpired(expiresAt: expires)) {
            try v.envelope.parsed().open(as: recipient, from: sender.publicKey, now: expires)
        }
    }

    @Test(arguments: try EnvelopeVectors.load().rejects)
    func refusesVectorRejects(_ v: EnvelopeVectors.Reject) throws {
        let vectors = try #require(Self.vectors)
        let reader = try vectors.signer(v.reader)
        let sender = try vectors.signer(0)
        do {
            let envelope = try v.envelope.parsed()
            _ = try envelope.open(as: reader, from: sender.publicKey, now: Self.created + 60)
            Issue.record("\(v.why): opened")
        } catch let error as WireError {
            #expect([360, 361, 362, 364].contains(error.code), "\(v.why): \(error)")
        }
    }

    @Test(arguments: try EnvelopeVectors.load().mailbox_auth)
    func mailboxHeadersMatchTheVectors(_ v: EnvelopeVectors.MailboxAuth) throws {
        let vectors = try #require(Self.vectors)
        let signer = try vectors.signer(v.seed_index)
        #expect(String(decoding: MailboxAuth.signedBytes(method: v.method, path: v.path, timestamp: v.timestamp), as: UTF8.self) == v.signed_string)
        #expect(MailboxAuth.headers(signer: signer, method: v.method, path: v.path, timestamp: v.timestamp) == v.headers)
    }

    @Test func roundTripWithFreshRandomnessAndStrictParsing() throws {
        let alice = try Ed25519SigningKey.generate()
        let bob = try Ed25519SigningKey.generate()
        let payload = MessagePayload(kind: "text", id: try Envelope.newUUID(), text: "on my way 🚲", sentAt: 1_763_805_600_000)
        let a = try Envelope.seal(
            payload.json, id: try Envelope.newUUID(), from: alice, to: bob.publicKey,
            createdAt: Self.created, expiresAt: Self.created + 3600)
        let b = try Envelope.seal(payload.json, id: a.id, from: alice, to: bob.publicKey, createdAt: Self.created, expiresAt: Self.created + 3600)
        #expect(a.sealedPayloadBase64 != b.sealedPayloadBase64, "a fresh ephemeral key and nonce per message")
        let reparsed = try Envelope(json: JSONValue.parse(a.json.serialized()))
        #expect(reparsed == a)
        #expect(try MessagePayload(json: reparsed.open(as: bob, from: alice.publicKey, now: Self.created)) == payload)
        #expect(Envelope.isUUID(a.id) && a.id == a.id.lowercased())

        // Moving the payload to another header, or signing with another key, is caught.
        var moved = a
        moved.id = try Envelope.newUUID()
        #expect(throws: WireError.envelopeSignatureInvalid) { try moved.open(as: bob, from: alice.publicKey, now: Self.created) }
        moved.signatureBase64 = Base64.encode(alice.signature(for: moved.signedBytes), variant: .standard)
        #expect(throws: WireError.envelopeTampered) { try moved.open(as: bob, from: alice.publicKey, now: Self.created) }
        let mallory = try Ed25519SigningKey.generate()
        #expect(throws: WireError.self) { try a.open(as: bob, from: mallory.publicKey, now: Self.created) }
        #expect(throws: WireError.self) {
            try Envelope.seal([], id: a.id, from: alice, to: bob.publicKey, createdAt: 10, expiresAt: 10)
        }

        // Malformed JSON fields each get a clear error, never a trap.
        let good = try #require(a.json.objectValue)
        for (field, bad) in [
            ("protocolVersion", JSONValue.integer(UInt64(5))), ("protocolVersion", JSONValue.integer(UInt64(1))), ("id", .string("nope")),
            ("senderID", .string("12")),
            ("recipientID", .string(a.senderID)), ("createdAt", .string("yesterday")), ("expiresAt", .integer(UInt64(5))),
            ("senderKey", .integer(UInt64(1)))
        ] {
            var object = good
            object[field] = bad
            #expect(throws: WireError.self, "\(field)") { try Envelope(json: .object(object)) }
        }
        #expect(throws: WireError.self) { try Envelope(json: .array([])) }
        #expect(throws: WireError.self) { try MessagePayload(json: Array("{}".utf8)) }
        // Version 3 (§10.7) needs senderKey, and its signature covers the version: a v2
        // envelope relabelled 3 no longer verifies, and it never opens the v2 way.
        var relabelled = good
        relabelled["protocolVersion"] = .integer(UInt64(3))
        let three = try Envelope(json: .object(relabelled))
        #expect(three.version == 3)
        #expect(throws: WireError.envelopeSignatureInvalid) { try three.verify(senderKey: alice.publicKey) }
        #expect(throws: WireError.self) { try three.open(as: bob, from: alice.publicKey, now: Self.created) }
        relabelled["senderKey"] = nil
        #expect(throws: WireError.self) { try Envelope(json: .object(relabelled)) }
    }

    @Test func rfc3339AcceptsOffsetsAndFractions() throws {
        #expect(RFC3339.format(Self.created) == "2026-11-22T10:00:00Z")
        #expect(try RFC3339.parse("2026-11-22T10:00:00Z") == Self.created)
        #expect(try RFC3339.parse("2026-11-22T11:30:00+01:30") == Self.created)
        #expect(try RFC3339.parse("2026-11-22T05:00:00.250-05:00") == Self.created)
        #expect(try RFC3339.parse("1970-01-01T00:00:00z") == 0)
        #expect(try RFC3339.parse("2000-02-29T00:00:00Z") == 951_782_400)
        for bad in [
            "", "2026-11-22", "2026-11-22T10:00:00", "2026-13-22T10:00:00Z", "2026-11-22T10:00:00+0100", "2026-11-22T10:00:00Zjunk",
            "2026-11-22T10:00:00.Z", "1969-12-31T23:59:59Z"
        ] {
            #expect(throws: WireError.self, "\(bad)") { try RFC3339.parse(bad) }
        }
    }
}
