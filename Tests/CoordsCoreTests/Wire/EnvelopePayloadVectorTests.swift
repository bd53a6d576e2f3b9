import Foundation
import Testing

@testable import CoordsCore

/// `KnownAnswers/envelope-v2-payloads.json`: PROTOCOL.md §7 known answers computed by
/// `scripts/make-envelope-vectors.py`, a second implementation written from the protocol text
/// alone (Python and libsodium). CoordsCore reproduces every envelope byte for byte from the same
/// secrets, opens each to the same plaintext and message id, signs the same mailbox request, and
/// refuses every envelope the file says a reader refuses.
@Suite struct EnvelopePayloadVectorTests {
    /// The file, read with the core's own strict JSON parser (members as written).
    struct Vectors {
        let root: JSONObject

        static func load() throws -> Vectors {
            let url = Fixtures.repositoryRoot.appendingPathComponent("Tests/CoordsCoreTests/KnownAnswers/envelope-v2-payloads.json")
            return Vectors(root: try #require(try JSONValue.parse(Array(Data(contentsOf: url))).objectValue))
        }

        func string(_ object: JSONObject?, _ key: String) throws -> String { try #require(object?[key]?.stringValue, "\(key)") }
        func signer(_ who: String) throws -> Ed25519SigningKey {
            try Ed25519SigningKey(seed: SecretBytes(copying: Hex.vector(try string(root[who]?.objectValue, "seed"))))
        }
        var createdAt: String { root["createdAt"]?.stringValue ?? "" }
        var expiresAt: String { root["expiresAt"]?.stringValue ?? "" }
        var openAt: UInt64 { root["openAt"]?.uint64Value ?? 0 }
        var envelopes: [JSONObject] { (root["envelopes"]?.arrayValue ?? []).compactMap(\.objectValue) }
        var refusals: [JSONObject] { (root["refusals"]?.arrayValue ?? []).compactMap(\.objectValue) }
    }

    @Test func everyPayloadKindSealsByteForByteAndOpens() throws {
        let v = try Vectors.load()
        let (alice, bob) = (try v.signer("alice"), try v.signer("bob"))
        #expect(PeerID(alice.publicKey).hex == (try v.string(v.root["alice"]?.objectValue, "peerID")))
        #expect(bob.publicKey.base64URL == (try v.string(v.root["bob"]?.objectValue, "publicKey")))
        var kinds: Set<String> = []
        #expect(v.envelopes.count >= 9)
        for vector in v.envelopes {
            let name = try v.string(vector, "name")
            let plaintext = Array(try v.string(vector, "plaintext").utf8)
            let expected = try #require(vector["envelope"])
            let id = try v.string(expected.objectValue, "id")
            let made = try Envelope.seal(
                plaintext, id: id, from: alice, to: bob.publicKey, createdAt: try RFC3339.parse(v.createdAt),
                expiresAt: try RFC3339.parse(v.expiresAt),
                random: ReplayRandomSource([try Hex.vector(try v.string(vector, "ephemeralScalar")), try Hex.vector(try v.string(vector, "nonce"))]))
            #expect(made.json == expected, "\(name)")
            #expect(String(decoding: made.associatedData, as: UTF8.self) == (try v.string(vector, "associatedData")))
            let opened = try Envelope(json: expected).open(as: bob, from: alice.publicKey, now: v.openAt)
            #expect(opened == plaintext, "\(name)")
            let payload = try MessagePayload(json: opened)
            kinds.insert(payload.kind)
            #expect(payload.id == (try v.string(vector, "messageID")), "\(name): the message id is the payload's")
            if payload.kind == "rotation" {
                let statement = try RotationStatement(json: try #require(payload.rotation))
                #expect(statement.old == alice.publicKey)
                try statement.verify()
            }
            if payload.kind == FileAttachment.kind { _ = try FileAttachment(payload: payload) }
        }
        #expect(kinds.isSuperset(of: ["text", "receipt", "rotation", "session-reset", "group-statement", "group-sender-key", "file"]))
    }

    @Test func theMailboxRequestIsSignedAlike() throws {
        let v = try Vectors.load()
        let m = try #require(v.root["mailbox"]?.objectValue)
        let (method, path) = (try v.string(m, "method"), try v.string(m, "pathWithQuery"))
        let timestamp = try #require(m["timestamp"]?.uint64Value)
        #expect(String(decoding: MailboxAuth.signedBytes(method: method, path: path, timestamp: timestamp), as: UTF8.self) == (try v.string(m, "signed")))
        let headers = try #require(m["headers"]?.objectValue)
        for (name, value) in MailboxAuth.headers(signer: try v.signer("bob"), method: method, path: path, timestamp: timestamp) {
            #expect(headers[name]?.stringValue == value, "\(name)")
        }
    }

    @Test func everyRefusalIsRefused() throws {
        let v = try Vectors.load()
        let (alice, bob) = (try v.signer("alice"), try v.signer("bob"))
        #expect(v.refusals.count >= 9)
        for refusal in v.refusals {
            let envelope = try #require(refusal["envelope"])
            let rule = try v.string(refusal, "rule")
            #expect(throws: (any Error).self, "\(rule)") {
                let parsed = try Envelope(json: envelope)
                try parsed.verify(senderKey: alice.publicKey)
                // Base64url where standard base64 goes is refused by the strict decoder, as a relay refuses it.
                _ = try Base64.decode(parsed.sealedPayloadBase64, variant: .standard, field: "sealedPayloadBase64")
                _ = try MessagePayload(json: try parsed.open(as: bob, from: alice.publicKey, now: v.openAt))
            }
        }
    }
}
