import CoordsCore
import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// A ``RelayStore`` on PostgreSQL, so that any number of relay processes on any number of
/// machines serve one set of data (docs/RELAY.md, "Scaling").
///
/// Every rule that reads before it writes runs in one transaction holding a PostgreSQL advisory
/// lock on what it decides about (the key of an upload or delete, the recipient of an envelope),
/// so two nodes handling conflicting requests at the same instant decide one after the other:
/// the newest-timestamp rule, tombstones, mailbox caps and "an id is accepted once" hold across
/// nodes. A fetch of 50 ids is one query. Commits are durable before the relay answers
/// (`synchronous_commit` stays on). Sweeps are plain `DELETE … WHERE`, safe when several nodes
/// run them at once.
///
/// The schema is created and migrated at start through `coords_relay_migrations` (one row per
/// applied version); a relay refuses a database whose schema is newer than it knows.
public final class PostgresRelayStore: RelayStore, Sendable {
    /// The schema version this code writes.
    public static let schemaVersion = 7

    private let client: PostgresClient
    private let runner: Task<Void, Never>
    /// Where fetches read first (``readLocation``), and its connection pool's task.
    private let reads: (client: PostgresClient, runner: Task<Void, Never>)?
    /// Whether fetches try the read pool: not for ``readPause`` after it failed (a standby that
    /// does not answer costs one ``readTimeout``, not one per fetch).
    private let readPause = ReadPause()
    /// How long a fetch waits for the read pool before it asks the primary.
    static let readTimeout = Duration.seconds(1)
    /// How long fetches go to the primary after the read pool failed.
    static let readPause = Duration.seconds(5)
    /// Where fetches read first, if not the primary.
    public let readLocation: PostgresLocation?
    /// Concurrent uploads, grouped into one statement and one commit (``Batcher``).
    private let uploads: Batcher<(Bytes32, RelayRecord), PutResult>
    /// Concurrent fetches, grouped into one query.
    private let fetches: Batcher<([Bytes32], UInt64), [Bytes32: RelayRecord]>
    /// Live announcements, sent together (one `pg_notify` query per batch).
    private let announcer: Batcher<String, Void>
    private let logger: Logger
    /// Longest wait for the database before a request is answered 503.
    let operationTimeout: Duration
    /// Where this store connects.
    public let location: PostgresLocation

    /// How long a start waits for its first connection (or a request's wait, if longer): a loaded
    /// server can take seconds to authenticate the first connection to a database (CI saw more
    /// than 5 s), and an unreachable one is still named within this.
    static let firstConnectionTimeout = Duration.seconds(15)

    /// Connects, checks the credentials and the schema, and migrates it.
    /// - Parameters:
    ///   - location: where the database is.
    ///   - poolSize: most connections this node keeps open.
    ///   - operationTimeout: how long a request may wait for the database before it gets 503 (the
    ///     start's first connection may take 15 s, or this if longer).
    ///   - migrationTimeout: how long the start may wait for the schema migration. It is longer
    ///     than a request's wait: it waits behind other nodes migrating at the same moment (one
    ///     advisory lock), and its DDL commits are fsynced one by one on a server that may be busy.
    /// - Throws: ``RelayStoreError`` with one clear sentence: unreachable, refused credentials,
    ///   a schema newer than this relay, or a failed migration.
    ///   - readLocation: where fetches read first (a synchronous standby); nil: the primary.
    ///     Fetches fall back to `location` while it does not answer within ``readTimeout``.
    public init(
        location: PostgresLocation, readLocation: PostgresLocation? = nil, poolSize: Int = 16, operationTimeout: Duration = .seconds(5),
        migrationTimeout: Duration = .seconds(120), logger: Logger = Logger(label: "coords.relay.postgres")
    ) async throws {
        self.location = location
        self.readLocation = readLocation
        self.logger = logger
        self.operationTimeout = operationTimeout
        let client = PostgresClient(configuration: try Self.poolConfiguration(location, poolSize: poolSize), backgroundLogger: logger)
        self.client = client
        let readClient = try readLocation.map { PostgresClient(configuration: try Self.poolConfiguration($0, poolSize: poolSize), backgroundLogger: logger) }
        reads = readClient.map { ($0, Task { [client = $0] in await client.run() }) }
        // Half the pool for each kind, at least one: the rest serves mailbox requests and sweeps.
        let workers = max(poolSize / 2, 1)
        uploads = Batcher(maximumBatch: 256, maximumWorkers: workers) { batch in
            try await Self.withDeadline(operationTimeout, what: "store uploads") { try await Self.putBatch(batch, client, logger) }
        }
        // At most 8 fetches (400 ids) per query: beyond a few hundred ids PostgreSQL's planner turns
        // to a sequential scan of the whole table, which costs more than separate queries.
        let pause = readPause
        fetches = Batcher(maximumBatch: 8, maximumWorkers: workers) { batch in
            if let readClient, pause.isOpen {
                do {
                    return try await Self.withDeadline(Self.readTimeout, what: "fetch uploads from the read pool") {
                        try await Self.fetchBatch(batch, readClient, logger)
                    }
                } catch {
                    // The standby is down, lagging behind a failover or refusing: the primary answers, and
                    // fetches keep to it for a while (one warning per pause, not one per fetch).
                    pause.close(for: Self.readPause)
                    logger.warning("read pool unavailable; fetching from the primary", metadata: ["error": "\(error)"])
                }
            }
            return try await Self.withDeadline(operationTimeout, what: "fetch uploads") { try await Self.fetchBatch(batch, client, logger) }
        }
        announcer = Batcher(maximumBatch: 256, maximumWorkers: 1) { batch in
            try await Self.withDeadline(operationTimeout, what: "announce live notices") {
                let rows = try await client.query(
                    "SELECT pg_notify(\(Self.liveChannel), payload) FROM unnest(\(batch)::text[]) AS payload", logger: logger)
                for try await _ in rows {}
                return batch.map { _ in () }
            }
        }
        runner = Task { await client.run() }
        do {
            try await Self.checkConnection(location, timeout: max(operationTimeout, Self.firstConnectionTimeout), logger: logger)
            try await migrate(within: max(migrationTimeout, operationTimeout))
        } catch {
            runner.cancel()
            reads?.runner.cancel()
            throw error
        }
    }

    /// The connection pool's settings for `location`.
    private static func poolConfiguration(_ location: PostgresLocation, poolSize: Int) throws -> PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            host: location.host, port: location.port, username: location.username,
            password: location.password, database: location.database,
            tls: try Self.tls(location))
        configuration.options.maximumConnections = max(poolSize, 1)
        configuration.options.minimumConnections = 0
        configuration.options.connectTimeout = .seconds(5)
        return configuration
    }

    public func close() async {
        runner.cancel()
        reads?.runner.cancel()
        _ = await runner.value
        _ = await reads?.runner.value
    }

    // MARK: Live fan-out across nodes (PROTOCOL.md §8.6)

    /// The `LISTEN`/`NOTIFY` channel of live announcements.
    static let liveChannel = "coords_live"

    /// Sends `payload` with `NOTIFY coords_live` (batched with concurrent ones; at most 7,999
    /// bytes, PostgreSQL's limit — longer payloads are dropped with a warning).
    public func announce(_ payload: String) {
        guard payload.utf8.count < 8000 else {
            logger.warning("live announcement too long; dropped", metadata: ["bytes": "\(payload.utf8.count)"])
            return
        }
        let (announcer, logger) = (announcer, logger)
        Task {
            do {
                try await announcer.submit(payload)
            } catch {
                logger.warning("live announcement failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// `LISTEN coords_live` on one connection of the pool, for as long as the stream is read;
    /// after a lost connection it listens again (announcements in between are lost: clients
    /// catch up by fetching when they reconnect).
    public func announcements() -> AsyncStream<String>? {
        let (client, logger) = (client, logger)
        return AsyncStream { continuation in
            let task = Task {
                while !Task.isCancelled {
                    do {
                        try await client.withConnection { connection in
                            // UNLISTEN is sent when the closure returns, before the pool reuses the connection.
                            try await connection.listen(on: Self.liveChannel) { notifications in
                                // From here on nothing another node announces is missed (tests wait for this line).
                                logger.info("live fan-out listening", metadata: ["channel": "\(Self.liveChannel)"])
                                for try await notification in notifications {
                                    continuation.yield(notification.payload)
                                }
                            }
                        }
                    } catch {
                        if Task.isCancelled { break }
                        logger.warning("live LISTEN failed; listening again in 1 s", metadata: ["error": "\(error)"])
                        // Cancelled while waiting: the loop checks cancellation next.
                        try? await Task.sleep(for: .seconds(1))
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    // MARK: Uploads

    public func put(key: Bytes32, record: RelayRecord) async throws -> PutResult {
        // RelayStoreRules.put, in the database under the key's advisory lock (coords_put_batch,
        // schema version 3), together with whatever other uploads are in flight.
        do {
            return try await uploads.submit((key, record))
        } catch {
            throw classify(error, "store an upload")
        }
    }

    static func putBatch(_ batch: [(Bytes32, RelayRecord)], _ client: PostgresClient, _ logger: Logger) async throws -> [PutResult] {
        var outcomes: [Int64] = []
        for try await value in try await client.execute(
            PutBatchStatement(
                locks: batch.map { lockID($0.0.bytes) }, keys: batch.map { bytes($0.0.bytes) }, blobs: batch.map { bytes($0.1.blob) },
                timestamps: batch.map { int($0.1.timestamp) }, signatures: batch.map { bytes($0.1.signature) },
                updated: batch.map { int($0.1.updated) }), logger: logger)
        {
            outcomes = value
        }
        return outcomes.map { $0 < 0 ? .stored : .stale(current: UInt64(clamping: $0)) }
    }

    public func delete(key: Bytes32, timestamp: UInt64, now: UInt64) async throws -> DeleteResult {
        // RelayStoreRules.delete in the database (coords_delete): -1 deleted, -2 nothing there
        // (a tombstone is recorded all the same), ≥ 0 stale (the newer timestamp).
        try await run("delete an upload") { client, logger in
            var outcome: Int64 = -2
            for try await value in try await client.query(
                """
                SELECT coords_delete(\(Self.lockID(key.bytes)), \(Self.bytes(key.bytes)), \(Self.int(timestamp)), \(Self.int(now)))
                """, logger: logger
            ).decode(Int64.self) { outcome = value }
            switch outcome {
            case -1: return .deleted
            case -2: return .notFound
            default: return .stale(current: UInt64(clamping: outcome))
            }
        }
    }

    public func get(keys: [Bytes32], updatedSince: UInt64) async throws -> [Bytes32: RelayRecord] {
        guard !keys.isEmpty else { return [:] }
        do {
            return try await fetches.submit((keys, updatedSince))
        } catch {
            throw classify(error, "fetch uploads")
        }
    }

    /// One query for all the fetches in flight (the keys travel as one bytea[] parameter),
    /// answered as one bytea: per record `key (32) | ts i64 | updated i64 | signature length i32 |
    /// signature | blob length i32 | blob`, big-endian — one value to decode instead of rows of
    /// five columns. Each fetch then gets its own keys, newer than its own `updatedSince`.
    static func fetchBatch(_ batch: [([Bytes32], UInt64)], _ client: PostgresClient, _ logger: Logger) async throws
        -> [[Bytes32: RelayRecord]]
    {
        var keys = Set<Bytes32>()
        for (requested, _) in batch { keys.formUnion(requested) }
        let oldest = batch.map(\.1).min() ?? 0
        var packed: ByteBuffer?
        for try await value in try await client.execute(
            FetchStatement(keys: keys.map { bytes($0.bytes) }, updatedSince: int(oldest)),
            logger: logger)
        {
            packed = value
        }
        let found = try packed.map(unpackRecords) ?? [:]
        return batch.map { requested, updatedSince in
            var answer: [Bytes32: RelayRecord] = [:]
            for key in requested {
                if let record = found[key], record.updated >= updatedSince { answer[key] = record }
            }
            return answer
        }
    }

    /// Reads the packed records of ``get(keys:updatedSince:)``.
    /// - Throws: ``RelayStoreError`` if the database answered something malformed.
    static func unpackRecords(_ packed: ByteBuffer) throws -> [Bytes32: RelayRecord] {
        do {
            return try packed.withUnsafeReadableBytes { bytes in
                var reader = ByteReader(bytes)
                var found: [Bytes32: RelayRecord] = [:]
                while !reader.isAtEnd {
                    let key = try Bytes32(try reader.read(count: 32))
                    let timestamp = try reader.read(Int64.self)
                    let updated = try reader.read(Int64.self)
                    let signature = try reader.read(count: Int(try reader.read(Int32.self)))
                    let blob = try reader.read(count: Int(try reader.read(Int32.self)))
                    found[key] = RelayRecord(
                        blob: blob, timestamp: UInt64(clamping: timestamp), signature: signature,
                        updated: UInt64(clamping: updated))
                }
                return found
            }
        } catch {
            throw RelayStoreError(description: "the database returned malformed records: \(error)")
        }
    }

    public func sweep(updatedBefore: UInt64, tombstonesBefore: UInt64) async throws -> Int {
        try await run("sweep expired uploads") { client, logger in
            let removed = try await Self.rowsReturned(
                client.query("DELETE FROM relay_records WHERE updated < \(Self.int(updatedBefore)) RETURNING 1", logger: logger))
            try await client.query("DELETE FROM relay_tombstones WHERE recorded_at < \(Self.int(tombstonesBefore))", logger: logger)
            return removed
        }
    }

    public func count() async throws -> Int {
        try await run("count uploads") { client, logger in try await Self.scalar("SELECT count(*) FROM relay_records", client, logger) }
    }

    /// One `SELECT 1` through the pool, under the store's usual deadline.
    public func checkReady() async throws {
        _ = try await run("check readiness") { client, logger in try await Self.scalar("SELECT 1", client, logger) }
    }

    // MARK: Mailbox

    public func mailboxPost(_ entry: MailboxEntry, limits: MailboxLimits, now: UInt64) async throws -> MailboxPostResult {
        try await run("store an envelope") { client, logger in
            try await client.withTransaction(logger: logger) { connection in
                // One lock per recipient: its caps are counted and enforced one post at a time,
                // whichever node takes the post. Ids are unique by the primary key.
                try await connection.query("SELECT pg_advisory_xact_lock(\(Self.lockID(Array(entry.recipient.utf8))))", logger: logger)
                let known = try await Self.scalar(
                    """
                    SELECT (SELECT count(*) FROM mailbox WHERE id = \(entry.id))
                         + (SELECT count(*) FROM mailbox_tombstones WHERE id = \(entry.id))
                    """, connection, logger)
                if known > 0 { return .duplicate }
                let waiting = try await Self.scalar(
                    """
                    SELECT count(*) FROM mailbox WHERE recipient = \(entry.recipient) AND expires_at > \(Self.int(now))
                    AND authenticated = \(entry.authenticated)
                    """, connection, logger)
                if waiting >= limits.quota(for: entry) { return .recipientFull }
                // The total cap: an estimate would let it drift; this count uses the primary key index.
                if try await Self.scalar("SELECT count(*) FROM mailbox", connection, logger) >= limits.total { return .relayFull }
                let inserted = try await connection.query(
                    """
                    INSERT INTO mailbox (id, recipient, expires_at, authenticated, envelope)
                    VALUES (\(entry.id), \(entry.recipient), \(Self.int(entry.expiresAt)), \(entry.authenticated), \(Self.bytes(entry.envelope)))
                    ON CONFLICT (id) DO NOTHING RETURNING 1
                    """, logger: logger)
                return try await Self.rowsReturned(inserted) == 1 ? .stored : .duplicate
            }
        }
    }

    public func mailboxList(recipient: String, now: UInt64, limit: Int) async throws -> [MailboxEntry] {
        try await run("list a mailbox") { client, logger in
            var entries: [MailboxEntry] = []
            for try await (id, expires, authenticated, envelope) in try await client.query(
                """
                SELECT id, expires_at, authenticated, envelope FROM mailbox
                WHERE recipient = \(recipient) AND expires_at > \(Self.int(now)) ORDER BY seq LIMIT \(max(limit, 0))
                """, logger: logger
            ).decode((String, Int64, Bool, ByteBuffer).self) {
                entries.append(
                    MailboxEntry(
                        id: id, recipient: recipient, expiresAt: UInt64(clamping: expires),
                        envelope: Array(buffer: envelope), authenticated: authenticated))
            }
            return entries
        }
    }

    public func mailboxAck(id: String, recipient: String, tombstoneUntil: UInt64) async throws -> Bool {
        try await run("acknowledge an envelope") { client, logger in
            try await client.withTransaction(logger: logger) { connection in
                var owner: String?
                for try await who in try await connection.query("SELECT recipient FROM mailbox WHERE id = \(id) FOR UPDATE", logger: logger)
                    .decode(String.self)
                { owner = who }
                if let owner, owner != recipient { return false }  // someone else's: changes nothing
                var deleted = 0
                if owner != nil {
                    deleted = try await Self.rowsReturned(connection.query("DELETE FROM mailbox WHERE id = \(id) RETURNING 1", logger: logger))
                }
                try await connection.query(
                    """
                    INSERT INTO mailbox_tombstones (id, until) VALUES (\(id), \(Self.int(tombstoneUntil)))
                    ON CONFLICT (id) DO UPDATE SET until = greatest(mailbox_tombstones.until, EXCLUDED.until)
                    """, logger: logger)
                return deleted == 1
            }
        }
    }

    public func mailboxSweep(now: UInt64) async throws -> Int {
        try await run("sweep the mailbox") { client, logger in
            let removed = try await Self.rowsReturned(
                client.query("DELETE FROM mailbox WHERE expires_at <= \(Self.int(now)) RETURNING 1", logger: logger))
            try await client.query("DELETE FROM mailbox_tombstones WHERE until < \(Self.int(now))", logger: logger)
            try await client.query("DELETE FROM seen_signatures WHERE until < \(Self.int(now))", logger: logger)
            return removed
        }
    }

    public func mailboxCount() async throws -> Int {
        try await run("count envelopes") { client, logger in try await Self.scalar("SELECT count(*) FROM mailbox", client, logger) }
    }

    // MARK: Request signatures

    public func acceptSignature(_ r: Bytes32, until: UInt64, now: UInt64, capacity: Int) async throws -> SignatureAcceptance {
        // One conditional statement, so two nodes seeing the same signature at the same instant
        // cannot both accept it: a row comes back only for a new signature or an expired one.
        try await run("record a request signature") { client, logger in
            let accepted = try await client.query(
                """
                INSERT INTO seen_signatures (r, until) VALUES (\(Self.bytes(r.bytes)), \(Self.int(until)))
                ON CONFLICT (r) DO UPDATE SET until = EXCLUDED.until WHERE seen_signatures.until < \(Self.int(now))
                RETURNING 1
                """, logger: logger)
            return try await Self.rowsReturned(accepted) > 0 ? .accepted : .replayed
        }
    }

    public func seenSignatureCount() async throws -> Int {
        try await run("count request signatures") { client, logger in
            try await Self.scalar("SELECT count(*) FROM seen_signatures", client, logger)
        }
    }

    // MARK: Push endpoints

    public func pushRegister(recipient: String, _ registration: PushRegistration, capacity: Int) async throws -> Bool {
        // One statement: the capacity check and the write cannot interleave with another node's.
        try await run("register a push endpoint") { client, logger in
            let stored = try await client.query(
                """
                INSERT INTO push_endpoints (recipient, endpoint, expires_at, registered_by)
                SELECT \(recipient), \(registration.endpoint), \(Self.int(registration.expiresAt)), \(registration.registeredBy)
                WHERE EXISTS (SELECT 1 FROM push_endpoints WHERE recipient = \(recipient))
                   OR (SELECT count(*) FROM push_endpoints) < \(Int64(clamping: capacity))
                ON CONFLICT (recipient) DO UPDATE SET endpoint = EXCLUDED.endpoint, expires_at = EXCLUDED.expires_at,
                                                      registered_by = EXCLUDED.registered_by
                RETURNING 1
                """, logger: logger)
            return try await Self.rowsReturned(stored) > 0
        }
    }

    public func pushRegistration(recipient: String, now: UInt64) async throws -> PushRegistration? {
        try await run("read a push endpoint") { client, logger in
            var found: PushRegistration?
            for try await (endpoint, expires, registrant) in try await client.query(
                "SELECT endpoint, expires_at, registered_by FROM push_endpoints WHERE recipient = \(recipient) AND expires_at > \(Self.int(now))",
                logger: logger
            ).decode((String, Int64, String).self) {
                found = PushRegistration(endpoint: endpoint, expiresAt: UInt64(clamping: expires), registeredBy: registrant)
            }
            return found
        }
    }

    public func pushRemove(recipient: String, endpoint: String?) async throws -> Bool {
        try await run("remove a push endpoint") { client, logger in
            let query: PostgresQuery =
                if let endpoint {
                    "DELETE FROM push_endpoints WHERE recipient = \(recipient) AND endpoint = \(endpoint) RETURNING 1"
                } else {
                    "DELETE FROM push_endpoints WHERE recipient = \(recipient) RETURNING 1"
                }
            return try await Self.rowsReturned(client.query(query, logger: logger)) > 0
        }
    }

    public func pushSweep(now: UInt64) async throws -> Int {
        try await run("sweep push endpoints") { client, logger in
            try await Self.rowsReturned(client.query("DELETE FROM push_endpoints WHERE expires_at <= \(Self.int(now)) RETURNING 1", logger: logger))
        }
    }

    public func pushCount() async throws -> Int {
        try await run("count push endpoints") { client, logger in try await Self.scalar("SELECT count(*) FROM push_endpoints", client, logger) }
    }

    // MARK: Helpers

    /// Runs `body` against the database within `timeout` (default ``operationTimeout``); a connection failure or
    /// the timeout becomes ``RelayStoreUnavailable`` (503), anything else a ``RelayStoreError``.
    func run<R: Sendable>(
        _ what: String, within timeout: Duration? = nil, _ body: @escaping @Sendable (PostgresClient, Logger) async throws -> R
    ) async throws -> R {
        let client = client
        let logger = logger
        let timeout = timeout ?? operationTimeout
        do {
            return try await Self.withDeadline(timeout, what: what) { try await body(client, logger) }
        } catch {
            throw classify(error, what)
        }
    }

    /// The relay's view of a database error: ``RelayStoreUnavailable`` (503) for connection
    /// trouble, restarts and a server turned read-only by a failover, ``RelayStoreError`` (500)
    /// for anything else. Transaction errors are
    /// unwrapped to their cause.
    func classify(_ error: any Error, _ what: String) -> any Error {
        switch error {
        case is RelayStoreError, is RelayStoreUnavailable:
            return error
        case let transaction as PostgresTransactionError:
            if let cause = transaction.closureError ?? transaction.beginError ?? transaction.commitError ?? transaction.rollbackError {
                return classify(cause, what)
            }
            return RelayStoreUnavailable(description: "a transaction failed (\(what))")
        case let error as PSQLError:
            if error.code == .server {
                let state = error.serverInfo?[.sqlState] ?? "?"
                let message = error.serverInfo?[.message] ?? "\(error.code)"
                // 57P: the server is shutting down or restarting; 08: connection exceptions; 25006: a
                // write reached a server that is read-only now — a primary demoted during a failover
                // (Patroni, tests/ha), whose sessions the proxy has not closed yet: retried later, it
                // reaches the new primary.
                if state.hasPrefix("57P") || state.hasPrefix("08") || state == "25006" {
                    return RelayStoreUnavailable(description: "the database is unavailable (\(what)): \(message)")
                }
                return RelayStoreError(description: "PostgreSQL refused to \(what): \(message) (SQLSTATE \(state))")
            }
            return RelayStoreUnavailable(description: "cannot reach the database at \(location.host):\(location.port) (\(what)): \(error.code)")
        case is CancellationError:
            return RelayStoreUnavailable(description: "the request was cancelled while waiting for the database (\(what))")
        default:
            return RelayStoreUnavailable(description: "the database is unavailable (\(what)): \(error)")
        }
    }

}

/// Whether fetches may try the read pool now, or not until a pause after a failure ends.
final class ReadPause: Sendable {
    private let until = Mutex<ContinuousClock.Instant?>(nil)

    /// True unless a pause is running.
    var isOpen: Bool { until.withLock { $0.map { ContinuousClock.now >= $0 } ?? true } }

    /// Keeps fetches off the read pool for `duration`.
    func close(for duration: Duration) { until.withLock { $0 = ContinuousClock.now + duration } }
}
