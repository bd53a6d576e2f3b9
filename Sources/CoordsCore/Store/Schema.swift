/// A named table with typed keys and values. Declare tables as static constants:
/// ```swift
/// enum Tables { static let friends = TableDefinition<Ed25519PublicKey, FriendRecord>("friends") }
/// ```
public struct TableDefinition<Key: StoreKey, Value: StoreValue>: Sendable, Hashable {
    /// The table's name in the file (LMDB named database). Names starting with `__` are reserved.
    public let name: String
    /// Whether writes to the table advance its change stamp (``ReadTransaction/changeStamp(of:)``).
    public let stamped: Bool
    /// How its keys appear in a sealed store's file (hidden unless declared otherwise).
    public let visibility: KeyVisibility

    /// Creates a definition.
    /// - Parameters:
    ///   - name: the table's name in the file; names starting with `__` are reserved.
    ///   - stamped: every write transaction that changes the table (put, insert,
    ///     remove, delete, removeAll) also advances a counter kept in the store's metadata, so a
    ///     reader can keep something derived from the table and know, with one small read, whether
    ///     it is still current — across processes too, since the counter lives in the file.
    ///   - keys: how keys appear in a sealed store (``KeyVisibility``): hidden by default; keep a
    ///     suffix in order only where a scan needs order, and keep keys visible only when they
    ///     reveal nothing but a count. Unsealed stores keep every key as it is.
    public init(_ name: String, stamped: Bool = false, keys: KeyVisibility = .hidden) {
        self.name = name
        self.stamped = stamped
        self.visibility = keys
    }

    /// The type-erased form used in a ``Schema``.
    public var erased: AnyTableDefinition {
        AnyTableDefinition(name: name, keyTypeName: Key.storeTypeName, valueTypeName: Value.storeTypeName, visibility: visibility)
    }
}

/// A table definition without its Swift types: name and stored type names.
public struct AnyTableDefinition: Sendable, Hashable {
    /// The LMDB table name.
    public let name: String
    /// The key codec's ``StoreCodable/storeTypeName``.
    public let keyTypeName: String
    /// The value codec's ``StoreCodable/storeTypeName``.
    public let valueTypeName: String
    /// How its keys appear in a sealed store's file.
    public var visibility: KeyVisibility = .hidden

    /// A definition by names (the metadata table's, or a table a migration reads).
    public init(name: String, keyTypeName: String, valueTypeName: String, visibility: KeyVisibility = .hidden) {
        self.name = name
        self.keyTypeName = keyTypeName
        self.valueTypeName = valueTypeName
        self.visibility = visibility
    }

    /// The signature recorded in the metadata table, e.g. `u64 -> json:OutboxItem/1`.
    public var typeSignature: String { "\(keyTypeName) -> \(valueTypeName)" }
}

/// One step of schema evolution: brings a store from `version - 1` to `version`.
///
/// Migrations run at open, in ascending order, inside the same write transaction that opens
/// the tables, so an upgrade is all-or-nothing. In a migration, any table may be opened
/// (including ones the current schema no longer lists), and ``WriteTransaction/redefine(_:)``
/// records a table's new types after its values were rewritten.
public struct Migration: Sendable {
    /// The version this migration produces.
    public let version: UInt32
    /// The work. It must not call `read`/`write` on the database (it already is in one).
    public let body: @Sendable (borrowing WriteTransaction) throws -> Void

    /// A step to `version` that runs `body`.
    public init(to version: UInt32, _ body: @escaping @Sendable (borrowing WriteTransaction) throws -> Void) {
        self.version = version
        self.body = body
    }
}

/// The tables a database holds, its current version, and how to get there from older files.
public struct Schema: Sendable {
    /// The current version (stored in the metadata table).
    public var version: UInt32
    /// Every table the application uses; all are opened (created if missing) at open.
    public var tables: [AnyTableDefinition]
    /// Steps from older versions, any order (they are sorted by version).
    public var migrations: [Migration]

    /// A schema; `migrations` are sorted by version here.
    public init(version: UInt32, tables: [AnyTableDefinition], migrations: [Migration] = []) {
        self.version = version
        self.tables = tables
        self.migrations = migrations.sorted { $0.version < $1.version }
    }
}
