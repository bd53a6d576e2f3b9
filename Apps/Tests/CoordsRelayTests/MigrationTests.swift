import CoordsCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import CoordsRelay

/// `coords-relay migrate`: a populated LMDB relay moved into PostgreSQL answers the same, keeps
/// refusing what it refused, and a second run copies nothing.
@Suite struct MigrationTests {
    typealias M = MailboxTests

    @Test func aPopulatedLMDBRelayMovesToPostgreSQLAndAnswersTheSame() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("migrate-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clock = ManualClock(milliseconds: RelayHarness.start * 1000)
        let keys = try (0..<40).map { _ in try Ed25519SigningKey.generate() }
        let ids = keys.map(\.publicKey.base64URL)
        let deleted = keys[0]
        let envelopes = try (0..<3).map { try M.envelope("m\($0)", now: RelayHarness.start) }
        let listPath = M.listPath(M.bob)
        let usedListHeaders = M.signedHeaders(M.bob, "GET", listPath, RelayHarness.start)

        // The LMDB relay, populated through its HTTP API.
        let lmdb = RelayHarness(store: try LMDBRelayStore(directory: directory), clock: clock)
        let uploads = try keys.map { try lmdb.uploadBody($0) }
        let (fetchedBefore, listedBefore) = try await lmdb.test(.router) { client -> (JSONValue?, JSONValue?) in
            for body in uploads {
                #expect(try await client.location(.put, body).status == .noContent)
            }
            clock.advance(byMilliseconds: 1000)
            let delete = try await client.location(.delete, try lmdb.deleteBody(deleted))
            #expect(delete.status == .noContent)
            for envelope in envelopes {
                #expect(
                    try await client.post(envelope).status == .accepted)
            }
            let ackPath = "/v1/relay/messages/\(envelopes[0].id)/ack"
            #expect(try await client.execute(uri: ackPath, method: .post, headers: M.signedHeaders(M.bob, "POST", ackPath, lmdb.now)).status == .ok)
            let fetched = try await client.location(.post, RelayHarness.fetchBody(ids))
            let listed = try await client.execute(uri: listPath, method: .get, headers: usedListHeaders)
            #expect(listed.status == .ok)
            return (fetched.json, listed.json?.objectValue?["packets"])
        }

        // Copy it (the library function the command runs), twice: the second run copies nothing.
        let target = try await StoreUnderTest.reopenable(.postgres)
        let source = try LMDBRelayStore(directory: directory)
        let postgres = try await target()
        let progress = ProgressLog()
        let first = try await RelayMigration.copy(from: source, to: postgres) { read, total in progress.append(read, total) }
        #expect(first.read == RelayExportCounts(records: 39, tombstones: 1, envelopes: 2, envelopeTombstones: 1, seenSignatures: 2))
        #expect(first.copied == first.read)
        #expect(progress.last?.read == progress.last?.total)
        let second = try await RelayMigration.copy(from: source, to: postgres)
        #expect(second.read == first.read)
        #expect(second.copied.records == 0 && second.copied.tombstones == 0 && second.copied.envelopes == 0 && second.copied.seenSignatures == 0)
        await source.close()
        await postgres.close()

        // The PostgreSQL relay answers what the LMDB one answered, and refuses what it refused.
        let moved = RelayHarness(store: try await target(), clock: clock)
        try await moved.test(.router) { client in
            let fetched = try await client.location(.post, RelayHarness.fetchBody(ids))
            #expect(fetched.json == fetchedBefore)
            #expect(fetched.json?.objectValue?[ids[0]] == .null)
            // Replaying an upload the LMDB relay accepted, or the deleted key's old upload: 409.
            #expect(try await client.location(.put, uploads[1]).status == .conflict)
            #expect(try await client.location(.put, uploads[0]).status == .conflict)
            // The mailbox request signature used on the LMDB relay: 401.
            let replay = try await client.execute(uri: listPath, method: .get, headers: usedListHeaders)
            #expect(replay.status == .unauthorized)
            clock.advance(byMilliseconds: 1000)
            let listed = try await client.execute(uri: listPath, method: .get, headers: M.signedHeaders(M.bob, "GET", listPath, moved.now))
            #expect(listed.json?.objectValue?["packets"] == listedBefore)
            #expect(try listedBefore?.arrayValue?.map { try Envelope(json: $0) } == Array(envelopes[1...]))
            // The acknowledged id stays refused.
            #expect(
                try await client.post(envelopes[0]).status == .conflict)
        }
    }

    /// The command itself: progress on stderr, a summary, exit 0; a second run copies nothing;
    /// a missing source or an unreachable database is one line and a non-zero exit.
    @Test func theMigrateCommand() async throws {
        guard let executable = RelayProcessTests.executable?.path else { throw MissingExecutable() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("migrate-cli-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try LMDBRelayStore(directory: directory, durability: .noSync)
        for n in 0..<600 {
            let key = try Bytes32((0..<32).map { UInt8(truncatingIfNeeded: n >> ($0 % 2 * 8)) &+ UInt8($0) })
            _ = try await store.put(
                key: key,
                record: RelayRecord(
                    blob: [1, 2, 3], timestamp: 10, signature: [UInt8](repeating: 7, count: 64),
                    updated: RelayHarness.start))
        }
        #expect(try await store.count() == 600)
        await store.close()
        let server = try await PostgresTestServer.shared()
        let location = try await server.freshDatabase()
        let url = server.url(database: location.database)

        let output = try await PostgresTestServer.runOffPool(executable, ["migrate", "--from-data-dir", directory, "--to-postgres", url])
        #expect(output.contains("migrate: 100% · 600/600 uploads"), "\(output)")
        #expect(output.contains("copied: 600 uploads"), "\(output)")
        #expect(!output.contains("coords-test"), "the password is never printed")
        // The target may come from the environment instead of --to-postgres.
        let again = try await PostgresTestServer.runOffPool(
            executable, ["migrate", "--quiet", "--from-data-dir", directory], environment: ["COORDS_POSTGRES_URL": url])
        #expect(again.contains("copied: 0 uploads"), "\(again)")
        let target = try await PostgresRelayStore(location: location, poolSize: 2, logger: StoreUnderTest.quietLogger)
        #expect(try await target.count() == 600)
        await target.close()

        for (arguments, status) in [
            (["migrate", "--from-data-dir", directory + "/nothing", "--to-postgres", url], 66),
            (["migrate", "--from-data-dir", directory, "--to-postgres", "postgres://coords:wrong@127.0.0.1:\(server.port)/coords"], 69),
            (["migrate", "--from-data-dir", directory], 64)
        ] {
            do {
                _ = try await PostgresTestServer.runOffPool(executable, arguments)
                Issue.record("\(arguments) should fail")
            } catch let error as PostgresTestServerError {
                #expect(error.description.contains("status \(status << 8)"), "\(error)")
                // What the command printed (the text after the runner's "failed (status N): ").
                let printed = error.description.range(of: "): ").map { String(error.description[$0.upperBound...]) } ?? ""
                #expect(printed.lowercased().contains("error"), "\(error)")
                #expect(!printed.contains("wrong"), "the password is never printed: \(printed)")
            }
        }
    }
}

/// Progress callbacks, recorded.
final class ProgressLog: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [(read: RelayExportCounts, total: RelayExportCounts)] = []

    func append(_ read: RelayExportCounts, _ total: RelayExportCounts) {
        lock.lock()
        entries.append((read, total))
        lock.unlock()
    }

    var last: (read: RelayExportCounts, total: RelayExportCounts)? {
        lock.lock()
        defer { lock.unlock() }
        return entries.last
    }
}
