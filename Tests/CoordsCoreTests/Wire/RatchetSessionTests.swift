import Foundation
import Testing

@testable import CoordsCore

/// Two people with a session between them (PROTOCOL.md §10.5–§10.6), for the rule tests.
struct SessionPair {
    let alice: Ed25519SigningKey
    let bob: Ed25519SigningKey
    let bobSignedPrekey: X25519PrivateKey
    let bobOneTimePrekey: X25519PrivateKey
    var aliceSession: RatchetSession
    var bobSession: RatchetSession?
    var count = 0

    init(seed: UInt64 = 1) throws {
        let random = SeededRandomSource(seed: seed)
        alice = try Ed25519SigningKey.generate(using: random)
        bob = try Ed25519SigningKey.generate(using: random)
        bobSignedPrekey = try X25519PrivateKey.generate(using: random)
        bobOneTimePrekey = try X25519PrivateKey.generate(using: random)
        let bundle = PrekeyBundle(
            identity: bob.publicKey, signedPrekey: SignedPrekey.make(id: 1, key: bobSignedPrekey.publicKey, created: 1000, identity: bob),
            oneTimePrekey: OneTimePrekey.make(id: 2, key: bobOneTimePrekey.publicKey, identity: bob))
        let base = try X25519PrivateKey.generate(using: random)
        let sk = try X3DH.initiate(identity: alice, bundle: bundle, baseKey: base)
        aliceSession = try RatchetSession.initiate(
            sharedSecret: sk, remoteSignedPrekey: bobSignedPrekey.publicKey,
            handshake: .init(signedPrekeyID: 1, oneTimePrekeyID: 2, baseKey: base.publicKey), now: 1000, using: random)
    }

    func context(fromAlice: Bool, _ n: Int) -> SessionContext {
        let (s, r) = fromAlice ? (alice.publicKey, bob.publicKey) : (bob.publicKey, alice.publicKey)
        return SessionContext(sender: s, recipient: r, envelopeAssociatedData: Array("envelope-\(n)".utf8))
    }

    /// Alice seals `text`; returns the payload and its envelope number.
    mutating func aliceSends(_ text: String) throws -> ([UInt8], Int) {
        count += 1
        return (try aliceSession.seal(Array(text.utf8), context: context(fromAlice: true, count), now: 2000).payload, count)
    }

    mutating func bobSends(_ text: String) throws -> ([UInt8], Int) {
        count += 1
        var session = try #require(bobSession)
        let payload = try session.seal(Array(text.utf8), context: context(fromAlice: false, count), now: 2000).payload
        bobSession = session
        return (payload, count)
    }

    mutating func bobOpens(_ sent: ([UInt8], Int)) throws -> String {
        let message = try SessionMessage(payload: sent.0)
        if bobSession == nil, let shake = message.handshake {
            let sk = try X3DH.respond(
                identity: bob, signedPrekey: bobSignedPrekey, oneTimePrekey: bobOneTimePrekey, initiator: alice.publicKey,
                baseKey: shake.baseKey)
            bobSession = RatchetSession.respond(sharedSecret: sk, signedPrekey: bobSignedPrekey, handshake: shake, now: 2000)
        }
        var session = try #require(bobSession)
        let text = try session.open(message, context: context(fromAlice: true, sent.1), now: 3000)
        bobSession = session
        return String(decoding: text, as: UTF8.self)
    }

    mutating func aliceOpens(_ sent: ([UInt8], Int)) throws -> String {
        let text = try aliceSession.open(try SessionMessage(payload: sent.0), context: context(fromAlice: false, sent.1), now: 3000)
        return String(decoding: text, as: UTF8.self)
    }
}

@Suite struct RatchetSessionTests {
    @Test func initialMessagesCarryTheHandshakeUntilTheResponderAnswers() throws {
        var pair = try SessionPair()
        let first = try pair.aliceSends("one")
        #expect(first.0.first == SessionMessage.initialType && first.0.count == 82 + 3 + 16)
        #expect(try pair.bobOpens(first) == "one")
        let second = try pair.aliceSends("two")
        #expect(second.0.first == SessionMessage.initialType)
        #expect(try pair.bobOpens(second) == "two")
        #expect(try pair.aliceOpens(try pair.bobSends("back")) == "back")
        let third = try pair.aliceSends("three")
        #expect(third.0.first == SessionMessage.messageType && third.0.count == 41 + 5 + 16)
        #expect(try pair.bobOpens(third) == "three")
    }

    @Test func replayedMessageIsRefusedAndLeavesTheSessionUsable() throws {
        var pair = try SessionPair()
        let first = try pair.aliceSends("one")
        #expect(try pair.bobOpens(first) == "one")
        #expect(throws: WireError.duplicateMessage) { _ = try pair.bobOpens(first) }
        let reply = try pair.bobSends("r")
        #expect(try pair.aliceOpens(reply) == "r")
        #expect(throws: WireError.duplicateMessage) { _ = try pair.aliceOpens(reply) }
        #expect(try pair.bobOpens(try pair.aliceSends("two")) == "two")
    }

    @Test func outOfOrderAndLostMessagesOpenFromSkippedKeys() throws {
        var pair = try SessionPair()
        #expect(try pair.bobOpens(try pair.aliceSends("hello")) == "hello")
        #expect(try pair.aliceOpens(try pair.bobSends("hi")) == "hi")
        let batch = try (0..<5).map { try pair.aliceSends("m\($0)") }
        #expect(try pair.bobOpens(batch[4]) == "m4")
        #expect(try #require(pair.bobSession).skippedKeyCount == 4)
        #expect(try pair.bobOpens(batch[1]) == "m1")
        // A new ratchet step from Bob while Alice's m0, m2, m3 are still in flight.
        #expect(try pair.aliceOpens(try pair.bobSends("step")) == "step")
        let after = try pair.aliceSends("after")
        #expect(try pair.bobOpens(after) == "after")
        #expect(try pair.bobOpens(batch[0]) == "m0")
        #expect(try pair.bobOpens(batch[3]) == "m3")
        #expect(try #require(pair.bobSession).skippedKeyCount == 1)  // m2 lost: its key is kept, bounded
        // A replay from an older chain: its key is gone, and the trial DH step it causes does not
        // authenticate and is discarded (§10.6 step 6).
        let before = try #require(pair.bobSession).serialized()
        #expect(throws: WireError.envelopeTampered) { _ = try pair.bobOpens(batch[3]) }
        #expect(try #require(pair.bobSession).serialized() == before)
    }

    @Test func aGapBeyondTheLimitIsRefusedWithoutDerivingKeys() throws {
        var pair = try SessionPair()
        #expect(try pair.bobOpens(try pair.aliceSends("hello")) == "hello")
        // Forge a header far ahead: the count is checked before any key is derived.
        var session = pair.aliceSession
        for _ in 0..<1001 { _ = try session.seal([1], context: pair.context(fromAlice: true, 99), now: 1) }
        let far = try session.seal([2], context: pair.context(fromAlice: true, 100), now: 1)
        var bob = try #require(pair.bobSession)
        #expect(throws: WireError.tooManySkipped(gap: 1001)) {
            _ = try bob.open(far, context: pair.context(fromAlice: true, 100), now: 1)
        }
        // A gap of exactly the limit still opens.
        var within = pair.aliceSession
        for _ in 0..<1000 { _ = try within.seal([1], context: pair.context(fromAlice: true, 99), now: 1) }
        let edge = try within.seal([3], context: pair.context(fromAlice: true, 101), now: 1)
        #expect(try bob.open(edge, context: pair.context(fromAlice: true, 101), now: 1) == [3])
        #expect(bob.skippedKeyCount == 1000)
    }

    @Test func forgedOrMovedMessageChangesNothing() throws {
        var pair = try SessionPair()
        let first = try pair.aliceSends("one")
        var altered = first.0
        altered[altered.count - 1] ^= 1
        #expect(throws: WireError.envelopeTampered) { _ = try pair.bobOpens((altered, first.1)) }
        pair.bobSession = nil
        // The same payload in another envelope does not open: the envelope is bound in.
        #expect(throws: WireError.envelopeTampered) { _ = try pair.bobOpens((first.0, first.1 + 1)) }
        pair.bobSession = nil
        #expect(try pair.bobOpens(first) == "one")
        let reply = try pair.bobSends("r")
        let before = pair.aliceSession.serialized()
        var forged = reply.0
        forged[5] ^= 0x40  // the ratchet key in the header: a DH step that must not stick
        #expect(throws: (any Error).self) { _ = try pair.aliceOpens((forged, reply.1)) }
        #expect(pair.aliceSession.serialized() == before)
        #expect(try pair.aliceOpens(reply) == "r")
    }

    @Test func aStolenCopyStopsReadingAfterTwoRoundTrips() throws {
        var pair = try SessionPair()
        #expect(try pair.bobOpens(try pair.aliceSends("a")) == "a")
        #expect(try pair.aliceOpens(try pair.bobSends("b")) == "b")
        let stolen = try RatchetSession(serialized: try #require(pair.bobSession).serialized())
        // The thief can read what arrives next with the copy...
        let next = try pair.aliceSends("c")
        var thief = stolen
        let read = try thief.open(try SessionMessage(payload: next.0), context: pair.context(fromAlice: true, next.1), now: 1)
        #expect(String(decoding: read, as: UTF8.self) == "c")
        #expect(try pair.bobOpens(next) == "c")
        // ...until both sides have made a new DH ratchet step.
        #expect(try pair.aliceOpens(try pair.bobSends("d")) == "d")
        #expect(try pair.bobOpens(try pair.aliceSends("e")) == "e")
        #expect(try pair.aliceOpens(try pair.bobSends("f")) == "f")
        let later = try pair.aliceSends("g")
        var copy = stolen
        #expect(throws: (any Error).self) {
            _ = try copy.open(try SessionMessage(payload: later.0), context: pair.context(fromAlice: true, later.1), now: 1)
        }
        #expect(try pair.bobOpens(later) == "g")
    }

    @Test func openedMessageKeysAreGoneFromTheState() throws {
        var pair = try SessionPair()
        let first = try pair.aliceSends("secret")
        #expect(try pair.bobOpens(first) == "secret")
        // Even the whole current state of Bob's session does not open it again.
        var copy = try RatchetSession(serialized: try #require(pair.bobSession).serialized())
        #expect(throws: WireError.duplicateMessage) {
            _ = try copy.open(try SessionMessage(payload: first.0), context: pair.context(fromAlice: true, first.1), now: 1)
        }
    }

    @Test func skippedKeysExpireAfterSevenDays() throws {
        var pair = try SessionPair()
        let lost = try pair.aliceSends("lost")
        #expect(try pair.bobOpens(try pair.aliceSends("later")) == "later")
        var session = try #require(pair.bobSession)
        #expect(session.skippedKeyCount == 1)
        session.prune(now: 3000 + ForwardSecrecy.skippedKeyKeep - 1)
        #expect(session.skippedKeyCount == 1)
        session.prune(now: 3000 + ForwardSecrecy.skippedKeyKeep)
        #expect(session.skippedKeyCount == 0)
        pair.bobSession = session
        #expect(throws: WireError.duplicateMessage) { _ = try pair.bobOpens(lost) }
    }

    @Test func storedFormRoundTripsAndRefusesDamage() throws {
        var pair = try SessionPair()
        _ = try pair.bobOpens(try pair.aliceSends("x"))
        _ = try pair.aliceSends("skipped")
        #expect(try pair.bobOpens(try pair.aliceSends("y")) == "y")
        let stored = try #require(pair.bobSession).serialized()
        let again = try RatchetSession(serialized: stored)
        #expect(again.serialized() == stored)
        #expect(again.skippedKeyCount == 1 && !again.isInitiator && again.confirmed)
        let bytes = stored.copyBytes()
        for cut in [0, 1, 2, 40, bytes.count - 1] {
            #expect(throws: WireError.self) { try RatchetSession(serialized: SecretBytes(copying: Array(bytes.prefix(cut)))) }
        }
        #expect(throws: WireError.self) { try RatchetSession(serialized: SecretBytes(copying: bytes + [0])) }
        var badVersion = bytes
        badVersion[0] = 9
        #expect(throws: WireError.self) { try RatchetSession(serialized: SecretBytes(copying: badVersion)) }
        #expect(!"\(again)".contains(Hex.encode(bytes[2..<34])))
        // Found by the ratchet-state fuzz target: "no one-time prekey" with a non-zero id would
        // read but not write back the same bytes.
        let fuzzed = try Data(contentsOf: Fixtures.repositoryRoot.appendingPathComponent("Fuzz/corpus/ratchet-state/absent-opk-with-id"))
        #expect(throws: WireError.self) { try RatchetSession(serialized: SecretBytes(copying: Array(fuzzed))) }
    }

    @Test func sessionMessageParserRefusesMalformedPayloads() throws {
        var pair = try SessionPair()
        let good = try pair.aliceSends("x").0
        #expect(throws: WireError.self) { try SessionMessage(payload: []) }
        #expect(throws: WireError.self) { try SessionMessage(payload: [3] + good.dropFirst()) }
        #expect(throws: WireError.self) { try SessionMessage(payload: Array(good.prefix(82 + 15))) }
        var badFlag = good
        badFlag[5] = 2
        #expect(throws: WireError.self) { try SessionMessage(payload: badFlag) }
        var absentWithID = good
        absentWithID[5] = 0
        #expect(throws: WireError.self) { try SessionMessage(payload: absentWithID) }
        #expect(throws: WireError.self) { try SessionMessage(payload: [UInt8](repeating: 2, count: Envelope.maximumPayloadBytes + 1)) }
        let parsed = try SessionMessage(payload: good)
        #expect(parsed.payload == good)
        #expect(parsed.handshake == .init(signedPrekeyID: 1, oneTimePrekeyID: 2, baseKey: pair.aliceSession.handshake.baseKey))
    }

    @Test func weakRatchetKeyIsRefused() throws {
        var pair = try SessionPair()
        _ = try pair.bobOpens(try pair.aliceSends("x"))
        var bob = try #require(pair.bobSession)
        var payload = try bob.seal([1], context: pair.context(fromAlice: false, 50), now: 1).payload
        for i in 1..<33 { payload[i] = 0 }  // the all-zero (small-order) point as ratchet key
        let before = pair.aliceSession.serialized()
        #expect(throws: CryptoError.weakPublicKey) {
            _ = try pair.aliceSession.open(try SessionMessage(payload: payload), context: pair.context(fromAlice: false, 50), now: 1)
        }
        #expect(pair.aliceSession.serialized() == before)
    }
}

@Suite struct PrekeyBundleTests {
    let bob: Ed25519SigningKey
    let mallory: Ed25519SigningKey
    let bundle: PrekeyBundle

    init() throws {
        let random = SeededRandomSource(seed: 7)
        bob = try Ed25519SigningKey.generate(using: random)
        mallory = try Ed25519SigningKey.generate(using: random)
        let spk = try X25519PrivateKey.generate(using: random)
        let opk = try X25519PrivateKey.generate(using: random)
        bundle = PrekeyBundle(
            identity: bob.publicKey, signedPrekey: SignedPrekey.make(id: 5, key: spk.publicKey, created: 10_000, identity: bob),
            oneTimePrekey: OneTimePrekey.make(id: 9, key: opk.publicKey, identity: bob))
    }

    @Test func jsonRoundTripsAndVerifies() throws {
        let parsed = try PrekeyBundle(json: bundle.json.serialized())
        #expect(parsed == bundle)
        try parsed.verify(for: bob.publicKey, now: 10_001)
        var without = bundle
        without.oneTimePrekey = nil
        #expect(try PrekeyBundle(json: without.json.serialized()) == without)
        #expect(without.json.serializedString.contains("\"oneTimePrekey\":null"))
    }

    @Test func refusesSomeoneElsesOrForgedOrStaleBundles() throws {
        #expect(throws: WireError.self) { try bundle.verify(for: mallory.publicKey, now: 10_001) }
        var forged = bundle
        forged.signedPrekey.created += 1
        #expect(throws: WireError.self) { try forged.verify(for: bob.publicKey, now: 10_001) }
        var resigned = bundle
        resigned.signedPrekey = SignedPrekey.make(id: 5, key: bundle.signedPrekey.key, created: 10_000, identity: mallory)
        #expect(throws: WireError.self) { try resigned.verify(for: bob.publicKey, now: 10_001) }
        var badOneTime = bundle
        badOneTime.oneTimePrekey = OneTimePrekey.make(id: 9, key: bundle.signedPrekey.key, identity: mallory)
        #expect(throws: WireError.self) { try badOneTime.verify(for: bob.publicKey, now: 10_001) }
        let expires = bundle.signedPrekey.expires
        #expect(throws: WireError.prekeyBundleExpired(expires: expires)) { try bundle.verify(for: bob.publicKey, now: expires) }
        try bundle.verify(for: bob.publicKey, now: expires - 1)
        let future = PrekeyBundle(
            identity: bob.publicKey, signedPrekey: SignedPrekey.make(id: 6, key: bundle.signedPrekey.key, created: 10_000_000, identity: bob),
            oneTimePrekey: nil)
        #expect(throws: WireError.self) { try future.verify(for: bob.publicKey, now: 10_000_000 - 300_001) }
        try future.verify(for: bob.publicKey, now: 10_000_000 - 300_000)
        let tooLong = PrekeyBundle(
            identity: bob.publicKey,
            signedPrekey: SignedPrekey.make(
                id: 6, key: bundle.signedPrekey.key, created: 0, expires: ForwardSecrecy.signedPrekeyMaximumValidity + 1, identity: bob),
            oneTimePrekey: nil)
        #expect(throws: WireError.self) { try tooLong.verify(for: bob.publicKey, now: 1) }
        let backwards = PrekeyBundle(
            identity: bob.publicKey, signedPrekey: SignedPrekey.make(id: 6, key: bundle.signedPrekey.key, created: 5, expires: 5, identity: bob),
            oneTimePrekey: nil)
        #expect(throws: WireError.self) { try backwards.verify(for: bob.publicKey, now: 1) }
    }

    @Test func refusesARollbackOrAConflictWithTheAcceptedPrekey() throws {
        let newer = SignedPrekey.make(id: 6, key: bundle.signedPrekey.key, created: 20_000, identity: bob)
        #expect(throws: WireError.self) { try bundle.verify(for: bob.publicKey, now: 20_001, cached: newer) }
        let sameIDOtherBytes = SignedPrekey.make(id: 5, key: bundle.signedPrekey.key, created: 9_000, identity: bob)
        #expect(throws: WireError.self) { try bundle.verify(for: bob.publicKey, now: 10_001, cached: sameIDOtherBytes) }
        try bundle.verify(for: bob.publicKey, now: 10_001, cached: bundle.signedPrekey)
    }

    @Test func malformedJSONIsRefusedWithTheMember() throws {
        let cases: [(String, String)] = [
            ("[]", "not a JSON object"), ("{\"key\":1}", "key"), ("{\"key\":\"\(bob.publicKey.base64URL)\"}", "signedPrekey is missing"),
            ("{\"key\":\"\(bob.publicKey.base64URL)\",\"signedPrekey\":{\"id\":4294967296}}", "signedPrekey.id"),
            ("not json", "not JSON")
        ]
        for (text, expected) in cases {
            do {
                _ = try PrekeyBundle(json: Array(text.utf8))
                Issue.record("accepted \(text)")
            } catch let WireError.invalidPrekeyBundle(why) {
                #expect(why.contains(expected), "\(why)")
            }
        }
        #expect(throws: WireError.self) { try PrekeyBundle(json: [UInt8](repeating: 0x20, count: 16_385)) }
    }
}
