import CoordsCore
import Logging
import NIOCore
import PostgresNIO

// MARK: Attachment objects (PROTOCOL.md §12.4) on PostgreSQL

extension PostgresRelayStore {
    /// Schema version 7: objects, and their bytes as one row per upload part (at most
    /// `OBJECT_PART_MAX` bytes each, outside any index the relay searches).
    static let objectMigration: (version: Int, statements: [PostgresQuery]) = (
        7,
        [
            """
            CREATE TABLE objects (id BYTEA PRIMARY KEY, owner BYTEA NOT NULL, size BIGINT NOT NULL,
                expires_at BIGINT NOT NULL, stored BIGINT NOT NULL)
            """,
            "CREATE INDEX objects_owner ON objects (owner)",
            "CREATE INDEX objects_expires ON objects (expires_at)",
            """
            CREATE TABLE object_parts (id BYTEA NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
                position BIGINT NOT NULL, bytes BYTEA NOT NULL, PRIMARY KEY (id, position))
            """
        ]
    )

    public func objectPut(_ part: ObjectPart, limits: ObjectLimits, now: UInt64) async throws -> ObjectPutResult {
        try await run("store an object part") { client, logger in
            try await client.withTransaction(logger: logger) { connection in
                // The owner's lock: its quota is decided one new object at a time on every node;
                // then the object's: its parts are appended one at a time. (The relay's total is
                // counted without a lock: two nodes may pass it by one object each.)
                try await connection.query("SELECT pg_advisory_xact_lock(\(Self.lockID(part.owner.bytes)))", logger: logger)
                try await connection.query("SELECT pg_advisory_xact_lock(\(Self.lockID(part.object.bytes)))", logger: logger)
                let existing = try await Self.objectRecord(part.object, connection, logger)
                var usage = ObjectUsage(ownerBytes: 0, ownerObjects: 0, totalBytes: 0)
                // Asked for a new object (the owner's quota) and for a part that brings bytes (the
                // relay's total, counted at the bytes stored).
                if existing.map({ $0.expiresAt <= now }) ?? true || !part.bytes.isEmpty {
                    for try await (total, ownerObjects, ownerBytes) in try await connection.query(
                        """
                        SELECT coalesce(sum(stored), 0)::BIGINT, count(*) FILTER (WHERE owner = \(Self.bytes(part.owner.bytes))),
                               coalesce(sum(size) FILTER (WHERE owner = \(Self.bytes(part.owner.bytes))), 0)::BIGINT
                        FROM objects WHERE expires_at > \(Self.int(now))
                        """, logger: logger
                    ).decode((Int64, Int64, Int64).self) {
                        usage = ObjectUsage(
                            ownerBytes: UInt64(clamping: ownerBytes), ownerObjects: Int(clamping: ownerObjects), totalBytes: UInt64(clamping: total))
                    }
                }
                let decision = ObjectStoreRules.decide(existing: existing, part: part, usage: { usage }, limits: limits, now: now)
                guard case .stored(let record) = decision.result else { return decision.result }
                let id = Self.bytes(part.object.bytes)
                if decision.create {
                    try await connection.query("DELETE FROM objects WHERE id = \(id)", logger: logger)  // an expired one's rows go with it
                    try await connection.query(
                        """
                        INSERT INTO objects (id, owner, size, expires_at, stored)
                        VALUES (\(id), \(Self.bytes(record.owner.bytes)), \(Self.int(record.size)), \(Self.int(record.expiresAt)),
                                \(Self.int(record.stored)))
                        """, logger: logger)
                } else {
                    try await connection.query("UPDATE objects SET stored = \(Self.int(record.stored)) WHERE id = \(id)", logger: logger)
                }
                if decision.append {
                    try await connection.query(
                        "INSERT INTO object_parts (id, position, bytes) VALUES (\(id), \(Self.int(part.offset)), \(Self.bytes(part.bytes)))",
                        logger: logger)
                }
                return decision.result
            }
        }
    }

    public func objectInfo(_ object: ObjectID, now: UInt64) async throws -> StoredObject? {
        try await run("look up an object") { client, logger in
            try await client.withConnection { connection in
                try await Self.objectRecord(object, connection, logger).flatMap { $0.expiresAt > now ? $0 : nil }
            }
        }
    }

    public func objectRead(_ object: ObjectID, offset: UInt64, count: Int) async throws -> [UInt8] {
        guard count > 0 else { return [] }
        let end = offset.addingSaturating(UInt64(count))
        return try await run("read an object") { client, logger in
            // Only the wanted slice of each part that overlaps [offset, end) leaves the database.
            var bytes: [UInt8] = []
            for try await slice in try await client.query(
                """
                SELECT substring(bytes FROM (greatest(\(Self.int(offset)) - position, 0) + 1)::INT
                                 FOR (least(position + length(bytes), \(Self.int(end))) - greatest(position, \(Self.int(offset))))::INT)
                FROM object_parts
                WHERE id = \(Self.bytes(object.bytes)) AND position < \(Self.int(end)) AND position + length(bytes) > \(Self.int(offset))
                ORDER BY position
                """, logger: logger
            ).decode(ByteBuffer.self) {
                bytes += slice.readableBytesView
                if bytes.count >= count { break }
            }
            return Array(bytes.prefix(count))
        }
    }

    public func objectDelete(_ object: ObjectID, owner: Bytes32, now: UInt64) async throws -> ObjectDeleteResult {
        try await run("delete an object") { client, logger in
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query("SELECT pg_advisory_xact_lock(\(Self.lockID(object.bytes)))", logger: logger)
                guard let record = try await Self.objectRecord(object, connection, logger), record.expiresAt > now else { return .none }
                guard record.owner == owner else { return .notOwner }
                try await connection.query("DELETE FROM objects WHERE id = \(Self.bytes(object.bytes))", logger: logger)
                return .deleted
            }
        }
    }

    public func objectSweep(now: UInt64) async throws -> Int {
        try await run("sweep expired objects") { client, logger in
            try await Self.rowsReturned(client.query("DELETE FROM objects WHERE expires_at <= \(Self.int(now)) RETURNING 1", logger: logger))
        }
    }

    public func objectTotals() async throws -> (objects: Int, bytes: UInt64) {
        try await run("count objects") { client, logger in
            var totals = (objects: 0, bytes: UInt64(0))
            for try await (count, bytes) in try await client.query(
                "SELECT count(*), coalesce(sum(size), 0)::BIGINT FROM objects", logger: logger
            ).decode((Int64, Int64).self) {
                totals = (Int(clamping: count), UInt64(clamping: bytes))
            }
            return totals
        }
    }

    /// The record of `object`, expired or not (a damaged row reads as none).
    static func objectRecord(_ object: ObjectID, _ connection: PostgresConnection, _ logger: Logger) async throws -> StoredObject? {
        var found: StoredObject?
        for try await (owner, size, expiresAt, stored) in try await connection.query(
            "SELECT owner, size, expires_at, stored FROM objects WHERE id = \(Self.bytes(object.bytes))", logger: logger
        ).decode((ByteBuffer, Int64, Int64, Int64).self) {
            // Only this relay writes the table; a damaged row is treated as absent.
            guard let key = try? Bytes32(Array(buffer: owner)), size >= stored, stored >= 0 else { continue }  // damaged: absent
            found = StoredObject(owner: key, size: UInt64(clamping: size), expiresAt: UInt64(clamping: expiresAt), stored: UInt64(clamping: stored))
        }
        return found
    }
}
