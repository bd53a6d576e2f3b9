internal import CLMDB
import CPlatform
internal import CSodium
import Synchronization

// Rekeying and crypto-shredding of a sealed store (docs/STORE.md, "Sealed at rest").

extension Database {
    /// Re-seals every value under `sealer` (a new DEK) in one write transaction, then uses it for
    /// every later transaction. Atomic: a crash leaves the store under the old key or the new one.
    /// Keep both keys until this returns (``CoordsApp/rekeyStore()`` keeps the new one as
    /// `store.dek.next` first). Values sealed under a shred group keep their group.
    /// Waits for every transaction to end and blocks new ones while it runs; holds one table's
    /// plaintext in (wiped) memory at a time.
    /// - Throws: ``StoreError/storeKeyRequired`` for an unsealed store,
    ///   ``StoreError/sealedValueRejected(table:reason:)`` for a value that does not open (nothing
    ///   is changed then), ``StoreError/nestedWrite``, ``StoreError/closed``, LMDB failures.
    public func rekey(to sealer: StoreSealer) throws {
        let me = pthread_self()
        let nested = lifecycle.withLock { state -> Bool in
            guard let writer = state.writer else { return false }
            return pthread_equal(writer, me) != 0
        }
        guard !nested else { throw StoreError.nestedWrite }
        guard let old = currentSealer else { throw StoreError.storeKeyRequired }
        writeLock.lock()
        lifecycle.withLock { $0.writer = me }
        defer {
            lifecycle.withLock { $0.writer = nil }
            writeLock.unlock()
        }
        // Freed pages are reused only after the commit: make room for a second copy first.
        let usage = try mapUsage()
        if usage.used.multipliedSaturating(by: 2) > usage.mapSize * 4 / 5 { try grow(force: true) }
        resizeLock.lockExclusive()
        defer { resizeLock.unlock() }
        guard !isClosed else { throw StoreError.closed }
        var txnPointer: OpaquePointer?
        var rc = mdb_txn_begin(env, nil, 0, &txnPointer)
        guard rc == 0, let txn = txnPointer else { throw StoreError.lmdb(rc, "begin rekey") }
        let state = TransactionState(txn: txn, writable: true, database: self, sealer: old)
        do {
            for (name, table) in tables.sorted(by: { $0.key < $1.key }) where name != Self.metadataTable {
                let visibility = visibilities[name] ?? .hidden
                var entries: [(key: SecretBytes, value: SecretBytes, shred: UInt64?)] = []
                try TableAccess<[UInt8], [UInt8]>(state: state, dbi: table.dbi, name: name, stamped: false, visibility: visibility, sealed: false)
                    .forEachStoredBytes(from: nil, to: nil, prefix: nil, reverse: false) { k, v in
                        let storedKey = UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)
                        let stored = UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
                        try old.open(table: name, storedKey: storedKey, stored: stored) { plain, shred in
                            let (embedded, value) = try TransactionState.split(plain, visibility: visibility, table: name)
                            let key = embedded ?? storedKey
                            entries.append((SecretBytes(borrowing: key), SecretBytes(borrowing: value), shred))
                        }
                        return true
                    }
                rc = mdb_drop(txn, table.dbi, 0)
                guard rc == 0 else { throw StoreError.lmdb(rc, "clear \(name) for rekey") }
                for entry in entries {
                    try entry.key.withUnsafeBytes { k in
                        try entry.value.withUnsafeBytes { v in
                            try sealer.withStoredKey(table: name, visibility: visibility, key: k) { storedKey in
                                try state.sealedPut(
                                    dbi: table.dbi, table: name, visibility: visibility, sealer: sealer, key: k, storedKey: storedKey,
                                    value: v, shred: entry.shred)
                            }
                        }
                    }
                }
            }
            guard let meta = metadataDBI else { throw StoreError.unknownTable(Self.metadataTable) }
            try state.put(dbi: meta, key: Self.sealCheckKey, value: try sealer.makeCheckValue())
        } catch {
            state.finish(commit: false)
            throw error
        }
        rc = state.finish(commit: true)
        guard rc == 0 else { throw StoreError.lmdb(rc, "commit rekey") }
        sealerBox.withLock { $0 = sealer }
    }

    // MARK: Shred groups

    /// The shred groups whose keys may still exist, in order (ids; ``StoreSealer/shredTime(of:)``
    /// says when each is due).
    /// - Throws: ``StoreError/closed``, LMDB failures.
    public func shredGroups() throws -> [UInt64] {
        try read { tx in try tx.state.shredIndex().map(\.group) }
    }

    /// When the next shred group is due (ms since the epoch), or nil when there is none: the end
    /// of its minute, when ``destroyShredGroups(endingBy:tables:)`` destroys its key.
    /// - Throws: ``StoreError/closed``, LMDB failures.
    public func nextShredTime() throws -> UInt64? {
        try shredGroups().first.map(StoreSealer.shredTime(of:))
    }

    /// When something sealed under a shred group is next due after `now` (ms): a group's earliest
    /// expiry while it is still ahead, then the group's end (its later values are not tracked one
    /// by one; they are due by the end of the minute at the latest). nil when there is no group.
    /// - Throws: ``StoreError/closed``, LMDB failures.
    public func nextExpiry(after now: UInt64) throws -> UInt64? {
        try read { tx in
            try tx.state.shredIndex().map { group, earliest in
                earliest.map { $0 > now ? $0 : StoreSealer.shredTime(of: group) } ?? StoreSealer.shredTime(of: group)
            }.min()
        }
    }

    /// Destroys the keys of every shred group that ended by `now` (ms): first deletes, unread,
    /// any value of `tables` still sealed under one of them (the caller deletes expired values
    /// itself first; these are leftovers of a crash), then the keys in the keychain, then the
    /// groups' entries in the metadata. Idempotent: after a crash anywhere, the next call
    /// finishes the work. Returns how many groups were destroyed.
    /// - Throws: store and keychain errors.
    @discardableResult
    public func destroyShredGroups(endingBy now: UInt64, tables shredded: [AnyTableDefinition]) throws -> Int {
        guard let sealer = currentSealer else { return 0 }
        let due = try shredGroups().filter { StoreSealer.shredTime(of: $0) <= now }
        guard !due.isEmpty else { return 0 }
        let dueSet = Set(due)
        try write { tx in
            let state = tx.state
            for definition in shredded {
                guard let table = tables[definition.name] else { throw StoreError.unknownTable(definition.name) }
                var leftovers: [[UInt8]] = []
                try TableAccess<[UInt8], [UInt8]>(state: state, dbi: table.dbi, name: definition.name, stamped: false, visibility: .visible, sealed: false)
                    .forEachStoredBytes(from: nil, to: nil, prefix: nil, reverse: false) { k, v in
                        let stored = UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
                        if let group = StoreSealer.shredGroup(ofStored: stored), dueSet.contains(group) {
                            leftovers.append(Array(UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)))
                        }
                        return true
                    }
                for key in leftovers {
                    try key.withUnsafeBytes { k in
                        var keyVal = MDB_val(mv_size: k.count, mv_data: UnsafeMutableRawPointer(mutating: k.baseAddress))
                        let rc = mdb_del(try state.live(), table.dbi, &keyVal, nil)
                        guard rc == 0 || rc == MDB_NOTFOUND else { throw StoreError.lmdb(rc, "delete from \(definition.name)") }
                    }
                }
            }
        }
        for group in due { try sealer.destroyShredKey(group) }
        try write { tx in
            guard let meta = metadataDBI else { throw StoreError.unknownTable(Self.metadataTable) }
            for group in due {
                try TransactionState.shredIndexKey(group).withStoreBytes { k in
                    var keyVal = MDB_val(mv_size: k.count, mv_data: UnsafeMutableRawPointer(mutating: k.baseAddress))
                    let rc = mdb_del(try tx.state.live(), meta, &keyVal, nil)
                    guard rc == 0 || rc == MDB_NOTFOUND else { throw StoreError.lmdb(rc, "forget shred group") }
                }
            }
        }
        return due.count
    }

    /// Forces the file to disk (for stores opened with ``Durability/noSync``).
    /// - Throws: ``StoreError/closed``, LMDB failures.
    public func sync() throws {
        resizeLock.lockShared()
        defer { resizeLock.unlock() }
        guard !isClosed else { throw StoreError.closed }
        let rc = mdb_env_sync(env, 1)
        guard rc == 0 else { throw StoreError.lmdb(rc, "sync") }
    }
}

extension TransactionState {
    /// The shred groups listed in the metadata, in order, with the earliest expiry put under each.
    func shredIndex() throws -> [(group: UInt64, earliest: UInt64?)] {
        guard let meta = database.metadataDBI else { throw StoreError.unknownTable(Database.metadataTable) }
        var groups: [(group: UInt64, earliest: UInt64?)] = []
        let prefix = Array("shred:".utf8)
        try TableAccess<[UInt8], [UInt8]>(state: self, dbi: meta, name: Database.metadataTable, stamped: false, visibility: .visible, sealed: false)
            .forEachStoredBytes(from: nil, to: nil, prefix: prefix, reverse: false) { k, v in
                let key = UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)
                // A damaged entry only loses its earliest expiry: the group is then due at its end.
                let earliest = try? UInt64(storeBytes: UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
                if let id = UInt64(String(decoding: key.dropFirst(prefix.count), as: UTF8.self), radix: 16) { groups.append((id, earliest)) }
                return true
            }
        return groups
    }
}
