import CoordsCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import CoordsRelay

/// The PostgreSQL store against a real server (Debian's postgresql, started by the suite in a
/// temporary directory on loopback; `make deps` installs it — without it these tests fail, they
/// never skip).
@Suite(.serialized) struct PostgresStoreTests {
    static func key(_ n: UInt8) throws -> Bytes32 { try Bytes32([UInt8](repeating: n, count: 32)) }
    static func record(_ timestamp: UInt64, updated: UInt64 = 1_800_000_000) -> RelayRecord {
        RelayRecord(
            blob: [1, 2, 3, UInt8(truncatingIfNeeded: timestamp)], timestamp: timestamp, signature: [UInt8](repeating: 9, count: 64),
            updated: updated)
    }

    /// Runs `body` with a fresh server, stopping it afterwards whatever happens.
    static func withServer(_ body: (PostgresTestServer) async throws -> Void) async throws {
        let server = try await PostgresTestServer.start()
        try await withCleanup {
            try await body(server)
        } cleanup: {
            await server.stop()
        }
    }

    @Test func storeRulesMailboxAndSchema() async throws {
        try await Self.withServer { server in
            let location = try await server.freshDatabase()
            let store = try await PostgresRelayStore(location: location, poolSize: 4, logger: StoreUnderTest.quietLogger)

            // Uploads: newest timestamp wins, replays and rollbacks are refused.
            let a = try Self.key(1)
            let b = try Self.key(2)
            #expect(try await store.put(key: a, record: Self.record(100)) == .stored)
            #expect(try await store.put(key: a, record: Self.record(100)) == .stale(current: 100))
            #expect(try await store.put(key: a, record: Self.record(99)) == .stale(current: 100))
            #expect(try await store.put(key: a, record: Self.record(101)) == .stored)
            let found = try await store.get(keys: [a, b], updatedSince: 0)
            #expect(found.count == 1 && found[a] == Self.record(101))
            #expect(try await store.get(keys: [a], updatedSince: 1_800_000_001).isEmpty)
            #expect(try await store.get(keys: [], updatedSince: 0).isEmpty)
            // Deletes leave a tombstone that refuses older uploads.
            #expect(try await store.delete(key: a, timestamp: 100, now: 1_800_000_000) == .stale(current: 101))
            #expect(try await store.delete(key: a, timestamp: 102, now: 1_800_000_000) == .deleted)
            #expect(try await store.delete(key: b, timestamp: 5, now: 1_800_000_000) == .notFound)
            #expect(try await store.put(key: a, record: Self.record(102)) == .stale(current: 102))
            #expect(try await store.put(key: a, record: Self.record(103)) == .stored)
            #expect(try await store.count() == 1)
            #expect(try await store.sweep(updatedBefore: 1_800_000_001, tombstonesBefore: 1_800_000_001) == 1)
            #expect(try await store.count() == 0)

            // Mailbox: ids accepted once, per-recipient quotas by class, acks only by the owner.
            let bob = String(repeating: "b", count: 64)
            let carol = String(repeating: "c", count: 64)
            let limits = MailboxLimits(perRecipient: 2, total: 10, perRecipientUnauthenticated: 1)
            func entry(_ id: String, _ recipient: String = bob, expires: UInt64 = 2_000, authenticated: Bool = true) -> MailboxEntry {
                MailboxEntry(id: id, recipient: recipient, expiresAt: expires, envelope: Array("{\"id\":\"\(id)\"}".utf8), authenticated: authenticated)
            }
            #expect(try await store.mailboxPost(entry("m1"), limits: limits, now: 1_000) == .stored)
            #expect(try await store.mailboxPost(entry("m1"), limits: limits, now: 1_000) == .duplicate)
            #expect(try await store.mailboxPost(entry("u1", authenticated: false), limits: limits, now: 1_000) == .stored)
            #expect(try await store.mailboxPost(entry("u2", authenticated: false), limits: limits, now: 1_000) == .recipientFull)
            #expect(try await store.mailboxPost(entry("m2"), limits: limits, now: 1_000) == .stored)
            #expect(try await store.mailboxPost(entry("m3"), limits: limits, now: 1_000) == .recipientFull)
            #expect(try await store.mailboxList(recipient: bob, now: 1_000, limit: 10).map(\.id) == ["m1", "u1", "m2"])
            #expect(try await store.mailboxList(recipient: bob, now: 1_000, limit: 10).map(\.authenticated) == [true, false, true])
            #expect(try await store.mailboxAck(id: "m1", recipient: carol, tombstoneUntil: 3_000) == false)
            #expect(try await store.mailboxAck(id: "m1", recipient: bob, tombstoneUntil: 3_000) == true)
            #expect(try await store.mailboxPost(entry("m1"), limits: limits, now: 1_000) == .duplicate)  // tombstoned
            #expect(try await store.mailboxPost(entry("e1", carol, expires: 1_500), limits: limits, now: 1_000) == .stored)
            #expect(try await store.mailboxCount() == 3)
            #expect(try await store.mailboxSweep(now: 1_600) == 1)
            #expect(try await store.mailboxList(recipient: carol, now: 1_000, limit: 10).isEmpty)

            // The schema: reopening migrates nothing; a newer schema is refused in words.
            let again = try await PostgresRelayStore(location: location, poolSize: 2, logger: StoreUnderTest.quietLogger)
            #expect(try await again.storedSchemaVersion() == PostgresRelayStore.schemaVersion)
            #expect(try await again.count() == 0)
            await again.close()
            await store.close()
            try await server.sql("INSERT INTO coords_relay_migrations (version) VALUES (99)", database: location.database)
            do {
                _ = try await PostgresRelayStore(location: location, logger: StoreUnderTest.quietLogger)
                Issue.record("a newer schema must be refused")
            } catch let error as RelayStoreError {
                #expect(error.description.contains("newer than this relay"))
            }
            // The relay process: one line, exit 69.
            do {
                _ = try await PostgresTestServer.runOffPool(
                    try #require(RelayProcessTests.executable).path,
                    ["--port", "0", "--postgres", server.url(database: location.database)])
                Issue.record("coords-relay started on a newer schema")
            } catch let error as PostgresTestServerError {
                #expect(error.description.contains("status \(69 << 8)") && error.description.contains("newer than this relay"), "\(error)")
            }
        }
    }

    /// A start waits for the schema migration longer than a request waits for the database:
    /// another node holding the migration lock for 10 s (longer than the 1 s request timeout)
    /// delays the start, it does not fail it. Only a migration that outlasts the migration
    /// timeout fails, in words. (CI once failed here: under load the fsynced DDL of a fresh
    /// schema took more than the 5 s meant for requests.)
    @Test func theMigrationWaitsLongerThanARequest() async throws {
        let server = try await PostgresTestServer.shared()
        let location = try await server.freshDatabase()
        // Another "node": holds the advisory lock in its own session for 10 s (a loaded machine may take seconds to see it held).
        let holder = Task {
            try await server.sql(
                "SELECT pg_advisory_lock(\(PostgresRelayStore.migrationLock)); SELECT pg_sleep(10);", database: location.database)
        }
        var held = false
        for _ in 0..<250 where !held {
            let count = try await server.query(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                database: location.database)
            held = count.trimmingCharacters(in: .whitespacesAndNewlines) != "0"
            if !held { try await Task.sleep(for: .milliseconds(20)) }
        }
        try #require(held, "the holder never took the lock")
        do {
            _ = try await PostgresRelayStore(
                location: location, poolSize: 2, operationTimeout: .seconds(1), migrationTimeout: .milliseconds(1500),
                logger: StoreUnderTest.quietLogger)
            Issue.record("a migration stuck behind the lock must time out")
        } catch let error as RelayStoreUnavailable {
            #expect(error.description.contains("migrate the schema"), "\(error)")
        }
        let started = ContinuousClock.now
        let store = try await PostgresRelayStore(
            location: location, poolSize: 2, operationTimeout: .seconds(1), migrationTimeout: .seconds(60),
            logger: StoreUnderTest.quietLogger)
        #expect(ContinuousClock.now - started > .milliseconds(500), "the start must have waited for the lock")
        #expect(try await store.storedSchemaVersion() == PostgresRelayStore.schemaVersion)
        await store.close()
        try await holder.value
    }

    /// The rules run inside PostgreSQL (coords_put, coords_delete): a random sequence of uploads
    /// and deletes on a few keys gets exactly the answers of the in-memory store, which applies
    /// RelayStoreRules in Swift.
    @Test func databaseRulesMatchTheSwiftRules() async throws {
        let postgres = try await StoreUnderTest.store(.postgres)
        let memory = MemoryRelayStore()
        var generator = SystemRandomNumberGenerator()
        let keys = try (1...3).map { try Self.key($0) }
        for step in 0..<300 {
            let key = keys[Int.random(in: 0..<keys.count, using: &generator)]
            let timestamp = UInt64.random(in: 0...40, using: &generator)
            if Bool.random(using: &generator) {
                let record = Self.record(timestamp, updated: UInt64(step))
                #expect(try await postgres.put(key: key, record: record) == memory.put(key: key, record: record), "step \(step)")
            } else {
                #expect(
                    try await postgres.delete(key: key, timestamp: timestamp, now: UInt64(step))
                        == memory.delete(key: key, timestamp: timestamp, now: UInt64(step)), "step \(step)")
            }
        }
        #expect(try await postgres.get(keys: keys, updatedSince: 0) == memory.get(keys: keys, updatedSince: 0))
        await postgres.close()
    }

    /// `--postgres-read`: fetches read the read pool first; one that does not answer (here a
    /// closed port) costs a fetch at most a second before the primary answers, and the next
    /// fetches go to the primary at once while the pool is paused.
    @Test func fetchesFallBackToThePrimaryWhenTheReadPoolDoesNotAnswer() async throws {
        let server = try await PostgresTestServer.shared()
        let database = try await server.freshDatabase().database
        let location = try PostgresLocation(url: server.url(database: database))
        let nowhere = try PostgresLocation(url: "postgres://coords:x@127.0.0.1:9/\(database)?sslmode=disable")
        let store = try await PostgresRelayStore(location: location, readLocation: nowhere, poolSize: 2, logger: StoreUnderTest.quietLogger)
        #expect(store.readLocation == nowhere)
        #expect(try await store.put(key: try Self.key(9), record: Self.record(5)) == .stored)
        let started = ContinuousClock.now
        #expect(try await store.get(keys: [try Self.key(9)], updatedSince: 0)[try Self.key(9)] == Self.record(5))
        #expect(ContinuousClock.now - started < .seconds(4))
        let again = ContinuousClock.now
        #expect(try await store.get(keys: [try Self.key(9)], updatedSince: 0)[try Self.key(9)] == Self.record(5))
        #expect(ContinuousClock.now - again < .milliseconds(900))  // paused: straight to the primary
        await store.close()
    }

    /// TLS when the URL asks for it: with `sslmode=require` the server reports the relay's
    /// connections as encrypted; `verify-full` refuses the test server's self-signed certificate
    /// with an error that names the server, never a crash.
    @Test func tlsWhenTheURLAsksForIt() async throws {
        let server = try await PostgresTestServer.shared()
        let database = try await server.freshDatabase().database
        let location = try PostgresLocation(url: server.url(database: database) + "?sslmode=require")
        #expect(location.sslMode == "require")
        let store = try await PostgresRelayStore(location: location, poolSize: 2, logger: StoreUnderTest.quietLogger)
        #expect(try await store.put(key: try Self.key(7), record: Self.record(5)) == .stored)
        let encrypted = try await server.query(
            """
            SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a ON a.pid = s.pid WHERE a.datname = '\(database)' AND s.ssl
            """)
        #expect((Int(encrypted.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) >= 1, "\(encrypted)")
        await store.close()
        // Without sslmode: libpq's default, prefer — encrypted because the server offers TLS
        // (its self-signed certificate is not verified, as with libpq; verify-full does that).
        let plain = try PostgresLocation(url: server.url(database: database))
        #expect(plain.sslMode == "prefer")
        let preferring = try await PostgresRelayStore(location: plain, poolSize: 1, logger: StoreUnderTest.quietLogger)
        #expect(try await preferring.put(key: try Self.key(8), record: Self.record(5)) == .stored)
        let encryptedToo = try await server.query(
            """
            SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a ON a.pid = s.pid
            WHERE a.datname = '\(database)' AND s.ssl AND a.backend_type = 'client backend' AND a.pid <> pg_backend_pid()
            """)
        #expect((Int(encryptedToo.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) >= 1, "\(encryptedToo)")
        let unencrypted = try await server.query(
            """
            SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a ON a.pid = s.pid
            WHERE a.datname = '\(database)' AND NOT s.ssl AND a.backend_type = 'client backend' AND a.pid <> pg_backend_pid()
            """)
        #expect(unencrypted.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "\(unencrypted)")
        await preferring.close()
        let strict = try PostgresLocation(url: server.url(database: database) + "?sslmode=verify-full")
        do {
            let refused = try await PostgresRelayStore(location: strict, operationTimeout: .seconds(5), logger: StoreUnderTest.quietLogger)
            await refused.close()
            Issue.record("verify-full must refuse a self-signed certificate")
        } catch {
            #expect("\(error)".contains("TLS with PostgreSQL at 127.0.0.1"), "\(error)")
        }
    }

    /// The packed fetch answer is read with checked lengths: every truncation, negative and huge
    /// lengths, and random bytes are refused with an error, never a trap.
    @Test func packedFetchAnswersNeverTrap() throws {
        func pack(_ key: UInt8, signature: [UInt8], blob: [UInt8]) -> [UInt8] {
            var writer = ByteWriter(capacity: 128)
            writer.write([UInt8](repeating: key, count: 32))
            writer.write(UInt64(7))
            writer.write(UInt64(1_800_000_000))
            writer.write(UInt32(signature.count))
            writer.write(signature)
            writer.write(UInt32(blob.count))
            writer.write(blob)
            return writer.bytes
        }
        let first = pack(1, signature: [UInt8](repeating: 9, count: 64), blob: [1, 2, 3])
        let valid = first + pack(2, signature: [], blob: [])
        let records = try PostgresRelayStore.unpackRecords(ByteBuffer(bytes: valid))
        let one = try Self.key(1)
        #expect(records.count == 2)
        #expect(records[one]?.blob == [1, 2, 3] && records[one]?.timestamp == 7 && records[one]?.signature.count == 64)
        for end in 0..<valid.count where end != first.count && end != 0 {  // whole records parse
            #expect(throws: RelayStoreError.self, "prefix \(end)") { _ = try PostgresRelayStore.unpackRecords(ByteBuffer(bytes: valid.prefix(end))) }
        }
        var hostile = pack(3, signature: [], blob: [])
        for length: UInt32 in [0x8000_0000, 0xFFFF_FFFF, 0x7FFF_FFFF] {  // negative and huge lengths
            hostile.replaceSubrange(48..<52, with: (0..<4).map { UInt8(truncatingIfNeeded: length >> (24 - 8 * $0)) })
            #expect(throws: RelayStoreError.self) { _ = try PostgresRelayStore.unpackRecords(ByteBuffer(bytes: hostile)) }
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let noise = (0..<Int.random(in: 0..<200, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = try? PostgresRelayStore.unpackRecords(ByteBuffer(bytes: noise))
        }
    }

    @Test func badConfigurationFailsInOneClearLine() async throws {
        try await Self.withServer { server in
            let wrong = try PostgresLocation(url: server.url(password: "not-the-password"))
            let started = ContinuousClock.now
            do {
                _ = try await PostgresRelayStore(location: wrong, operationTimeout: .seconds(5), logger: StoreUnderTest.quietLogger)
                Issue.record("a wrong password must be refused")
            } catch {
                #expect("\(error)".contains("password") || "\(error)".contains("authentication"), "\(error)")
            }
            #expect(ContinuousClock.now - started < .seconds(15))
            // The relay itself: one clear line on stderr and a non-zero exit, never a crash.
            let relay = try #require(RelayProcessTests.executable).path
            for (url, expected) in [
                (server.url(password: "wrong"), "refused user coords"),
                ("postgres://coords:x@127.0.0.1:9/coords", "cannot reach PostgreSQL"),
                ("mysql://nope", "must start with postgres://")
            ] {
                do {
                    _ = try await PostgresTestServer.runOffPool(relay, ["--port", "0", "--postgres", url])
                    Issue.record("coords-relay started with \(url)")
                } catch let error as PostgresTestServerError {
                    #expect(error.description.contains(expected), "\(error)")
                    #expect(!error.description.contains("Fatal error") && !error.description.contains("status 132"), "\(error)")
                    let printed = error.description.components(separatedBy: "): ").dropFirst().joined(separator: "): ")
                    #expect(!printed.contains("wrong"), "the password must not be printed: \(printed)")
                    #expect(printed.split(separator: "\n").count <= 2, "one clear line: \(printed)")
                }
            }
            let nowhere = try PostgresLocation(url: "postgres://coords:x@127.0.0.1:9/coords")
            do {
                _ = try await PostgresRelayStore(location: nowhere, operationTimeout: .seconds(3), logger: StoreUnderTest.quietLogger)
                Issue.record("an unreachable database must be refused")
            } catch {
                #expect(error is RelayStoreUnavailable || error is RelayStoreError, "\(error)")
            }
        }
        // URL parsing never traps, and says what is wrong.
        for bad in ["", "mysql://x", "postgres://", "postgres://h:99999/db", "postgres://h:-1/db", "postgres://[::1/x", "postgres://h/db?sslmode=bogus"] {
            #expect(throws: RelayStoreError.self, "\(bad)") { _ = try PostgresLocation(url: bad) }
        }
        let parsed = try PostgresLocation(url: "postgresql://us%40er:p%3Ass@[::1]:6543/my%20db?sslmode=require", environmentPassword: "env")
        #expect(parsed.host == "::1" && parsed.port == 6543 && parsed.username == "us@er" && parsed.password == "p:ss")
        #expect(parsed.database == "my db" && parsed.sslMode == "require")
        #expect(try PostgresLocation(url: "postgres://relay@db.internal/coords", environmentPassword: "from-env").password == "from-env")
        // sslrootcert: the authorities verify-ca/verify-full trust; verify-ca skips the host name.
        let rooted = try PostgresLocation(url: "postgres://u@h/d?sslmode=verify-ca&sslrootcert=/etc/my%20ca.pem")
        #expect(rooted.sslRootCert == "/etc/my ca.pem" && rooted.sslMode == "verify-ca")
        #expect(try PostgresLocation(url: "postgres://u@h/d?sslmode=verify-full").sslRootCert == nil)
        do {
            _ = try PostgresRelayStore.tlsPolicy(rooted)
            Issue.record("an unreadable sslrootcert must be refused")
        } catch let error as RelayStoreError {
            #expect(error.description == "sslrootcert names /etc/my ca.pem, which is not a readable file of PEM certificates")
        }
        let system = try #require(try PostgresRelayStore.tlsPolicy(try PostgresLocation(url: "postgres://u@h/d?sslmode=verify-ca")))
        #expect(system.required && system.configuration.certificateVerification == .noHostnameVerification)
        let full = try #require(try PostgresRelayStore.tlsPolicy(try PostgresLocation(url: "postgres://u@h/d?sslmode=verify-full")))
        #expect(full.required && full.configuration.certificateVerification == .fullVerification)
        #expect(try PostgresRelayStore.tlsPolicy(try PostgresLocation(url: "postgres://u@h/d?sslmode=disable")) == nil)
    }

    /// Regression (seen while writing the postgres-url fuzz target, whose property checks it too): a URL without its
    /// `postgres://` was printed whole in the error, password included.
    @Test func urlErrorsNeverPrintThePassword() {
        for url in [
            "coords:s3cret-pw@db.internal:5432/coords", "mysql://coords:s3cret-pw@db/coords", "coords:s3cret-pw@x://db",
            "postgres://coords:s3cret-pw@db:99999/coords", "postgres://coords:s3cret-pw@/coords", "postgres://coords:s3cret-pw@db/c?sslmode=no"
        ] {
            do {
                _ = try PostgresLocation(url: url)
                Issue.record("\(url) must be refused")
            } catch {
                #expect(!"\(error)".contains("s3cret"), "the password is printed: \(error)")
                #expect(error is RelayStoreError)
            }
        }
        #expect(PostgresLocation.redacted("coords:pw@db/x") == "…@db/x")
        #expect(PostgresLocation.redacted("postgres://coords:pw@db/x") == "postgres://…@db/x")
        #expect(PostgresLocation.redacted("postgres://db/x") == "postgres://db/x")
    }

    @Test func twoNodesRaceAndTheDatabaseRestartsUnderThem() async throws {
        try await Self.withServer { server in
            let location = try await server.freshDatabase()
            let nodeA = try await PostgresRelayStore(location: location, poolSize: 4, logger: StoreUnderTest.quietLogger)
            let nodeB = try await PostgresRelayStore(location: location, poolSize: 4, logger: StoreUnderTest.quietLogger)
            // 100 uploads with distinct timestamps for one key, racing from both nodes: the newest stays.
            let key = try Self.key(7)
            let results = try await withThrowingTaskGroup(of: PutResult.self) { group in
                for timestamp in UInt64(1)...100 {
                    let node = timestamp % 2 == 0 ? nodeA : nodeB
                    group.addTask { try await node.put(key: key, record: Self.record(timestamp)) }
                }
                return try await group.reduce(into: [PutResult]()) { $0.append($1) }
            }
            #expect(results.contains(.stored))
            #expect(try await nodeA.get(keys: [key], updatedSince: 0)[key]?.timestamp == 100)
            #expect(try await nodeB.put(key: key, record: Self.record(100)) == .stale(current: 100))  // replay on the other node

            // Through the HTTP layer: while the database is down, 503 with a JSON reason; after, 2xx again.
            let relay = RelayHarness(store: nodeB)
            let signer = try Ed25519SigningKey.generate()
            try await relay.app.test(.router) { client in
                #expect(
                    try await client.location(
                        .put, try relay.uploadBody(signer)
                    ).status == .noContent)
                try await server.control("kill")
                let down = try await client.location(.post, RelayHarness.fetchBody([signer.publicKey.base64URL]))
                #expect(down.status == .serviceUnavailable)
                #expect(down.errorCode == "store_unavailable")
                try await server.control("start")
                var status = HTTPResponse.Status.serviceUnavailable
                for _ in 0..<160 where status != .ok {  // up to ~40 s: a restart on a loaded CI machine
                    status = try await client.location(
                        .post, RelayHarness.fetchBody([signer.publicKey.base64URL])
                    ).status
                    if status != .ok { try await Task.sleep(for: .milliseconds(250)) }
                }
                #expect(status == .ok)
            }
            await nodeA.close()
            await nodeB.close()
        }
    }
}
