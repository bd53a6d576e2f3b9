import Foundation
import Testing

@testable import CoordsCore

/// Forward secrecy through the managers (PROTOCOL.md §10): prekeys published, bundles accepted,
/// messages in sessions both ways, no downgrade, a lost session healed with a reset, and the
/// property itself — a stolen device state opens nothing that was recorded before.
@Suite struct SessionsManagerTests {
    /// Alice and Bob, friends both ways, each with published prekeys and the other's bundle.
    struct Pair {
        let clock: ManualClock
        let alice: TestApp, bob: TestApp
        let aliceID: String, bobID: String
        /// What each one's relay holds: the last upload's signed prekey and one-time stock.
        var stock: [String: (signed: JSONValue, oneTime: [JSONValue])] = [:]

        /// The messages suite's pair (friends both ways), then prekeys published and bundles accepted.
        init(announce: Bool = true) async throws {
            let friends = try await MessagesManagerTests.Pair()
            (clock, alice, bob, aliceID, bobID) = (friends.clock, friends.alice, friends.bob, friends.aliceID, friends.bobID)
            if announce {
                try publish(alice, aliceID)
                try publish(bob, bobID)
                #expect(try fetchBundle(into: alice, of: bobID) == .accepted(oneTime: true))
                #expect(try fetchBundle(into: bob, of: aliceID) == .accepted(oneTime: true))
            }
        }

        /// Runs `app`'s prekey upload against a relay that keeps what it is sent.
        mutating func publish(_ app: TestApp, _ id: String) throws {
            guard let request = try app.app.sessions.preparePrekeyUpload() else { return }
            #expect(request.method == "PUT" && request.url == "https://relay.test/v1/relay/prekeys")
            #expect(request.header("X-Coords-Signature") != nil)
            let body = try #require(try JSONValue.parse(request.body).objectValue)
            let oneTime = body["oneTimePrekeys"]?.arrayValue ?? []
            var held = stock[id] ?? (.null, [])
            held.signed = try #require(body["signedPrekey"])
            held.oneTime += oneTime
            stock[id] = held
            let answer = JSONValue.object([
                "signedPrekeyID": held.signed.objectValue?["id"] ?? .null, "oneTimePrekeys": .integer(UInt64(held.oneTime.count))
            ])
            #expect(try app.app.sessions.processPrekeyUpload(status: 200, body: answer.serialized()) == held.oneTime.count)
        }

        /// The relay's answer to a bundle request for `owner`, handing out one one-time prekey.
        mutating func bundle(of owner: String) -> (Int, [UInt8]) {
            guard var held = stock[owner] else { return (404, Array(#"{"error":"no_prekeys","message":"none"}"#.utf8)) }
            let oneTime = held.oneTime.isEmpty ? JSONValue.null : held.oneTime.removeFirst()
            stock[owner] = held
            return (200, JSONValue.object(["key": .string(owner), "signedPrekey": held.signed, "oneTimePrekey": oneTime]).serialized())
        }

        mutating func fetchBundle(into app: TestApp, of owner: String) throws -> BundleOutcome {
            let request = try app.app.sessions.prepareBundleRequest(for: owner)
            #expect(request.url == "https://relay.test/v1/relay/prekeys/\(owner)" && request.header("X-Coords-Key") != nil)
            let (status, body) = bundle(of: owner)
            return try app.app.sessions.processBundle(for: owner, status: status, body: body)
        }

        static func packets(_ requests: [PreparedRequest]) throws -> [UInt8] {
            JSONValue.object(["packets": .array(try requests.map { try JSONValue.parse($0.body) })]).serialized()
        }
    }

    static func version(_ request: PreparedRequest) throws -> UInt64? {
        try JSONValue.parse(request.body).objectValue?["protocolVersion"]?.uint64Value
    }

    @Test func messagesTravelInSessionsBothWaysAndUseOneTimePrekeysOnce() async throws {
        var p = try await Pair()
        #expect(try p.alice.app.sessions.protection(of: p.bobID) == .forwardSecret)
        let bobOwn = try p.bob.app.context.database.read { tx in try tx.open(Tables.ownOneTimePrekeys).count() }
        let first = try await p.alice.app.messages.send("hello in a session", to: p.bobID)
        let second = try await p.alice.app.messages.send("and again", to: p.bobID)
        #expect(try Self.version(first.request) == 3 && Self.version(second.request) == 3)
        // Out of order, then a reply, then a second reply: every message opens once.
        let got = try await p.bob.app.messages.processFetchResponse(try Pair.packets([second.request, first.request]))
        #expect(got.received.map(\.text) == ["and again", "hello in a session"] && got.rejected.isEmpty)
        #expect(try p.bob.app.context.database.read { tx in try tx.open(Tables.ownOneTimePrekeys).count() } == bobOwn - 1)
        let reply = try await p.bob.app.messages.send("hi Alice", to: p.aliceID)
        #expect(try Self.version(reply.request) == 3)
        let back = try await p.alice.app.messages.processFetchResponse(try Pair.packets([reply.request] + got.receipts.map(\.item.request)))
        #expect(back.received.map(\.text) == ["hi Alice"] && back.delivered.count == 2 && back.rejected.isEmpty)
        let third = try await p.alice.app.messages.send("third", to: p.bobID)
        let sealed = try #require(try JSONValue.parse(third.request.body).objectValue?["sealedPayloadBase64"]?.stringValue)
        let payload = try Base64.decode(sealed, variant: .standard)
        #expect(payload.first == SessionMessage.messageType)
        #expect(try await p.bob.app.messages.processFetchResponse(try Pair.packets([third.request])).received.map(\.text) == ["third"])
        // The one-time prekey Alice used is gone from her record: the next session needs a new bundle's.
        let known = try p.alice.app.context.database.read { tx in try tx.open(Tables.friendPrekeys).get(try Ed25519PublicKey(base64URL: p.bobID)) }
        #expect(known?.oneTime == nil && known?.announcedAt != nil)
    }

    @Test func aFriendWhoAnnouncedIsNeverDowngraded() async throws {
        var p = try await Pair()
        // A relay that now claims Bob has no prekeys is refused; his bundle stays in use.
        let hidden = try p.alice.app.sessions.processBundle(
            for: p.bobID, status: 404, body: Array(#"{"error":"no_prekeys","message":"none"}"#.utf8))
        #expect(hidden == .refused(code: WireError.downgradeRefused.code, reason: WireError.downgradeRefused.description))
        #expect(try p.alice.app.sessions.protection(of: p.bobID) == .forwardSecret)
        #expect(try Self.version(try await p.alice.app.messages.send("still in a session", to: p.bobID).request) == 3)
        _ = p.bundle(of: p.bobID)
        let alice = try p.alice.app.context.identity.get().signing
        let legacy = try Envelope.seal(
            MessagePayload(kind: "text", id: try Envelope.newUUID(), text: "old way", sentAt: 1).json, id: try Envelope.newUUID(),
            from: alice, to: try Ed25519PublicKey(base64URL: p.bobID), createdAt: p.clock.milliseconds / 1000,
            expiresAt: p.clock.milliseconds / 1000 + 3600)
        // Alice signing a version-2 envelope (she lost what she knew of Bob's prekeys): Bob reads it.
        let body = JSONValue.object(["packets": .array([legacy.json])]).serialized()
        let outcome = try await p.bob.app.messages.processFetchResponse(body)
        #expect(outcome.received.map(\.text) == ["old way"] && outcome.rejected.isEmpty)
        // Without a session or a valid bundle a message is refused, never sent the old way.
        let carol = try TestApp(name: "carol", clock: p.clock)
        _ = try await carol.app.wallet.createIdentity(name: "Carol", server: "https://relay.test")
        _ = try await carol.app.friends.add(id: p.bobID, server: "https://relay.test", name: "Bob")
        try carol.app.context.database.write { tx in
            try tx.open(Tables.friendPrekeys).put(try Ed25519PublicKey(base64URL: p.bobID), FriendPrekeys(announcedAt: 1, checkedAt: 1))
        }
        await #expect(throws: WireError.prekeysUnavailable) { _ = try await carol.app.messages.send("x", to: p.bobID) }
        // The refusal says what happened: nothing was kept or queued (issue 59, defect 13).
        #expect(try carol.app.messages.history(with: p.bobID).isEmpty && carol.app.outbox.pending().isEmpty)
        #expect(WireError.prekeysUnavailable.description.contains("not sent and not kept"))
    }

    @Test func friendsWithoutPrekeysStayLegacyBothWays() async throws {
        var p = try await Pair(announce: false)
        #expect(try p.fetchBundle(into: p.alice, of: p.bobID) == .notOffered)
        #expect(try p.alice.app.sessions.protection(of: p.bobID) == .legacy)
        let sent = try await p.alice.app.messages.send("v2", to: p.bobID)
        #expect(try Self.version(sent.request) == 2)
        #expect(try await p.bob.app.messages.processFetchResponse(try Pair.packets([sent.request])).received.map(\.text) == ["v2"])
        // Asked again only after an hour.
        #expect(try p.alice.app.sessions.bundlesDue().isEmpty)
        p.clock.advance(byMilliseconds: SessionsManager.bundleRetryInterval)
        #expect(try p.alice.app.sessions.bundlesDue() == [p.bobID])
    }

    @Test func aHostileRelaysBundleIsRefused() async throws {
        var p = try await Pair(announce: false)
        try p.publish(p.bob, p.bobID)
        let (_, good) = p.bundle(of: p.bobID)
        // Someone else's bundle filed under Bob's key.
        let mallory = try TestApp(name: "mallory", clock: p.clock)
        let malloryID = try await mallory.app.wallet.createIdentity(name: "M", server: "https://relay.test")
        try p.publish(mallory, malloryID)
        var (_, foreign) = p.bundle(of: malloryID)
        foreign = Array(String(decoding: foreign, as: UTF8.self).replacingOccurrences(of: malloryID, with: p.bobID).utf8)
        for (status, body) in [(200, foreign), (200, Array(good.dropLast())), (500, Array("oops".utf8))] {
            guard case .refused = try p.alice.app.sessions.processBundle(for: p.bobID, status: status, body: body) else {
                Issue.record("accepted a bad bundle answer (\(status))")
                continue
            }
        }
        #expect(try p.alice.app.sessions.protection(of: p.bobID) == .legacy)
        #expect(try p.alice.app.sessions.processBundle(for: p.bobID, status: 200, body: good) == .accepted(oneTime: true))
        // The same one-time prekey handed to a second sender: Bob refuses the second handshake and
        // the sender hears of it through a reset in a new session.
        let carol = try TestApp(name: "carol", clock: p.clock)
        let carolID = try await carol.app.wallet.createIdentity(name: "Carol", server: "https://relay.test")
        _ = try await carol.app.friends.add(id: p.bobID, server: "https://relay.test", name: "Bob")
        _ = try await p.bob.app.friends.add(id: carolID, server: "https://relay.test", name: "Carol")
        #expect(try carol.app.sessions.processBundle(for: p.bobID, status: 200, body: good) == .accepted(oneTime: true))
        let fromAlice = try await p.alice.app.messages.send("first", to: p.bobID)
        let fromCarol = try await carol.app.messages.send("second", to: p.bobID)
        let outcome = try await p.bob.app.messages.processFetchResponse(try Pair.packets([fromAlice.request, fromCarol.request]))
        #expect(outcome.received.map(\.text) == ["first"])
        #expect(outcome.rejected.map(\.code) == [WireError.unknownPrekey("").code] && outcome.broken == [carolID])
    }

    /// Small-order X25519 points (every agreement with one is all-zero): zero, one, a point of
    /// order 8, and p − 1.
    static let smallOrderPoints: [[UInt8]] = [
        [UInt8](repeating: 0, count: 32),
        [1] + [UInt8](repeating: 0, count: 31),
        Hex.decode("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800") ?? [],
        [0xEC] + [UInt8](repeating: 0xFF, count: 30) + [0x7F]
    ]

    /// A friend who publishes a validly signed small-order prekey is refused when the bundle is
    /// accepted (and stays legacy); one stored by an earlier version is never sealed to, so the
    /// share still goes out and the friend still opens it (through an identity entry).
    @Test func aSmallOrderPrekeyIsRefusedAndNeverFailsAShare() async throws {
        let p = try await Pair(announce: false)
        let bob = try p.bob.app.context.identity.get()
        let now = p.clock.milliseconds
        var stored: SignedPrekey?
        for point in Self.smallOrderPoints {
            let key = try X25519PublicKey(rawRepresentation: point)
            #expect(key.isSmallOrder)
            let signed = SignedPrekey.make(id: 7, key: key, created: now, identity: bob.signing)
            stored = signed
            let body = JSONValue.object(["key": .string(p.bobID), "signedPrekey": signed.json, "oneTimePrekey": .null]).serialized()
            guard case .refused(_, let reason) = try p.alice.app.sessions.processBundle(for: p.bobID, status: 200, body: body) else {
                Issue.record("a small-order signed prekey was accepted: \(Hex.encode(point))")
                continue
            }
            #expect(reason.contains("small-order"), "\(reason)")
            // A good signed prekey with a small-order one-time prekey is refused too.
            let good = SignedPrekey.make(id: 8, key: try X25519PrivateKey.generate().publicKey, created: now, identity: bob.signing)
            let oneTime = OneTimePrekey.make(id: 9, key: key, identity: bob.signing)
            let mixed = JSONValue.object(["key": .string(p.bobID), "signedPrekey": good.json, "oneTimePrekey": oneTime.json]).serialized()
            guard case .refused = try p.alice.app.sessions.processBundle(for: p.bobID, status: 200, body: mixed) else {
                Issue.record("a small-order one-time prekey was accepted")
                continue
            }
        }
        #expect(!(try X25519PrivateKey.generate().publicKey.isSmallOrder))
        #expect(try p.alice.app.sessions.protection(of: p.bobID) == .legacy)

        // As an earlier version could have stored it: the upload still succeeds, and Bob opens it.
        let bobKey = try Ed25519PublicKey(base64URL: p.bobID)
        try p.alice.app.context.database.write { tx in
            try tx.open(Tables.friendPrekeys).put(bobKey, FriendPrekeys(signed: stored, announcedAt: now, checkedAt: now))
        }
        let upload = try await p.alice.app.location.prepareUpload(try fix(48.5, 2.25, at: now))
        #expect(upload.recipientCount == 2)
        let blobText = try #require(try JSONValue.parse(upload.request.body).objectValue?["blob"]?.stringValue)
        let opened = try LocationBlob.open(try Base64.decode(blobText), with: bob.x25519)
        #expect(opened.timestamp == now)
    }

    @Test func aLostSessionHealsWithAVisibleReset() async throws {
        var p = try await Pair()
        let hello = try await p.alice.app.messages.send("hello", to: p.bobID)
        _ = try await p.bob.app.messages.processFetchResponse(try Pair.packets([hello.request]))
        let reply = try await p.bob.app.messages.send("hi", to: p.aliceID)
        _ = try await p.alice.app.messages.processFetchResponse(try Pair.packets([reply.request]))
        // Bob's device loses its sessions (an old backup, a reinstall).
        try p.bob.app.context.database.write { tx in try tx.open(Tables.sessions).removeAll() }
        let lost = try await p.alice.app.messages.send("lost", to: p.bobID)
        let broken = try await p.bob.app.messages.processFetchResponse(try Pair.packets([lost.request]))
        #expect(broken.received.isEmpty && broken.broken == [p.aliceID])
        #expect(broken.rejected.map(\.code) == [WireError.sessionBroken.code])
        // Bob queued a session-reset to Alice in a new session (from her bundle).
        let reset = try #require(try p.bob.app.outbox.pending().last { $0.item.kind == .message })
        #expect(try Self.version(reset.item.request) == 3)
        let healed = try await p.alice.app.messages.processFetchResponse(try Pair.packets([reset.item.request]))
        #expect(healed.resets == [p.bobID] && healed.received.isEmpty)
        let after = try await p.alice.app.messages.send("after the reset", to: p.bobID)
        #expect(try await p.bob.app.messages.processFetchResponse(try Pair.packets([after.request])).received.map(\.text) == ["after the reset"])
    }

    @Test func recordingsDoNotOpenWithTheWholeDeviceStateAfterTheGracePeriod() async throws {
        var p = try await Pair()
        let relay = FakeRelay()
        relay.now = p.clock.milliseconds / 1000
        // Recorded: every envelope Alice sent, and every blob she uploaded.
        var recorded: [PreparedRequest] = []
        for text in ["one", "two", "three"] {
            let sent = try await p.alice.app.messages.send(text, to: p.bobID)
            recorded.append(sent.request)
            let got = try await p.bob.app.messages.processFetchResponse(try Pair.packets([sent.request]))
            #expect(got.received.map(\.text) == [text])
            let answer = try await p.bob.app.messages.send("ok \(text)", to: p.aliceID)
            _ = try await p.alice.app.messages.processFetchResponse(try Pair.packets([answer.request]))
        }
        let upload = try await p.alice.app.location.prepareUpload(try Location(latitude: 46.95, longitude: 7.45, timestamp: p.clock.milliseconds))
        #expect(relay.handle(upload.request).status == 204)
        let recordedBlob = try #require(relay.entry(p.aliceID))
        let fetch = try #require(try await p.bob.app.location.prepareFetches().first)
        let seen = try await p.bob.app.location.processFetchResponse(relay.handle(fetch.request).body)
        #expect(seen.updated.count == 1)

        // Time passes: Bob's signed prekey is replaced twice and the grace period ends.
        for _ in 0..<3 {
            p.clock.advance(byMilliseconds: ForwardSecrecy.signedPrekeyRotation)
            try p.publish(p.bob, p.bobID)
        }
        p.clock.advance(byMilliseconds: ForwardSecrecy.signedPrekeyKeep)
        try p.bob.app.sessions.sweep()

        // The thief has everything on Bob's device: keychain, store and passphrase.
        let stolen = try Fixtures.makeTemporaryDirectory("stolen")
        try FileManager.default.removeItem(at: stolen)
        try FileManager.default.copyItem(at: p.bob.directory, to: stolen)
        p.bob.app.close()
        let thief = try TestApp(name: "thief", passphrase: p.bob.passphrase, clock: p.clock, directory: stolen)
        // Forget which envelopes were seen, so each is really tried again.
        try thief.app.context.database.write { tx in try tx.open(Tables.messageIDs).removeAll() }
        // Back to when they were recorded, so no envelope is refused for having expired.
        p.clock.set(milliseconds: 1_800_000_000_000 + 1000)
        let reopened = try await thief.app.messages.processFetchResponse(try Pair.packets(recorded))
        #expect(reopened.received.isEmpty, "recorded messages opened with the stolen state")
        #expect(reopened.rejected.count == recorded.count)
        // Refused by the cryptography (keys gone), not by age or shape.
        let cryptographic: Set<Int32> = [
            WireError.unknownPrekey("").code, WireError.duplicateMessage.code, WireError.sessionBroken.code, WireError.envelopeTampered.code
        ]
        #expect(reopened.rejected.allSatisfy { cryptographic.contains($0.code) }, "\(reopened.rejected.map(\.reason))")
        let blobBody = JSONValue.object([
            p.aliceID: .object([
                "blob": .string(recordedBlob.blob), "updated": .integer(recordedBlob.updated), "signature": .string(recordedBlob.signature),
                "timestamp": .integer(recordedBlob.timestamp)
            ])
        ]).serialized()
        let identity = try thief.app.context.identity.get()
        let entries = try RelayAPI.processFetchResponse(blobBody, readers: try thief.app.location.readerKeys(identity))
        #expect(entries.first?.location == nil && entries.first?.error == .notARecipient, "the recorded blob opened with the stolen state")
    }
}

/// Rotation and revocation (PROTOCOL.md §10.11): the old identity's sessions and prekeys end, the
/// statement still travels the old way, and the new key starts over.
@Suite struct SessionsRotationTests {
    @Test func rotatingEndsSessionsAndPrekeysAndTheNewKeyStartsOver() async throws {
        var p = try await SessionsManagerTests.Pair()
        let hello = try await p.alice.app.messages.send("before", to: p.bobID)
        _ = try await p.bob.app.messages.processFetchResponse(try SessionsManagerTests.Pair.packets([hello.request]))
        let counts = { (app: TestApp) throws -> (Int, Int, Int) in
            try app.app.context.database.read { tx in
                (
                    try tx.open(Tables.sessions).count(), try tx.open(Tables.ownSignedPrekeys).count(),
                    try tx.open(Tables.ownOneTimePrekeys).count()
                )
            }
        }
        #expect(try counts(p.alice).0 == 1 && counts(p.alice).1 == 1)
        let rotation = try await p.alice.app.rotateIdentity()
        #expect(try counts(p.alice) == (0, 0, 0), "the old identity's sessions and prekeys end with it")
        // The statement is the one message still sealed the old way (version 2), and Bob follows it.
        let statement = try #require(rotation.statements.first?.item.request)
        #expect(try SessionsManagerTests.version(statement) == 2)
        let followed = try await p.bob.app.messages.processFetchResponse(try SessionsManagerTests.Pair.packets([statement]))
        #expect(followed.rotated.count == 1 && followed.rejected.isEmpty)
        #expect(try p.bob.app.sessions.protection(of: rotation.id) == .legacy, "the new key has announced nothing yet")
        #expect(try counts(p.bob).0 == 0, "Bob forgot the sessions with Alice's old key")
        // Until Alice's new key publishes, Bob writes version 2 — and Alice reads it.
        let interim = try await p.bob.app.messages.send("to your new key", to: rotation.id)
        #expect(try SessionsManagerTests.version(interim.request) == 2)
        #expect(
            try await p.alice.app.messages.processFetchResponse(try SessionsManagerTests.Pair.packets([interim.request])).received.map(\.text)
                == ["to your new key"])
        // The new key publishes; Bob accepts its bundle; sessions again.
        p.stock[rotation.id] = nil
        try p.publish(p.alice, rotation.id)
        #expect(try p.fetchBundle(into: p.bob, of: rotation.id) == .accepted(oneTime: true))
        let after = try await p.bob.app.messages.send("forward-secret again", to: rotation.id)
        #expect(try SessionsManagerTests.version(after.request) == 3)
        #expect(
            try await p.alice.app.messages.processFetchResponse(try SessionsManagerTests.Pair.packets([after.request])).received.map(\.text)
                == ["forward-secret again"])
    }
}
