import Foundation
import Testing

@testable import CoordsCore

/// Identity rotation, revocation and conflicts (PROTOCOL.md §9.1–§9.2): one rule per test.
@Suite struct RotationTests {
    /// Alice (whose seed the test holds, so it can sign as her old key), Bob and Carol.
    struct Circle {
        let relay = FakeRelay()
        let clock = ManualClock(milliseconds: 1_800_000_000_000)
        let alice: TestApp, bob: TestApp, carol: TestApp
        let aliceSeed: Ed25519SigningKey
        let aliceID: String, bobID: String, carolID: String

        init() async throws {
            alice = try TestApp(name: "alice", clock: clock)
            bob = try TestApp(name: "bob", clock: clock)
            carol = try TestApp(name: "carol", clock: clock)
            aliceSeed = try Ed25519SigningKey.generate()
            aliceID = try await alice.app.wallet.importSeed(aliceSeed.seed, name: "Alice", server: "https://relay.test")
            bobID = try await bob.app.wallet.createIdentity(name: "Bob", server: "https://relay.test")
            carolID = try await carol.app.wallet.createIdentity(name: "Carol", server: "https://relay.test")
            for (a, b) in [(alice, bob), (alice, carol)] {
                _ = try await a.app.friends.add(link: try b.app.wallet.friendLink())
                _ = try await b.app.friends.add(link: try a.app.wallet.friendLink())
            }
        }

        /// The mailbox answer holding these envelope POSTs.
        static func packets(_ requests: [PreparedRequest]) throws -> [UInt8] {
            JSONValue.object(["packets": .array(try requests.map { try JSONValue.parse($0.body) })]).serialized()
        }

        /// The envelope of `rotation` (a statement) sealed from `signer` to `recipient`, as a POST body.
        func envelope(_ payload: MessagePayload, from signer: Ed25519SigningKey, to recipient: String) throws -> PreparedRequest {
            let now = clock.milliseconds / 1000
            let envelope = try Envelope.seal(
                payload.json, id: payload.id, from: signer, to: try Ed25519PublicKey(base64URL: recipient), createdAt: now, expiresAt: now + 3600)
            return PreparedRequest(url: "https://relay.test/v1/relay/messages", method: "POST", body: envelope.json.serialized())
        }

        func rotationPayload(_ statement: RotationStatement) throws -> MessagePayload {
            MessagePayload(kind: "rotation", id: try Envelope.newUUID(), text: "", sentAt: clock.milliseconds, rotation: statement.json)
        }
    }

    @Test func aRotationMovesTheFriendInPlaceAndTheOldKeyIsRefusedAfterwards() async throws {
        let c = try await Circle()
        _ = try await c.bob.app.friends.setTrust(id: c.aliceID, .verified)
        let end = c.clock.milliseconds + 86_400_000
        _ = try await c.bob.app.friends.share(id: c.aliceID, until: end)
        _ = try await c.bob.app.friends.update(id: c.aliceID, name: "Alice (work)")
        try await c.alice.share(try fix(47.3769, 8.5417, at: c.clock.milliseconds), via: c.relay)
        #expect(try await c.bob.fetch(via: c.relay).updated.count == 1)
        let before = try await c.alice.app.messages.send("before the move", to: c.bobID)

        c.clock.advance(byMilliseconds: 1_000)
        let rotation = try await c.alice.app.rotateIdentity(server: "https://relay2.test")
        #expect(rotation.id != c.aliceID)
        #expect(try c.alice.app.wallet.id() == rotation.id)
        #expect(rotation.statements.count == 2 && rotation.statement.server == "https://relay2.test")
        #expect(rotation.deletePrevious.method == "DELETE" && rotation.deletePrevious.url == "https://relay.test/api/location")
        let upload = try #require(rotation.upload)
        #expect(upload.request.url == "https://relay2.test/api/location" && upload.recipientCount == 3)
        #expect(try c.alice.app.wallet.previousIdentities() == [c.aliceID])

        // Bob's mailbox holds the statement and, after it, a message Alice sealed with her old key.
        let toBob = try #require(rotation.statements.first { $0.item.reference == c.bobID })
        let outcome = try await c.bob.app.messages.processFetchResponse(try Circle.packets([toBob.item.request, before.request]))
        #expect(outcome.rotated == [c.aliceID])
        #expect(outcome.rejected.map(\.code) == [WireError.retiredKey(id: "").code])  // the old key's message
        let moved = try #require(try c.bob.app.friends.friend(id: rotation.id))
        #expect(try c.bob.app.friends.friend(id: c.aliceID) == nil)
        #expect(moved.name == "Alice (work)" && moved.trust == .verified && moved.shareUntil == end && moved.server == "https://relay2.test")
        #expect(moved.markerColor == MarkerColor(id: rotation.id).hex)
        #expect(Set(try c.bob.app.friends.fetchTargets().map(\.id)) == [rotation.id])
        var updates: [MessagesManagerReconcileMessage] = []
        while let update = try? c.bob.app.messages.updates.tryRecv() { updates.append(update) }
        #expect(updates.contains(.friendRotated(from: c.aliceID, to: rotation.id, name: "Alice (work)")))

        // The same statement again (a replay in a new envelope) changes nothing.
        let replay = try c.envelope(try c.rotationPayload(rotation.statement), from: c.aliceSeed, to: c.bobID)
        let again = try await c.bob.app.messages.processFetchResponse(try Circle.packets([replay]))
        #expect(again.rejected.isEmpty && again.rotated == [c.aliceID])
        #expect(try c.bob.app.friends.friend(id: rotation.id)?.trust == .verified)

        // A blob the old key signs after the rotation (a live notice, or an answer that still
        // names it) is not Bob's friend's any more: ignored, nothing cached changes.
        let oldBlob = try LocationBlob.seal(
            try fix(1, 1, at: c.clock.milliseconds).wire, for: [c.aliceSeed.publicKey, try Ed25519PublicKey(base64URL: c.bobID)])
        let stamped = try RelayAPI.prepareUpload(blob: oldBlob, timestamp: c.clock.milliseconds / 1000 + 5, signer: c.aliceSeed, server: "https://relay.test")
        let oldUpload = try #require(try JSONValue.parse(stamped.body).objectValue)
        let entry = JSONValue.object([
            "blob": oldUpload["blob"] ?? .null, "updated": .integer(c.clock.milliseconds / 1000), "timestamp": oldUpload["timestamp"] ?? .null,
            "signature": oldUpload["signature"] ?? .null
        ])
        let stale = try await c.bob.app.location.processFetchResponse(JSONValue.object([c.aliceID: entry]).serialized())
        #expect(stale.updated.isEmpty && stale.ignored == [c.aliceID])
        #expect(try c.bob.app.location.friendLocations().first { $0.id == rotation.id }?.location?.latitude == 47.3769)

        // Alice's new identity uploads; Bob opens it and verifies the uploader.
        let (status, _) = c.relay.handle(upload.request)
        #expect(status == 204)
        let seen = try await c.bob.fetch(via: c.relay)
        #expect(seen.rejected.isEmpty && seen.unchanged == [rotation.id])  // the same fix, now from the new key
        let shown = try #require(try c.bob.app.location.friendLocations().first { $0.id == rotation.id })
        #expect(shown.location?.latitude == 47.3769 && shown.authenticity == .verified)
        // Messages both ways on the new key.
        let sent = try await c.bob.app.messages.send("welcome back", to: rotation.id)
        let received = try await c.alice.app.messages.processFetchResponse(try Circle.packets([sent.request]))
        #expect(received.received.map(\.text) == ["welcome back"])
    }

    @Test func bothSignaturesTheRightOrderAndAFriendAsSenderAreRequired() async throws {
        let c = try await Circle()
        let new = try Ed25519SigningKey.generate()
        let other = try Ed25519SigningKey.generate()
        let good = try RotationStatement.make(old: c.aliceSeed, new: new, server: "https://relay.test", at: c.clock.milliseconds, revokes: false)
        var badNew = good
        badNew.newSignature = try RotationStatement.make(old: c.aliceSeed, new: other, server: good.server, at: good.at, revokes: false).newSignature
        var badOld = good
        badOld.oldSignature = other.signature(
            for: try RotationStatement.signedBytes(old: good.old, new: good.new, server: good.server, at: good.at, revokes: false))
        var widened = good
        widened.server = "https://elsewhere.test"  // not what either key signed
        let swapped = try RotationStatement.make(old: new, new: c.aliceSeed, server: "https://relay.test", at: c.clock.milliseconds, revokes: false)
        let carolsKey = try RotationStatement.make(
            old: try Ed25519SigningKey.generate(), new: other, server: "https://relay.test", at: c.clock.milliseconds, revokes: false)
        for (statement, why) in [
            (badNew, "new signature"), (badOld, "old signature"), (widened, "server changed"), (swapped, "wrong order"),
            (carolsKey, "someone else's key")
        ] {
            let request = try c.envelope(try c.rotationPayload(statement), from: c.aliceSeed, to: c.bobID)
            let outcome = try await c.bob.app.messages.processFetchResponse(try Circle.packets([request]))
            #expect(outcome.rejected.map(\.code) == [WireError.invalidRotation("").code], "\(why)")
            #expect(try c.bob.app.friends.friend(id: c.aliceID) != nil, "\(why)")
        }
        // From a stranger, about herself: refused (not a friend), nothing changes.
        let mallory = try Ed25519SigningKey.generate()
        let hers = try RotationStatement.make(old: mallory, new: other, server: "https://relay.test", at: c.clock.milliseconds, revokes: false)
        let fromStranger = try await c.bob.app.messages.processFetchResponse(
            try Circle.packets([try c.envelope(try c.rotationPayload(hers), from: mallory, to: c.bobID)]))
        #expect(fromStranger.rejected.map(\.code) == [FriendsManagerError.notFound(id: "").code])
        #expect(try c.bob.app.friends.list().map(\.id) == [c.aliceID])
    }

    @Test(arguments: [false, true]) func twoDifferentRotationsOfOneKeyEndInAConflictInEitherOrder(thiefFirst: Bool) async throws {
        let c = try await Circle()
        let thief = try Ed25519SigningKey.generate()
        let owner = try Ed25519SigningKey.generate()
        let stolen = try RotationStatement.make(old: c.aliceSeed, new: thief, server: "https://evil.test", at: c.clock.milliseconds, revokes: false)
        let revoked = try RotationStatement.make(old: c.aliceSeed, new: owner, server: "https://relay.test", at: c.clock.milliseconds, revokes: true)
        let order = thiefFirst ? [stolen, revoked] : [revoked, stolen]
        for statement in order {
            let request = try c.envelope(try c.rotationPayload(statement), from: c.aliceSeed, to: c.bobID)
            let outcome = try await c.bob.app.messages.processFetchResponse(try Circle.packets([request]))
            #expect(outcome.rejected.isEmpty)
        }
        let first = order[0].new.base64URL
        let conflicted = try #require(try c.bob.app.friends.friend(id: first))
        #expect(conflicted.trust == .conflict && conflicted.conflictKeys == [first, order[1].new.base64URL])
        #expect(conflicted.name == "Alice")
        #expect(try c.bob.app.friends.shareRecipients().isEmpty)  // sharing with her paused
        var updates: [MessagesManagerReconcileMessage] = []
        while let update = try? c.bob.app.messages.updates.tryRecv() { updates.append(update) }
        #expect(updates.contains(.friendConflict(id: first, name: "Alice")))
        await #expect(throws: FriendsManagerError.inConflict(id: first)) { try await c.bob.app.friends.setTrust(id: first, .verified) }

        // Bob compares safety numbers with Alice in person and keeps her real key.
        let kept = try await c.bob.app.friends.resolveConflict(id: first, keep: owner.publicKey.base64URL)
        #expect(kept.id == owner.publicKey.base64URL && kept.trust == .verified && kept.conflictKeys.isEmpty)
        #expect(try c.bob.app.friends.list().map(\.id) == [owner.publicKey.base64URL])
        #expect(try c.bob.app.friends.shareRecipients().count == 1)
        // The thief's key is refused from now on.
        let fromThief = try c.envelope(
            MessagePayload(kind: "text", id: try Envelope.newUUID(), text: "hi", sentAt: c.clock.milliseconds), from: thief, to: c.bobID)
        #expect(
            try await c.bob.app.messages.processFetchResponse(try Circle.packets([fromThief])).rejected.map(\.code) == [
                WireError.retiredKey(id: "").code
            ])
        await #expect(throws: FriendsManagerError.notInConflict(id: owner.publicKey.base64URL)) {
            try await c.bob.app.friends.resolveConflict(id: owner.publicKey.base64URL, keep: thief.publicKey.base64URL)
        }
    }

    @Test func theOldSeedIsWipedOnceEveryStatementWasDelivered() async throws {
        let c = try await Circle()
        let rotation = try await c.alice.app.rotateIdentity()
        #expect(rotation.statements.count == 2)
        _ = try c.alice.app.wallet.preparePreviousDelete(server: "https://relay.test")  // still there
        try await c.alice.app.outbox.markDelivered(id: rotation.statements[0].id)
        _ = try c.alice.app.wallet.preparePreviousDelete(server: "https://relay.test")
        try await c.alice.app.outbox.markDelivered(id: rotation.statements[1].id)
        #expect(throws: WalletManagerError.noIdentity) { try c.alice.app.wallet.preparePreviousDelete(server: "https://relay.test") }
        #expect(try await c.alice.app.messages.queueRotationStatements().isEmpty)
    }

    /// Issue 37, defect 5: rotating twice before every friend had the first statement removed
    /// it from the outbox and overwrote the old seed, stranding them at the first key. Now each
    /// friend follows the chain, one statement at a time, and every seed goes once it is owed to
    /// nobody.
    @Test func rotatingTwiceBeforeEveryoneHadTheFirstStatementStrandsNobody() async throws {
        let c = try await Circle()
        let first = try await c.alice.app.rotateIdentity()
        let toBob = try #require(first.statements.first { $0.item.reference == c.bobID })
        #expect(try await c.bob.app.messages.processFetchResponse(try Circle.packets([toBob.item.request])).rotated == [c.aliceID])
        try await c.alice.app.outbox.markDelivered(id: toBob.id)  // Carol's has not gone out

        c.clock.advance(byMilliseconds: 1_000)
        let second = try await c.alice.app.rotateIdentity()
        #expect(second.id != first.id)
        let keychain = c.alice.app.context.keychain
        #expect(try keychain.load(name: RotationLink.keychainName(for: c.aliceID)) != nil)  // the first key, still owed to Carol
        // Bob gets the second statement; Carol the first (from the key she knows), not the second.
        let bobsSecond = try #require(second.statements.first { $0.item.reference == c.bobID })
        let carolsFirst = try #require(second.statements.first { $0.item.reference == c.carolID })
        #expect(try await c.bob.app.messages.processFetchResponse(try Circle.packets([bobsSecond.item.request])).rotated == [first.id])
        #expect(try await c.carol.app.messages.processFetchResponse(try Circle.packets([carolsFirst.item.request])).rotated == [c.aliceID])
        #expect(try await c.alice.app.outboxReport(id: bobsSecond.id, status: 202).decision == .delivered)
        #expect(try await c.alice.app.outboxReport(id: carolsFirst.id, status: 202).decision == .delivered)
        #expect(try keychain.load(name: RotationLink.keychainName(for: c.aliceID)) == nil)  // owed to nobody now

        // Then the next link for Carol: the delivery report queued it, due at once.
        let next = try await c.alice.app.outbox.due()
        #expect(next.map(\.item.reference) == [c.carolID])
        #expect(try await c.carol.app.messages.processFetchResponse(try Circle.packets([next[0].item.request])).rotated == [first.id])
        try await c.alice.app.outbox.markDelivered(id: next[0].id)
        #expect(try await c.alice.app.messages.queueRotationStatements().isEmpty)
        #expect(throws: WalletManagerError.noIdentity) { try c.alice.app.wallet.preparePreviousDelete(server: "https://relay.test") }
        // Both friends know Alice by her newest key.
        #expect(try c.bob.app.friends.friend(id: second.id) != nil && c.carol.app.friends.friend(id: second.id) != nil)
        #expect(try c.bob.app.friends.friend(id: first.id) == nil && c.carol.app.friends.friend(id: c.aliceID) == nil)
    }

    @Test func aFriendRemovedBeforeTheStatementReachedThemNoLongerHoldsTheOldSeed() async throws {
        let c = try await Circle()
        let rotation = try await c.alice.app.rotateIdentity()
        try await c.alice.app.friends.remove(id: c.carolID)
        try await c.alice.app.outbox.markDelivered(id: try #require(rotation.statements.first { $0.item.reference == c.bobID }).id)
        _ = try c.alice.app.wallet.preparePreviousDelete(server: "https://relay.test")  // Carol still listed as waiting
        #expect(try await c.alice.app.messages.queueRotationStatements().isEmpty)  // she is gone: nobody waits
        #expect(throws: WalletManagerError.noIdentity) { try c.alice.app.wallet.preparePreviousDelete(server: "https://relay.test") }
    }

    @Test func backupsMadeBeforeAndAfterARotationBothRestoreAndTheLaterWins() async throws {
        let c = try await Circle()
        let before = try await c.alice.app.wallet.exportBackup(passphrase: "words")
        let rotation = try await c.alice.app.rotateIdentity()
        let after = try await c.alice.app.wallet.exportBackup(passphrase: "words")

        let device = try TestApp(name: "alice-new-phone", clock: c.clock)
        #expect(try await device.app.wallet.importBackup(before, passphrase: "words") == c.aliceID)  // the old identity
        #expect(try await device.app.wallet.importBackup(after, passphrase: "words") == rotation.id)  // the later one wins
        #expect(try device.app.wallet.previousIdentities() == [c.aliceID])
        await #expect(throws: WalletManagerError.identityExists(id: rotation.id)) {
            try await device.app.wallet.importBackup(before, passphrase: "words")
        }
        #expect(try device.app.friends.list().count == 2)
    }
}
