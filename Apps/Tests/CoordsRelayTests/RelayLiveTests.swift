import CoordsCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import CoordsRelay

/// Tests over a real loopback socket (`.live` binds port 0), on the persistent stores.
@Suite struct RelayLiveTests {
    @Test(arguments: [StoreKind.lmdb, .postgres])
    func restartOnTheSameDataKeepsEverything(_ kind: StoreKind) async throws {
        let open = try await StoreUnderTest.reopenable(kind)
        let clock = ManualClock(milliseconds: RelayHarness.start * 1000)
        let key = try Ed25519SigningKey.generate()
        let id = key.publicKey.base64URL

        let first = RelayHarness(store: try await open(), clock: clock)
        try await first.app.test(.live) { client in
            let put = try await client.location(.put, try first.uploadBody(key))
            #expect(put.status == .noContent)
        }
        await first.store.close()

        let second = RelayHarness(store: try await open(), clock: clock)
        try await second.app.test(.live) { client in
            let fetch = try await client.location(.post, RelayHarness.fetchBody([id]))
            let entry = try #require(fetch.json?.objectValue?[id]?.objectValue)
            #expect(entry["updated"]?.uint64Value == RelayHarness.start)
            // The replay protection survived the restart too.
            let replay = try await client.location(.put, try second.uploadBody(key))
            #expect(replay.status == .conflict)
        }
        await second.store.close()
    }

    @Test(arguments: [StoreKind.lmdb, .postgres])
    func manyClientsAtOnceAndEveryAcknowledgedUploadIsReadable(_ kind: StoreKind) async throws {
        let relay = RelayHarness(store: try await StoreUnderTest.reopenable(kind)())
        let keys = try (0..<24).map { _ in try Ed25519SigningKey.generate() }
        let bodies = try keys.map { key in try (0..<5).map { round in try relay.uploadBody(key, timestamp: relay.now + UInt64(round)) } }
        let acknowledged = try await relay.app.test(.live) { client -> [String: UInt64] in
            let port = try #require(client.port)
            return try await withThrowingTaskGroup(of: (String, UInt64)?.self) { group in
                for (index, key) in keys.enumerated() {
                    group.addTask {
                        try await TestClient.withClient(host: "127.0.0.1", port: port) { connection in
                            var last: UInt64?
                            for (round, body) in bodies[index].enumerated() {
                                let put = try await connection.put("/api/location", headers: RelayHarness.json, body: body)
                                if put.status == .noContent { last = relay.now + UInt64(round) }
                                _ = try await connection.post(
                                    "/api/location", headers: RelayHarness.json,
                                    body: RelayHarness.fetchBody(keys.prefix(50).map(\.publicKey.base64URL)))
                            }
                            return last.map { (key.publicKey.base64URL, $0) }
                        }
                    }
                }
                var acknowledged: [String: UInt64] = [:]
                for try await result in group { if let (id, timestamp) = result { acknowledged[id] = timestamp } }
                return acknowledged
            }
        }
        #expect(acknowledged.count == keys.count)
        // Every acknowledged upload is in the store, at its last acknowledged version.
        let stored = try await relay.store.get(keys: keys.map { try Bytes32($0.publicKey.rawRepresentation) }, updatedSince: 0)
        for key in keys {
            let record = try #require(stored[try Bytes32(key.publicKey.rawRepresentation)])
            #expect(record.timestamp == acknowledged[key.publicKey.base64URL])
        }
        await relay.store.close()
    }
}
