import CoordsCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import CoordsRelay

/// The §7.3 mailbox: every status code, recipient signatures, caps, tombstones and expiry, on the
/// in-memory, LMDB and PostgreSQL stores, in process and over a socket.
@Suite struct MailboxTests {
    typealias StoreKind = CoordsRelayTests.StoreKind
    static let cases: [(TestingSetup, StoreKind)] = [
        (.router, .memory), (.router, .lmdb), (.live, .lmdb), (.router, .postgres),
        (.live, .postgres)
    ]

    /// ``RelayHarness/make(_:_:)`` without the message rate limit.
    static func relay(_ kind: StoreKind, _ configure: (inout RelayConfiguration) -> Void = { _ in }) async throws -> RelayHarness {
        try await RelayHarness.make(kind) {
            $0.messageRate = 0
            configure(&$0)
        }
    }

    static let alice = try! Ed25519SigningKey.generate()  // test fixtures: generation cannot fail once libsodium is up
    static let bob = try! Ed25519SigningKey.generate()
    static let carol = try! Ed25519SigningKey.generate()

    static func envelope(
        _ text: String = "on my way", from sender: Ed25519SigningKey = alice, to recipient: Ed25519SigningKey = bob,
        now: UInt64, ttl: UInt64 = 3600, id: String? = nil, senderKey: Bool = true
    ) throws -> Envelope {
        let payload = MessagePayload(kind: "text", id: try Envelope.newUUID(), text: text, sentAt: now * 1000)
        return try Envelope.seal(
            payload.json, id: id ?? Envelope.newUUID(), from: sender, to: recipient.publicKey,
            createdAt: now, expiresAt: now + ttl, includeSenderKey: senderKey)
    }

    static func body(_ envelope: Envelope) -> ByteBuffer { ByteBuffer(bytes: envelope.json.serialized()) }

    static func signedHeaders(_ signer: Ed25519SigningKey, _ method: String, _ path: String, _ timestamp: UInt64) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in MailboxAuth.headers(signer: signer, method: method, path: path, timestamp: timestamp) {
            if let field = HTTPField.Name(name) { fields[field] = value }
        }
        return fields
    }

    static func listPath(_ recipient: Ed25519SigningKey, limit: Int? = nil) -> String {
        "/v1/relay/messages?recipientID=\(PeerID(recipient.publicKey).hex)" + (limit.map { "&limit=\($0)" } ?? "")
    }

    @Test(arguments: MailboxTests.cases)
    func postListAckAndReplay(_ setup: TestingSetup, _ kind: StoreKind) async throws {
        let relay = try await Self.relay(kind)
        try await relay.test(setup) { client in
            let first = try Self.envelope("one", now: relay.now)
            let second = try Self.envelope("two", now: relay.now)
            let posted = try await client.post(first)
            #expect(posted.status == .accepted)
            #expect(posted.json == .object(["accepted": .bool(true), "packetID": .string(first.id)]))
            #expect(try await client.post(second).status == .accepted)
            // The same envelope again: 409.
            let replay = try await client.post(first)
            #expect(replay.status == .conflict)
            #expect(replay.errorCode == "duplicate")

            // Bob lists his mailbox, oldest first, envelopes exactly as posted.
            let path = Self.listPath(Self.bob)
            let list = try await client.execute(uri: path, method: .get, headers: Self.signedHeaders(Self.bob, "GET", path, relay.now))
            #expect(list.status == .ok)
            let packets = try #require(list.json?.objectValue?["packets"]?.arrayValue)
            #expect(try packets.map { try Envelope(json: $0) } == [first, second])
            let opened = try Envelope(json: packets[0]).open(as: Self.bob, from: Self.alice.publicKey, now: relay.now)
            #expect(try MessagePayload(json: opened).text == "one")
            // The same signed request again is refused (each signature is accepted once).
            let again = try await client.execute(uri: path, method: .get, headers: Self.signedHeaders(Self.bob, "GET", path, relay.now))
            #expect(again.status == .unauthorized)
            #expect(again.errorCode == "replayed_signature")
            // limit=1 returns the oldest.
            relay.clock.advance(byMilliseconds: 1000)
            let limited = Self.listPath(Self.bob, limit: 1)
            let one = try await client.execute(uri: limited, method: .get, headers: Self.signedHeaders(Self.bob, "GET", limited, relay.now))
            #expect(one.json?.objectValue?["packets"]?.arrayValue?.count == 1)

            // Ack (POST …/ack) and the DELETE alias; uppercase ids are the same id.
            let ackPath = "/v1/relay/messages/\(first.id.uppercased())/ack"
            let ack = try await client.execute(uri: ackPath, method: .post, headers: Self.signedHeaders(Self.bob, "POST", ackPath, relay.now))
            #expect(ack.status == .ok)
            #expect(ack.json == .object(["deleted": .bool(true), "packetID": .string(first.id)]))
            let deletePath = "/v1/relay/messages/\(second.id)"
            let deleted = try await client.execute(uri: deletePath, method: .delete, headers: Self.signedHeaders(Self.bob, "DELETE", deletePath, relay.now))
            #expect(deleted.json?.objectValue?["deleted"] == .bool(true))
            relay.clock.advance(byMilliseconds: 1000)
            let empty = try await client.execute(uri: path, method: .get, headers: Self.signedHeaders(Self.bob, "GET", path, relay.now))
            #expect(empty.json?.objectValue?["packets"] == .array([]))
            // An acknowledged id can never be posted again (tombstone), even after a restart of the sweep.
            _ = try await relay.service.sweep()
            let reposted = try await client.post(first)
            #expect(reposted.status == .conflict)
            let metrics = String(decoding: await relay.service.metricsText(), as: UTF8.self)
            #expect(metrics.contains("coords_relay_messages_posted_total 2"))
            #expect(metrics.contains("coords_relay_messages_acknowledged_total 2"))
        }
    }

    @Test(arguments: MailboxTests.cases)
    func otherPeopleCannotReadOrAckAMailbox(_ setup: TestingSetup, _ kind: StoreKind) async throws {
        let relay = try await Self.relay(kind)
        try await relay.test(setup) { client in
            let envelope = try Self.envelope(now: relay.now)
            _ = try await client.post(envelope)
            let path = Self.listPath(Self.bob)
            // Carol signs a read of Bob's mailbox: 401.
            let carol = try await client.execute(uri: path, method: .get, headers: Self.signedHeaders(Self.carol, "GET", path, relay.now))
            #expect(carol.status == .unauthorized)
            #expect(carol.errorCode == "wrong_mailbox")
            // No headers, a stale timestamp, a signature over another path: 401.
            #expect(try await client.execute(uri: path, method: .get).status == .unauthorized)
            let old = try await client.execute(uri: path, method: .get, headers: Self.signedHeaders(Self.bob, "GET", path, relay.now - 301))
            #expect(old.errorCode == "timestamp_out_of_window")
            let other = try await client.execute(uri: path, method: .get, headers: Self.signedHeaders(Self.bob, "GET", path + "&limit=5", relay.now))
            #expect(other.errorCode == "invalid_signature")
            // Carol acks Bob's envelope with her own valid signature: nothing is deleted.
            let ackPath = "/v1/relay/messages/\(envelope.id)/ack"
            let ack = try await client.execute(uri: ackPath, method: .post, headers: Self.signedHeaders(Self.carol, "POST", ackPath, relay.now))
            #expect(ack.json?.objectValue?["deleted"] == .bool(false))
            let list = try await client.execute(uri: path, method: .get, headers: Self.signedHeaders(Self.bob, "GET", path, relay.now))
            #expect(list.json?.objectValue?["packets"]?.arrayValue?.count == 1)
            // Bad query: 400.
            let bad = "/v1/relay/messages?recipientID=xyz"
            #expect(try await client.execute(uri: bad, method: .get, headers: Self.signedHeaders(Self.bob, "GET", bad, relay.now)).status == .badRequest)
            let badLimit = Self.listPath(Self.bob, limit: 101)
            #expect(
                try await client.execute(uri: badLimit, method: .get, headers: Self.signedHeaders(Self.bob, "GET", badLimit, relay.now)).status == .badRequest)
            let badID = "/v1/relay/messages/not-a-uuid/ack"
            #expect(try await client.execute(uri: badID, method: .post, headers: Self.signedHeaders(Self.bob, "POST", badID, relay.now)).status == .badRequest)
        }
    }

    @Test(arguments: MailboxTests.cases)
    func postRefusalsCarryTheirStatusCodes(_ setup: TestingSetup, _ kind: StoreKind) async throws {
        let relay = try await Self.relay(kind) {
            $0.maximumMessagesPerRecipient = 2
            $0.maximumMessages = 3
            $0.maximumMessagePayloadBytes = 4096
        }
        let now = relay.now
        try await relay.test(setup) { client in
            func post(_ body: ByteBuffer) async throws -> TestResponse { try await client.post(body) }
            func post(_ envelope: Envelope) async throws -> TestResponse { try await client.post(envelope) }
            // 400: schema, sender = recipient, expiry order, already expired, created in the future, TTL too long.
            #expect(try await post(ByteBuffer(string: "{")).status == .badRequest)
            #expect(try await post(RelayHarness.body(.object(["protocolVersion": .integer(UInt64(2))]))).status == .badRequest)
            var sameParty = try #require(try Self.envelope(now: now).json.objectValue)
            sameParty["recipientID"] = sameParty["senderID"]
            #expect(try await post(RelayHarness.body(.object(sameParty))).status == .badRequest)
            #expect(try await post(try Self.envelope(now: now - 7200, ttl: 3600)).errorCode == "expired")
            #expect(try await post(try Self.envelope(now: now + 301)).errorCode == "created_in_future")
            #expect(try await post(try Self.envelope(now: now, ttl: 86_401)).errorCode == "ttl_too_long")
            var backwards = try #require(try Self.envelope(now: now).json.objectValue)
            backwards["expiresAt"] = .string(RFC3339.format(now - 1))
            #expect(try await post(RelayHarness.body(.object(backwards))).status == .badRequest)
            // 401: a forged signature, or a senderKey that is not the sender's.
            var forged = try Self.envelope(now: now)
            forged.sealedPayloadBase64 = try Self.envelope("other", now: now).sealedPayloadBase64
            #expect(try await post(forged).status == .unauthorized)
            var wrongKey = try Self.envelope(now: now)
            wrongKey.senderKey = Self.carol.publicKey.base64URL
            #expect(try await post(wrongKey).status == .unauthorized)
            // 413: payload over the limit.
            #expect(try await post(try Self.envelope(String(repeating: "x", count: 5000), now: now)).status == .contentTooLarge)
            // 429: Bob's queue holds 2; 507: the relay holds 3.
            #expect(try await post(try Self.envelope(now: now)).status == .accepted)
            #expect(try await post(try Self.envelope(now: now)).status == .accepted)
            let full = try await post(try Self.envelope(now: now))
            #expect(full.status == .tooManyRequests)
            #expect(full.headers[.retryAfter] != nil)
            #expect(try await post(try Self.envelope(to: Self.carol, now: now)).status == .accepted)
            #expect(try await post(try Self.envelope(from: Self.bob, to: Self.carol, now: now)).status.code == 507)
        }
    }

    @Test(arguments: MailboxTests.cases)
    func expiredEnvelopesAreNeverDeliveredAndAreSwept(_ setup: TestingSetup, _ kind: StoreKind) async throws {
        let relay = try await Self.relay(kind)
        try await relay.test(setup) { client in
            let short = try Self.envelope("soon gone", now: relay.now, ttl: 60)
            let long = try Self.envelope("still here", now: relay.now, ttl: 3600)
            for envelope in [short, long] {
                #expect(
                    try await client.post(envelope).status
                        == .accepted)
            }
            relay.clock.advance(byMilliseconds: 61_000)
            let path = Self.listPath(Self.bob)
            let list = try await client.execute(uri: path, method: .get, headers: Self.signedHeaders(Self.bob, "GET", path, relay.now))
            #expect(try list.json?.objectValue?["packets"]?.arrayValue?.map { try Envelope(json: $0).id } == [long.id])
            #expect(try await relay.store.mailboxCount() == 2)
            _ = try await relay.service.sweep()
            #expect(try await relay.store.mailboxCount() == 1)
            let metrics = String(decoding: await relay.service.metricsText(), as: UTF8.self)
            #expect(metrics.contains("coords_relay_messages_expired_total 1"))
            #expect(metrics.contains("coords_relay_mailbox_entries 1"))
        }
    }

    @Test func strictMailboxRequiresSenderKeyAndMessageRateLimits() async throws {
        var configuration = RelayHarness.defaultConfiguration()
        configuration.strictMailbox = true
        let relay = RelayHarness(configuration: configuration)
        try await relay.app.test(.router) { client in
            let anonymous = try Self.envelope(now: relay.now, senderKey: false)
            let refused = try await client.post(anonymous)
            #expect(refused.status == .unauthorized)
            #expect(refused.errorCode == "sender_key_required")
            // Default rate: 5/s per sender, burst 30.
            var statuses: [HTTPResponse.Status] = []
            for i in 0..<31 {
                let envelope = try Self.envelope("\(i)", to: i % 2 == 0 ? Self.bob : Self.carol, now: relay.now)
                statuses.append(
                    try await client.post(envelope).status)
            }
            #expect(statuses.prefix(30).allSatisfy { $0 == .accepted })
            #expect(statuses.last == .tooManyRequests)
        }
    }

    /// The accepted-once table of recipient request signatures, through the store API of every
    /// store; on PostgreSQL a second node sharing the database sees what the first accepted.
    @Test(arguments: StoreKind.allCases)
    func requestSignaturesAreAcceptedOnceInEveryStore(_ kind: StoreKind) async throws {
        let open = try await StoreUnderTest.reopenable(kind)
        let store = try await open()
        let r1 = try Bytes32([UInt8](repeating: 1, count: 32))
        let r2 = try Bytes32([UInt8](repeating: 2, count: 32))
        #expect(try await store.acceptSignature(r1, until: 1000, now: 700, capacity: 10) == .accepted)
        #expect(try await store.acceptSignature(r1, until: 1000, now: 701, capacity: 10) == .replayed)
        #expect(try await store.acceptSignature(r2, until: 1000, now: 701, capacity: 10) == .accepted)
        #expect(try await store.seenSignatureCount() == 2)
        if kind == .postgres {
            let otherNode = try await open()
            #expect(try await otherNode.acceptSignature(r1, until: 1000, now: 702, capacity: 10) == .replayed)
            await otherNode.close()
        } else {
            // Bounded: past the capacity a new signature is refused, an old one never forgotten early.
            #expect(try await store.acceptSignature(try Bytes32([UInt8](repeating: 3, count: 32)), until: 1000, now: 702, capacity: 2) == .full)
        }
        // Once expired (the timestamp window refuses the request by then), the signature may come again.
        #expect(try await store.acceptSignature(r1, until: 1400, now: 1100, capacity: 10) == .accepted)
        _ = try await store.mailboxSweep(now: 2000)
        #expect(try await store.seenSignatureCount() == 0)
        // Hostile numbers never trap.
        let r9 = try Bytes32([UInt8](repeating: 9, count: 32))
        #expect(try await store.acceptSignature(r9, until: .max, now: .max, capacity: .max) == .accepted)
        #expect(try await store.acceptSignature(r9, until: .max, now: .max, capacity: .max) == .replayed)
        await store.close()
    }

    /// Envelopes and used request signatures survive a restart (§7.3: a signature is accepted
    /// once, also across restarts).
    @Test(arguments: [StoreKind.lmdb, .postgres])
    func mailboxSurvivesARestart(_ kind: StoreKind) async throws {
        let open = try await StoreUnderTest.reopenable(kind)
        let clock = ManualClock(milliseconds: RelayHarness.start * 1000)
        let envelope = try Self.envelope(now: RelayHarness.start)
        let first = RelayHarness(store: try await open(), clock: clock)
        let path = Self.listPath(Self.bob)
        let usedHeaders = Self.signedHeaders(Self.bob, "GET", path, first.now)
        try await first.app.test(.router) { client in
            let posted = try await client.post(envelope)
            #expect(posted.status == .accepted)
            #expect(try await client.execute(uri: path, method: .get, headers: usedHeaders).status == .ok)
        }
        await first.store.close()
        clock.advance(byMilliseconds: 1000)
        let second = RelayHarness(store: try await open(), clock: clock)
        try await second.app.test(.router) { client in
            // The request signature used before the restart is still refused.
            let replay = try await client.execute(uri: path, method: .get, headers: usedHeaders)
            #expect(replay.status == .unauthorized)
            #expect(replay.errorCode == "replayed_signature")
            let list = try await client.execute(uri: path, method: .get, headers: Self.signedHeaders(Self.bob, "GET", path, second.now))
            #expect(try list.json?.objectValue?["packets"]?.arrayValue?.map { try Envelope(json: $0) } == [envelope])
        }
        await second.store.close()
    }
}

extension TestClientProtocol {
    /// Posts `envelope` to the mailbox (`POST /v1/relay/messages`, JSON).
    func post(_ envelope: Envelope) async throws -> TestResponse { try await post(MailboxTests.body(envelope)) }

    /// Posts raw bytes to the mailbox.
    func post(_ body: ByteBuffer) async throws -> TestResponse {
        try await execute(uri: "/v1/relay/messages", method: .post, headers: RelayHarness.json, body: body)
    }
}
