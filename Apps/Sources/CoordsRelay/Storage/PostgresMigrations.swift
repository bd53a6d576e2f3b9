import CoordsCore
import Logging
import PostgresNIO

/// The schema of a PostgreSQL relay store: numbered migrations applied in one transaction under
/// an advisory lock (several nodes starting at once migrate once), and the check that refuses a
/// database a newer relay migrated.
extension PostgresRelayStore {
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
        ),
        // Version 6: prekeys (PROTOCOL.md §10.3), PostgresPrekeys.swift.
        prekeyMigration,
        // Version 7: attachment objects (PROTOCOL.md §12.4), PostgresObjects.swift.
        objectMigration
    ]
    /// The advisory lock that serialises migrations of several nodes starting at once.
    static let migrationLock: Int64 = 0x636f_6f72_6473_0001

    // MARK: Schema

    func migrate(within timeout: Duration) async throws {
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

}
