import CoordsCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import CoordsRelay

/// Prekeys (PROTOCOL.md §10.3): the store rules on every backend, one-time prekeys handed out
/// exactly once (concurrently, across PostgreSQL nodes and LMDB restarts), and the routes.
@Suite struct PrekeyTests {
    static let bob = MailboxTests.bob
    static let alice = MailboxTests.alice
    static let carol = MailboxTests.carol

    /// A signed prekey of `owner` made at `created` (ms) and `count` one-time prekeys from `firstID`.
    static func prekeys(
        _ owner: Ed25519SigningKey, id: UInt32 = 1, created: UInt64, count: Int = 0, firstID: UInt32 = 100
    ) throws -> (SignedPrekey, [OneTimePrekey]) {
        let signed = SignedPrekey.make(id: id, key: try X25519PrivateKey.generate().publicKey, created: created, identity: owner)
        let oneTime = try (0..<count).map { i in
            OneTimePrekey.make(id: firstID + UInt32(i), key: try X25519PrivateKey.generate().publicKey, identity: owner)
        }
        return (signed, oneTime)
    }

    static func key(_ signer: Ed25519SigningKey) throws -> Bytes32 { try Bytes32(signer.publicKey.rawRepresentation) }

    // MARK: Store rules

    @Test(arguments: StoreKind.allCases) func everyStoreAppliesTheSameRules(kind: StoreKind) async throws {
        let store = try await StoreUnderTest.store(kind)
        try await withCleanup {
            let owner = try Self.key(Self.bob)
            let (signed, oneTime) = try Self.prekeys(Self.bob, created: 10_000_000, count: 3)
            #expect(try await store.prekeyBundle(owner: owner, takeOneTime: true, now: 10_000_001) == nil)
            #expect(try await store.prekeyPut(owner: owner, signed: signed, oneTime: oneTime, stockLimit: 5) == .stored(stock: 3))
            // The same request again changes nothing.
            #expect(try await store.prekeyPut(owner: owner, signed: signed, oneTime: oneTime, stockLimit: 5) == .stored(stock: 3))
            let (_, more) = try Self.prekeys(Self.bob, created: 10_000_000, count: 3, firstID: 200)
            #expect(try await store.prekeyPut(owner: owner, signed: signed, oneTime: more, stockLimit: 5) == .stockFull)
            #expect(try await store.prekeyStock(owner: owner) == PrekeyStock(signed: signed, oneTime: 3))
            // Same id, other key: a conflict, and nothing of the request is stored.
            let (_, clash) = try Self.prekeys(Self.bob, created: 10_000_000, count: 1, firstID: 100)
            #expect(try await store.prekeyPut(owner: owner, signed: signed, oneTime: clash + [more[0]], stockLimit: 9) == .conflict)
            #expect(try await store.prekeyStock(owner: owner).oneTime == 3)
            let (sameIDOther, _) = try Self.prekeys(Self.bob, id: 1, created: 10_000_000)
            #expect(try await store.prekeyPut(owner: owner, signed: sameIDOther, oneTime: [], stockLimit: 9) == .conflict)
            let (older, _) = try Self.prekeys(Self.bob, id: 2, created: 9_000_000)
            #expect(try await store.prekeyPut(owner: owner, signed: older, oneTime: [], stockLimit: 9) == .stale)
            // Handed out lowest id first, each once; then the signed prekey alone.
            var handed: [UInt32] = []
            for _ in 0..<4 {
                let bundle = try #require(try await store.prekeyBundle(owner: owner, takeOneTime: true, now: 10_000_001))
                #expect(bundle.signed == signed)
                if let id = bundle.oneTime?.id { handed.append(id) }
            }
            #expect(handed == [100, 101, 102], "\(kind)")
            #expect(try await store.prekeyBundle(owner: owner, takeOneTime: false, now: 10_000_001)?.oneTime == nil)
            // A newer signed prekey replaces it; the stock stays.
            let (newer, refill) = try Self.prekeys(Self.bob, id: 2, created: 11_000_000, count: 2, firstID: 300)
            #expect(try await store.prekeyPut(owner: owner, signed: newer, oneTime: refill, stockLimit: 5) == .stored(stock: 2))
            #expect(try await store.prekeyTotals() == (1, 2))
            // Expiry: gone for readers at `expires`, and swept with its stock.
            #expect(try await store.prekeyBundle(owner: owner, takeOneTime: false, now: newer.expires) == nil)
            #expect(try await store.prekeySweep(now: newer.expires - 1) == 0)
            #expect(try await store.prekeySweep(now: newer.expires) == 1)
            #expect(try await store.prekeyStock(owner: owner) == PrekeyStock(signed: nil, oneTime: 0))
            #expect(try await store.prekeyTotals() == (0, 0))
        } cleanup: {
            await store.close()
        }
    }

    /// Two PostgreSQL stores on one database are two relay nodes: 60 concurrent takes, half on
    /// each, hand out each of 40 one-time prekeys exactly once.
    @Test func oneTimePrekeysGoOutOnceAcrossPostgresNodes() async throws {
        let open = try await StoreUnderTest.reopenable(.postgres)
        let first = try await open()
        let second = try await open()
        try await withCleanup {
            let owner = try Self.key(Self.carol)
            let (signed, oneTime) = try Self.prekeys(Self.carol, created: 10_000_000, count: 40)
            #expect(try await first.prekeyPut(owner: owner, signed: signed, oneTime: oneTime, stockLimit: 200) == .stored(stock: 40))
            let ids = try await withThrowingTaskGroup(of: UInt32?.self) { group in
                for i in 0..<60 {
                    let store = i % 2 == 0 ? first : second
                    group.addTask { try await store.prekeyBundle(owner: owner, takeOneTime: true, now: 10_000_001)?.oneTime?.id }
                }
                var ids: [UInt32] = []
                for try await id in group { if let id { ids.append(id) } }
                return ids
            }
            #expect(ids.count == 40 && Set(ids).count == 40)
            #expect(try await second.prekeyStock(owner: owner).oneTime == 0)
        } cleanup: {
            await first.close()
            await second.close()
        }
    }

    @Test func handedOutPrekeysStayGoneAfterAnLMDBRestart() async throws {
        let open = try await StoreUnderTest.reopenable(.lmdb)
        let owner = try Self.key(Self.alice)
        let (signed, oneTime) = try Self.prekeys(Self.alice, created: 10_000_000, count: 5)
        let store = try await open()
        _ = try await store.prekeyPut(owner: owner, signed: signed, oneTime: oneTime, stockLimit: 200)
        let taken = try await store.prekeyBundle(owner: owner, takeOneTime: true, now: 10_000_001)?.oneTime?.id
        await store.close()
        let reopened = try await open()
        try await withCleanup {
            #expect(taken == 100)
            let stock = try await reopened.prekeyStock(owner: owner)
            #expect(stock == PrekeyStock(signed: signed, oneTime: 4))
            #expect(try await reopened.prekeyBundle(owner: owner, takeOneTime: true, now: 10_000_001)?.oneTime?.id == 101)
        } cleanup: {
            await reopened.close()
        }
    }

    // MARK: Routes

    static func put(
        _ client: some TestClientProtocol, _ relay: RelayHarness, _ signer: Ed25519SigningKey, _ signed: SignedPrekey,
        _ oneTime: [OneTimePrekey], at offset: UInt64 = 0
    ) async throws -> TestResponse {
        var headers = MailboxTests.signedHeaders(signer, "PUT", "/v1/relay/prekeys", relay.now + offset)
        headers[.contentType] = "application/json"
        let body = JSONValue.object(["signedPrekey": signed.json, "oneTimePrekeys": .array(oneTime.map(\.json))])
        return try await client.execute(uri: "/v1/relay/prekeys", method: .put, headers: headers, body: ByteBuffer(bytes: body.serialized()))
    }

    static func bundle(
        _ client: some TestClientProtocol, _ relay: RelayHarness, of owner: Ed25519SigningKey, by requester: Ed25519SigningKey?,
        at offset: UInt64 = 0
    ) async throws -> TestResponse {
        let path = "/v1/relay/prekeys/\(owner.publicKey.base64URL)"
        let headers = requester.map { MailboxTests.signedHeaders($0, "GET", path, relay.now + offset) } ?? [:]
        return try await client.execute(uri: path, method: .get, headers: headers)
    }

    @Test(arguments: MailboxTests.cases) func routesStoreVerifyAndHandOutBundles(setup: TestingSetup, kind: StoreKind) async throws {
        let relay = try await RelayHarness.make(kind)
        try await relay.test(setup) { client in
            let now = relay.clock.milliseconds
            let (signed, oneTime) = try Self.prekeys(Self.bob, created: now, count: 2)
            #expect(try await Self.bundle(client, relay, of: Self.bob, by: nil).status == .notFound)
            // Unsigned, forged and someone else's prekeys are refused.
            let unsigned = try await client.execute(
                uri: "/v1/relay/prekeys", method: .put, headers: RelayHarness.json,
                body: ByteBuffer(bytes: JSONValue.object(["signedPrekey": signed.json]).serialized()))
            #expect(unsigned.status == .unauthorized)
            let (mallorys, _) = try Self.prekeys(Self.carol, created: now)
            let foreign = try await Self.put(client, relay, Self.bob, mallorys, [], at: 1)
            #expect(foreign.status == .unauthorized && PushTests.code(foreign) == "bad_prekey_signature")
            var forgedOneTime = oneTime
            forgedOneTime[1].signature[0] ^= 1
            let forged = try await Self.put(client, relay, Self.bob, signed, forgedOneTime, at: 2)
            #expect(forged.status == .unauthorized && PushTests.code(forged) == "bad_prekey_signature")
            let (expired, _) = try Self.prekeys(Self.bob, created: now - ForwardSecrecy.signedPrekeyValidity)
            #expect(PushTests.code(try await Self.put(client, relay, Self.bob, expired, [], at: 3)) == "invalid_prekey")
            let malformed = try await client.execute(
                uri: "/v1/relay/prekeys", method: .put,
                headers: {
                    var h = MailboxTests.signedHeaders(Self.bob, "PUT", "/v1/relay/prekeys", relay.now + 4)
                    h[.contentType] = "application/json"
                    return h
                }(), body: ByteBuffer(string: #"{"signedPrekey":{"id":-1}}"#))
            #expect(malformed.status == .badRequest && PushTests.code(malformed) == "invalid_prekey")

            let stored = try await Self.put(client, relay, Self.bob, signed, oneTime, at: 5)
            #expect(stored.status == .ok)
            #expect(try JSONValue.parse(Array(stored.body.readableBytesView)).objectValue?["oneTimePrekeys"]?.uint64Value == 2)
            let (older, _) = try Self.prekeys(Self.bob, id: 9, created: now - 1)
            let stale = try await Self.put(client, relay, Self.bob, older, [], at: 6)
            #expect(stale.status == .conflict && PushTests.code(stale) == "stale_prekey")

            // Anonymous: the signed prekey alone. Signed: one one-time prekey, once per hour per target.
            let anonymous = try await Self.bundle(client, relay, of: Self.bob, by: nil)
            #expect(anonymous.status == .ok)
            let plain = try PrekeyBundle(json: Array(anonymous.body.readableBytesView))
            try plain.verify(for: Self.bob.publicKey, now: now)
            #expect(plain.oneTimePrekey == nil && plain.signedPrekey == signed)
            let byAlice = try PrekeyBundle(json: Array(try await Self.bundle(client, relay, of: Self.bob, by: Self.alice).body.readableBytesView))
            try byAlice.verify(for: Self.bob.publicKey, now: now)
            #expect(byAlice.oneTimePrekey == oneTime[0])
            // Within the hour Alice gets the bundle again, without a one-time prekey.
            let again = try PrekeyBundle(json: Array(try await Self.bundle(client, relay, of: Self.bob, by: Self.alice, at: 1).body.readableBytesView))
            #expect(again.oneTimePrekey == nil && again.signedPrekey == signed)
            let byCarol = try PrekeyBundle(json: Array(try await Self.bundle(client, relay, of: Self.bob, by: Self.carol).body.readableBytesView))
            #expect(byCarol.oneTimePrekey == oneTime[1])
            // The stock, for its owner.
            let stockPath = "/v1/relay/prekeys"
            let stock = try await client.execute(
                uri: stockPath, method: .get, headers: MailboxTests.signedHeaders(Self.bob, "GET", stockPath, relay.now + 7))
            let fields = try JSONValue.parse(Array(stock.body.readableBytesView)).objectValue
            #expect(fields?["oneTimePrekeys"]?.uint64Value == 0 && fields?["signedPrekeyID"]?.uint64Value == 1)
            #expect(try await client.execute(uri: "/v1/relay/prekeys/not-a-key", method: .get).status == .badRequest)
        }
    }

    @Test func aRequesterMakesAtMostItsHourlyBundleRequests() async throws {
        let relay = try await RelayHarness.make(.memory) { $0.prekeys.requestsPerHour = 2 }
        try await relay.test(.router) { client in
            let (signed, _) = try Self.prekeys(Self.bob, created: relay.clock.milliseconds)
            #expect(try await Self.put(client, relay, Self.bob, signed, []).status == .ok)
            for offset in [UInt64(1), 2] { #expect(try await Self.bundle(client, relay, of: Self.bob, by: Self.alice, at: offset).status == .ok) }
            let refused = try await Self.bundle(client, relay, of: Self.bob, by: Self.alice, at: 3)
            #expect(refused.status == .tooManyRequests && refused.headers[.retryAfter] != nil)
            // A 404 is charged as a request, but no one-time prekey is.
            #expect(try await Self.bundle(client, relay, of: Self.carol, by: Self.bob).status == .notFound)
        }
    }

    @Test func aTargetHandsOutAtMostItsHourlyOneTimePrekeys() async throws {
        let relay = try await RelayHarness.make(.memory) { $0.prekeys.oneTimePerTargetPerHour = 2 }
        try await relay.test(.router) { client in
            let (signed, oneTime) = try Self.prekeys(Self.bob, created: relay.clock.milliseconds, count: 5)
            #expect(try await Self.put(client, relay, Self.bob, signed, oneTime).status == .ok)
            var handed = 0
            for _ in 0..<4 {
                let requester = try Ed25519SigningKey.generate()
                let bundle = try PrekeyBundle(json: Array(try await Self.bundle(client, relay, of: Self.bob, by: requester).body.readableBytesView))
                if bundle.oneTimePrekey != nil { handed += 1 }
            }
            #expect(handed == 2)
            relay.clock.advance(byMilliseconds: 3_600_000)
            let later = try PrekeyBundle(
                json: Array(try await Self.bundle(client, relay, of: Self.bob, by: try Ed25519SigningKey.generate()).body.readableBytesView))
            #expect(later.oneTimePrekey != nil)
        }
    }
}
