import Foundation
import Testing

@testable import CoordsCore

/// `KnownAnswers/forward-secrecy-v1.json`: PROTOCOL.md §10 known answers computed by
/// scripts/make-fs-vectors.py, a second implementation written from §10 alone (Python stdlib
/// HKDF + libsodium). Every byte is reproduced here.
struct ForwardSecrecyVectors: Decodable, Sendable {
    struct Identity: Decodable, Sendable { let seed: String, `public`: String }
    struct Signed: Decodable, Sendable {
        let id: UInt32, `private`: String, `public`: String, created: UInt64, expires: UInt64, signedBytes: String, signature: String
    }
    struct OneTime: Decodable, Sendable { let id: UInt32, `private`: String, `public`: String, signedBytes: String, signature: String }
    struct Prekeys: Decodable, Sendable { let owner: String, signedPrekey: Signed, oneTimePrekey: OneTime }
    struct Handshake: Decodable, Sendable { let baseKeyPrivate: String, baseKeyPublic: String, oneTimePrekey: Bool, sk: String }
    struct EnvelopeFields: Decodable, Sendable { let id: String, senderID: String, recipientID: String, createdAt: String, expiresAt: String }
    struct Step: Decodable, Sendable {
        let step: String, party: String, message: String, envelope: EnvelopeFields?, plaintext: String?, payload: String?
    }
    struct Session: Decodable, Sendable {
        let signedPrekeyID: UInt32, oneTimePrekeyID: UInt32, draws: [String: [String]], steps: [Step]
    }
    struct Blob: Decodable, Sendable { let aliceSignedPrekeyPrivate: String, draws: [String], location: String, blob: String }

    let identities: [String: Identity], prekeys: Prekeys, handshakes: [Handshake], session: Session, blob: Blob

    static func load() throws -> ForwardSecrecyVectors {
        let url = Fixtures.repositoryRoot.appendingPathComponent("Tests/CoordsCoreTests/KnownAnswers/forward-secrecy-v1.json")
        return try JSONDecoder().decode(ForwardSecrecyVectors.self, from: Data(contentsOf: url))
    }

    func identity(_ name: String) throws -> Ed25519SigningKey {
        try Ed25519SigningKey(seed: SecretBytes(copying: Hex.vector(try #require(identities[name]).seed)))
    }

    func signedPrekey() throws -> SignedPrekey {
        let v = prekeys.signedPrekey
        return SignedPrekey(
            id: v.id, key: try X25519PublicKey(rawRepresentation: Hex.vector(v.public)), created: v.created, expires: v.expires,
            signature: try Hex.vector(v.signature))
    }

    func oneTimePrekey() throws -> OneTimePrekey {
        let v = prekeys.oneTimePrekey
        return OneTimePrekey(id: v.id, key: try X25519PublicKey(rawRepresentation: Hex.vector(v.public)), signature: try Hex.vector(v.signature))
    }
}

func privateKey(_ hex: String) throws -> X25519PrivateKey {
    try X25519PrivateKey(rawRepresentation: SecretBytes(copying: Hex.vector(hex)))
}

@Suite struct ForwardSecrecyVectorTests {
    let vectors: ForwardSecrecyVectors
    init() throws { vectors = try ForwardSecrecyVectors.load() }

    @Test func prekeySignaturesAndSignedBytesMatch() throws {
        let bob = try vectors.identity("bob")
        let signed = try vectors.signedPrekey()
        #expect(Hex.encode(signed.signedBytes) == vectors.prekeys.signedPrekey.signedBytes)
        let remade = SignedPrekey.make(
            id: signed.id, key: signed.key, created: signed.created, expires: signed.expires, identity: bob)
        #expect(remade == signed)
        #expect(SignedPrekey.make(id: signed.id, key: signed.key, created: signed.created, identity: bob).expires == signed.expires)
        try signed.verify(owner: bob.publicKey, now: signed.created + 1)
        let oneTime = try vectors.oneTimePrekey()
        #expect(Hex.encode(oneTime.signedBytes) == vectors.prekeys.oneTimePrekey.signedBytes)
        #expect(OneTimePrekey.make(id: oneTime.id, key: oneTime.key, identity: bob) == oneTime)
        #expect(try privateKey(vectors.prekeys.signedPrekey.private).publicKey == signed.key)
    }

    @Test func handshakeSecretsMatchOnBothSides() throws {
        let alice = try vectors.identity("alice")
        let bob = try vectors.identity("bob")
        for case_ in vectors.handshakes {
            let bundle = PrekeyBundle(
                identity: bob.publicKey, signedPrekey: try vectors.signedPrekey(),
                oneTimePrekey: case_.oneTimePrekey ? try vectors.oneTimePrekey() : nil)
            try bundle.verify(for: bob.publicKey, now: bundle.signedPrekey.created)
            let base = try privateKey(case_.baseKeyPrivate)
            #expect(Hex.encode(base.publicKey.rawRepresentation) == case_.baseKeyPublic)
            let initiator = try X3DH.initiate(identity: alice, bundle: bundle, baseKey: base)
            #expect(Hex.encode(initiator.copyBytes()) == case_.sk)
            let responder = try X3DH.respond(
                identity: bob, signedPrekey: try privateKey(vectors.prekeys.signedPrekey.private),
                oneTimePrekey: case_.oneTimePrekey ? try privateKey(vectors.prekeys.oneTimePrekey.private) : nil,
                initiator: alice.publicKey, baseKey: base.publicKey)
            #expect(responder == initiator)
        }
    }

    @Test func sessionReproducesEveryPayloadAndOpensOutOfOrder() throws {
        let alice = try vectors.identity("alice")
        let bob = try vectors.identity("bob")
        let keys = ["alice": alice, "bob": bob]
        let draws = try vectors.session.draws.mapValues { list in ReplayRandomSource(try list.map(Hex.vector)) }
        let handshake = try #require(vectors.handshakes.first { $0.oneTimePrekey })
        let base = try privateKey(handshake.baseKeyPrivate)
        let spk = try vectors.signedPrekey()
        let header = SessionMessage.Handshake(
            signedPrekeyID: vectors.session.signedPrekeyID, oneTimePrekeyID: vectors.session.oneTimePrekeyID, baseKey: base.publicKey)
        let bundle = PrekeyBundle(identity: bob.publicKey, signedPrekey: spk, oneTimePrekey: try vectors.oneTimePrekey())
        let sk = try X3DH.initiate(identity: alice, bundle: bundle, baseKey: base)
        var sessions: [String: RatchetSession] = [
            "alice": try RatchetSession.initiate(
                sharedSecret: sk, remoteSignedPrekey: spk.key, handshake: header, now: 1, using: try #require(draws["alice"]))
        ]
        var sent: [String: (ForwardSecrecyVectors.EnvelopeFields, [UInt8], String)] = [:]
        for step in vectors.session.steps {
            let me = try #require(keys[step.party])
            let peer = try #require(keys[step.party == "alice" ? "bob" : "alice"])
            if step.step == "seal" {
                let fields = try #require(step.envelope)
                let context = SessionContext(sender: me.publicKey, recipient: peer.publicKey, envelopeAssociatedData: Self.ad(fields))
                var session = try #require(sessions[step.party])
                let message = try session.seal(Array(try #require(step.plaintext).utf8), context: context, now: 2)
                sessions[step.party] = session
                #expect(Hex.encode(message.payload) == step.payload, "payload of \(step.message)")
                sent[step.message] = (fields, message.payload, try #require(step.plaintext))
            } else {
                let (fields, payload, text) = try #require(sent[step.message])
                let message = try SessionMessage(payload: payload)
                let context = SessionContext(sender: peer.publicKey, recipient: me.publicKey, envelopeAssociatedData: Self.ad(fields))
                if sessions[step.party] == nil, let shake = message.handshake {
                    let secret = try X3DH.respond(
                        identity: bob, signedPrekey: try privateKey(vectors.prekeys.signedPrekey.private),
                        oneTimePrekey: try privateKey(vectors.prekeys.oneTimePrekey.private), initiator: alice.publicKey,
                        baseKey: shake.baseKey)
                    sessions[step.party] = RatchetSession.respond(
                        sharedSecret: secret, signedPrekey: try privateKey(vectors.prekeys.signedPrekey.private), handshake: shake, now: 1)
                }
                var session = try #require(sessions[step.party])
                let plaintext = try session.open(message, context: context, now: 3, using: try #require(draws[step.party]))
                sessions[step.party] = session
                #expect(String(decoding: plaintext, as: UTF8.self) == text, "plaintext of \(step.message)")
            }
        }
        #expect(try #require(draws["alice"]).isExhausted)
        #expect(try #require(draws["bob"]).isExhausted)
    }

    @Test func blobWithForwardSecretEntriesMatchesAndOpensWithTheRightKey() throws {
        let alice = try vectors.identity("alice")
        let bob = try vectors.identity("bob")
        let carol = try vectors.identity("carol")
        let aliceSPK = try privateKey(vectors.blob.aliceSignedPrekeyPrivate)
        let bobSPK = try privateKey(vectors.prekeys.signedPrekey.private)
        let location = try WireLocation(bytes: Hex.vector(vectors.blob.location))
        let blob = try LocationBlob.seal(
            location, for: [aliceSPK.publicKey, bobSPK.publicKey, try X25519PublicKey(ed25519: carol.publicKey)],
            using: ReplayRandomSource(try vectors.blob.draws.map(Hex.vector)))
        #expect(Hex.encode(blob) == vectors.blob.blob)
        let bobOpened = try LocationBlob.open(blob, withAnyOf: [try X25519PrivateKey(ed25519: bob), bobSPK])
        #expect(bobOpened.location == location && bobOpened.keyIndex == 1)
        let carolOpened = try LocationBlob.open(blob, withAnyOf: [try X25519PrivateKey(ed25519: carol), bobSPK])
        #expect(carolOpened.location == location && carolOpened.keyIndex == 0)
        let aliceOpened = try LocationBlob.open(blob, withAnyOf: [try X25519PrivateKey(ed25519: alice), aliceSPK])
        #expect(aliceOpened.keyIndex == 1)
        // Without the prekeys, the identities open nothing: the entries were not sealed to them.
        #expect(throws: WireError.notARecipient) { try LocationBlob.open(blob, with: bob) }
        #expect(throws: WireError.notARecipient) { try LocationBlob.open(blob, withAnyOf: []) }
    }

    static func ad(_ f: ForwardSecrecyVectors.EnvelopeFields) -> [UInt8] {
        Array("\(f.id)|\(f.senderID)|\(f.recipientID)|\(f.createdAt)|\(f.expiresAt)".utf8)
    }
}
