internal import CLMDB
import CPlatform
internal import CSodium

/// The live state behind a transaction value: the LMDB handle until the transaction ends.
/// Every table operation checks it, so a table used after its closure returned throws
/// ``StoreError/transactionClosed`` instead of touching freed memory.
@usableFromInline final class TransactionState {
    private(set) var txn: OpaquePointer?
    let writable: Bool
    unowned let database: Database
    /// The sealer of the values (nil: an unsealed store), fixed for the transaction.
    @usableFromInline let sealer: StoreSealer?
    var isMigrating = false
    /// The stamped tables this write transaction already advanced (once per transaction is enough).
    private var advancedStamps: [String] = []

    /// The environment's key size limit, copied so the hot reads need not reach the database
    /// through its unowned reference.
    let maximumKeySize: Int

    init(txn: OpaquePointer, writable: Bool, database: Database, sealer: StoreSealer?) {
        self.txn = txn
        self.writable = writable
        self.database = database
        self.sealer = sealer
        maximumKeySize = database.maximumKeySize
    }

    /// Commits (write, `commit == true`) or aborts; returns LMDB's commit code (0 on abort).
    @discardableResult
    func finish(commit: Bool) -> Int32 {
        guard let txn else { return 0 }
        self.txn = nil
        if commit {
            if let rc = database.injectedFault(.commit) {
                mdb_txn_abort(txn)  // a failed mdb_txn_commit frees the transaction too
                return rc
            }
            return mdb_txn_commit(txn)
        }
        mdb_txn_abort(txn)
        return 0
    }

    func live() throws -> OpaquePointer {
        guard let txn else { throw StoreError.transactionClosed }
        return txn
    }

    /// The metadata key of `table`'s change stamp.
    static func stampKey(_ table: String) -> String { "stamp:" + table }

    /// `table`'s change stamp: 0 until its first change.
    func changeStamp(of table: String) throws -> UInt64 {
        guard let meta = database.metadataDBI else { throw StoreError.unknownTable(Database.metadataTable) }
        return try get(dbi: meta, table: Database.metadataTable, key: Self.stampKey(table), as: UInt64.self) ?? 0
    }

    /// Advances `table`'s change stamp, once per write transaction (an abort takes it back).
    func advanceStamp(of table: String) throws {
        guard !advancedStamps.contains(table) else { return }
        guard let meta = database.metadataDBI else { throw StoreError.unknownTable(Database.metadataTable) }
        try put(dbi: meta, key: Self.stampKey(table), value: try changeStamp(of: table) &+ 1)  // wraps, never traps
        advancedStamps.append(table)
    }

    /// The stored bytes of `key` in `dbi` (LMDB's mapped memory, valid until the transaction
    /// ends or, in a write transaction, the next write), or nil. Not generic, so the inlinable
    /// table reads specialise in the caller and end here.
    @usableFromInline func rawGet(dbi: UInt32, key k: UnsafeRawBufferPointer, table: String) throws -> UnsafeRawBufferPointer? {
        guard let txn else { throw StoreError.transactionClosed }
        guard k.count >= 1, k.count <= maximumKeySize else { throw StoreError.invalidKeySize(size: k.count, maximum: maximumKeySize) }
        var keyVal = MDB_val(mv_size: k.count, mv_data: UnsafeMutableRawPointer(mutating: k.baseAddress))
        var dataVal = MDB_val()
        let rc = mdb_get(txn, dbi, &keyVal, &dataVal)
        if rc == MDB_NOTFOUND { return nil }
        guard rc == 0 else { throw StoreError.lmdb(rc, "get from \(table)") }
        return UnsafeRawBufferPointer(start: dataVal.mv_data, count: dataVal.mv_size)
    }

    /// Decodes a stored value, naming the table in the error (see ``decode(_:_:table:)``).
    @usableFromInline func decode<V: StoreCodable>(_ type: V.Type, bytes: UnsafeRawBufferPointer, table: String) throws -> V {
        do {
            return try V(storeBytes: bytes)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.decodingFailed(table: table, type: V.storeTypeName, reason: "\(error)")
        }
    }

    func get<K: StoreCodable, V: StoreCodable>(dbi: MDB_dbi, table: String, key: K, as type: V.Type) throws -> V? {
        try key.withStoreBytes { k in try rawGet(dbi: dbi, key: k, table: table).map { try decode(V.self, bytes: $0, table: table) } }
    }

    func put<K: StoreCodable, V: StoreCodable>(dbi: MDB_dbi, key: K, value: V, append: Bool = false) throws {
        try key.withStoreBytes { k in
            try database.validateKey(k)
            try value.withStoreBytes { v in try rawPut(dbi: dbi, key: k, value: v, append: append) }
        }
    }

    /// Writes stored bytes as they are. With `append`, the key is expected to sort after every key
    /// of the table (LMDB's `MDB_APPEND`: no search, and a full page is not split in half, so
    /// rows written in key order fill their pages); a key that does not is written the ordinary way.
    func rawPut(dbi: MDB_dbi, key k: UnsafeRawBufferPointer, value v: UnsafeRawBufferPointer, append: Bool = false) throws {
        let txn = try live()
        var keyVal = MDB_val(mv_size: k.count, mv_data: UnsafeMutableRawPointer(mutating: k.baseAddress))
        var dataVal = MDB_val(mv_size: v.count, mv_data: UnsafeMutableRawPointer(mutating: v.baseAddress))
        var rc = database.injectedFault(.put) ?? mdb_put(txn, dbi, &keyVal, &dataVal, append ? UInt32(MDB_APPEND) : 0)
        if append && rc == MDB_KEYEXIST { rc = mdb_put(txn, dbi, &keyVal, &dataVal, 0) }
        if rc == MDB_MAP_FULL { throw database.lockedMapFullError() }
        if rc == MDB_BAD_VALSIZE { throw StoreError.invalidKeySize(size: k.count, maximum: database.maximumKeySize) }
        guard rc == 0 else { throw StoreError.lmdb(rc, "put") }
    }

    // MARK: Sealed values

    /// Lends the (opened) value of `k` to `body`; nil when absent. Unsealed stores lend LMDB's
    /// memory directly; sealed ones a wiped temporary buffer.
    @usableFromInline func lend<R>(
        dbi: UInt32, table: String, visibility: KeyVisibility, sealed: Bool, key k: UnsafeRawBufferPointer,
        _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R? {
        guard sealed, let sealer else { return try rawGet(dbi: dbi, key: k, table: table).map(body) }
        guard k.count >= 1, k.count <= maximumKeySize else { throw StoreError.invalidKeySize(size: k.count, maximum: maximumKeySize) }
        return try sealer.withStoredKey(table: table, visibility: visibility, key: k) { storedKey -> R? in
            guard let stored = try rawGet(dbi: dbi, key: storedKey, table: table) else { return nil }
            return try sealer.open(table: table, storedKey: storedKey, stored: stored) { plain, _ in
                let (embedded, value) = try Self.split(plain, visibility: visibility, table: table)
                if let embedded, !Self.sameBytes(embedded, k) {
                    throw StoreError.sealedValueRejected(table: table, reason: "it belongs to another key")
                }
                return try body(value)
            }
        }
    }

    /// The sealed read behind every get: opens `k`'s value and lends it to `body`; false when absent.
    @usableFromInline func lendOpened(
        dbi: UInt32, table: String, visibility: KeyVisibility, key k: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> Bool {
        try lend(dbi: dbi, table: table, visibility: visibility, sealed: true, key: k, body) != nil
    }

    /// Whether two byte ranges are equal (memcmp: a generic elementsEqual walked byte by byte).
    static func sameBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        guard let x = a.baseAddress, let y = b.baseAddress, a.count > 0 else { return true }
        return memcmp(x, y, a.count) == 0
    }

    /// Splits an opened value into its embedded key (tables that hide keys) and the value.
    static func split(_ plain: UnsafeRawBufferPointer, visibility: KeyVisibility, table: String) throws -> (UnsafeRawBufferPointer?, UnsafeRawBufferPointer) {
        if visibility == .visible { return (nil, plain) }
        guard plain.count >= 2 else { throw StoreError.sealedValueRejected(table: table, reason: "a value without its key") }
        let length = Int(plain[0]) << 8 | Int(plain[1])
        guard length <= plain.count - 2 else { throw StoreError.sealedValueRejected(table: table, reason: "a value whose key overruns it") }
        return (
            UnsafeRawBufferPointer(rebasing: plain[2..<(2 + length)]),
            UnsafeRawBufferPointer(rebasing: plain[(2 + length)...])
        )
    }

    /// Seals `v` for key `k` (its stored form `storedKey`) and writes it; `shred` names the
    /// shred group to seal under (recorded in the metadata so the key is destroyed in time).
    func sealedPut(
        dbi: MDB_dbi, table: String, visibility: KeyVisibility, sealer: StoreSealer, key k: UnsafeRawBufferPointer,
        storedKey: UnsafeRawBufferPointer, value v: UnsafeRawBufferPointer, shred: UInt64?, append: Bool = false
    ) throws {
        func write(_ plain: UnsafeRawBufferPointer) throws {
            try sealer.seal(table: table, storedKey: storedKey, plaintext: plain, shred: shred) { stored in
                try rawPut(dbi: dbi, key: storedKey, value: stored, append: append)
            }
        }
        if visibility == .visible {
            try write(v)
        } else {
            let total = 2 + k.count + v.count
            try withUnsafeTemporaryAllocation(byteCount: total, alignment: 1) { buffer in
                guard let base = buffer.baseAddress else { throw StoreError.encodingFailed(type: table, reason: "no memory") }
                defer { sodium_memzero(base, total) }
                base.storeBytes(of: UInt8(truncatingIfNeeded: k.count >> 8), as: UInt8.self)
                (base + 1).storeBytes(of: UInt8(truncatingIfNeeded: k.count), as: UInt8.self)
                if let kb = k.baseAddress { (base + 2).copyMemory(from: kb, byteCount: k.count) }
                if let vb = v.baseAddress { (base + 2 + k.count).copyMemory(from: vb, byteCount: v.count) }
                try write(UnsafeRawBufferPointer(buffer))
            }
        }
    }

    /// The metadata key that lists shred group `id` (hex, so key order is numeric order).
    static func shredIndexKey(_ id: UInt64) -> String {
        let hex = String(id, radix: 16)
        return "shred:" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// Lists shred group `id` in the metadata with the earliest expiry put under it (u64 ms), so
    /// ``Database/nextExpiry(after:)`` can name the first value's own expiry.
    func recordShredGroup(_ id: UInt64, expiresAt: UInt64) throws {
        guard let meta = database.metadataDBI else { throw StoreError.unknownTable(Database.metadataTable) }
        let key = Self.shredIndexKey(id)
        // A damaged earliest expiry is replaced by this one (it can only make the group due later, never lose it).
        let earliest = (try? get(dbi: meta, table: Database.metadataTable, key: key, as: UInt64.self)) ?? nil
        try put(dbi: meta, key: key, value: min(earliest ?? expiresAt, expiresAt))
    }

    /// ``decode(_:bytes:table:)`` of the bytes `val` points at.
    func decode<V: StoreCodable>(_ type: V.Type, _ val: MDB_val, table: String) throws -> V {
        try decode(type, bytes: UnsafeRawBufferPointer(start: val.mv_data, count: val.mv_size), table: table)
    }
}

extension TransactionState {
    /// The typed access to `definition`'s table in this (still live) transaction.
    func access<K, V>(_ definition: TableDefinition<K, V>) throws -> TableAccess<K, V> {
        _ = try live()
        return TableAccess(
            state: self, dbi: try database.handle(for: definition.erased, in: self), name: definition.name, stamped: definition.stamped,
            visibility: definition.visibility, sealed: sealer != nil && definition.name != Database.metadataTable)
    }
}

/// A read-only snapshot, valid only inside ``Database/read(_:)``. Not copyable: it cannot be
/// stored or returned from the closure.
public struct ReadTransaction: ~Copyable {
    let state: TransactionState

    /// Opens a declared table for reading.
    /// - Throws: ``StoreError/unknownTable(_:)``, ``StoreError/tableTypeMismatch(table:stored:requested:)``,
    ///   ``StoreError/transactionClosed``.
    public func open<K, V>(_ definition: TableDefinition<K, V>) throws -> ReadOnlyTable<K, V> {
        ReadOnlyTable(access: try state.access(definition))
    }

    /// The change stamp of a ``TableDefinition/stamped`` table: a counter that every write
    /// transaction changing the table advances (0 before the first change). Equal stamps mean
    /// the table did not change in between. One small read of the store's metadata.
    /// - Throws: ``StoreError/transactionClosed``, ``StoreError/decodingFailed(table:type:reason:)``
    ///   for a damaged counter, LMDB failures.
    public func changeStamp<K, V>(of definition: TableDefinition<K, V>) throws -> UInt64 {
        _ = try state.live()
        return try state.changeStamp(of: definition.name)
    }
}

/// The write transaction, valid only inside ``Database/write(_:)``. Not copyable.
public struct WriteTransaction: ~Copyable {
    let state: TransactionState

    /// Opens a declared table for reading and writing. In a migration, any table may be
    /// opened (it is created if missing).
    /// - Throws: ``StoreError/unknownTable(_:)``, ``StoreError/tableTypeMismatch(table:stored:requested:)``,
    ///   ``StoreError/transactionClosed``.
    public func open<K, V>(_ definition: TableDefinition<K, V>) throws -> Table<K, V> {
        Table(access: try state.access(definition))
    }

    /// The change stamp of a ``TableDefinition/stamped`` table as this transaction sees it
    /// (``ReadTransaction/changeStamp(of:)``).
    /// - Throws: ``StoreError/transactionClosed``, ``StoreError/decodingFailed(table:type:reason:)``
    ///   for a damaged counter, LMDB failures.
    public func changeStamp<K, V>(of definition: TableDefinition<K, V>) throws -> UInt64 {
        _ = try state.live()
        return try state.changeStamp(of: definition.name)
    }

    /// In a migration: records that `definition`'s table now holds these key/value types (call
    /// it after rewriting every value). Outside migrations it throws.
    /// - Throws: ``StoreError/unknownTable(_:)`` outside a migration.
    public func redefine<K, V>(_ definition: TableDefinition<K, V>) throws {
        guard state.isMigrating else { throw StoreError.unknownTable(definition.name) }
        try state.database.recordSignature(of: definition.erased, in: state)
    }
}

/// The shared implementation of table operations.
@usableFromInline struct TableAccess<Key: StoreKey, Value: StoreValue> {
    @usableFromInline let state: TransactionState
    @usableFromInline let dbi: UInt32  // MDB_dbi
    @usableFromInline let name: String
    /// Whether changes advance the table's stamp (``TableDefinition/stamped``).
    let stamped: Bool
    /// How keys appear in a sealed store.
    @usableFromInline let visibility: KeyVisibility
    /// Whether values are sealed (a sealed store's tables; never the metadata).
    @usableFromInline let sealed: Bool

    func get(_ key: Key) throws -> Value? {
        try key.withStoreBytes { k in try lend(k) { try state.decode(Value.self, bytes: $0, table: name) } }
    }

    /// Lends the (opened) value of stored key bytes `k` to `body`.
    @inlinable func lend<R>(_ k: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        var result: R?
        // Not generic below this line: the sealed path is compiled once, specialised, in the core.
        guard try state.lendOpened(dbi: dbi, table: name, visibility: visibility, key: k, { result = try body($0) }) else { return nil }
        return result
    }

    /// Calls `body` with the bytes `k` is stored under (its keyed hash in a sealed store).
    func withStoredKey<R>(_ k: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        guard sealed, let sealer = state.sealer else { return try body(k) }
        try state.database.validateKey(k)
        return try sealer.withStoredKey(table: name, visibility: visibility, key: k, body)
    }

    func contains(_ key: Key) throws -> Bool {
        try key.withStoreBytes { k in try withStoredKey(k) { try state.rawGet(dbi: dbi, key: $0, table: name) != nil } }
    }

    func count() throws -> Int {
        var stat = MDB_stat()
        let rc = mdb_stat(try state.live(), dbi, &stat)
        guard rc == 0 else { throw StoreError.lmdb(rc, "count \(name)") }
        return stat.ms_entries
    }

    /// `append`: the key sorts after every key of the table (see ``TableHandle/append(_:_:)``).
    func put(_ key: Key, _ value: Value, expiringAt: UInt64? = nil, append: Bool = false) throws {
        if sealed, let sealer = state.sealer {
            // Only a visible key is stored in its own order (a hidden one is a keyed hash).
            let append = append && visibility == .visible
            let shred = sealer.shredKeys == nil ? nil : expiringAt.map(StoreSealer.shredGroup(expiringAt:))
            try key.withStoreBytes { k in
                try state.database.validateKey(k)
                try value.withStoreBytes { v in
                    try sealer.withStoredKey(table: name, visibility: visibility, key: k) { storedKey in
                        try state.sealedPut(
                            dbi: dbi, table: name, visibility: visibility, sealer: sealer, key: k, storedKey: storedKey, value: v, shred: shred,
                            append: append)
                    }
                }
            }
            if let shred, let expiringAt { try state.recordShredGroup(shred, expiresAt: expiringAt) }
        } else {
            try state.put(dbi: dbi, key: key, value: value, append: append)
        }
        if stamped { try state.advanceStamp(of: name) }
    }

    func remove(_ key: Key) throws -> Value? {
        try key.withStoreBytes { k -> Value? in
            // Decode before deleting: the value's memory is only valid until the page changes. A
            // value that does not decode is an error and stays (``delete(_:)`` removes it unread).
            guard let previous = try lend(k, { try state.decode(Value.self, bytes: $0, table: name) }) else { return nil }
            _ = try withStoredKey(k) { try deleteStored($0) }
            return previous
        }
    }

    func delete(_ key: Key) throws -> Bool {
        try key.withStoreBytes { k in try withStoredKey(k) { try deleteStored($0) } }
    }

    /// Deletes the key whose stored bytes are `k`, advancing the stamp; false when it was absent.
    private func deleteStored(_ k: UnsafeRawBufferPointer) throws -> Bool {
        let txn = try state.live()
        try state.database.validateKey(k)
        var keyVal = MDB_val(mv_size: k.count, mv_data: UnsafeMutableRawPointer(mutating: k.baseAddress))
        let rc = state.database.injectedFault(.delete) ?? mdb_del(txn, dbi, &keyVal, nil)
        if rc == MDB_NOTFOUND { return false }
        guard rc == 0 else { throw StoreError.lmdb(rc, "delete from \(name)") }
        if stamped { try state.advanceStamp(of: name) }
        return true
    }

    func removeAll() throws {
        let rc = mdb_drop(try state.live(), dbi, 0)
        guard rc == 0 else { throw StoreError.lmdb(rc, "clear \(name)") }
        if stamped { try state.advanceStamp(of: name) }
    }

    /// Walks keys in order. `from` is inclusive, `to` exclusive, both optional; `prefix`, when
    /// given, limits the walk to keys whose bytes start with its encoding. `body` returns
    /// `false` to stop.
    func forEach(from: Key?, to: Key?, prefix: Key?, reverse: Bool, _ body: (Key, Value) throws -> Bool) throws {
        try forEachRaw(from: from, to: to, prefix: prefix, reverse: reverse) { k, v in
            try body(try state.decode(Key.self, bytes: k, table: name), try state.decode(Value.self, bytes: v, table: name))
        }
    }

    /// Every iteration: `body` gets each entry's key and value (opened, in a sealed store), valid
    /// only during the call. Bounds and prefixes of tables that hide keys must name at least the
    /// hidden part (``StoreError/unsupportedScan(table:)``).
    func forEachRaw(
        from: Key?, to: Key?, prefix: Key?, reverse: Bool, _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        guard sealed, let sealer = state.sealer else {
            return try forEachStored(from: from, to: to, prefix: prefix, reverse: reverse) { k, v in
                try body(UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size), UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
            }
        }
        func stored(_ key: Key?) throws -> [UInt8]? {
            guard let key else { return nil }
            if visibility == .hidden { throw StoreError.unsupportedScan(table: name) }
            return try key.withStoreBytes { k in k.isEmpty ? [] : try sealer.withStoredKey(table: name, visibility: visibility, key: k) { Array($0) } }
        }
        try forEachStoredBytes(from: try stored(from), to: try stored(to), prefix: try stored(prefix), reverse: reverse) { k, v in
            let storedKey = UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)
            return try sealer.open(table: name, storedKey: storedKey, stored: UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)) { plain, _ in
                let (embedded, value) = try TransactionState.split(plain, visibility: visibility, table: name)
                return try body(embedded ?? storedKey, value)
            }
        }
    }

    /// The cursor walk over stored bytes with typed bounds (unsealed stores).
    func forEachStored(from: Key?, to: Key?, prefix: Key?, reverse: Bool, _ body: (MDB_val, MDB_val) throws -> Bool) throws {
        func bytes(_ key: Key?) throws -> [UInt8]? { try key.map { try $0.withStoreBytes { Array($0) } } }
        try forEachStoredBytes(from: try bytes(from), to: try bytes(to), prefix: try bytes(prefix), reverse: reverse, body)
    }

    /// The cursor walk behind every iteration: `body` gets each entry's key and value as LMDB
    /// hands them (valid only during the call).
    func forEachStoredBytes(from: [UInt8]?, to: [UInt8]?, prefix: [UInt8]?, reverse: Bool, _ body: (MDB_val, MDB_val) throws -> Bool) throws {
        let txn = try state.live()
        var cursor: OpaquePointer?
        var rc = mdb_cursor_open(txn, dbi, &cursor)
        guard rc == 0, let cursor else { throw StoreError.lmdb(rc, "open cursor on \(name)") }
        defer { mdb_cursor_close(cursor) }

        // An empty bound or prefix is no bound (LMDB refuses an empty key to position at).
        func bytes(_ key: [UInt8]?) -> [UInt8]? { key.flatMap { $0.isEmpty ? nil : $0 } }
        let prefixBytes = bytes(prefix)
        let lower = prefixBytes ?? bytes(from)
        let upper = bytes(to)
        var keyVal = MDB_val()
        var dataVal = MDB_val()

        func position(_ bytes: [UInt8]?, _ op: MDB_cursor_op) -> Int32 {
            guard let bytes else { return mdb_cursor_get(cursor, &keyVal, &dataVal, op) }
            return bytes.withUnsafeBytes { b in
                keyVal = MDB_val(mv_size: b.count, mv_data: UnsafeMutableRawPointer(mutating: b.baseAddress))
                return mdb_cursor_get(cursor, &keyVal, &dataVal, op)
            }
        }
        if !reverse {
            rc = lower == nil ? position(nil, MDB_FIRST) : position(lower, MDB_SET_RANGE)
        } else if let upper {
            rc = position(upper, MDB_SET_RANGE)
            rc = rc == MDB_NOTFOUND ? position(nil, MDB_LAST) : (rc == 0 ? position(nil, MDB_PREV) : rc)
        } else if let prefixBytes, let after = Self.successor(of: prefixBytes) {
            // Last key with the prefix: position after the prefix range, then step back (a
            // prefix of 0xff bytes only has no successor: its range runs to the last key).
            rc = position(after, MDB_SET_RANGE)
            rc = rc == MDB_NOTFOUND ? position(nil, MDB_LAST) : (rc == 0 ? position(nil, MDB_PREV) : rc)
        } else {
            rc = position(nil, MDB_LAST)
        }
        while rc == 0 {
            let keyBytes = UnsafeRawBufferPointer(start: keyVal.mv_data, count: keyVal.mv_size)
            if let prefixBytes {
                guard keyBytes.count >= prefixBytes.count,
                    prefixBytes.withUnsafeBytes({ compareBytes(UnsafeRawBufferPointer(rebasing: keyBytes[0..<prefixBytes.count]), $0) }) == 0
                else { return }
            }
            if !reverse, let upper, upper.withUnsafeBytes({ compareBytes(keyBytes, $0) }) >= 0 { return }
            if reverse, let lower, prefixBytes == nil, lower.withUnsafeBytes({ compareBytes(keyBytes, $0) }) < 0 { return }
            guard try body(keyVal, dataVal) else { return }
            rc = mdb_cursor_get(cursor, &keyVal, &dataVal, reverse ? MDB_PREV : MDB_NEXT)
        }
        guard rc == MDB_NOTFOUND else { throw StoreError.lmdb(rc, "iterate \(name)") }
    }

    /// The smallest byte string greater than every string starting with `prefix`, or nil if none.
    static func successor(of prefix: [UInt8]) -> [UInt8]? {
        var bytes = prefix
        while let last = bytes.last {
            if last < 0xff {
                bytes[bytes.count - 1] = last + 1
                return bytes
            }
            bytes.removeLast()
        }
        return nil
    }

    /// The largest key; where keys are stored as they are (unsealed, or visible keys) without
    /// opening or decoding its value.
    func lastKey() throws -> Key? {
        guard !sealed || visibility == .visible else { return try entries(from: nil, to: nil, prefix: nil, reverse: true, limit: 1).first?.key }
        var found: Key?
        try forEachStoredBytes(from: nil, to: nil, prefix: nil, reverse: true) { k, _ in
            found = try state.decode(Key.self, bytes: UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size), table: name)
            return false
        }
        return found
    }

    func entries(from: Key?, to: Key?, prefix: Key?, reverse: Bool, limit: Int?) throws -> [(key: Key, value: Value)] {
        var out: [(key: Key, value: Value)] = []
        guard limit.map({ $0 > 0 }) ?? true else { return out }
        try forEach(from: from, to: to, prefix: prefix, reverse: reverse) { key, value in
            out.append((key, value))
            return limit.map { out.count < $0 } ?? true
        }
        return out
    }
}

/// Marks a table handle opened in a ``ReadTransaction``.
public enum ReadOnlyAccess {}
/// Marks a table handle opened in a ``WriteTransaction``.
public enum ReadWriteAccess {}

/// A table opened in a read transaction: reads only. Not copyable; valid inside the closure.
public typealias ReadOnlyTable<Key: StoreKey, Value: StoreValue> = TableHandle<Key, Value, ReadOnlyAccess>
/// A table opened in the write transaction: reads and writes. Not copyable; valid inside the closure.
public typealias Table<Key: StoreKey, Value: StoreValue> = TableHandle<Key, Value, ReadWriteAccess>

/// A typed table inside one transaction. `Access` is ``ReadOnlyAccess`` or ``ReadWriteAccess``;
/// the mutating operations exist only for the latter.
public struct TableHandle<Key: StoreKey, Value: StoreValue, Access>: ~Copyable {
    @usableFromInline let access: TableAccess<Key, Value>

    /// The value for `key`, or nil.
    /// - Throws: ``StoreError/invalidKeySize(size:maximum:)``, ``StoreError/decodingFailed(table:type:reason:)``,
    ///   ``StoreError/transactionClosed``, LMDB failures.
    @inlinable public func get(_ key: Key) throws -> Value? {
        try key.withStoreBytes { k in
            // Unsealed stores decode straight from the map, specialised here in the caller.
            guard access.sealed else {
                return try access.state.rawGet(dbi: access.dbi, key: k, table: access.name).map {
                    try access.state.decode(Value.self, bytes: $0, table: access.name)
                }
            }
            return try access.lend(k) { try access.state.decode(Value.self, bytes: $0, table: access.name) }
        }
    }
    /// Lends `key`'s value bytes to `body` without decoding or copying them into an array (a
    /// borrowing read: straight from LMDB's memory map in an unsealed store, from a wiped
    /// temporary buffer the value was opened into in a sealed one); nil when the key is absent.
    /// The bytes are valid only inside `body` — do not let the pointer escape — and, in a write
    /// transaction, only until the next write. Decode with ``StoreCodable/init(storeBytes:)``
    /// when a typed value is needed.
    /// - Throws: ``StoreError/invalidKeySize(size:maximum:)``, ``StoreError/transactionClosed``,
    ///   ``StoreError/sealedValueRejected(table:reason:)``, LMDB failures, and whatever `body` throws.
    @inlinable public func withValue<R>(_ key: Key, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        try key.withStoreBytes { k in
            guard access.sealed else { return try access.state.rawGet(dbi: access.dbi, key: k, table: access.name).map(body) }
            return try access.lend(k, body)
        }
    }
    /// Whether `key` has a value.
    public func contains(_ key: Key) throws -> Bool { try access.contains(key) }
    /// The number of entries.
    public func count() throws -> Int { try access.count() }
    /// The entry with the smallest key.
    public func first() throws -> (key: Key, value: Value)? { try access.entries(from: nil, to: nil, prefix: nil, reverse: false, limit: 1).first }
    /// The entry with the largest key.
    public func last() throws -> (key: Key, value: Value)? { try access.entries(from: nil, to: nil, prefix: nil, reverse: true, limit: 1).first }
    /// The largest key (its value is not read where keys are stored as they are, ``KeyVisibility/visible``).
    public func lastKey() throws -> Key? { try access.lastKey() }
    /// Calls `body` for each entry with `from ≤ key < to` (bounds optional) in key order (or
    /// reverse); return `false` from `body` to stop.
    public func forEach(from: Key? = nil, to: Key? = nil, reverse: Bool = false, _ body: (Key, Value) throws -> Bool) throws {
        try access.forEach(from: from, to: to, prefix: nil, reverse: reverse, body)
    }
    /// Calls `body` for each entry whose key's bytes start with `prefix`'s.
    public func forEach(prefix: Key, reverse: Bool = false, _ body: (Key, Value) throws -> Bool) throws {
        try access.forEach(from: nil, to: nil, prefix: prefix, reverse: reverse, body)
    }
    /// Lends the stored bytes of each value whose key's bytes start with `prefix`'s to `body`, in
    /// key order (or reverse), without decoding or copying them (the borrowing counterpart of
    /// ``forEach(prefix:reverse:_:)``, for scans that need a few bytes of each value); return
    /// `false` to stop. The bytes are valid only inside `body`.
    /// - Throws: ``StoreError/transactionClosed``, LMDB failures, and whatever `body` throws.
    public func forEachValue(prefix: Key, reverse: Bool = false, _ body: (UnsafeRawBufferPointer) throws -> Bool) throws {
        try access.forEachRaw(from: nil, to: nil, prefix: prefix, reverse: reverse) { _, value in try body(value) }
    }
    /// The entries with `from ≤ key < to`, in order, at most `limit`.
    public func entries(from: Key? = nil, to: Key? = nil, reverse: Bool = false, limit: Int? = nil) throws -> [(key: Key, value: Value)] {
        try access.entries(from: from, to: to, prefix: nil, reverse: reverse, limit: limit)
    }
    /// The entries whose key bytes start with `prefix`'s.
    public func entries(prefix: Key, reverse: Bool = false, limit: Int? = nil) throws -> [(key: Key, value: Value)] {
        try access.entries(from: nil, to: nil, prefix: prefix, reverse: reverse, limit: limit)
    }
}

extension TableHandle where Access == ReadWriteAccess {
    /// Stores `value` under `key`, returning the value it replaced (nil if none).
    /// - Throws: ``StoreError/decodingFailed(table:type:reason:)`` when the value it would replace
    ///   does not decode (nothing is written then; `put(_:_:)` overwrites without reading),
    ///   ``StoreError/invalidKeySize(size:maximum:)``, ``StoreError/encodingFailed(type:reason:)``,
    ///   ``StoreError/mapFull(mapSize:maximumMapSize:)`` (after growth failed), LMDB failures.
    @discardableResult
    public func insert(_ key: Key, _ value: Value) throws -> Value? {
        let previous = try access.get(key)
        try access.put(key, value)
        return previous
    }
    /// Stores `value` under `key` without reading the old value (cheaper than ``insert(_:_:)``).
    public func put(_ key: Key, _ value: Value) throws { try access.put(key, value) }
    /// `put(key, value)` for a key that sorts after every key of the table (a counter's next id in
    /// a table whose keys are visible): LMDB appends it without a search, and rows written in key
    /// order fill their pages instead of leaving them half full. Any other key, or a hidden one, is
    /// stored as by `put(key, value)`.
    /// - Throws: as `put(key, value)`.
    public func append(_ key: Key, _ value: Value) throws { try access.put(key, value, append: true) }
    /// Stores `value` under `key`, sealed in a sealed store under the key of the shred group of
    /// `expiringAt` (ms since the epoch; ``StoreSealer/shredGroup(expiringAt:)``) instead of the
    /// DEK: once ``Database/destroyShredGroups(endingBy:tables:)`` has run past that minute, the value
    /// opens in no copy of the file. nil is a plain `put(key, value)`.
    /// - Throws: as the plain `put`, and the keychain's errors when the group's key is made.
    public func put(_ key: Key, _ value: Value, expiringAt: UInt64?) throws {
        try access.put(key, value, expiringAt: expiringAt)
    }
    /// Removes `key`, returning its value (nil if absent).
    /// - Throws: ``StoreError/decodingFailed(table:type:reason:)`` when the value does not decode
    ///   (it stays; ``delete(_:)`` removes it unread), LMDB failures.
    @discardableResult
    public func remove(_ key: Key) throws -> Value? { try access.remove(key) }
    /// Removes `key` without reading its value (also a damaged one); whether it was there.
    /// - Throws: ``StoreError/invalidKeySize(size:maximum:)``, LMDB failures.
    @discardableResult
    public func delete(_ key: Key) throws -> Bool { try access.delete(key) }
    /// Removes every entry (the table stays declared).
    public func removeAll() throws { try access.removeAll() }

    /// Removes the entries for which `shouldRemove` is true — collected in one walk first, then
    /// deleted (LMDB's cursor must not see its own deletes) — and returns them in key order:
    /// every expiry sweep is this one call.
    /// - Throws: decoding and LMDB failures, and what `shouldRemove` throws (nothing is removed then).
    @discardableResult
    public func removeAll(where shouldRemove: (Key, Value) throws -> Bool) throws -> [(key: Key, value: Value)] {
        var removed: [(key: Key, value: Value)] = []
        try forEach { key, value in
            if try shouldRemove(key, value) { removed.append((key, value)) }
            return true
        }
        for entry in removed { _ = try access.delete(entry.key) }
        return removed
    }
}
