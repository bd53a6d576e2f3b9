import CoordsCore
import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// The store could not reach its database (down, restarting, unreachable): the relay answers
/// 503 with a JSON reason and keeps serving once the database is back.
public struct RelayStoreUnavailable: Error, CustomStringConvertible {
    public var description: String
}

/// Where a PostgreSQL store connects: parsed from a libpq-style URL
/// (`postgres://user:password@host:port/database?sslmode=require`).
public struct PostgresLocation: Sendable, Equatable {
    /// The server's host name or address.
    public var host: String
    /// The server's port (5432 when the URL names none).
    public var port: Int
    /// The role to log in as.
    public var username: String
    /// The role's password, if the URL has one (errors show the URL with it redacted).
    public var password: String?
    /// The database name.
    public var database: String
    /// `disable` (default for loopback), `prefer`, `require` or `verify-full`.
    public var sslMode: String

    /// Parses `url`; the password may also come from `PGPASSWORD` (`environmentPassword`).
    /// - Throws: ``RelayStoreError`` naming what is wrong (never a crash on a strange URL).
    public init(url: String, environmentPassword: String? = nil) throws {
        guard let schemeEnd = url.range(of: "://"), ["postgres", "postgresql"].contains(url[..<schemeEnd.lowerBound].lowercased()) else {
            throw RelayStoreError(description: "the PostgreSQL URL must start with postgres:// (got \(Self.redacted(url)))")
        }
        var rest = url[schemeEnd.upperBound...]
        var query = Substring("")
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        var path = Substring("")
        if let slash = rest.firstIndex(of: "/") {
            path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        var user = Substring("postgres")
        var password: Substring?
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = credentials.firstIndex(of: ":") {
                user = credentials[..<colon]
                password = credentials[credentials.index(after: colon)...]
            } else {
                user = credentials
            }
        }
        var host = rest
        var port = 5432
        if host.hasPrefix("["), host.firstIndex(of: "]") == nil {
            throw RelayStoreError(description: "the PostgreSQL URL has an unclosed [ in its host")
        }
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {  // [::1]:5432
            let after = host[host.index(after: close)...]
            if after.hasPrefix(":") {
                guard let p = Int(after.dropFirst()), (1...65535).contains(p) else {
                    throw RelayStoreError(description: "the PostgreSQL URL has an invalid port")
                }
                port = p
            }
            host = host[host.index(after: host.startIndex)..<close]
        } else if let colon = host.lastIndex(of: ":") {
            guard let p = Int(host[host.index(after: colon)...]), (1...65535).contains(p) else {
                throw RelayStoreError(description: "the PostgreSQL URL has an invalid port")
            }
            port = p
            host = host[..<colon]
        }
        guard !host.isEmpty else { throw RelayStoreError(description: "the PostgreSQL URL has no host") }
        self.host = Self.percentDecoded(host)
        self.port = port
        self.username = Self.percentDecoded(user)
        self.password = password.map(Self.percentDecoded) ?? environmentPassword
        self.database = path.isEmpty ? self.username : Self.percentDecoded(path)
        var mode = "prefer"  // libpq's default: TLS when the server offers it, not verified
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0] == "sslmode" { mode = String(parts[1]) }
        }
        guard ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"].contains(mode) else {
            throw RelayStoreError(description: "sslmode must be disable, prefer, require, verify-ca or verify-full (got \(mode))")
        }
        sslMode = mode
    }

    /// The URL without its password (for logs and errors).
    public var redacted: String { "postgres://\(username)@\(host):\(port)/\(database)?sslmode=\(sslMode)" }

    /// `url` with everything between its scheme and its last `@` (user and password) replaced
    /// by `…`, also when the scheme is missing or misplaced (`user:password@host`).
    static func redacted(_ url: String) -> String {
        guard let at = url.lastIndex(of: "@") else { return url }
        let host = String(url[url.index(after: at)...])
        guard let scheme = url.range(of: "://"), scheme.upperBound <= at else { return "…@" + host }
        return String(url[..<scheme.upperBound]) + "…@" + host
    }

    private static func percentDecoded(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8)[...]
        while let byte = iterator.popFirst() {
            if byte == UInt8(ascii: "%"), let high = iterator.first.flatMap(Hex.value(of:)),
                let low = iterator.dropFirst().first.flatMap(Hex.value(of:))
            {
                bytes.append(high << 4 | low)
                iterator = iterator.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Who finished first, the work or its timer; the first to ``decide()`` wins, and deciding
/// cancels the timer (also when the timer is armed after the work already finished).
final class Deadline: Sendable {
    private let state = Mutex<(decided: Bool, timer: Task<Void, Never>?)>((false, nil))

    /// True for the first caller only; cancels the timer.
    func decide() -> Bool {
        let (first, timer) = state.withLock { state -> (Bool, Task<Void, Never>?) in
            defer { state.decided = true }
            return (!state.decided, state.timer)
        }
        timer?.cancel()
        return first
    }

    /// Hands over the timer task (cancelled at once if the work already finished).
    func arm(_ timer: Task<Void, Never>) {
        let decided = state.withLock { state -> Bool in
            state.timer = timer
            return state.decided
        }
        if decided { timer.cancel() }
    }
}

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
    public static let schemaVersion = 5
    /// Migrations by version: each runs once, in order, inside the migration transaction.
    static let migrations: [(version: Int, statements: [PostgresQuery])] = [
        (
            1,
            [
                """
                CREATE TABLE relay_records (
                    key BYTEA PRIMARY KEY, blob BYTEA NOT NULL, ts BIGINT NOT NULL, signature BYTEA NOT NULL, updated BIGINT NOT NULL)
                """,
                "CREATE INDEX relay_records_updated ON relay_records (updated)",
                "CREATE TABLE relay_tombstones (key BYTEA PRIMARY KEY, ts BIGINT NOT NULL, recorded_at BIGINT NOT NULL)",
                """
                CREATE TABLE mailbox (
                    id TEXT PRIMARY KEY, recipient TEXT NOT NULL, seq BIGSERIAL NOT NULL, expires_at BIGINT NOT NULL,
                    authenticated BOOLEAN NOT NULL, envelope BYTEA NOT NULL)
                """,
                "CREATE INDEX mailbox_recipient ON mailbox (recipient, seq)",
                "CREATE INDEX mailbox_expires ON mailbox (expires_at)",
                "CREATE TABLE mailbox_tombstones (id TEXT PRIMARY KEY, until BIGINT NOT NULL)",
                "CREATE TABLE seen_signatures (r BYTEA PRIMARY KEY, until BIGINT NOT NULL)",
                "CREATE INDEX seen_signatures_until ON seen_signatures (until)"
            ]
        ),
        // Version 2: an upload or a delete is one statement (one round trip, one implicit
        // transaction) instead of seven. Inside a VOLATILE function each statement takes a new
        // snapshot, so the reads after the advisory lock see what the previous lock holder
        // committed; the lock is released only after this transaction's commit is durable.
        (
            2,
            [
                """
                CREATE FUNCTION coords_put(p_lock BIGINT, p_key BYTEA, p_blob BYTEA, p_ts BIGINT, p_signature BYTEA, p_updated BIGINT)
                RETURNS BIGINT LANGUAGE plpgsql VOLATILE AS $$
                DECLARE record_ts BIGINT; tombstone_ts BIGINT;
                BEGIN
                    PERFORM pg_advisory_xact_lock(p_lock);
                    SELECT ts INTO record_ts FROM relay_records WHERE key = p_key;
                    SELECT ts INTO tombstone_ts FROM relay_tombstones WHERE key = p_key;
                    IF (record_ts IS NOT NULL OR tombstone_ts IS NOT NULL)
                       AND p_ts <= greatest(coalesce(record_ts, 0), coalesce(tombstone_ts, 0)) THEN
                        RETURN greatest(coalesce(record_ts, 0), coalesce(tombstone_ts, 0));
                    END IF;
                    INSERT INTO relay_records (key, blob, ts, signature, updated) VALUES (p_key, p_blob, p_ts, p_signature, p_updated)
                    ON CONFLICT (key) DO UPDATE SET blob = EXCLUDED.blob, ts = EXCLUDED.ts, signature = EXCLUDED.signature,
                                                    updated = EXCLUDED.updated;
                    IF tombstone_ts IS NOT NULL THEN
                        DELETE FROM relay_tombstones WHERE key = p_key;
                    END IF;
                    RETURN -1;
                END $$
                """,
                """
                CREATE FUNCTION coords_delete(p_lock BIGINT, p_key BYTEA, p_ts BIGINT, p_now BIGINT)
                RETURNS BIGINT LANGUAGE plpgsql VOLATILE AS $$
                DECLARE record_ts BIGINT; tombstone_ts BIGINT;
                BEGIN
                    PERFORM pg_advisory_xact_lock(p_lock);
                    SELECT ts INTO record_ts FROM relay_records WHERE key = p_key;
                    SELECT ts INTO tombstone_ts FROM relay_tombstones WHERE key = p_key;
                    IF record_ts IS NOT NULL AND p_ts <= record_ts THEN RETURN record_ts; END IF;
                    IF record_ts IS NULL AND tombstone_ts IS NOT NULL AND p_ts <= tombstone_ts THEN RETURN tombstone_ts; END IF;
                    DELETE FROM relay_records WHERE key = p_key;
                    INSERT INTO relay_tombstones (key, ts, recorded_at) VALUES (p_key, greatest(p_ts, coalesce(tombstone_ts, 0)), p_now)
                    ON CONFLICT (key) DO UPDATE SET ts = EXCLUDED.ts, recorded_at = EXCLUDED.recorded_at;
                    RETURN CASE WHEN record_ts IS NULL THEN -2 ELSE -1 END;
                END $$
                """
            ]
        ),
        // Version 3: a batch of uploads in one statement and one transaction (one commit for
        // all the uploads in flight). The keys' locks are taken first, in ascending order, so
        // batches of two nodes never deadlock; then each upload is decided in arrival order,
        // exactly as coords_put would.
        (
            3,
            [
                """
                CREATE FUNCTION coords_put_batch(p_locks BIGINT[], p_keys BYTEA[], p_blobs BYTEA[], p_ts BIGINT[], p_signatures BYTEA[],
                                                 p_updated BIGINT[])
                RETURNS BIGINT[] LANGUAGE plpgsql VOLATILE AS $$
                DECLARE results BIGINT[] := '{}'; lock_id BIGINT; record_ts BIGINT; tombstone_ts BIGINT;
                BEGIN
                    FOR lock_id IN SELECT DISTINCT l FROM unnest(p_locks) AS l ORDER BY l LOOP
                        PERFORM pg_advisory_xact_lock(lock_id);
                    END LOOP;
                    FOR i IN 1 .. coalesce(array_length(p_keys, 1), 0) LOOP
                        SELECT ts INTO record_ts FROM relay_records WHERE key = p_keys[i];
                        SELECT ts INTO tombstone_ts FROM relay_tombstones WHERE key = p_keys[i];
                        IF (record_ts IS NOT NULL OR tombstone_ts IS NOT NULL)
                           AND p_ts[i] <= greatest(coalesce(record_ts, 0), coalesce(tombstone_ts, 0)) THEN
                            results := results || greatest(coalesce(record_ts, 0), coalesce(tombstone_ts, 0));
                            CONTINUE;
                        END IF;
                        INSERT INTO relay_records (key, blob, ts, signature, updated)
                        VALUES (p_keys[i], p_blobs[i], p_ts[i], p_signatures[i], p_updated[i])
                        ON CONFLICT (key) DO UPDATE SET blob = EXCLUDED.blob, ts = EXCLUDED.ts, signature = EXCLUDED.signature,
                                                        updated = EXCLUDED.updated;
                        IF tombstone_ts IS NOT NULL THEN
                            DELETE FROM relay_tombstones WHERE key = p_keys[i];
                        END IF;
                        results := results || (-1)::BIGINT;
                    END LOOP;
                    RETURN results;
                END $$
                """
            ]
        ),
        (
            4,
            [
                "CREATE TABLE push_endpoints (recipient TEXT PRIMARY KEY, endpoint TEXT NOT NULL, expires_at BIGINT NOT NULL)",
                "CREATE INDEX push_endpoints_expires ON push_endpoints (expires_at)"
            ]
        ),
        // Version 5: the normalised address that registered a push endpoint, so wakes are shared
        // fairly per registering address (RELAY.md, "Fairness"); rows of version 4 read as ''.
        (
            5,
            ["ALTER TABLE push_endpoints ADD COLUMN registered_by TEXT NOT NULL DEFAULT ''"]
        )
    ]
    /// The advisory lock that serialises migrations of several nodes starting at once.
    static let migrationLock: Int64 = 0x636f_6f72_6473_0001

    private let client: PostgresClient
    private let runner: Task<Void, Never>
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

    /// Connects, checks the credentials and the schema, and migrates it.
    /// - Parameters:
    ///   - location: where the database is.
    ///   - poolSize: most connections this node keeps open.
    ///   - operationTimeout: how long a request may wait for the database before it gets 503.
    ///   - migrationTimeout: how long the start may wait for the schema migration. It is longer
    ///     than a request's wait: it waits behind other nodes migrating at the same moment (one
    ///     advisory lock), and its DDL commits are fsynced one by one on a server that may be busy.
    /// - Throws: ``RelayStoreError`` with one clear sentence: unreachable, refused credentials,
    ///   a schema newer than this relay, or a failed migration.
    public init(
        location: PostgresLocation, poolSize: Int = 16, operationTimeout: Duration = .seconds(5),
        migrationTimeout: Duration = .seconds(120), logger: Logger = Logger(label: "coords.relay.postgres")
    ) async throws {
        var configuration = PostgresClient.Configuration(
            host: location.host, port: location.port, username: location.username,
            password: location.password, database: location.database,
            tls: try Self.tls(location.sslMode))
        configuration.options.maximumConnections = max(poolSize, 1)
        configuration.options.minimumConnections = 0
        configuration.options.connectTimeout = .seconds(5)
        self.location = location
        self.logger = logger
        self.operationTimeout = operationTimeout
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.client = client
        // Half the pool for each kind, at least one: the rest serves mailbox requests and sweeps.
        let workers = max(poolSize / 2, 1)
        uploads = Batcher(maximumBatch: 256, maximumWorkers: workers) { batch in
            try await Self.withDeadline(operationTimeout, what: "store uploads") { try await Self.putBatch(batch, client, logger) }
        }
        // At most 8 fetches (400 ids) per query: beyond a few hundred ids PostgreSQL's planner turns
        // to a sequential scan of the whole table, which costs more than separate queries.
        fetches = Batcher(maximumBatch: 8, maximumWorkers: workers) { batch in
            try await Self.withDeadline(operationTimeout, what: "fetch uploads") { try await Self.fetchBatch(batch, client, logger) }
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
            try await Self.checkConnection(location, timeout: operationTimeout, logger: logger)
            try await migrate(within: max(migrationTimeout, operationTimeout))
        } catch {
            runner.cancel()
            throw error
        }
    }

    private static func tls(_ mode: String) throws -> PostgresClient.Configuration.TLS {
        switch mode {
        case "disable": return .disable
        case "allow", "prefer":
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = .none  // libpq's prefer: encrypted if offered, not verified
            return .prefer(configuration)
        case "require":
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = .none  // libpq's require: encrypted, not verified
            return .require(configuration)
        default: return .require(.makeClientConfiguration())  // verify-ca, verify-full
        }
    }

    /// One direct connection before the pool starts: the pool retries failed connections quietly,
    /// so a wrong password or an unreachable host would only show as timeouts. Here they become
    /// one clear sentence.
    private static func checkConnection(_ location: PostgresLocation, timeout: Duration, logger: Logger) async throws {
        let tls: PostgresConnection.Configuration.TLS
        switch location.sslMode {
        case "disable": tls = .disable
        case "allow", "prefer":
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = .none
            tls = .prefer(try NIOSSLContext(configuration: configuration))
        case "require":
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = .none
            tls = .require(try NIOSSLContext(configuration: configuration))
        default: tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
        let configuration = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.username,
            password: location.password, database: location.database, tls: tls)
        do {
            try await withDeadline(timeout, what: "connect") {
                let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
                try await connection.close()
            }
        } catch let error as PSQLError {
            let state = error.serverInfo?[.sqlState] ?? ""
            let message = error.serverInfo?[.message] ?? "\(error.code)"
            if state.hasPrefix("28") {
                throw RelayStoreError(
                    description:
                        "PostgreSQL at \(location.host):\(location.port) refused user \(location.username): \(message) (check the password in the URL or PGPASSWORD)"
                )
            }
            if state == "3D000" {
                throw RelayStoreError(description: "PostgreSQL at \(location.host):\(location.port) has no database \(location.database): \(message)")
            }
            if error.code == .server {
                throw RelayStoreError(description: "PostgreSQL at \(location.host):\(location.port) refused the connection: \(message) (SQLSTATE \(state))")
            }
            if let tlsError = error.underlying as? NIOSSLError {
                throw RelayStoreError(
                    description:
                        "TLS with PostgreSQL at \(location.host):\(location.port) failed (sslmode=\(location.sslMode)): \(tlsError) (verify-full needs a certificate your system trusts for this host name; require encrypts without checking)"
                )
            }
            throw RelayStoreError(
                description: "cannot reach PostgreSQL at \(location.host):\(location.port): \(error.underlying.map { "\($0)" } ?? "\(error.code)")")
        } catch let error as RelayStoreUnavailable {
            throw RelayStoreError(description: "cannot reach PostgreSQL at \(location.host):\(location.port): \(error.description)")
        } catch let error as RelayStoreError {
            throw error
        } catch {
            throw RelayStoreError(description: "cannot reach PostgreSQL at \(location.host):\(location.port): \(error)")
        }
    }

    public func close() async {
        runner.cancel()
        _ = await runner.value
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

    // MARK: Schema

    private func migrate(within timeout: Duration) async throws {
        try await run("migrate the schema", within: timeout) { client, logger in
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query("SELECT pg_advisory_xact_lock(\(Self.migrationLock))", logger: logger)
                try await connection.query(
                    """
                    CREATE TABLE IF NOT EXISTS coords_relay_migrations (
                        version INT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())
                    """, logger: logger)
                var current = 0
                for try await version in try await connection.query(
                    "SELECT coalesce(max(version), 0) FROM coords_relay_migrations",
                    logger: logger
                ).decode(Int.self) {
                    current = version
                }
                guard current <= Self.schemaVersion else {
                    throw RelayStoreError(
                        description: "the database's relay schema is version \(current), newer than this relay's \(Self.schemaVersion); upgrade coords-relay")
                }
                for migration in Self.migrations where migration.version > current {
                    for statement in migration.statements { try await connection.query(statement, logger: logger) }
                    try await connection.query("INSERT INTO coords_relay_migrations (version) VALUES (\(migration.version))", logger: logger)
                    logger.info("relay schema migrated", metadata: ["version": "\(migration.version)"])
                }
            }
        }
    }

    /// The schema version stored in the database.
    public func storedSchemaVersion() async throws -> Int {
        try await run("read the schema version") { client, logger in
            var version = 0
            for try await v in try await client.query("SELECT coalesce(max(version), 0) FROM coords_relay_migrations", logger: logger)
                .decode(Int.self)
            { version = v }
            return version
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

    private static func putBatch(_ batch: [(Bytes32, RelayRecord)], _ client: PostgresClient, _ logger: Logger) async throws -> [PutResult] {
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
    private static func fetchBatch(_ batch: [([Bytes32], UInt64)], _ client: PostgresClient, _ logger: Logger) async throws
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
            var removed = 0
            for try await _ in try await client.query(
                "DELETE FROM relay_records WHERE updated < \(Self.int(updatedBefore)) RETURNING 1",
                logger: logger
            ).decode(Int.self) { removed += 1 }
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
                var inserted = 0
                for try await _ in try await connection.query(
                    """
                    INSERT INTO mailbox (id, recipient, expires_at, authenticated, envelope)
                    VALUES (\(entry.id), \(entry.recipient), \(Self.int(entry.expiresAt)), \(entry.authenticated), \(Self.bytes(entry.envelope)))
                    ON CONFLICT (id) DO NOTHING RETURNING 1
                    """, logger: logger
                ).decode(Int.self) { inserted += 1 }
                return inserted == 1 ? .stored : .duplicate
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
                    for try await _ in try await connection.query("DELETE FROM mailbox WHERE id = \(id) RETURNING 1", logger: logger)
                        .decode(Int.self)
                    { deleted += 1 }
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
            var removed = 0
            for try await _ in try await client.query("DELETE FROM mailbox WHERE expires_at <= \(Self.int(now)) RETURNING 1", logger: logger)
                .decode(Int.self)
            { removed += 1 }
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
            var accepted = false
            for try await _ in try await client.query(
                """
                INSERT INTO seen_signatures (r, until) VALUES (\(Self.bytes(r.bytes)), \(Self.int(until)))
                ON CONFLICT (r) DO UPDATE SET until = EXCLUDED.until WHERE seen_signatures.until < \(Self.int(now))
                RETURNING 1
                """, logger: logger
            ).decode(Int.self) { accepted = true }
            return accepted ? .accepted : .replayed
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
            var stored = false
            for try await _ in try await client.query(
                """
                INSERT INTO push_endpoints (recipient, endpoint, expires_at, registered_by)
                SELECT \(recipient), \(registration.endpoint), \(Self.int(registration.expiresAt)), \(registration.registeredBy)
                WHERE EXISTS (SELECT 1 FROM push_endpoints WHERE recipient = \(recipient))
                   OR (SELECT count(*) FROM push_endpoints) < \(Int64(clamping: capacity))
                ON CONFLICT (recipient) DO UPDATE SET endpoint = EXCLUDED.endpoint, expires_at = EXCLUDED.expires_at,
                                                      registered_by = EXCLUDED.registered_by
                RETURNING 1
                """, logger: logger
            ).decode(Int.self) { stored = true }
            return stored
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
            var removed = false
            for try await _ in try await client.query(query, logger: logger).decode(Int.self) { removed = true }
            return removed
        }
    }

    public func pushSweep(now: UInt64) async throws -> Int {
        try await run("sweep push endpoints") { client, logger in
            var removed = 0
            for try await _ in try await client.query("DELETE FROM push_endpoints WHERE expires_at <= \(Self.int(now)) RETURNING 1", logger: logger)
                .decode(Int.self)
            { removed += 1 }
            return removed
        }
    }

    public func pushCount() async throws -> Int {
        try await run("count push endpoints") { client, logger in try await Self.scalar("SELECT count(*) FROM push_endpoints", client, logger) }
    }

    // MARK: Prepared statements (parsed and planned once per connection)

    struct PutBatchStatement: PostgresPreparedStatement {
        static let name = "coords_put_batch_v3"
        static let sql = "SELECT coords_put_batch($1, $2, $3, $4, $5, $6)"
        typealias Row = [Int64]
        var locks: [Int64], keys: [ByteBuffer], blobs: [ByteBuffer], timestamps: [Int64], signatures: [ByteBuffer], updated: [Int64]

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 6)
            bindings.append(locks)
            bindings.append(keys)
            bindings.append(blobs)
            bindings.append(timestamps)
            bindings.append(signatures)
            bindings.append(updated)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> [Int64] { try row.decode([Int64].self) }
    }

    struct FetchStatement: PostgresPreparedStatement {
        static let name = "coords_fetch_v3"
        static let sql = """
            SELECT string_agg(key || int8send(ts) || int8send(updated) || int4send(length(signature)) || signature
                              || int4send(length(blob)) || blob, ''::bytea)
            FROM relay_records WHERE key = ANY($1) AND updated >= $2
            """
        typealias Row = ByteBuffer?
        var keys: [ByteBuffer], updatedSince: Int64

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(keys)
            bindings.append(updatedSince)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> ByteBuffer? { try row.decode(ByteBuffer?.self) }
    }

    // MARK: Helpers

    /// Runs `body` against the database within `timeout` (default ``operationTimeout``); a connection failure or
    /// the timeout becomes ``RelayStoreUnavailable`` (503), anything else a ``RelayStoreError``.
    private func run<R: Sendable>(
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
    /// trouble and restarts, ``RelayStoreError`` (500) for anything else. Transaction errors are
    /// unwrapped to their cause.
    private func classify(_ error: any Error, _ what: String) -> any Error {
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
                // 57P: the server is shutting down or restarting; 08: connection exceptions.
                if state.hasPrefix("57P") || state.hasPrefix("08") {
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

    /// The result of `body`, or ``RelayStoreUnavailable`` after `timeout` — without waiting for
    /// `body` to notice its cancellation (a request for a pool connection may not). The timer is
    /// cancelled as soon as `body` finishes: thousands of requests a second must not leave
    /// thousands of sleeping timers behind.
    private static func withDeadline<R: Sendable>(
        _ timeout: Duration, what: String,
        _ body: @escaping @Sendable () async throws -> R
    ) async throws -> R {
        let deadline = Deadline()
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<R, any Error>) in
            let work = Task {
                let result: Result<R, any Error>
                do { result = .success(try await body()) } catch { result = .failure(error) }
                if deadline.decide() { continuation.resume(with: result) }
            }
            deadline.arm(
                Task {
                    do { try await Task.sleep(for: timeout) } catch { return }  // cancelled: the work finished first
                    if deadline.decide() {
                        work.cancel()
                        continuation.resume(throwing: RelayStoreUnavailable(description: "the database did not answer within \(timeout) (\(what))"))
                    }
                })
        }
    }

    private static func scalar(_ query: PostgresQuery, _ client: PostgresClient, _ logger: Logger) async throws -> Int {
        var value: Int64 = 0
        for try await n in try await client.query(query, logger: logger).decode(Int64.self) { value = n }
        return Int(clamping: value)
    }

    private static func scalar(_ query: PostgresQuery, _ connection: PostgresConnection, _ logger: Logger) async throws -> Int {
        var value: Int64 = 0
        for try await n in try await connection.query(query, logger: logger).decode(Int64.self) { value = n }
        return Int(clamping: value)
    }

    /// A bytea parameter.
    static func bytes(_ value: [UInt8]) -> ByteBuffer { ByteBuffer(bytes: value) }

    /// A BIGINT parameter: relay numbers are checked well below 2⁶³ (timestamps within the skew,
    /// expiries within the message TTL), so clamping only guards against the impossible.
    static func int(_ value: UInt64) -> Int64 { Int64(clamping: value) }

    /// The advisory lock id of a key or recipient: its first 8 bytes of SHA-256-like spread are
    /// not needed, a simple FNV-1a over the bytes gives distinct ids for distinct keys in practice
    /// (a collision only serialises two unrelated requests).
    static func lockID(_ bytes: [UInt8]) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return Int64(bitPattern: hash)
    }
}
