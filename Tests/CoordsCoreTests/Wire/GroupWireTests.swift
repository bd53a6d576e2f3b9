import Foundation
import Testing

@testable import CoordsCore

/// `KnownAnswers/groups-v1.json`: PROTOCOL.md §11 known answers computed by
/// scripts/make-group-vectors.py, a second implementation written from §11 alone.
struct GroupVectors: Decodable, Sendable {
    struct Identity: Decodable, Sendable { let seed: String, `public`: String }
    struct Member: Decodable, Sendable { let name: String, admin: Bool }
    struct Statement: Decodable, Sendable {
        let statement: String, hash: String, epoch: UInt32, name: String, members: [Member], author: String, change: String
    }
    struct Reject: Decodable, Sendable { let rule: String, statement: String, error: String }
    struct Transition: Decodable, Sendable { let rule: String, predecessor: Int, statement: String, error: String }
    struct Step: Decodable, Sendable { let n: Int, chainKey: String, messageKey: String, next: String }
    struct Chain: Decodable, Sendable { let chainKey: String, steps: [Step] }
    struct EnvelopeJSON: Decodable, Sendable {
        let protocolVersion: Int, id: String, senderID: String, recipientID: String, createdAt: String, expiresAt: String
        let sealedPayloadBase64: String, senderKey: String, signatureBase64: String
    }
    struct Message: Decodable, Sendable {
        let sender: String, signingSeed: String, signingKey: String, chain: UInt32, n: UInt32, epoch: UInt32, messageKey: String
        let plaintext: String, groupMessage: String, envelopeToCarol: EnvelopeJSON, envelopeSignedBytes: String
    }

    let identities: [String: Identity], group: String, groupB64u: String, statements: [Statement], rejects: [Reject]
    let transitions: [Transition], chain: Chain, message: Message

    static func load() throws -> GroupVectors {
        let url = Fixtures.repositoryRoot.appendingPathComponent("Tests/CoordsCoreTests/KnownAnswers/groups-v1.json")
        return try JSONDecoder().decode(GroupVectors.self, from: Data(contentsOf: url))
    }

    func identity(_ name: String) throws -> Ed25519SigningKey {
        try Ed25519SigningKey(seed: SecretBytes(copying: Hex.vector(try #require(identities[name]).seed)))
    }

    func name(of key: Ed25519PublicKey) -> String? { identities.first { $0.value.public == Hex.encode(key.rawRepresentation) }?.key }
}

@Suite struct GroupVectorTests {
    let vectors: GroupVectors
    init() throws { vectors = try GroupVectors.load() }

    @Test func statementsParseVerifyAndAreRemadeByteForByte() throws {
        let group = try GroupID(bytes: Hex.vector(vectors.group))
        #expect(group.base64URL == vectors.groupB64u)
        #expect(try GroupID(base64URL: vectors.groupB64u) == group)
        var previous: GroupStatement?
        for expected in vectors.statements {
            let statement = try GroupStatement(bytes: Hex.vector(expected.statement))
            #expect(Hex.encode(statement.hash) == expected.hash)
            #expect(statement.epoch == expected.epoch)
            #expect(statement.group == group)
            #expect(statement.state.name == expected.name)
            #expect(statement.state.members.map { vectors.name(of: $0.key) } == expected.members.map(\.name))
            #expect(statement.state.members.map(\.isAdmin) == expected.members.map(\.admin))
            #expect(vectors.name(of: statement.author) == expected.author)
            if let previous {
                #expect(statement.previous == previous.hash)
                try statement.checkAuthority(over: previous.state)
            }
            // Signed again by the author from the parts: the same bytes (Ed25519 is deterministic).
            let remade = try GroupStatement.make(
                group: group, epoch: statement.epoch, previous: statement.previous, author: try vectors.identity(expected.author),
                at: statement.at, state: statement.state)
            #expect(remade.bytes == statement.bytes)
            previous = statement
        }
        let change = try GroupStatement(bytes: Hex.vector(vectors.statements[1].statement))
            .change(from: try GroupStatement(bytes: Hex.vector(vectors.statements[0].statement)).state)
        #expect(change.added == [try vectors.identity("carol").publicKey])
        #expect(change.removed.isEmpty && !change.renamed && !change.adminsChanged)
        let last = try GroupStatement(bytes: Hex.vector(vectors.statements[3].statement))
            .change(from: try GroupStatement(bytes: Hex.vector(vectors.statements[2].statement)).state)
        #expect(last.renamed && last.adminsChanged && last.added.isEmpty && last.removed.isEmpty)
    }

    @Test func everyRejectIsRefusedForItsReason() throws {
        #expect(vectors.rejects.count >= 16)
        for reject in vectors.rejects {
            do {
                _ = try GroupStatement(bytes: Hex.vector(reject.statement))
                Issue.record("accepted: \(reject.rule)")
            } catch WireError.malformedGroupStatement {
                #expect(reject.error == "malformed", "\(reject.rule)")
            } catch WireError.groupSignatureInvalid {
                #expect(reject.error == "signature", "\(reject.rule)")
            }
        }
    }

    @Test func refusedTransitionsNameTheirRule() throws {
        for transition in vectors.transitions {
            let before = try GroupStatement(bytes: Hex.vector(vectors.statements[transition.predecessor].statement))
            let statement = try GroupStatement(bytes: Hex.vector(transition.statement))
            #expect(statement.previous == before.hash)
            #expect(throws: transition.error == "notAnAdmin" ? GroupStatement.Refusal.notAnAdmin : .notAMember, "\(transition.rule)") {
                try statement.checkAuthority(over: before.state)
            }
        }
    }

    @Test func senderChainMatches() throws {
        var chain = SecretBytes(copying: try Hex.vector(vectors.chain.chainKey))
        for step in vectors.chain.steps {
            #expect(Hex.encode(chain.copyBytes()) == step.chainKey)
            let (next, messageKey) = try SenderChain.step(chain)
            #expect(Hex.encode(messageKey.copyBytes()) == step.messageKey)
            #expect(Hex.encode(next.copyBytes()) == step.next)
            chain = next
        }
    }

    @Test func groupMessageAndEnvelopeMatch() throws {
        let v = vectors.message
        let alice = try vectors.identity("alice")
        let carol = try vectors.identity("carol")
        let signing = try Ed25519SigningKey(seed: SecretBytes(copying: Hex.vector(v.signingSeed)))
        #expect(Hex.encode(signing.publicKey.rawRepresentation) == v.signingKey)
        let group = try GroupID(bytes: Hex.vector(vectors.group))
        let key = SecretBytes(copying: try Hex.vector(v.messageKey))
        let sealed = try GroupMessage.seal(
            Array(v.plaintext.utf8), sender: alice.publicKey, group: group, chain: v.chain, iteration: v.n, epoch: v.epoch,
            messageKey: key, signingKey: signing)
        #expect(Hex.encode(sealed.bytes) == v.groupMessage)
        let parsed = try GroupMessage(bytes: Hex.vector(v.groupMessage))
        #expect(parsed == sealed)
        try parsed.verify(sender: alice.publicKey, signingKey: signing.publicKey)
        #expect(try parsed.open(sender: alice.publicKey, messageKey: key) == Array(v.plaintext.utf8))
        // Another sender key in `core`: neither the signature nor the AEAD accepts it.
        #expect(throws: WireError.groupSignatureInvalid) { try parsed.verify(sender: carol.publicKey, signingKey: signing.publicKey) }
        #expect(throws: WireError.envelopeTampered) { try parsed.open(sender: carol.publicKey, messageKey: key) }

        let e = v.envelopeToCarol
        let envelope = try Envelope.sealGroup(
            sealed.bytes, id: e.id, from: alice, to: carol.publicKey, createdAt: try RFC3339.parse(e.createdAt),
            expiresAt: try RFC3339.parse(e.expiresAt))
        #expect(String(decoding: envelope.signedBytes, as: UTF8.self) == v.envelopeSignedBytes)
        #expect(envelope.signatureBase64 == e.signatureBase64)
        #expect(envelope.sealedPayloadBase64 == e.sealedPayloadBase64)
        #expect(envelope.version == 4 && envelope.senderKey == e.senderKey)
        let reparsed = try Envelope(json: try JSONValue.parse(Array(envelope.json.serialized())))
        #expect(reparsed == envelope)
        // The batch a send to many members uses makes the same bytes as one envelope at a time.
        let batch = try GroupEnvelopeBatch(
            sealed.bytes, from: alice, createdAt: try RFC3339.parse(e.createdAt), expiresAt: try RFC3339.parse(e.expiresAt))
        #expect(batch.body(id: e.id, recipientID: PeerID(carol.publicKey).hex) == envelope.json.serialized())
        for key in [alice.publicKey, carol.publicKey] {
            let single = try Envelope.sealGroup(sealed.bytes, id: e.id, from: alice, to: key, createdAt: 7, expiresAt: 9)
            #expect(
                try GroupEnvelopeBatch(sealed.bytes, from: alice, createdAt: 7, expiresAt: 9).body(id: e.id, recipientID: PeerID(key).hex)
                    == single.json.serialized())
        }
        #expect(throws: WireError.invalidEnvelope("expiresAt must be after createdAt")) {
            try GroupEnvelopeBatch(sealed.bytes, from: alice, createdAt: 9, expiresAt: 9)
        }
        #expect(throws: WireError.invalidEnvelope("the payload is 131073 bytes; at most 131072")) {
            try GroupEnvelopeBatch([UInt8](repeating: 1, count: 131_073), from: alice, createdAt: 7, expiresAt: 9)
        }
        let opened = try reparsed.groupMessage(as: carol, from: alice.publicKey, now: try RFC3339.parse(e.createdAt))
        #expect(opened == sealed)
        #expect(throws: WireError.envelopeNotForMe) { try reparsed.groupMessage(as: alice, from: alice.publicKey, now: 0) }
        #expect(throws: WireError.invalidEnvelope("a version-4 envelope opens in its session (§10.7) or its group (§11.6)")) {
            try reparsed.open(as: carol, from: alice.publicKey, now: 0)
        }
    }
}

@Suite struct GroupWireTests {
    let keys: [Ed25519SigningKey] = (0..<4).compactMap { _ in try? Ed25519SigningKey.generate() }

    @Test func stateRulesAreChecked() throws {
        let a = GroupMember(key: keys[0].publicKey, isAdmin: true)
        let b = GroupMember(key: keys[1].publicKey, isAdmin: false)
        let state = try GroupState(name: "Family", members: [b, a])
        #expect(state.members.count == 2)
        #expect(state.members[0].key.rawRepresentation.lexicographicallyPrecedes(state.members[1].key.rawRepresentation))
        #expect(state.isAdmin(keys[0].publicKey) && !state.isAdmin(keys[1].publicKey))
        #expect(state.removing(keys[1].publicKey)?.keys == [keys[0].publicKey])
        #expect(state.removing(keys[0].publicKey) == nil)  // no admin would be left
        #expect(state.removing(keys[2].publicKey) == nil)  // not a member
        for bad in ["", String(repeating: "é", count: 33), "tab\there", "del\u{7F}"] {
            #expect(throws: WireError.self) { try GroupState(name: bad, members: [a]) }
        }
        #expect(throws: WireError.self) { try GroupState(name: "x", members: []) }
        #expect(throws: WireError.self) { try GroupState(name: "x", members: [a, a]) }
        #expect(throws: WireError.self) { try GroupState(name: "x", members: [b]) }
        #expect(try GroupState(name: String(repeating: "é", count: 32), members: [a]).name.utf8.count == 64)
    }

    @Test func aGroupOfTheLargestSizeRoundTripsAndOneMoreIsRefused() throws {
        let admin = keys[0]
        var members = [GroupMember(key: admin.publicKey, isAdmin: true)]
        while members.count < Groups.maximumMembers {
            members.append(GroupMember(key: try Ed25519SigningKey.generate().publicKey, isAdmin: false))
        }
        let state = try GroupState(name: "Everyone", members: members)
        let group = try GroupID.random()
        let statement = try GroupStatement.make(group: group, epoch: 0, previous: [UInt8](repeating: 0, count: 32), author: admin, at: 1, state: state)
        #expect(try GroupStatement(bytes: statement.bytes) == statement)
        members.append(GroupMember(key: try Ed25519SigningKey.generate().publicKey, isAdmin: false))
        #expect(throws: WireError.self) { try GroupState(name: "Everyone", members: members) }
    }

    @Test func everyTruncationAndEveryFlippedByteIsRefusedWithoutATrap() throws {
        let state = try GroupState(
            name: "Trip", members: [GroupMember(key: keys[0].publicKey, isAdmin: true), GroupMember(key: keys[1].publicKey, isAdmin: false)])
        let statement = try GroupStatement.make(
            group: try GroupID.random(), epoch: 0, previous: [UInt8](repeating: 0, count: 32), author: keys[0], at: 7, state: state)
        for length in 0..<statement.bytes.count {
            #expect(throws: WireError.self) { try GroupStatement(bytes: Array(statement.bytes[0..<length])) }
        }
        for index in statement.bytes.indices {
            var changed = statement.bytes
            changed[index] ^= 0x01
            #expect(throws: WireError.self) { try GroupStatement(bytes: changed) }
        }
        #expect(throws: WireError.self) { try GroupStatement(bytes: [UInt8](repeating: 0xFF, count: 100_000)) }
    }

    @Test func groupMessagesRefuseShortAndForeignBytes() throws {
        #expect(throws: WireError.self) { try GroupMessage(bytes: [UInt8](repeating: 0x47, count: GroupMessage.minimumByteCount - 1)) }
        var wrongVersion = [UInt8](repeating: 0, count: GroupMessage.minimumByteCount)
        wrongVersion[0] = 0x47
        wrongVersion[1] = 0x02
        #expect(throws: WireError.self) { try GroupMessage(bytes: wrongVersion) }
        #expect(throws: WireError.self) { try GroupMessage(bytes: [UInt8](repeating: 0, count: Envelope.maximumPayloadBytes + 1)) }
        // A message signed by another chain key, or with a changed ciphertext, is refused.
        let group = try GroupID.random()
        let chain = try SenderChain.step(SecretBytes(copying: [UInt8](repeating: 9, count: 32)))
        let signing = try Ed25519SigningKey.generate()
        let message = try GroupMessage.seal(
            Array("hi".utf8), sender: keys[0].publicKey, group: group, chain: 5, iteration: 0, epoch: 0, messageKey: chain.messageKey,
            signingKey: signing)
        #expect(throws: WireError.groupSignatureInvalid) { try message.verify(sender: keys[0].publicKey, signingKey: keys[1].publicKey) }
        var bytes = message.bytes
        bytes[31] ^= 1
        let changed = try GroupMessage(bytes: bytes)
        #expect(throws: WireError.groupSignatureInvalid) { try changed.verify(sender: keys[0].publicKey, signingKey: signing.publicKey) }
        #expect(throws: WireError.envelopeTampered) { try changed.open(sender: keys[0].publicKey, messageKey: chain.messageKey) }
    }
}
