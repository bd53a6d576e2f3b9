import CoordsCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import CoordsRelay

// swift-format-ignore: AvoidRetroactiveConformances
// (test output only: names the two setups in parameterised test names)
extension TestingSetup: @retroactive CustomTestStringConvertible {
    public var testDescription: String { "\(self)".contains("live") ? "live socket" : "in process" }
}

/// Every route and status code, in process (`.router`) and over a real loopback socket (`.live`,
/// port 0), on all three stores (memory, LMDB, PostgreSQL on a real server).
@Suite struct RelayRouterTests {
    static let setups: [(TestingSetup, StoreKind)] = [
        (.router, .memory), (.live, .memory), (.router, .lmdb), (.router, .postgres),
        (.live, .postgres)
    ]

    @Test(arguments: RelayRouterTests.setups)
    func versionOnBothPaths(_ setup: TestingSetup, _ kind: StoreKind) async throws {
        let relay = RelayHarness(store: try await StoreUnderTest.store(kind))
        try await relay.test(setup) { client in
            for path in ["/api/version", "/version"] {
                let response = try await client.execute(uri: path, method: .get)
                #expect(response.status == .ok)
                // The answer the apps read, through the core's own parser.
                let version = try RelayAPI.parseVersion(Array(response.body.readableBytesView))
                #expect(version.name == "coords" && version.isCompatible)
            }
            #expect(try await client.execute(uri: "/healthz", method: .get).status == .ok)
            let ready = try await client.execute(uri: "/readyz", method: .get)
            #expect(ready.status == .ok && String(buffer: ready.body) == #"{"status":"ready"}"#)
            let missing = try await client.execute(uri: "/nope", method: .get)
            #expect(missing.status == .notFound)
            #expect(missing.errorCode == "not_found")
        }
    }

    /// The reference server's own cases: put/get, all-zero signature, old timestamp, unknown key.
    @Test(arguments: RelayRouterTests.setups)
    func referenceServerCases(_ setup: TestingSetup, _ kind: StoreKind) async throws {
        let relay = RelayHarness(store: try await StoreUnderTest.store(kind))
        let alice = try Ed25519SigningKey.generate()
        let stranger = try Ed25519SigningKey.generate().publicKey.base64URL
        try await relay.test(setup) { client in
            let put = try await client.location(.put, try relay.uploadBody(alice))
            #expect(put.status == .noContent)
            #expect(put.body.readableBytes == 0)

            let fetch = try await client.location(.post, RelayHarness.fetchBody([alice.publicKey.base64URL, stranger, "not-a-key"]))
            #expect(fetch.status == .ok)
            let entries = try #require(fetch.json?.objectValue)
            #expect(entries.keys == [alice.publicKey.base64URL, stranger, "not-a-key"])
            let entry = try #require(entries[alice.publicKey.base64URL]?.objectValue)
            #expect(entry["updated"]?.uint64Value == relay.now)
            #expect(entry["timestamp"]?.uint64Value == relay.now)
            #expect(entry["signature"]?.stringValue?.count == 86)
            #expect(entries[stranger] == .null)
            #expect(entries["not-a-key"] == .null)

            var zero = try #require(try JSONValue.parse(Array(try relay.uploadBody(alice, timestamp: relay.now + 1).readableBytesView)).objectValue)
            zero["signature"] = .string(Base64.encode([UInt8](repeating: 0, count: 64)))
            let zeroSignature = try await client.location(.put, RelayHarness.body(.object(zero)))
            #expect(zeroSignature.status == .unauthorized)

            let old = try await client.location(.put, try relay.uploadBody(alice, timestamp: relay.now - 400))
            #expect(old.status == .unauthorized)
            #expect(old.json?.objectValue?["message"]?.stringValue == "timestamp too old")
        }
    }

    /// Every check of §4 in order, plus the §6 ones, each with its status code.
    @Test(arguments: RelayRouterTests.setups)
    func uploadChecksInReferenceOrder(_ setup: TestingSetup, _ kind: StoreKind) async throws {
        let relay = RelayHarness(store: try await StoreUnderTest.store(kind))
        let key = try Ed25519SigningKey.generate()
        let valid = try #require(try JSONValue.parse(Array(try relay.uploadBody(key).readableBytesView)).objectValue)
        @Sendable func with(_ changes: [String: JSONValue?]) -> ByteBuffer {
            var object = valid
            for (field, value) in changes { object[field] = value }
            return RelayHarness.body(.object(object))
        }
        var notAPoint = [UInt8](repeating: 0, count: 32)
        notAPoint[0] = 2
        let bigBlob = [UInt8](repeating: 7, count: 65_537)
        let cases: [(String, ByteBuffer, HTTPResponse.Status, String)] = [
            ("pubkey not base64url", with(["pubkey": .string("A6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg")]), .badRequest, "invalid_pubkey"),
            ("pubkey padded", with(["pubkey": .string(key.publicKey.base64URL + "=")]), .badRequest, "invalid_pubkey"),
            ("pubkey 31 bytes", with(["pubkey": .string(Base64.encode([UInt8](repeating: 1, count: 31)))]), .badRequest, "invalid_pubkey"),
            ("pubkey not a point", with(["pubkey": .string(Base64.encode(notAPoint))]), .badRequest, "invalid_pubkey"),
            ("blob not base64url", with(["blob": .string("!!!")]), .badRequest, "invalid_blob"),
            ("blob too large", with(["blob": .string(Base64.encode(bigBlob))]), .init(code: 413), "blob_too_large"),
            ("signature not base64url", with(["signature": .string("***")]), .badRequest, "invalid_signature_encoding"),
            ("signature 63 bytes", with(["signature": .string(Base64.encode([UInt8](repeating: 1, count: 63)))]), .badRequest, "invalid_signature_encoding"),
            ("timestamp missing", with(["timestamp": nil]), .badRequest, "invalid_timestamp"),
            ("timestamp too old", with(["timestamp": .integer(relay.now - 301)]), .unauthorized, "timestamp_too_old"),
            ("timestamp in the future", with(["timestamp": .integer(relay.now + 301)]), .unauthorized, "timestamp_in_future"),
            ("signature does not verify", with(["timestamp": .integer(relay.now - 1)]), .unauthorized, "invalid_signature"),
            ("not JSON", ByteBuffer(string: "{nope"), .badRequest, "invalid_json"),
            ("JSON array", ByteBuffer(string: "[]"), .badRequest, "invalid_json")
        ]
        try await relay.test(setup) { client in
            for (why, body, status, code) in cases {
                let response = try await client.location(.put, body)
                #expect(response.status == status, "\(why)")
                #expect(response.errorCode == code, "\(why)")
                #expect(response.json?.objectValue?["message"]?.stringValue?.isEmpty == false, "\(why)")
            }
            // The body is fine: stored, then the same request again is a replay (409).
            #expect(try await client.location(.put, with([:])).status == .noContent)
            let replay = try await client.location(.put, with([:]))
            #expect(replay.status == .conflict)
            #expect(replay.errorCode == "stale_upload")
            // An older (validly signed) upload is a rollback: refused too; a newer one replaces.
            let older = try await client.location(.put, try relay.uploadBody(key, timestamp: relay.now - 10))
            #expect(older.status == .conflict)
            let newer = try await client.location(.put, try relay.uploadBody(key, timestamp: relay.now + 10))
            #expect(newer.status == .noContent)
        }
    }

    @Test(arguments: RelayRouterTests.setups)
    func requestShapeErrors(_ setup: TestingSetup, _ kind: StoreKind) async throws {
        let relay = try await RelayHarness.make(kind) { $0.maximumBodyBytes = 8192 }
        let ids = (0..<51).map { _ in Base64.encode([UInt8](repeating: 3, count: 32)) }
        try await relay.test(setup) { client in
            let tooMany = try await client.location(.post, RelayHarness.fetchBody(ids))
            #expect(tooMany.status == .badRequest)
            #expect(tooMany.errorCode == "too_many_ids")
            let fifty = try await client.location(.post, RelayHarness.fetchBody(Array(ids.prefix(50))))
            #expect(fifty.status == .ok)
            #expect(
                try await client.location(
                    .post, RelayHarness.fetchBody([])
                ).json == .object([:]))
            let malformed = try await client.location(.post, ByteBuffer(string: "{\"ids\":"))
            #expect(malformed.status == .badRequest && malformed.errorCode == "invalid_json")
            let notStrings = try await client.location(.post, ByteBuffer(string: "{\"ids\":[1]}"))
            #expect(notStrings.status == .badRequest)
            for headers: HTTPFields in [[:], [.contentType: "text/plain"], [.contentType: "application/jsonx"]] {
                let wrongType = try await client.execute(uri: "/api/location", method: .post, headers: headers, body: RelayHarness.fetchBody([]))
                #expect(wrongType.status == .unsupportedMediaType)
                #expect(wrongType.errorCode == "unsupported_media_type")
            }
            let charset = try await client.execute(
                uri: "/api/location", method: .post,
                headers: [.contentType: "application/json; charset=utf-8"], body: RelayHarness.fetchBody([]))
            #expect(charset.status == .ok)
            let big = try await client.location(.post, ByteBuffer(bytes: [UInt8](repeating: 0x20, count: 9000)))
            #expect(big.status == .contentTooLarge)
            #expect(big.errorCode == "body_too_large")
            let legacy = try await client.execute(uri: "/location", method: .post, headers: RelayHarness.json, body: RelayHarness.fetchBody([]))
            #expect(legacy.status == .ok)
            let wrongMethod = try await client.execute(uri: "/api/location", method: .get)
            #expect(wrongMethod.json?.objectValue?["error"] != nil)
        }
    }

    @Test(arguments: RelayRouterTests.setups)
    func signedDelete(_ setup: TestingSetup, _ kind: StoreKind) async throws {
        let relay = RelayHarness(store: try await StoreUnderTest.store(kind))
        let key = try Ed25519SigningKey.generate()
        let other = try Ed25519SigningKey.generate()
        let id = key.publicKey.base64URL
        try await relay.test(setup) { client in
            _ = try await client.location(.put, try relay.uploadBody(key, timestamp: relay.now - 20))
            // A delete older than the stored upload is refused (a captured old delete cannot remove newer data).
            let stale = try await client.location(.delete, try relay.deleteBody(key, timestamp: relay.now - 30))
            #expect(stale.status == .conflict)
            // Signed by someone else.
            var forged = try #require(try JSONValue.parse(Array(try relay.deleteBody(other).readableBytesView)).objectValue)
            forged["pubkey"] = .string(id)
            let bad = try await client.location(.delete, RelayHarness.body(.object(forged)))
            #expect(bad.status == .unauthorized)
            // An upload signature is not a delete signature (domain separation).
            let uploadAsDelete = try await client.location(.delete, try relay.uploadBody(key, timestamp: relay.now - 5))
            #expect(uploadAsDelete.status == .unauthorized)

            let deleted = try await client.location(.delete, try relay.deleteBody(key))
            #expect(deleted.status == .noContent)
            let fetch = try await client.location(.post, RelayHarness.fetchBody([id]))
            #expect(fetch.json?.objectValue?[id] == .null)
            // Replaying the earlier upload cannot bring the deleted position back.
            let replay = try await client.location(.put, try relay.uploadBody(key, timestamp: relay.now - 20))
            #expect(replay.status == .conflict)
            // Deleting nothing is fine; a newer upload works again.
            let nothing = try await client.execute(uri: "/location", method: .delete, headers: RelayHarness.json, body: try relay.deleteBody(other))
            #expect(nothing.status == .noContent)
            relay.clock.advance(byMilliseconds: 1000)
            #expect(
                try await client.location(.put, try relay.uploadBody(key)).status == .noContent)
        }
    }

    @Test(arguments: RelayRouterTests.setups)
    func blobsExpireAfterTheTTL(_ setup: TestingSetup, _ kind: StoreKind) async throws {
        let relay = try await RelayHarness.make(kind) { $0.ttlSeconds = 3600 }
        let key = try Ed25519SigningKey.generate()
        let id = key.publicKey.base64URL
        try await relay.test(setup) { client in
            _ = try await client.location(.put, try relay.uploadBody(key))
            relay.clock.advance(byMilliseconds: 3599 * 1000)
            let fresh = try await client.location(.post, RelayHarness.fetchBody([id]))
            #expect(fresh.json?.objectValue?[id] != .null)
            relay.clock.advance(byMilliseconds: 2 * 1000)
            // Checked on read, before any sweep ran.
            let stale = try await client.location(.post, RelayHarness.fetchBody([id]))
            #expect(stale.json?.objectValue?[id] == .null)
            #expect(try await relay.store.count() == 1)
            #expect(try await relay.service.sweep() == 1)
            #expect(try await relay.store.count() == 0)
            let metrics = String(decoding: await relay.service.metricsText(), as: UTF8.self)
            #expect(metrics.contains("coords_relay_expired_total 1"))
        }
    }

    @Test(arguments: RelayRouterTests.setups)
    func rateLimitsPerAddressAndPerKey(_ setup: TestingSetup, _ kind: StoreKind) async throws {
        let relay = try await RelayHarness.make(kind) {
            $0.addressRate = 1
            $0.addressBurst = 5
            $0.keyRate = 0.1
            $0.keyBurst = 2
        }
        let key = try Ed25519SigningKey.generate()
        try await relay.test(setup) { client in
            var statuses: [UInt] = []
            for i in 0..<4 {
                let response = try await client.location(.put, try relay.uploadBody(key, timestamp: relay.now + UInt64(i)))
                statuses.append(UInt(response.status.code))
                if response.status.code == 429 {
                    #expect(response.headers[.retryAfter] == "10")
                    #expect(response.errorCode == "rate_limited")
                }
            }
            #expect(statuses == [204, 204, 429, 429])  // the key's burst of 2
            let fifth = try await client.location(.post, RelayHarness.fetchBody([]))
            #expect(fifth.status == .ok)  // 5th request from this address
            let sixth = try await client.location(.post, RelayHarness.fetchBody([]))
            #expect(sixth.status == .tooManyRequests)
            #expect(sixth.headers[.retryAfter] == "1")
            relay.clock.advance(byMilliseconds: 1000)
            #expect(
                try await client.location(
                    .post, RelayHarness.fetchBody([])
                ).status == .ok)
            // Unsigned junk does not spend the key's budget: it fails before the key limit.
            let metrics = String(decoding: await relay.service.metricsText(), as: UTF8.self)
            #expect(metrics.contains("coords_relay_rejections_total{reason=\"rate_limited\"} 3"))
        }
    }

    @Test(arguments: RelayRouterTests.setups)
    func metricsExposition(_ setup: TestingSetup, _ kind: StoreKind) async throws {
        let relay = RelayHarness(store: try await StoreUnderTest.store(kind))
        let key = try Ed25519SigningKey.generate()
        try await relay.test(setup) { client in
            _ = try await client.location(.put, try relay.uploadBody(key))
            _ = try await client.location(.post, RelayHarness.fetchBody([key.publicKey.base64URL]))
            _ = try await client.location(.put, ByteBuffer(string: "x"))
            let response = try await client.execute(uri: "/metrics", method: .get)
            #expect(response.headers[.contentType]?.hasPrefix("text/plain") == true)
            let text = String(buffer: response.body)
            for line in [
                "coords_relay_uploads_total 1", "coords_relay_fetches_total 1", "coords_relay_fetched_ids_total 1",
                "coords_relay_store_entries 1", "coords_relay_rejections_total{reason=\"invalid_json\"} 1",
                "coords_relay_requests_total{route=\"/api/location\",method=\"PUT\",status=\"204\"} 1",
                "coords_relay_request_duration_seconds_bucket"
            ] {
                #expect(text.contains(line), "missing \(line)")
            }
            // Nothing secret-looking is exposed: no keys or blobs.
            #expect(!text.contains(key.publicKey.base64URL))
        }
    }

    /// CoordsCore's client verifies the relay's signature stamps: end to end, the entry is verified.
    @Test(arguments: RelayRouterTests.setups)
    func coreClientVerifiesTheRelaysStamps(_ setup: TestingSetup, _ kind: StoreKind) async throws {
        let relay = RelayHarness(store: try await StoreUnderTest.store(kind))
        let alice = try Ed25519SigningKey.generate()
        let bob = try Ed25519SigningKey.generate()
        let location = try Location(latitude: 59.3293, longitude: 18.0686, timestamp: relay.clock.milliseconds)
        let blob = try LocationBlob.seal(location.wire, for: [alice.publicKey, bob.publicKey])
        let upload = try RelayAPI.prepareUpload(blob: blob, timestamp: relay.now, signer: alice, server: "https://relay.test")
        let fetch = try #require(try RelayAPI.prepareFetches([.init(id: alice.publicKey.base64URL, server: "https://relay.test")]).first)
        try await relay.test(setup) { client in
            let put = try await client.location(.put, ByteBuffer(bytes: upload.body))
            #expect(put.status == .noContent)
            let response = try await client.location(.post, ByteBuffer(bytes: fetch.request.body))
            let entries = try RelayAPI.processFetchResponse(
                Array(response.body.readableBytesView), reader: X25519PrivateKey(ed25519: bob),
                options: .init(requireSignatures: true))
            #expect(entries.first?.authenticity == .verified)
            #expect(entries.first?.location == location.wire.location)
        }
    }
}
