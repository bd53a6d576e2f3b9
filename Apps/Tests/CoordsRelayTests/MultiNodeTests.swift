import CoordsCore
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing

@testable import CoordsRelay

/// Two `coords-relay` processes on one PostgreSQL database, requests alternating between them and
/// through nginx (deploy/nginx/coords-relay.conf): every protocol rule holds across nodes, a node
/// killed under load loses nothing it acknowledged, and a database restart is a short 503.
@Suite(.serialized) struct MultiNodeTests {
    static let json: HTTPFields = [.contentType: "application/json"]
    static var now: UInt64 { UInt64(Date().timeIntervalSince1970) }

    /// Two relays on a fresh database of `server` (the shared one unless given), and nginx.
    struct Cluster {
        let a: RelayNode, b: RelayNode, nginx: NginxProxy

        static func start(server: PostgresTestServer? = nil, extra: [String] = []) async throws -> Cluster {
            let server = try await {
                if let server { return server }
                return try await PostgresTestServer.shared()
            }()
            let location = try await server.freshDatabase()
            let url = server.url(database: location.database)
            let a = try await RelayNode.start(["--postgres", url, "--postgres-pool-size", "4"] + extra)
            let b = try await RelayNode.start(["--postgres", url, "--postgres-pool-size", "4"] + extra)
            // Both nodes hear each other before a test writes (a notification sent earlier is lost by design).
            if !extra.contains("--no-live") {
                for node in [a, b] { _ = await node.process.waitForOutput("live fan-out listening") }
            }
            let nginx = try await NginxProxy.start(upstreams: [a.port, b.port])
            return Cluster(a: a, b: b, nginx: nginx)
        }

        /// Runs `body` on a new cluster and stops it afterwards, whatever happened.
        static func with(server: PostgresTestServer? = nil, extra: [String] = [], _ body: (Cluster) async throws -> Void) async throws {
            let cluster = try await start(server: server, extra: extra)
            try await withCleanup {
                try await body(cluster)
            } cleanup: {
                await cluster.stop()
            }
        }

        func stop() async {
            await nginx.stop()
            await a.process.stop()
            await b.process.stop()
        }
    }

    static func upload(_ key: Ed25519SigningKey, timestamp: UInt64) throws -> ByteBuffer {
        let location = try Location(latitude: 46.948, longitude: 7.447, timestamp: timestamp * 1000)
        let blob = try LocationBlob.seal(location.wire, for: [key.publicKey])
        return ByteBuffer(bytes: RelayAPI.uploadBody(blob: blob, timestamp: timestamp, signer: key).serialized())
    }

    static func delete(_ key: Ed25519SigningKey, timestamp: UInt64) throws -> ByteBuffer {
        ByteBuffer(bytes: try RelayAPI.prepareDelete(timestamp: timestamp, signer: key, server: "https://relay.test").body)
    }

    /// The stored upload time of each id, fetched from the node on `port` (one request of ≤ 50 ids).
    static func storedTimestamps(port: Int, _ keys: [Ed25519SigningKey]) async throws -> [String: UInt64] {
        var found: [String: UInt64] = [:]
        for chunk in stride(from: 0, to: keys.count, by: 50).map({ Array(keys[$0..<min($0 + 50, keys.count)]) }) {
            let ids = chunk.map(\.publicKey.base64URL)
            let response = try await HTTPProbe.request(
                port: port, method: .post, path: "/api/location", headers: json,
                body: ByteBuffer(bytes: JSONValue.object(["ids": .array(ids.map { .string($0) })]).serialized()))
            #expect(response.status == .ok)
            for id in ids {
                if let timestamp = response.json?.objectValue?[id]?.objectValue?["timestamp"]?.uint64Value { found[id] = timestamp }
            }
        }
        return found
    }

    static func signed(_ signer: Ed25519SigningKey, _ method: String, _ path: String, _ timestamp: UInt64) -> HTTPFields {
        MailboxTests.signedHeaders(signer, method, path, timestamp)
    }

    @Test func everyRuleHoldsAcrossNodesAndThroughNginx() async throws {
        try await Cluster.with(extra: ["--mailbox-size", "3"]) { cluster in
            let (a, b, nginx) = (cluster.a.port, cluster.b.port, cluster.nginx.port)
            let key = try Ed25519SigningKey.generate()
            let id = key.publicKey.base64URL
            let t = Self.now

            // Upload on A, fetch on B and through nginx.
            let first = try Self.upload(key, timestamp: t - 10)
            #expect(try await HTTPProbe.status(port: a, method: .put, path: "/api/location", headers: Self.json, body: first) == .noContent)
            #expect(try await Self.storedTimestamps(port: b, [key])[id] == t - 10)
            #expect(try await Self.storedTimestamps(port: nginx, [key])[id] == t - 10)
            // Replay on B of what A accepted, and a rollback: 409.
            #expect(try await HTTPProbe.status(port: b, method: .put, path: "/api/location", headers: Self.json, body: first) == .conflict)
            #expect(
                try await HTTPProbe.status(
                    port: b, method: .put, path: "/api/location", headers: Self.json,
                    body: try Self.upload(key, timestamp: t - 20)) == .conflict)
            // A newer upload through nginx; a signed delete on A; the old upload replayed on B: 409.
            #expect(
                try await HTTPProbe.status(
                    port: nginx, method: .put, path: "/api/location", headers: Self.json,
                    body: try Self.upload(key, timestamp: t - 5)) == .noContent)
            #expect(
                try await HTTPProbe.status(
                    port: a, method: .delete, path: "/api/location", headers: Self.json,
                    body: try Self.delete(key, timestamp: t - 4)) == .noContent)
            #expect(try await Self.storedTimestamps(port: b, [key])[id] == nil)
            #expect(
                try await HTTPProbe.status(
                    port: b, method: .put, path: "/api/location", headers: Self.json,
                    body: try Self.upload(key, timestamp: t - 5)) == .conflict)

            // Mailbox: a request signature used on A is refused on B (401).
            let bob = MailboxTests.bob
            let carol = MailboxTests.carol
            let envelope = try MailboxTests.envelope("across nodes", to: bob, now: t)
            #expect(
                try await HTTPProbe.status(
                    port: nginx, method: .post, path: "/v1/relay/messages", headers: Self.json,
                    body: MailboxTests.body(envelope)) == .accepted)
            #expect(
                try await HTTPProbe.status(
                    port: b, method: .post, path: "/v1/relay/messages", headers: Self.json,
                    body: MailboxTests.body(envelope)) == .conflict)
            let path = MailboxTests.listPath(bob)
            let headers = Self.signed(bob, "GET", path, t)
            let listed = try await HTTPProbe.request(port: a, method: .get, path: path, headers: headers)
            #expect(listed.json?.objectValue?["packets"]?.arrayValue?.count == 1)
            let replayed = try await HTTPProbe.request(port: b, method: .get, path: path, headers: headers)
            #expect(replayed.status == .unauthorized)
            #expect(replayed.json?.objectValue?["error"]?.stringValue == "replayed_signature")
            // Ack on A; B lists nothing; the id cannot be posted again anywhere.
            let ackPath = "/v1/relay/messages/\(envelope.id)/ack"
            #expect(try await HTTPProbe.status(port: a, method: .post, path: ackPath, headers: Self.signed(bob, "POST", ackPath, t)) == .ok)
            let limited = MailboxTests.listPath(bob, limit: 10)
            let empty = try await HTTPProbe.request(port: b, method: .get, path: limited, headers: Self.signed(bob, "GET", limited, t))
            #expect(empty.json?.objectValue?["packets"] == .array([]))
            #expect(
                try await HTTPProbe.status(
                    port: nginx, method: .post, path: "/v1/relay/messages", headers: Self.json,
                    body: MailboxTests.body(envelope)) == .conflict)

            // The per-recipient cap (3) is counted across nodes.
            var statuses: [HTTPResponse.Status] = []
            for (n, port) in [a, b, a, b, nginx].enumerated() {
                let message = try MailboxTests.envelope("cap \(n)", to: carol, now: t)
                statuses.append(
                    try await HTTPProbe.status(
                        port: port, method: .post, path: "/v1/relay/messages", headers: Self.json,
                        body: MailboxTests.body(message)))
            }
            #expect(statuses == [.accepted, .accepted, .accepted, .tooManyRequests, .tooManyRequests])

            // /metrics says the rate limits are per node.
            let metrics = try await TestClientText.get(port: a, path: "/metrics")
            #expect(metrics.contains("rate limits are per node"), "\(metrics.prefix(400))")
            #expect(metrics.contains("coords_relay_rate_limit_info{scope=\"node\""), "\(metrics.prefix(400))")
        }
    }

    /// PROTOCOL.md §8.6: a subscriber on node B hears an upload, a delete and an envelope that
    /// node A accepted (LISTEN/NOTIFY through the shared database), and through nginx.
    /// §12.4 objects across nodes and through the shipped nginx file: a 4 MiB part (the largest)
    /// passes the proxy, the next part goes to the other node, and the object comes back whole and
    /// from a byte, from either node.
    @Test func objectsPassNginxAndSpanNodes() async throws {
        try await Cluster.with { cluster in
            let bob = try Ed25519SigningKey.generate()
            let oid = try ObjectID.random()
            let part = Objects.maximumPartByteCount
            let object = (0..<(part + 1000)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            let expires = Self.now + 3600
            func put(_ port: Int, _ offset: Int, _ bytes: ArraySlice<UInt8>) async throws -> (status: HTTPResponse.Status, json: JSONValue?) {
                let path = "/v1/relay/objects/\(oid.base64URL)?offset=\(offset)&stored=\(object.count)&expires=\(expires)"
                var headers = MailboxTests.signedHeaders(bob, "PUT", path, Self.now)
                headers[.contentType] = "application/octet-stream"
                return try await HTTPProbe.request(port: port, method: .put, path: path, headers: headers, body: ByteBuffer(bytes: bytes))
            }
            let first = try await put(cluster.nginx.port, 0, object[0..<part])
            #expect(first.status == .ok && first.json?.objectValue?["stored"]?.uint64Value == UInt64(part), "\(first)")
            let second = try await put(cluster.b.port, part, object[part...])
            #expect(second.json?.objectValue?["complete"] == .bool(true), "\(second)")
            for (port, range, expected) in [
                (cluster.nginx.port, nil, object[...]), (cluster.a.port, "bytes=\(part - 5)-", object[(part - 5)...]),
                (cluster.nginx.port, "bytes=1-", object[1...])
            ] {
                let body = try await TestClient.withClient(host: "127.0.0.1", port: port) { client in
                    var headers = HTTPFields()
                    if let range { headers[.range] = range }
                    let response = try await client.execute(
                        TestClient.Request("/v1/relay/objects/\(oid.base64URL)", method: .get, authority: "127.0.0.1", headers: headers))
                    #expect(response.status == (range == nil ? .ok : .partialContent))
                    return response.body.map { Array($0.readableBytesView) } ?? []
                }
                #expect(body == Array(expected), "port \(port) range \(range ?? "none"): \(body.count) bytes")
            }
        }
    }

    @Test func liveNoticesFanOutAcrossNodes() async throws {
        try await Cluster.with { cluster in
            let alice = try Ed25519SigningKey.generate()
            let bob = try Ed25519SigningKey.generate()
            let id = alice.publicKey.base64URL
            let now = Self.now
            let envelope = try MailboxTests.envelope(from: alice, to: bob, now: now)
            for (watch, write) in [(cluster.b.port, cluster.a.port), (cluster.nginx.port, cluster.nginx.port)] {
                let base = write == cluster.a.port ? now : now + 10
                let seen = try await LiveChannelTests.session(
                    port: watch, send: [LiveFrame.subscribe(ids: [id], mailbox: LiveFrame.MailboxProof(signer: bob, timestamp: base)).text],
                    action: {
                        let put = try await HTTPProbe.request(
                            port: write, method: .put, path: "/api/location", headers: Self.json, body: try Self.upload(alice, timestamp: base))
                        #expect(put.status == .noContent)
                    },
                    until: { $0.count >= (write == cluster.a.port ? 4 : 3) },
                    timeout: .seconds(40),  // the whole suite runs in parallel with other PostgreSQL-heavy suites
                    onFrame: { frame in
                        // The delete only after the location arrived: a node relaying another's upload reads the
                        // record when the announcement comes, and a delete committed before that read leaves
                        // nothing to relay (PROTOCOL.md §8.6) — the notice would be lost by design, not by a bug.
                        guard case .location = frame else { return }
                        let delete = try await HTTPProbe.request(
                            port: write, method: .delete, path: "/api/location", headers: Self.json, body: try Self.delete(alice, timestamp: base + 1))
                        #expect(delete.status == .noContent)
                        if write == cluster.a.port {
                            let posted = try await HTTPProbe.request(
                                port: write, method: .post, path: "/v1/relay/messages", headers: Self.json, body: MailboxTests.body(envelope))
                            #expect(posted.status == .accepted)
                        }
                    })
                #expect(seen.frames.first == .subscribed(ids: 1, mailbox: true), "\(seen)")
                guard seen.frames.count >= 3, case .location(let notice) = seen.frames[1], case .deleted(let deleted, let timestamp, _) = seen.frames[2] else {
                    Issue.record("expected subscribed, location, deleted: \(seen.frames)")
                    continue
                }
                #expect(notice.id == id && notice.timestamp == base && deleted == id && timestamp == base + 1)
                if write == cluster.a.port { #expect(seen.frames.last == .message(id: envelope.id)) }
            }
        }
    }

    /// docs/UPGRADING.md as an operator runs it, from the previous schema: a database exactly as
    /// the previous release left it (its migrations only) holding an upload and a push
    /// registration; node A of the new release starts and migrates it while the other node still
    /// runs the old statements (they keep working: the new column has a default); then node B.
    /// Nothing written before is lost, both nodes serve it, and a database migrated by a newer
    /// release than a node's is refused at that node's start with the sentence the guide quotes.
    @Test func upgradingATwoNodeClusterFromThePreviousSchema() async throws {
        let server = try await PostgresTestServer.shared()
        let database = try await server.freshDatabase().database
        let url = server.url(database: database)
        let previous = PostgresRelayStore.schemaVersion - 1
        var script = "CREATE TABLE coords_relay_migrations (version INT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now());\n"
        for migration in PostgresRelayStore.migrations where migration.version <= previous {
            for statement in migration.statements { script += statement.sql + ";\n" }
            script += "INSERT INTO coords_relay_migrations (version) VALUES (\(migration.version));\n"
        }
        try await server.sql(script, database: database)
        // What the previous release stored: an upload and a push registration (its INSERT).
        let key = try Ed25519SigningKey.generate()
        let t = Self.now
        let hex = { (bytes: [UInt8]) in "'\\x" + bytes.map { String(format: "%02x", $0) }.joined() + "'" }
        try await server.sql(
            """
            INSERT INTO relay_records (key, blob, ts, signature, updated)
                VALUES (\(hex(key.publicKey.rawRepresentation)), \(hex([1, 2, 3])), \(t - 50), \(hex([UInt8](repeating: 7, count: 64))), \(t));
            INSERT INTO push_endpoints (recipient, endpoint, expires_at) VALUES ('old-node-recipient', 'https://push.example/up', \(t + 3600));
            """, database: database)
        // Node A of the new release: migrates at start.
        let a = try await RelayNode.start(["--postgres", url, "--postgres-pool-size", "2", "--no-live"])
        try await withCleanup {
            let version = try await server.query("SELECT max(version) FROM coords_relay_migrations", database: database)
            #expect(version.trimmingCharacters(in: .whitespacesAndNewlines) == String(PostgresRelayStore.schemaVersion))
            // An old node still running: its statements work on the new schema.
            try await server.sql(
                """
                INSERT INTO push_endpoints (recipient, endpoint, expires_at) VALUES ('old-node-later', 'https://push.example/up2', \(t + 3600));
                SELECT endpoint, expires_at FROM push_endpoints WHERE recipient = 'old-node-recipient';
                """, database: database)
            // Node B of the new release.
            let b = try await RelayNode.start(["--postgres", url, "--postgres-pool-size", "2", "--no-live"])
            try await withCleanup {
                for port in [a.port, b.port] {
                    #expect(try await Self.storedTimestamps(port: port, [key])[key.publicKey.base64URL] == t - 50)
                    #expect(try await HTTPProbe.status(port: port, method: .get, path: "/readyz") == .ok)
                }
                #expect(
                    try await HTTPProbe.status(
                        port: b.port, method: .put, path: "/api/location", headers: Self.json, body: try Self.upload(key, timestamp: t - 40))
                        == .noContent)
                #expect(try await Self.storedTimestamps(port: a.port, [key])[key.publicKey.base64URL] == t - 40)
                let store = try await PostgresRelayStore(location: PostgresLocation(url: url), poolSize: 1, logger: StoreUnderTest.quietLogger)
                #expect(try await store.pushRegistration(recipient: "old-node-recipient", now: t)?.registeredBy == "")
                #expect(try await store.pushRegistration(recipient: "old-node-later", now: t)?.endpoint == "https://push.example/up2")
                await store.close()
            } cleanup: {
                await b.process.stop()
            }
            // A database a newer release migrated: a node of this one refuses to start, saying so.
            try await server.sql(
                "INSERT INTO coords_relay_migrations (version) VALUES (\(PostgresRelayStore.schemaVersion + 1))", database: database)
            do {
                let refused = try await RelayNode.start(["--postgres", url, "--no-live"])
                await refused.process.stop()
                Issue.record("a relay started on a database of a newer schema")
            } catch {
                #expect("\(error)".contains("newer than this relay's"), "\(error)")
            }
        } cleanup: {
            await a.process.stop()
        }
    }

    @Test func racingUploadsFromBothNodesLeaveExactlyTheNewest() async throws {
        try await Cluster.with { cluster in
            let key = try Ed25519SigningKey.generate()
            let t = Self.now
            let timestamps = (0..<100).map { t - 150 + UInt64($0) }.shuffled()
            let bodies = try timestamps.map { try Self.upload(key, timestamp: $0) }
            let ports = [cluster.a.port, cluster.b.port]
            let statuses = try await withThrowingTaskGroup(of: [HTTPResponse.Status].self) { group in
                for lane in 0..<8 {
                    group.addTask {
                        var statuses: [HTTPResponse.Status] = []
                        for index in stride(from: lane, to: bodies.count, by: 8) {
                            statuses.append(
                                try await HTTPProbe.status(
                                    port: ports[index % 2], method: .put, path: "/api/location",
                                    headers: Self.json, body: bodies[index]))
                        }
                        return statuses
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(statuses.allSatisfy { $0 == .noContent || $0 == .conflict }, "\(Set(statuses))")
            #expect(statuses.contains(.noContent))
            #expect(try await Self.storedTimestamps(port: cluster.b.port, [key])[key.publicKey.base64URL] == t - 51)
            #expect(try await Self.storedTimestamps(port: cluster.a.port, [key])[key.publicKey.base64URL] == t - 51)
        }
    }

    /// Load on both nodes and nginx; one node is killed with SIGKILL in the middle. Every upload
    /// that was answered 2xx is stored afterwards (at that version or a newer one).
    @Test func killingANodeUnderLoadLosesNoAcknowledgedUpload() async throws {
        try await Cluster.with { cluster in
            let keys = try (0..<12).map { _ in try Ed25519SigningKey.generate() }
            let ports = [cluster.a.port, cluster.b.port, cluster.nginx.port]
            let acknowledged = Acknowledged()
            let start = Self.now - 250
            let load = Task {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (lane, key) in keys.enumerated() {
                        group.addTask {
                            for round in 0..<40 {
                                let timestamp = start + UInt64(round)
                                let port = ports[(lane + round) % 3]
                                let status = try? await HTTPProbe.status(
                                    port: port, method: .put, path: "/api/location", headers: Self.json,
                                    body: try Self.upload(key, timestamp: timestamp))
                                if let status, (200..<300).contains(status.code) {
                                    acknowledged.versions.withLock { $0[key.publicKey.base64URL] = max($0[key.publicKey.base64URL] ?? 0, timestamp) }
                                }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            // Kill A once the load is well under way.
            while acknowledged.versions.withLock({ $0.count }) < keys.count { try await Task.sleep(for: .milliseconds(10)) }
            let status = await cluster.a.process.stop(SIGKILL)
            #expect(status & 0x7f == SIGKILL)
            try await load.value
            let answered = acknowledged.versions.withLock { $0 }
            let stored = try await Self.storedTimestamps(port: cluster.b.port, keys)
            for key in keys {
                let id = key.publicKey.base64URL
                let acked = try #require(answered[id])
                #expect((stored[id] ?? 0) >= acked, "acknowledged \(acked), stored \(stored[id].map(String.init) ?? "nothing")")
            }
            // The survivors go on serving, through nginx too.
            let fresh = try Ed25519SigningKey.generate()
            #expect(
                try await HTTPProbe.status(
                    port: cluster.nginx.port, method: .put, path: "/api/location", headers: Self.json,
                    body: try Self.upload(fresh, timestamp: Self.now)) == .noContent)
        }
    }

    /// The database stops under load: both relays answer 503 with clear JSON while it is down and
    /// serve again once it is back, without being restarted.
    @Test func aDatabaseRestartIsAShort503() async throws {
        let server = try await PostgresTestServer.start(watching: getpid())
        try await withCleanup {
            try await Cluster.with(server: server) { cluster in
                let key = try Ed25519SigningKey.generate()
                let t = Self.now
                #expect(
                    try await HTTPProbe.status(
                        port: cluster.a.port, method: .put, path: "/api/location", headers: Self.json,
                        body: try Self.upload(key, timestamp: t - 100)) == .noContent)
                try await server.control("kill")
                // An upload on A and a fetch on B while it is down: 503, JSON, within the 5 s store deadline.
                let started = ContinuousClock.now
                let down = try await HTTPProbe.request(
                    port: cluster.a.port, method: .put, path: "/api/location", headers: Self.json,
                    body: try Self.upload(key, timestamp: t - 99))
                #expect(down.status == .serviceUnavailable)
                #expect(down.json?.objectValue?["error"]?.stringValue == "store_unavailable", "\(String(describing: down.json))")
                let fetch = try await HTTPProbe.request(
                    port: cluster.b.port, method: .post, path: "/api/location", headers: Self.json,
                    body: ByteBuffer(bytes: JSONValue.object(["ids": .array([.string(key.publicKey.base64URL)])]).serialized()))
                #expect(fetch.status == .serviceUnavailable)
                #expect(fetch.json?.objectValue?["error"]?.stringValue == "store_unavailable")
                // Two 5 s deadlines and their HTTP round trips: bounded, even on a loaded machine.
                #expect(ContinuousClock.now - started < .seconds(30))
                // Alive, but not ready: a load balancer checking /readyz stops sending traffic here.
                #expect(try await HTTPProbe.status(port: cluster.nginx.port, method: .get, path: "/healthz") == .ok)
                let notReady = try await HTTPProbe.request(port: cluster.a.port, method: .get, path: "/readyz")
                #expect(notReady.status == .serviceUnavailable)
                #expect(notReady.json?.objectValue?["error"]?.stringValue == "store_unavailable")
                try await server.control("start")
                // Back within a few seconds, on both nodes, with what was acknowledged before.
                for (offset, port) in [cluster.a.port, cluster.b.port].enumerated() {
                    let deadline = ContinuousClock.now + .seconds(30)
                    var status = HTTPResponse.Status.serviceUnavailable
                    while status != .noContent, ContinuousClock.now < deadline {
                        status =
                            (try? await HTTPProbe.status(
                                port: port, method: .put, path: "/api/location", headers: Self.json,
                                body: try Self.upload(key, timestamp: t - 90 + UInt64(offset)))) ?? .serviceUnavailable
                        if status != .noContent { try await Task.sleep(for: .milliseconds(200)) }
                    }
                    #expect(status == .noContent)
                    #expect(try await HTTPProbe.status(port: port, method: .get, path: "/readyz") == .ok)
                }
                #expect(try await Self.storedTimestamps(port: cluster.nginx.port, [key])[key.publicKey.base64URL] == t - 89)
            }
        } cleanup: {
            await server.stop()
        }
    }
}

/// The newest acknowledged upload time per id, shared by the load lanes.
final class Acknowledged: Sendable {
    let versions = Mutex<[String: UInt64]>([:])
}

/// GET returning the body as text.
enum TestClientText {
    static func get(port: Int, path: String) async throws -> String {
        try await TestClient.withClient(host: "127.0.0.1", port: port) { client in
            let response = try await client.execute(TestClient.Request(path, method: .get, authority: "127.0.0.1"))
            return response.body.map { String(buffer: $0) } ?? ""
        }
    }
}
