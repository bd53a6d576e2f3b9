import CoordsCore
import Logging
import NIOCore
import PostgresNIO

/// The statements of a PostgreSQL relay store that are parsed and planned once per connection,
/// and the small helpers every query uses (row counts, parameters, advisory lock ids).
extension PostgresRelayStore {
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

    static func scalar(_ query: PostgresQuery, _ client: PostgresClient, _ logger: Logger) async throws -> Int {
        try await scalar(client.query(query, logger: logger))
    }

    static func scalar(_ query: PostgresQuery, _ connection: PostgresConnection, _ logger: Logger) async throws -> Int {
        try await scalar(connection.query(query, logger: logger))
    }

    /// The last BIGINT a one-column query returned (0 for none), clamped to `Int`.
    static func scalar(_ rows: PostgresRowSequence) async throws -> Int {
        var value: Int64 = 0
        for try await n in rows.decode(Int64.self) { value = n }
        return Int(clamping: value)
    }

    /// How many rows a statement ending in `RETURNING 1` returned: the one way this store counts
    /// what an `INSERT … ON CONFLICT` or a `DELETE` changed.
    static func rowsReturned(_ rows: PostgresRowSequence) async throws -> Int {
        var count = 0
        for try await _ in rows.decode(Int.self) { count += 1 }
        return count
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
