import CoordsCore
import Logging
import NIOCore
import PostgresNIO

// MARK: Prekeys (PROTOCOL.md §10.3) on PostgreSQL

extension PostgresRelayStore {
    /// Schema version 6: the owners' signed prekeys and one-time prekey stock.
    static let prekeyMigration: (version: Int, statements: [PostgresQuery]) = (
        6,
        [
            """
            CREATE TABLE prekeys_signed (owner BYTEA PRIMARY KEY, id BIGINT NOT NULL, key BYTEA NOT NULL,
                created BIGINT NOT NULL, expires BIGINT NOT NULL, signature BYTEA NOT NULL)
            """,
            "CREATE INDEX prekeys_signed_expires ON prekeys_signed (expires)",
            """
            CREATE TABLE prekeys_one_time (owner BYTEA NOT NULL, id BIGINT NOT NULL, key BYTEA NOT NULL,
                signature BYTEA NOT NULL, PRIMARY KEY (owner, id))
            """
        ]
    )

    public func prekeyPut(owner: Bytes32, signed: SignedPrekey, oneTime: [OneTimePrekey], stockLimit: Int) async throws -> PrekeyPutResult {
        try await run("store prekeys") { client, logger in
            try await client.withTransaction(logger: logger) { connection in
                // One lock per owner: two uploads (on any nodes) decide one after the other.
                try await connection.query("SELECT pg_advisory_xact_lock(\(Self.lockID(owner.bytes)))", logger: logger)
                let existing = try await Self.signedPrekey(owner, connection, logger)
                var stored: [UInt32: OneTimePrekey] = [:]
                for try await (id, key, signature) in try await connection.query(
                    "SELECT id, key, signature FROM prekeys_one_time WHERE owner = \(Self.bytes(owner.bytes))", logger: logger
                ).decode((Int64, ByteBuffer, ByteBuffer).self) {
                    guard let id32 = UInt32(exactly: id) else { continue }  // never written: ids are u32
                    stored[id32] = OneTimePrekey(
                        id: id32, key: try X25519PublicKey(rawRepresentation: Array(buffer: key)), signature: Array(buffer: signature))
                }
                let decision = PrekeyStoreRules.decide(
                    existing: existing, storedOneTime: { stored[$0] }, stock: stored.count, signed: signed, oneTime: oneTime,
                    stockLimit: stockLimit)
                guard case .stored = decision.result else { return decision.result }
                if decision.writeSigned {
                    try await connection.query(
                        """
                        INSERT INTO prekeys_signed (owner, id, key, created, expires, signature)
                        VALUES (\(Self.bytes(owner.bytes)), \(Int64(signed.id)), \(Self.bytes(signed.key.rawRepresentation)),
                                \(Self.int(signed.created)), \(Self.int(signed.expires)), \(Self.bytes(signed.signature)))
                        ON CONFLICT (owner) DO UPDATE SET id = EXCLUDED.id, key = EXCLUDED.key, created = EXCLUDED.created,
                            expires = EXCLUDED.expires, signature = EXCLUDED.signature
                        """, logger: logger)
                }
                if !decision.add.isEmpty {
                    try await connection.query(
                        """
                        INSERT INTO prekeys_one_time (owner, id, key, signature)
                        SELECT \(Self.bytes(owner.bytes)), id, key, signature
                        FROM unnest(\(decision.add.map { Int64($0.id) })::bigint[], \(decision.add.map { Self.bytes($0.key.rawRepresentation) })::bytea[],
                                    \(decision.add.map { Self.bytes($0.signature) })::bytea[]) AS t(id, key, signature)
                        """, logger: logger)
                }
                return decision.result
            }
        }
    }

    public func prekeyBundle(owner: Bytes32, takeOneTime: Bool, now: UInt64) async throws -> (signed: SignedPrekey, oneTime: OneTimePrekey?)? {
        try await run("hand out a prekey bundle") { client, logger in
            try await client.withTransaction(logger: logger) { connection -> (signed: SignedPrekey, oneTime: OneTimePrekey?)? in
                guard let signed = try await Self.signedPrekey(owner, connection, logger), signed.expires > now else { return nil }
                guard takeOneTime else { return (signed, nil) }
                // Exactly once across nodes: the row is deleted by the statement that reads it, and
                // a row another transaction is taking is skipped, never handed out twice.
                var taken: OneTimePrekey?
                for try await (id, key, signature) in try await connection.query(
                    """
                    DELETE FROM prekeys_one_time WHERE (owner, id) = (
                        SELECT owner, id FROM prekeys_one_time WHERE owner = \(Self.bytes(owner.bytes))
                        ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
                    RETURNING id, key, signature
                    """, logger: logger
                ).decode((Int64, ByteBuffer, ByteBuffer).self) {
                    guard let id32 = UInt32(exactly: id) else { continue }  // never written: ids are u32
                    taken = OneTimePrekey(
                        id: id32, key: try X25519PublicKey(rawRepresentation: Array(buffer: key)), signature: Array(buffer: signature))
                }
                return (signed, taken)
            }
        }
    }

    public func prekeyStock(owner: Bytes32) async throws -> PrekeyStock {
        try await run("count prekeys") { client, logger in
            try await client.withConnection { connection in
                let signed = try await Self.signedPrekey(owner, connection, logger)
                let count = try await Self.scalar(
                    "SELECT count(*) FROM prekeys_one_time WHERE owner = \(Self.bytes(owner.bytes))", connection, logger)
                return PrekeyStock(signed: signed, oneTime: count)
            }
        }
    }

    public func prekeySweep(now: UInt64) async throws -> Int {
        try await run("sweep prekeys") { client, logger in
            try await client.withTransaction(logger: logger) { connection in
                let removed = try await Self.rowsReturned(
                    connection.query("DELETE FROM prekeys_signed WHERE expires <= \(Self.int(now)) RETURNING 1", logger: logger))
                try await connection.query(
                    "DELETE FROM prekeys_one_time o WHERE NOT EXISTS (SELECT 1 FROM prekeys_signed s WHERE s.owner = o.owner)", logger: logger)
                return removed
            }
        }
    }

    public func prekeyTotals() async throws -> (owners: Int, oneTime: Int) {
        try await run("count prekey stock") { client, logger in
            (
                try await Self.scalar("SELECT count(*) FROM prekeys_signed", client, logger),
                try await Self.scalar("SELECT count(*) FROM prekeys_one_time", client, logger)
            )
        }
    }

    /// `owner`'s stored signed prekey (a damaged row reads as none).
    static func signedPrekey(_ owner: Bytes32, _ connection: PostgresConnection, _ logger: Logger) async throws -> SignedPrekey? {
        var found: SignedPrekey?
        for try await (id, key, created, expires, signature) in try await connection.query(
            "SELECT id, key, created, expires, signature FROM prekeys_signed WHERE owner = \(Self.bytes(owner.bytes))", logger: logger
        ).decode((Int64, ByteBuffer, Int64, Int64, ByteBuffer).self) {
            // Only this relay writes the table; a damaged row is treated as absent.
            guard let id32 = UInt32(exactly: id), let publicKey = try? X25519PublicKey(rawRepresentation: Array(buffer: key)) else { continue }
            found = SignedPrekey(
                id: id32, key: publicKey, created: UInt64(clamping: created), expires: UInt64(clamping: expires),
                signature: Array(buffer: signature))
        }
        return found
    }
}
