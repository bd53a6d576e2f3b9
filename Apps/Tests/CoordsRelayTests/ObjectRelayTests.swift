import CoordsCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import CoordsRelay

/// Attachment objects (PROTOCOL.md §12.4): the store rules on every backend (parts appended in
/// order, owner, quota, expiry, sweep), the bytes surviving an LMDB restart, and the routes:
/// signed parts, resume after a refused offset, downloads whole and by range, delete.
@Suite struct ObjectRelayTests {
    static let bob = MailboxTests.bob
    static let alice = MailboxTests.alice

    static func owner(_ signer: Ed25519SigningKey) throws -> Bytes32 {
        try Bytes32(Hex.decode(PeerID(signer.publicKey).hex) ?? [])
    }

    static func bytes(_ count: Int, seed: UInt8) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) ^ seed } }

    // MARK: Store rules

    @Test(arguments: StoreKind.allCases) func everyStoreAppliesTheSameRules(kind: StoreKind) async throws {
        let store = try await StoreUnderTest.store(kind)
        try await withCleanup {
            let bob = try Self.owner(Self.bob)
            let alice = try Self.owner(Self.alice)
            let oid = try ObjectID.random()
            let object = Self.bytes(300_000, seed: 5)
            var limits = ObjectLimits()
            limits.quotaBytes = 700_000
            limits.maximumObjectsPerOwner = 3
            let now: UInt64 = 1_000
            func part(_ offset: Int, _ count: Int, by owner: Bytes32? = nil, size: Int = 300_000, expires: UInt64 = 2_000) -> ObjectPart {
                ObjectPart(
                    object: oid, owner: owner ?? bob, offset: UInt64(offset), size: UInt64(size), expiresAt: expires,
                    bytes: Array(object[offset..<offset + count]))
            }
            #expect(try await store.objectInfo(oid, now: now) == nil)
            #expect(try await store.objectPut(part(100, 10), limits: limits, now: now) == .offsetMismatch(stored: 0))
            let first = StoredObject(owner: bob, size: 300_000, expiresAt: 2_000, stored: 100_000)
            #expect(try await store.objectPut(part(0, 100_000), limits: limits, now: now) == .stored(first))
            // Not where the bytes end, another owner, another size or expiry: refused, nothing stored.
            #expect(try await store.objectPut(part(0, 100_000), limits: limits, now: now) == .offsetMismatch(stored: 100_000))
            #expect(try await store.objectPut(part(100_000, 10, by: alice), limits: limits, now: now) == .notOwner)
            #expect(try await store.objectPut(part(100_000, 10, size: 300_001), limits: limits, now: now) == .mismatch)
            #expect(try await store.objectPut(part(100_000, 10, expires: 2_001), limits: limits, now: now) == .mismatch)
            // An empty part is the state probe.
            #expect(try await store.objectPut(part(100_000, 0), limits: limits, now: now) == .stored(first))
            #expect(try await store.objectInfo(oid, now: now) == first)
            var complete = first
            complete.stored = 300_000
            #expect(try await store.objectPut(part(100_000, 200_000), limits: limits, now: now) == .stored(complete))
            #expect(try await store.objectInfo(oid, now: now)?.complete == true)
            // Reads: any window, short at the end.
            #expect(try await store.objectRead(oid, offset: 0, count: 300_000) == object)
            #expect(try await store.objectRead(oid, offset: 99_990, count: 20) == Array(object[99_990..<100_010]))
            #expect(try await store.objectRead(oid, offset: 299_990, count: 100) == Array(object[299_990...]))
            #expect(try await store.objectRead(oid, offset: 300_000, count: 100).isEmpty)
            #expect(try await store.objectTotals() == (1, 300_000))

            // Quota: every object at its whole size, and a count.
            func new(_ size: Int, by owner: Bytes32 = bob, expires: UInt64 = 1_500) throws -> ObjectPart {
                ObjectPart(object: try ObjectID.random(), owner: owner, offset: 0, size: UInt64(size), expiresAt: expires, bytes: [])
            }
            #expect(try await store.objectPut(try new(400_001), limits: limits, now: now) == .quota)
            guard case .stored = try await store.objectPut(try new(400_000), limits: limits, now: now) else {
                Issue.record("a part within the quota was refused")
                return
            }
            #expect(try await store.objectPut(try new(16), limits: limits, now: now) == .quota)  // 3 objects
            guard case .stored = try await store.objectPut(try new(400_000, by: alice), limits: limits, now: now) else {
                Issue.record("another owner's quota was charged")
                return
            }
            // The relay's total counts the bytes stored (300,000 so far), never what was announced.
            limits.maximumTotalBytes = 300_050
            guard case .stored = try await store.objectPut(try new(100_000, by: alice, expires: 2_500), limits: limits, now: now) else {
                Issue.record("an announcement without bytes was charged to the relay's total")
                return
            }
            var bytesOver = try new(100, by: alice, expires: 2_500)
            bytesOver.bytes = Self.bytes(100, seed: 9)
            #expect(try await store.objectPut(bytesOver, limits: limits, now: now) == .relayFull)
            bytesOver.bytes = Array(bytesOver.bytes.prefix(50))
            bytesOver.size = 50
            guard case .stored = try await store.objectPut(bytesOver, limits: limits, now: now) else {
                Issue.record("bytes within the relay's total were refused")
                return
            }
            limits.maximumTotalBytes = 10 * 1_073_741_824

            // Delete: the owner's only.
            #expect(try await store.objectDelete(oid, owner: alice, now: now) == .notOwner)
            #expect(try await store.objectDelete(oid, owner: bob, now: now) == .deleted)
            #expect(try await store.objectDelete(oid, owner: bob, now: now) == ObjectDeleteResult.none)
            #expect(try await store.objectInfo(oid, now: now) == nil)
            #expect(try await store.objectRead(oid, offset: 0, count: 10).isEmpty)

            // Expiry: gone for readers at expiresAt, no longer charged, swept, and its id reusable
            // by anyone (the old bytes never show through).
            #expect(try await store.objectInfo(oid, now: now) == nil)
            #expect(try await store.objectSweep(now: 1_499) == 0)
            guard case .stored = try await store.objectPut(try new(400_000, expires: 2_500), limits: limits, now: 1_500) else {
                Issue.record("an expired object still counted against the quota")
                return
            }
            #expect(try await store.objectSweep(now: 1_500) == 2)
            let reused = ObjectPart(object: oid, owner: alice, offset: 0, size: 16, expiresAt: 3_000, bytes: Array(repeating: 1, count: 16))
            #expect(
                try await store.objectPut(part(0, 10), limits: limits, now: now)
                    == .stored(StoredObject(owner: bob, size: 300_000, expiresAt: 2_000, stored: 10)))
            #expect(
                try await store.objectPut(reused, limits: limits, now: 2_000) == .stored(StoredObject(owner: alice, size: 16, expiresAt: 3_000, stored: 16)))
            #expect(try await store.objectRead(oid, offset: 0, count: 100) == Array(repeating: 1, count: 16))
        } cleanup: {
            await store.close()
        }
    }

    /// LMDB keeps the bytes in files: they survive a restart, and bytes a crash left past the
    /// committed length (written, never committed) are cut off by the next part.
    @Test func lmdbObjectsSurviveARestartAndUncommittedBytesAreCutOff() async throws {
        let directory = NSTemporaryDirectory() + "relay-objects-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let open = { try LMDBRelayStore(directory: directory) }
        let oid = try ObjectID.random()
        let owner = try Self.owner(Self.bob)
        let object = Self.bytes(200_000, seed: 9)
        var store = try open()
        let first = ObjectPart(object: oid, owner: owner, offset: 0, size: 200_000, expiresAt: 9_000, bytes: Array(object[0..<120_000]))
        #expect(try await store.objectPut(first, limits: ObjectLimits(), now: 1) != .mismatch)
        await store.close()
        // A crash after a part's bytes were written, before its commit: garbage past 120,000.
        store = try open()
        let path = directory + "/objects/" + Hex.encode(oid.bytes)
        #expect(FileManager.default.fileExists(atPath: path))
        let handle = try #require(FileHandle(forWritingAtPath: path))
        handle.seekToEndOfFile()
        handle.write(Data(repeating: 0xEE, count: 50_000))
        handle.closeFile()
        #expect(try await store.objectInfo(oid, now: 1)?.stored == 120_000)
        let second = ObjectPart(object: oid, owner: owner, offset: 120_000, size: 200_000, expiresAt: 9_000, bytes: Array(object[120_000...]))
        #expect(
            try await store.objectPut(second, limits: ObjectLimits(), now: 1)
                == .stored(StoredObject(owner: owner, size: 200_000, expiresAt: 9_000, stored: 200_000)))
        #expect(try await store.objectRead(oid, offset: 0, count: 300_000) == object)
        // A restore that brought `data.mdb` without the file: the object is gone for readers, and
        // the upload starts again from 0.
        try FileManager.default.removeItem(atPath: path)
        #expect(try await store.objectInfo(oid, now: 1) == nil)
        #expect(try await store.objectPut(second, limits: ObjectLimits(), now: 1) == .offsetMismatch(stored: 0))
        #expect(
            try await store.objectPut(first, limits: ObjectLimits(), now: 1)
                == .stored(StoredObject(owner: owner, size: 200_000, expiresAt: 9_000, stored: 120_000)))
        _ = try await store.objectPut(second, limits: ObjectLimits(), now: 1)
        #expect(try await store.objectRead(oid, offset: 0, count: 300_000) == object)
        // Swept: the file goes too.
        #expect(try await store.objectSweep(now: 9_000) == 1)
        #expect(!FileManager.default.fileExists(atPath: path))
        await store.close()
    }

    // MARK: Routes

    static func put(
        _ client: some TestClientProtocol, _ relay: RelayHarness, _ signer: Ed25519SigningKey, _ oid: ObjectID, offset: Int, size: Int,
        expires: UInt64? = nil, _ bytes: [UInt8], at: UInt64 = 0, type: String = "application/octet-stream"
    ) async throws -> TestResponse {
        let path = "/v1/relay/objects/\(oid.base64URL)?offset=\(offset)&stored=\(size)&expires=\(expires ?? relay.now + 3600)"
        var headers = MailboxTests.signedHeaders(signer, "PUT", path, relay.now + at)
        headers[.contentType] = type
        return try await client.execute(uri: path, method: .put, headers: headers, body: ByteBuffer(bytes: bytes))
    }

    static func fields(_ response: TestResponse) throws -> JSONObject {
        try #require(try JSONValue.parse(Array(response.body.readableBytesView)).objectValue)
    }

    @Test(arguments: MailboxTests.cases) func routesStoreResumeServeAndDelete(setup: TestingSetup, kind: StoreKind) async throws {
        let relay = try await RelayHarness.make(kind) { $0.objects.maximumPartBytes = 100_000 }
        let oid = try ObjectID.random()
        let object = Self.bytes(250_000, seed: 3)
        try await relay.test(setup) { client in
            let base = "/v1/relay/objects/\(oid.base64URL)"
            #expect(try await client.execute(uri: base, method: .get).status == .notFound)
            // Unsigned, wrong type, bad query, bad id, too large, past the end, bad expiry.
            let query = "?offset=0&stored=250000&expires=\(relay.now + 60)"
            let unsigned = try await client.execute(
                uri: base + query, method: .put, headers: [.contentType: "application/octet-stream"], body: ByteBuffer(bytes: [1]))
            #expect(unsigned.status == .unauthorized)
            #expect(try await Self.put(client, relay, Self.bob, oid, offset: 0, size: 250_000, [1], type: "application/json").status.code == 415)
            for bad in ["?offset=00&stored=250000&expires=\(relay.now + 60)", "?stored=250000&offset=0&expires=\(relay.now + 60)", "", "?offset=0"] {
                var headers = MailboxTests.signedHeaders(Self.bob, "PUT", base + bad, relay.now)
                headers[.contentType] = "application/octet-stream"
                let refused = try await client.execute(uri: base + bad, method: .put, headers: headers, body: ByteBuffer(bytes: [1]))
                #expect(refused.status == .badRequest && PushTests.code(refused) == "invalid_query", "\(bad)")
            }
            let badID = try await client.execute(uri: "/v1/relay/objects/short", method: .get)
            #expect(badID.status == .badRequest && PushTests.code(badID) == "invalid_object_id")
            let huge = try await Self.put(client, relay, Self.bob, oid, offset: 0, size: Int(Objects.maximumStored) + 1, [], at: 1)
            #expect(huge.status == .contentTooLarge && PushTests.code(huge) == "object_too_large")
            let bigPart = try await Self.put(client, relay, Self.bob, oid, offset: 0, size: 250_000, Array(object[0..<100_001]), at: 2)
            #expect(bigPart.status == .contentTooLarge)
            let pastEnd = try await Self.put(client, relay, Self.bob, oid, offset: 0, size: 50, Array(object[0..<51]), at: 3)
            #expect(pastEnd.status == .badRequest && PushTests.code(pastEnd) == "past_end")
            let late = try await Self.put(client, relay, Self.bob, oid, offset: 0, size: 250_000, expires: relay.now + 8 * 86_400, [], at: 4)
            #expect(late.status == .badRequest && PushTests.code(late) == "invalid_expiry")

            // Upload in parts; a resume after a lost answer learns where to continue.
            let expires = relay.now + 3600
            let one = try await Self.put(client, relay, Self.bob, oid, offset: 0, size: 250_000, expires: expires, Array(object[0..<100_000]), at: 5)
            #expect(one.status == .ok)
            #expect(try Self.fields(one)["stored"]?.uint64Value == 100_000 && Self.fields(one)["complete"] == .bool(false))
            #expect(try await client.execute(uri: base, method: .get).status == .notFound)  // incomplete
            let replayed = try await Self.put(client, relay, Self.bob, oid, offset: 0, size: 250_000, expires: expires, Array(object[0..<100_000]), at: 6)
            #expect(replayed.status == .conflict && PushTests.code(replayed) == "offset_mismatch")
            #expect(try Self.fields(replayed)["stored"]?.uint64Value == 100_000)
            let probe = try await Self.put(client, relay, Self.bob, oid, offset: 100_000, size: 250_000, expires: expires, [], at: 7)
            #expect(try Self.fields(probe)["stored"]?.uint64Value == 100_000)
            let stolen = try await Self.put(client, relay, Self.alice, oid, offset: 100_000, size: 250_000, expires: expires, [1], at: 8)
            #expect(stolen.status == .forbidden && PushTests.code(stolen) == "not_owner")
            let changed = try await Self.put(client, relay, Self.bob, oid, offset: 100_000, size: 250_001, expires: expires, [1], at: 9)
            #expect(changed.status == .conflict && PushTests.code(changed) == "object_mismatch")
            _ = try await Self.put(client, relay, Self.bob, oid, offset: 100_000, size: 250_000, expires: expires, Array(object[100_000..<200_000]), at: 10)
            let last = try await Self.put(client, relay, Self.bob, oid, offset: 200_000, size: 250_000, expires: expires, Array(object[200_000...]), at: 11)
            #expect(try Self.fields(last)["complete"] == .bool(true) && Self.fields(last)["expiresAt"]?.uint64Value == expires)

            // Download: whole, from a byte, and refused ranges.
            let whole = try await client.execute(uri: base, method: .get)
            #expect(whole.status == .ok && Array(whole.body.readableBytesView) == object)
            #expect(whole.headers[.contentType] == "application/octet-stream" && whole.headers[.contentLength] == "250000")
            let tail = try await client.execute(uri: base, method: .get, headers: [.range: "bytes=240000-"])
            #expect(tail.status == .partialContent && Array(tail.body.readableBytesView) == Array(object[240_000...]))
            #expect(tail.headers[.contentRange] == "bytes 240000-249999/250000")
            let ignored = try await client.execute(uri: base, method: .get, headers: [.range: "bytes=0-10"])
            #expect(ignored.status == .ok && ignored.body.readableBytes == 250_000)
            let beyond = try await client.execute(uri: base, method: .get, headers: [.range: "bytes=250000-"])
            #expect(beyond.status == .rangeNotSatisfiable && beyond.headers[.contentRange] == "bytes */250000")

            // Delete: the owner's alone; then it is gone.
            let deletePath = base
            let byAlice = try await client.execute(
                uri: deletePath, method: .delete, headers: MailboxTests.signedHeaders(Self.alice, "DELETE", deletePath, relay.now + 12))
            #expect(byAlice.status == .forbidden)
            let deleted = try await client.execute(
                uri: deletePath, method: .delete, headers: MailboxTests.signedHeaders(Self.bob, "DELETE", deletePath, relay.now + 13))
            #expect(try deleted.status == .ok && Self.fields(deleted)["deleted"] == .bool(true))
            let again = try await client.execute(
                uri: deletePath, method: .delete, headers: MailboxTests.signedHeaders(Self.bob, "DELETE", deletePath, relay.now + 14))
            #expect(try Self.fields(again)["deleted"] == .bool(false))
            #expect(try await client.execute(uri: base, method: .get).status == .notFound)
        }
    }

    @Test func aKeyBeyondItsQuotaIsRefusedWithRetryAfter() async throws {
        let relay = try await RelayHarness.make(.memory) {
            $0.objects.maximumObjectsPerOwner = 1
        }
        try await relay.test(.router) { client in
            #expect(try await Self.put(client, relay, Self.bob, try ObjectID.random(), offset: 0, size: 16, [], at: 0).status == .ok)
            let refused = try await Self.put(client, relay, Self.bob, try ObjectID.random(), offset: 0, size: 16, [], at: 1)
            #expect(refused.status == .tooManyRequests && PushTests.code(refused) == "quota" && refused.headers[.retryAfter] != nil)
        }
    }

    @Test func theQueryParsesOnlyItsOneForm() throws {
        #expect(try ObjectPutQuery(target: "/x?offset=0&stored=16&expires=9") == ObjectPutQuery(offset: 0, size: 16, expiresAt: 9))
        for bad in [
            "/x", "/x?", "/x?offset=0&stored=16", "/x?offset=0&stored=16&expires=9&x=1", "/x?offset=-1&stored=16&expires=9",
            "/x?offset=+1&stored=16&expires=9", "/x?offset=0&stored=016&expires=9", "/x?offset=0&stored=16&expires=99999999999999999999",
            "/x?offset=0&stored=16&expires=18446744073709551616", "/x?offset=&stored=16&expires=9", "/x?offset=0&&stored=16&expires=9"
        ] {
            #expect(throws: RelayFailure.self, "\(bad)") { try ObjectPutQuery(target: bad) }
        }
        #expect(RelayService.rangeStart("bytes=12-") == 12)
        for ignored in [nil, "bytes=1-2", "bytes=-5", "bytes=a-", "items=1-", "bytes=1-,5-", "bytes=-", "bytes=99999999999999999999-", "bytes=012-"] {
            #expect(RelayService.rangeStart(ignored) == nil)
        }
    }
}
