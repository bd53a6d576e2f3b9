import Foundation
import Testing

@testable import CoordsCore

/// MessagesManager without a relay: the envelopes a relay would return are handed over directly.
@Suite struct MessagesManagerTests {
    /// Alice and Bob, friends both ways, on one clock.
    struct Pair {
        let clock = ManualClock(milliseconds: 1_800_000_000_000)
        let alice: TestApp, bob: TestApp
        let aliceID: String, bobID: String

        init() async throws {
            alice = try TestApp(name: "alice", clock: clock)
            bob = try TestApp(name: "bob", clock: clock)
            aliceID = try await alice.app.wallet.createIdentity(name: "Alice", server: "https://relay.test")
            bobID = try await bob.app.wallet.createIdentity(name: "Bob", server: "https://relay.test")
            _ = try await alice.app.friends.add(id: bobID, server: "https://relay.test", name: "Bob")
            _ = try await bob.app.friends.add(id: aliceID, server: "https://relay.test", name: "Alice")
        }

        /// The mailbox response a relay would give for these sent messages.
        static func packets(_ requests: [PreparedRequest]) throws -> [UInt8] {
            JSONValue.object(["packets": .array(try requests.map { try JSONValue.parse($0.body) })]).serialized()
        }
    }

    @Test func sendStoresQueuesAndDeliversOnce() async throws {
        let p = try await Pair()
        let sent = try await p.alice.app.messages.send("on my way", to: p.bobID)
        #expect(sent.request.url == "https://relay.test/v1/relay/messages" && sent.request.method == "POST")
        #expect(try p.alice.app.outbox.pending().map(\.item.reference) == [sent.message.id])
        #expect(try p.alice.app.messages.history(with: p.bobID).map(\.status) == [.queued])
        try await p.alice.app.messages.markSent(id: sent.message.id)
        #expect(try p.alice.app.messages.history(with: p.bobID).map(\.status) == [.sent])
        #expect(try p.alice.app.outbox.pending().isEmpty)

        // Bob processes the same envelope twice (his ack had not reached the relay): stored once.
        let body = try Pair.packets([sent.request])
        let first = try await p.bob.app.messages.processFetchResponse(body)
        #expect(first.received.map(\.text) == ["on my way"])
        #expect(first.acks.count == 1 && first.acks[0].url.hasSuffix("/v1/relay/messages/\(sent.message.id)/ack"))
        #expect(first.acks[0].header("X-Coords-Signature") != nil)
        #expect(first.receipts.count == 1 && first.receipts[0].item.kind == .receipt)
        let again = try await p.bob.app.messages.processFetchResponse(body)
        #expect(again.received.isEmpty && again.duplicates == [sent.message.id] && again.acks.count == 1)
        #expect(try p.bob.app.messages.history(with: p.aliceID).count == 1)
        // Each signed request differs, even within one second (the relay accepts each signature once).
        #expect(try p.bob.app.messages.prepareFetch().header("X-Coords-Signature") != (try p.bob.app.messages.prepareFetch().header("X-Coords-Signature")))

        // The receipt marks Alice's message delivered; the update says so.
        let receipt = try await p.alice.app.messages.processFetchResponse(try Pair.packets([first.receipts[0].item.request]))
        #expect(receipt.delivered == [sent.message.id] && receipt.received.isEmpty)
        #expect(try p.alice.app.messages.history(with: p.bobID).map(\.status) == [.delivered])
        var updates: [MessagesManagerReconcileMessage] = []
        while let update = try? p.alice.app.messages.updates.tryRecv() { updates.append(update) }
        #expect(updates.contains(.messageDelivered(id: sent.message.id)))
        #expect(updates.contains(.messageSent(id: sent.message.id)))
        #expect(try p.alice.app.messages.conversations().map(\.name) == ["Bob"])
    }

    /// One message id (§7.2): an implementation that gives the envelope its own id (its mailbox
    /// delivery) has its message stored, listed and confirmed under the payload's id — the one it
    /// keeps — and the same message in a second envelope is a duplicate.
    @Test func aMessageIsKnownByItsPayloadIDWhateverTheEnvelopeID() async throws {
        let p = try await Pair()
        let alice = try p.alice.app.context.identity.get()
        let messageID = try Envelope.newUUID()
        let payload = MessagePayload(kind: "text", id: messageID, text: "from elsewhere", sentAt: p.clock.milliseconds)
        let now = p.clock.milliseconds / 1000
        func envelope() throws -> JSONValue {
            try Envelope.seal(
                payload.json, id: try Envelope.newUUID(), from: alice.signing, to: try Ed25519PublicKey(base64URL: p.bobID), createdAt: now,
                expiresAt: now + 3600
            ).json
        }
        let (first, second) = (try envelope(), try envelope())
        let outcome = try await p.bob.app.messages.processFetchResponse(JSONValue.object(["packets": .array([first, second])]).serialized())
        #expect(outcome.received.map(\.id) == [messageID])
        #expect(outcome.duplicates == [second.objectValue?["id"]?.stringValue ?? ""])
        #expect(outcome.acks.count == 2)
        #expect(try p.bob.app.messages.history(with: p.aliceID).map(\.id) == [messageID])
        let receipt = try JSONValue.parse(try #require(outcome.receipts.first).item.request.body)
        let opened = try MessagePayload(
            json: try Envelope(json: receipt).open(
                as: try p.alice.app.context.identity.get().signing, from: try Ed25519PublicKey(base64URL: p.bobID), now: now))
        #expect(opened.kind == "receipt" && opened.ack == messageID)
    }

    @Test func blockedStrangersForgedAndUnknownKindsAreHandled() async throws {
        let p = try await Pair()
        let carol = try TestApp(name: "carol", clock: p.clock)
        _ = try await carol.app.wallet.createIdentity(name: "Carol", server: "https://relay.test")
        _ = try await carol.app.friends.add(id: p.bobID, server: "https://relay.test", name: "Bob")
        let fromCarol = try await carol.app.messages.send("hi, stranger", to: p.bobID)
        let fromAlice = try await p.alice.app.messages.send("hello", to: p.bobID)
        // Alice's header with Carol's payload: the signature no longer matches.
        var forged = try #require(try JSONValue.parse(fromAlice.request.body).objectValue)
        forged["sealedPayloadBase64"] = try JSONValue.parse(fromCarol.request.body).objectValue?["sealedPayloadBase64"]
        let body = JSONValue.object([
            "packets": .array([
                try JSONValue.parse(fromCarol.request.body), .object(forged), .string("junk"),
                try JSONValue.parse(fromAlice.request.body)
            ])
        ]).serialized()
        let outcome = try await p.bob.app.messages.processFetchResponse(body)
        #expect(outcome.received.map(\.text) == ["hello"])
        #expect(outcome.rejected.map(\.code) == [610, WireError.envelopeSignatureInvalid.code, WireError.invalidEnvelope("").code])
        // Every envelope id is acknowledged once (refused ones can never become valid); the forged
        // copy carries Alice's id, so three packets with an id need two acks.
        #expect(outcome.acks.count == 2)

        // Blocked: dropped and reported, nothing sent to them either.
        _ = try await p.bob.app.friends.setTrust(id: p.aliceID, .blocked)
        let next = try await p.alice.app.messages.send("still there?", to: p.bobID)
        let blocked = try await p.bob.app.messages.processFetchResponse(try Pair.packets([next.request]))
        #expect(blocked.received.isEmpty && blocked.rejected.map(\.code) == [630])
        await #expect(throws: MessagesManagerError.friendBlocked(id: p.aliceID)) { try await p.bob.app.messages.send("no", to: p.aliceID) }
        await #expect(throws: MessagesManagerError.self) { try await p.bob.app.messages.send(String(repeating: "x", count: 70_000), to: p.aliceID) }
        await #expect(throws: (any Error).self) { try await p.bob.app.messages.processFetchResponse(Array("[]".utf8)) }
    }

    @Test func unknownKindsAreKeptAndDisappearingMessagesAreDeleted() async throws {
        let p = try await Pair()
        try await p.bob.app.messages.setDisappearing(friendID: p.aliceID, after: 60)
        let aliceSeed = try #require(try p.alice.app.context.keychain.load(name: IdentityHolder.keychainName))
        let alice = try Ed25519SigningKey(seed: aliceSeed)
        let now = p.clock.milliseconds / 1000
        let poll = try Envelope.seal(
            MessagePayload(kind: "poll", id: "p1", text: "pizza?", sentAt: 1).json, id: try Envelope.newUUID(),
            from: alice, to: try Ed25519PublicKey(base64URL: p.bobID), createdAt: now, expiresAt: now + 600)
        let text = try await p.alice.app.messages.send("gone soon", to: p.bobID)
        let body = JSONValue.object(["packets": .array([poll.json, try JSONValue.parse(text.request.body)])]).serialized()
        let outcome = try await p.bob.app.messages.processFetchResponse(body)
        #expect(outcome.received.map(\.kind) == ["poll", "text"])
        #expect(outcome.receipts.count == 1, "receipts only for texts")
        #expect(outcome.received.allSatisfy { $0.disappearsAt == p.clock.milliseconds + 60_000 })
        #expect(try await p.bob.app.messages.sweepExpired().isEmpty)
        p.clock.advance(byMilliseconds: 60_000)
        let expired = try await p.bob.app.messages.sweepExpired()
        #expect(Set(expired) == Set(outcome.received.map(\.id)))
        #expect(try p.bob.app.messages.history(with: p.aliceID).isEmpty)
        #expect(try p.bob.app.messages.conversations().first?.disappearAfterSeconds == 60)
        var updates: [MessagesManagerReconcileMessage] = []
        while let update = try? p.bob.app.messages.updates.tryRecv() { updates.append(update) }
        #expect(updates.contains(.messagesExpired(ids: expired)))
        // Messages survive a restart (and the schema migrated to version 2).
        try await p.alice.app.messages.markSent(id: text.message.id)
        try p.alice.reopen()
        #expect(try p.alice.app.messages.history(with: p.bobID).map(\.status) == [.sent])
    }

    @Test func pushRegistrationIsASignedPutOfTheEndpoint() async throws {
        let p = try await Pair()
        let request = try p.bob.app.messages.preparePushRegistration(endpoint: "https://push.example.net/up/AbC", ttlSeconds: 86_400)
        #expect(request.method == "PUT" && request.url == "https://relay.test/v1/relay/push")
        #expect(request.header("Content-Type") == "application/json")
        let body = try JSONValue.parse(request.body).objectValue
        #expect(body?["endpoint"]?.stringValue == "https://push.example.net/up/AbC" && body?["ttl"]?.uint64Value == 86_400)
        // The §7.3 signature by Bob's key over PUT, the path and the timestamp.
        let keyText = try #require(request.header("X-Coords-Key"))
        let key = try Ed25519PublicKey(rawRepresentation: try Base64.decode(keyText))
        #expect(key.base64URL == p.bobID)
        let timestampText = try #require(request.header("X-Coords-Timestamp"))
        let timestamp = try #require(UInt64(timestampText))
        let signatureText = try #require(request.header("X-Coords-Signature"))
        let signature = try Base64.decode(signatureText)
        #expect(key.isValidSignature(signature, for: MailboxAuth.signedBytes(method: "PUT", path: "/v1/relay/push", timestamp: timestamp)))
        #expect(try JSONValue.parse(p.bob.app.messages.preparePushRegistration(endpoint: "http://127.0.0.1:8099/up").body).objectValue?["ttl"] == nil)

        let unregister = try p.bob.app.messages.preparePushUnregistration()
        #expect(unregister.method == "DELETE" && unregister.url == "https://relay.test/v1/relay/push" && unregister.body.isEmpty)
        #expect(unregister.header("X-Coords-Signature") != request.header("X-Coords-Signature"))

        for bad in ["", "http://push.example.net/up", "ftp://x", "https://", "https://a b", "http://127.0.0.1.evil.net/", String(repeating: "h", count: 1025)] {
            let error = #expect(throws: MessagesManagerError.self, "\(bad)") { try p.bob.app.messages.preparePushRegistration(endpoint: bad) }
            #expect(error?.code == 633)
        }
    }

    // MARK: What a hostile mailbox answer can make the core sign (issue 37)

    @Test func aRepeatedIDIsAcknowledgedOnceAndAnOverlongAnswerIsRefusedUnsigned() async throws {
        let p = try await Pair()
        let id = "0f7c1b52-8a3e-4d6f-9b0a-1c2d3e4f5a6b"
        let repeated = JSONValue.object(["packets": .array(Array(repeating: .object(["id": .string(id)]), count: 100))]).serialized()
        let outcome = try await p.bob.app.messages.processFetchResponse(repeated)
        #expect(outcome.acks.map(\.url) == ["https://relay.test/v1/relay/messages/\(id)/ack"])
        #expect(outcome.rejected.count == 100)

        let before = try p.bob.app.context.database.read { tx in try tx.open(Tables.settings).get(SettingKey.mailboxLastSignedTimestamp) }
        let flood = JSONValue.object(["packets": .array(Array(repeating: .object(["id": .string(id)]), count: 20_000))]).serialized()
        let error = await #expect(throws: MessagesManagerError.self) { try await p.bob.app.messages.processFetchResponse(flood) }
        #expect(error?.description.contains("more than the 100 asked for") == true)
        let after = try p.bob.app.context.database.read { tx in try tx.open(Tables.settings).get(SettingKey.mailboxLastSignedTimestamp) }
        #expect(after == before)  // nothing signed
    }

    @Test func signedTimestampsRunAtMostTheLeadAheadOfTheClock() async throws {
        #expect(SignedTime.next(after: nil, now: 100) == 100)
        #expect(SignedTime.next(after: 100, now: 100) == 101)
        #expect(SignedTime.next(after: 50, now: 100) == 100)
        #expect(SignedTime.next(after: 100 + 500, now: 100) == 100 + MessagesManager.maximumSignatureLead)
        #expect(SignedTime.next(after: .max, now: 100) == 100 + MessagesManager.maximumSignatureLead)
        #expect(SignedTime.next(after: .max, now: .max) == .max)

        // 300 acks in one second (three answers of 100): the counter stops 120 s ahead.
        let p = try await Pair()
        let now = p.clock.milliseconds / 1000
        var signed: [UInt64] = []
        for _ in 0..<3 {
            let ids = (0..<100).map { _ in JSONValue.object(["id": .string((try? Envelope.newUUID(using: SystemRandomSource())) ?? "")]) }
            let outcome = try await p.bob.app.messages.processFetchResponse(JSONValue.object(["packets": .array(ids)]).serialized())
            signed += outcome.acks.compactMap { $0.header("X-Coords-Timestamp").flatMap(UInt64.init) }
        }
        #expect(signed.count == 300)
        #expect(signed.max() == now + MessagesManager.maximumSignatureLead)
        #expect(Set(signed.prefix(121)).count == 121)  // distinct while under the lead
        // A counter left far ahead (an old burst, a clock set back) is pulled back at once.
        try p.bob.app.context.database.write { tx in try tx.open(Tables.settings).put(SettingKey.mailboxLastSignedTimestamp, now + 20_000) }
        let fetch = try p.bob.app.messages.prepareFetch()
        #expect(fetch.header("X-Coords-Timestamp") == String(now + MessagesManager.maximumSignatureLead))
    }
}

/// The push registration's silent renewal (PROTOCOL.md §8.7): the core keeps the endpoint, the
/// app's outbox wake includes the renewal, and `outboxDue` queues the fresh registration on time.
@Suite struct PushRenewalTests {
    @Test func theOutboxRenewsThePushRegistrationOnTime() async throws {
        let p = try await MessagesManagerTests.Pair()
        let app = p.alice.app
        #expect(try app.messages.pushRenewalAt() == nil && app.outboxNextWake() == nil)
        let start = p.clock.milliseconds
        _ = try app.messages.preparePushRegistration(endpoint: "https://push.example/up/abc", ttlSeconds: 7_200)
        #expect(try app.messages.pushRenewalAt() == start + 3_600_000)  // half of its 2 h
        #expect(try app.outboxNextWake() == start + 3_600_000)
        #expect(try await app.outboxDue().isEmpty)

        p.clock.advance(byMilliseconds: 3_600_000)
        let due = try await app.outboxDue()
        let renewal = try #require(due.first)
        #expect(due.count == 1 && renewal.item.request.method == "PUT" && renewal.item.request.url == "https://relay.test/v1/relay/push")
        let body = try #require(try JSONValue.parse(renewal.item.request.body).objectValue)
        #expect(body["endpoint"]?.stringValue == "https://push.example/up/abc" && body["ttl"]?.uint64Value == 7_200)
        #expect(try app.messages.pushRenewalAt() == start + 7_200_000)  // the next one is scheduled
        #expect(try await app.outboxReport(id: renewal.id, status: 200, body: Array(#"{"endpoint":"x","expiresAt":1}"#.utf8)).decision == .delivered)
        #expect(try app.outboxNextWake() == start + 7_200_000)

        // A relay without push (404) ends the renewals.
        p.clock.advance(byMilliseconds: 3_600_000)
        let again = try #require(try await app.outboxDue().first)
        _ = try await app.outboxReport(id: again.id, status: 404, body: Array(#"{"error":"not_found"}"#.utf8))
        #expect(try app.messages.pushRenewalAt() == nil && app.outboxNextWake() == nil)

        // Without a lifetime: renewed daily. Unregistering forgets it.
        _ = try app.messages.preparePushRegistration(endpoint: "https://push.example/up/def")
        #expect(try app.messages.pushRenewalAt() == p.clock.milliseconds + 86_400_000)
        _ = try app.messages.preparePushUnregistration()
        #expect(try app.messages.pushRenewalAt() == nil && app.outboxNextWake() == nil)
    }
}
