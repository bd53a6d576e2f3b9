internal import CLMDB
import CPlatform
import Synchronization

/// A typed key-value store on one LMDB environment (a directory holding `data.mdb` and
/// `lock.mdb`).
///
/// ```swift
/// let db = try Database.open(path: dir, schema: AppSchema.current)
/// try db.write { tx in try tx.open(Tables.settings).insert("server", "https://coord.is") }
/// let server = try db.read { tx in try tx.open(Tables.settings).get("server") }
/// ```
/// `write` commits when its closure returns and aborts when it throws; `read` sees one
/// consistent snapshot. Transactions are synchronous and closure-scoped: they cannot escape
/// the closure, cross an `await`, or outlive the database. Many readers run in parallel with
/// one writer; writers are serialised.
///
/// LMDB allows one environment handle per file per process, so a second ``open(path:options:schema:)``
/// of a path that is already open throws ``StoreError/alreadyOpen(path:)``: share the instance.
/// That check is the only process-wide state of the store.
public final class Database: @unchecked Sendable {
    /// How much durability commits buy.
    public enum Durability: Sendable {
        /// fsync on every commit: an acknowledged commit survives power loss (default).
        case durable
        /// Skip the metadata fsync (`MDB_NOMETASYNC`): may lose the last commit on power loss, never corrupts.
        case noMetaSync
        /// No fsync at all (`MDB_NOSYNC`): survives process crashes, not power loss. Benchmarks and caches.
        case noSync
    }

    /// Tuning knobs.
    public struct Options: Sendable {
        /// Initial map size in bytes (default 1 GiB; only address space, not disk, until used).
        public var mapSize: Int = 1 << 30
        /// The map grows (doubling) up to this size; past it writes fail with ``StoreError/mapFull(mapSize:maximumMapSize:)``.
        public var maximumMapSize: Int = 1 << 36
        /// Most named tables (LMDB `maxdbs`), the metadata table included.
        public var maximumTables: Int = 64
        /// Most concurrent read transactions (LMDB `maxreaders`).
        public var maximumReaders: Int = 126
        /// Commit durability.
        public var durability: Durability = .durable
        /// Permissions of the files (0600: only the owner).
        public var fileMode: UInt32 = 0o600
        /// Seals every value and hides keys under a DEK (docs/STORE.md); nil keeps them as they
        /// are (the relay's store, whose values are already sealed blobs). A sealed store opens
        /// only with its sealer.
        public var sealer: StoreSealer?
        /// Testing only: fails chosen LMDB calls (see ``StoreFaultInjector``).
        @_spi(Testing) public var faultInjector: StoreFaultInjector?

        /// The defaults: a 1 GiB map growing to 64 GiB, durable commits, files 0600.
        public init() {}
    }

    /// The directory of the environment.
    public let path: String
    let options: Options
    let env: OpaquePointer
    let maximumKeySize: Int
    /// Every open table: its handle and the key and value type names recorded for it (compared
    /// by name on every open, without building the signature string).
    private(set) var tables: [String: (dbi: MDB_dbi, keyType: String, valueType: String)] = [:]  // fixed after open
    /// How each declared table shows its keys when sealed (fixed after open).
    private(set) var visibilities: [String: KeyVisibility] = [:]
    let lifecycle = Mutex<(closed: Bool, writer: pthread_t?)>((false, nil))
    let writeLock = PthreadMutex()
    let resizeLock = ReadWriteLock()
    /// The sealer in use (``rekey(to:)`` replaces it while no transaction runs).
    let sealerBox: Mutex<StoreSealer?>

    private static let openPaths = Mutex<Set<String>>([])
    static let metadataTable = "__meta"
    static let schemaVersionKey = "schema_version"
    /// The metadata key of a sealed store's check value.
    static let sealCheckKey = "store_seal"

    private init(path: String, env: OpaquePointer, options: Options) {
        self.path = path
        self.env = env
        self.options = options
        sealerBox = Mutex(options.sealer)
        maximumKeySize = Int(mdb_env_get_maxkeysize(env))
    }

    /// Opens (creating if needed) the store in directory `path`, then, in one write transaction,
    /// runs pending migrations, opens every table of `schema`, checks their stored type names
    /// and records the schema version.
    /// - Throws: ``StoreError/alreadyOpen(path:)``, ``StoreError/openFailed(path:_:)``,
    ///   ``StoreError/corrupted(_:)`` (also for a `data.mdb` shorter than its own meta pages say,
    ///   which LMDB would crash on), ``StoreError/tableTypeMismatch(table:stored:requested:)``,
    ///   ``StoreError/schemaTooNew(stored:supported:)``, ``StoreError/migrationFailed(from:to:reason:)``,
    ///   ``StoreError/tooManyTables(_:)``.
    public static func open(path: String, options: Options = Options(), schema: Schema) throws -> Database {
        guard schema.tables.count + 1 <= options.maximumTables else { throw StoreError.tooManyTables(schema.tables.count) }
        if mkdir(path, 0o700) != 0 && coords_errno() != EEXIST { throw StoreError.openFailed(path: path, .system(coords_errno())) }
        let canonical =
            realpath(path, nil).map { p -> String in
                defer { free(p) }
                return String(cString: p)
            } ?? path
        let claimed = openPaths.withLock { $0.insert(canonical).inserted }
        guard claimed else { throw StoreError.alreadyOpen(path: canonical) }
        if let problem = DataFileCheck.problem(directory: canonical) {
            _ = openPaths.withLock { $0.remove(canonical) }
            throw StoreError.corrupted(problem)
        }

        var envPointer: OpaquePointer?
        var rc = mdb_env_create(&envPointer)
        guard rc == 0, let env = envPointer else {
            _ = openPaths.withLock { $0.remove(canonical) }
            throw StoreError.openFailed(path: canonical, LMDBCode(rc))
        }
        func fail(_ rc: Int32) -> StoreError {
            mdb_env_close(env)
            _ = openPaths.withLock { $0.remove(canonical) }
            let code = LMDBCode(rc)
            return code.isCorruption ? .corrupted(code) : .openFailed(path: canonical, code)
        }
        rc = mdb_env_set_maxdbs(env, MDB_dbi(options.maximumTables))
        guard rc == 0 else { throw fail(rc) }
        rc = mdb_env_set_maxreaders(env, UInt32(clamping: options.maximumReaders))
        guard rc == 0 else { throw fail(rc) }
        rc = mdb_env_set_mapsize(env, max(options.mapSize, 1 << 20))
        guard rc == 0 else { throw fail(rc) }
        var flags = UInt32(MDB_NOTLS)
        switch options.durability {
        case .durable: break
        case .noMetaSync: flags |= UInt32(MDB_NOMETASYNC)
        case .noSync: flags |= UInt32(MDB_NOSYNC)
        }
        rc = options.faultInjector?.fault(.open) ?? mdb_env_open(env, canonical, flags, mode_t(options.fileMode))
        guard rc == 0 else { throw fail(rc) }

        let db = Database(path: canonical, env: env, options: options)
        do {
            try db.openTables(schema: schema)
        } catch {
            db.close()
            throw error
        }
        return db
    }

    /// Closes the environment after in-flight transactions finish. Later calls throw
    /// ``StoreError/closed``. Safe to call more than once; also called on deinit.
    public func close() {
        let wasOpen = lifecycle.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        guard wasOpen else { return }
        writeLock.lock()
        resizeLock.lockExclusive()
        mdb_env_close(env)
        resizeLock.unlock()
        writeLock.unlock()
        _ = Self.openPaths.withLock { $0.remove(path) }
    }

    deinit { close() }

    /// Whether ``close()`` was called.
    public var isClosed: Bool { lifecycle.withLock { $0.closed } }

    // MARK: Transactions

    /// Runs `body` in a read-only snapshot.
    /// - Throws: ``StoreError/closed``, LMDB failures, and whatever `body` throws.
    public func read<R>(_ body: (borrowing ReadTransaction) throws -> R) throws -> R {
        resizeLock.lockShared()
        defer { resizeLock.unlock() }
        let txn = try begin(readOnly: true)
        let state = TransactionState(txn: txn, writable: false, database: self, sealer: currentSealer)
        defer { state.finish(commit: false) }
        return try body(ReadTransaction(state: state))
    }

    /// Runs `body` in the write transaction, committing when it returns and aborting when it throws.
    ///
    /// When the map is full the transaction is aborted, the map doubled (up to
    /// `Options.maximumMapSize`) and `body` **runs again**; keep it free of side effects outside
    /// the store, or make them idempotent.
    /// - Throws: ``StoreError/nestedWrite`` when called inside a write on the same thread,
    ///   ``StoreError/mapFull(mapSize:maximumMapSize:)``, ``StoreError/closed``, LMDB failures,
    ///   and whatever `body` throws.
    public func write<R>(_ body: (borrowing WriteTransaction) throws -> R) throws -> R {
        let me = pthread_self()
        let nested = lifecycle.withLock { state -> Bool in
            guard let writer = state.writer else { return false }
            return pthread_equal(writer, me) != 0
        }
        guard !nested else { throw StoreError.nestedWrite }
        writeLock.lock()
        lifecycle.withLock { $0.writer = me }
        defer {
            lifecycle.withLock { $0.writer = nil }
            writeLock.unlock()
        }
        var attempts = 0
        while true {
            if isNearlyFull() { try grow(force: false) }
            // Each path below releases the shared resize lock exactly once before it grows,
            // retries, returns or throws (an unlock too many here once hung close() for good).
            resizeLock.lockShared()
            let state: TransactionState
            do {
                state = TransactionState(txn: try begin(readOnly: false), writable: true, database: self, sealer: currentSealer)
            } catch {
                resizeLock.unlock()
                throw error
            }
            let result: R
            do {
                result = try body(WriteTransaction(state: state))
            } catch StoreError.mapFull(_, _) where attempts < 4 {
                state.finish(commit: false)
                resizeLock.unlock()
                attempts += 1
                try grow(force: true)
                continue
            } catch {
                state.finish(commit: false)
                resizeLock.unlock()
                throw error
            }
            let rc = state.finish(commit: true)
            resizeLock.unlock()
            if rc == 0 { return result }
            guard rc == MDB_MAP_FULL else { throw StoreError.lmdb(rc, "commit") }
            guard attempts < 4 else { throw try mapFullError() }
            attempts += 1
            try grow(force: true)
        }
    }

    func begin(readOnly: Bool) throws -> OpaquePointer {
        guard !isClosed else { throw StoreError.closed }
        var txn: OpaquePointer?
        var rc = injectedFault(readOnly ? .beginRead : .beginWrite) ?? mdb_txn_begin(env, nil, readOnly ? UInt32(MDB_RDONLY) : 0, &txn)
        if rc == MDB_MAP_RESIZED {
            // Another process grew the map: adopt its size (LMDB allows this with no txn active
            // in this process; we hold only a shared resize lock, so take it exclusively).
            resizeLock.unlock()
            resizeLock.lockExclusive()
            let closedMeanwhile = isClosed
            if !closedMeanwhile { _ = mdb_env_set_mapsize(env, 0) }
            resizeLock.unlock()
            resizeLock.lockShared()
            guard !closedMeanwhile, !isClosed else { throw StoreError.closed }
            rc = mdb_txn_begin(env, nil, readOnly ? UInt32(MDB_RDONLY) : 0, &txn)
        }
        guard rc == 0, let txn else { throw StoreError.lmdb(rc, readOnly ? "begin read transaction" : "begin write transaction") }
        return txn
    }

    /// The error code a test's ``StoreFaultInjector`` wants for this call, if any.
    @inline(__always)
    func injectedFault(_ operation: StoreFaultInjector.Operation) -> Int32? {
        guard let injector = options.faultInjector else { return nil }
        return injector.fault(operation)
    }

    // MARK: Backup

    /// Writes a consistent, compacted copy of the whole store (one read snapshot, so it may run
    /// while other threads or processes write) to `file`, which must not exist yet: it is created
    /// with the store's file mode (0600 by default) before any byte is written, and synced
    /// before this returns. The copy is a complete `data.mdb`: put it in an empty directory to
    /// open it.
    /// - Throws: ``StoreError/closed``; ``StoreError/openFailed(path:_:)`` when `file` exists or
    ///   cannot be created; LMDB and I/O failures as ``StoreError/openFailed(path:_:)`` too.
    public func backup(toFile file: String) throws {
        resizeLock.lockShared()
        defer { resizeLock.unlock() }
        guard !isClosed else { throw StoreError.closed }
        let fd = createExclusive(file, mode: mode_t(options.fileMode))
        guard fd >= 0 else { throw StoreError.openFailed(path: file, .system(coords_errno())) }
        var failure: LMDBCode?
        let rc = mdb_env_copyfd2(env, fd, UInt32(MDB_CP_COMPACT))
        if rc != 0 { failure = LMDBCode(rc) } else if coords_sync_file(fd) != 0 { failure = .system(coords_errno()) }
        closeDescriptor(fd)
        if let failure {
            unlink(file)
            throw StoreError.openFailed(path: file, failure)
        }
    }

    // MARK: Map size

    /// Current map size and bytes in use.
    /// - Throws: ``StoreError/closed``.
    public func mapUsage() throws -> (mapSize: Int, used: Int) {
        resizeLock.lockShared()
        defer { resizeLock.unlock() }
        guard !isClosed else { throw StoreError.closed }
        return lockedMapUsage()
    }

    /// Map usage; the caller holds `resizeLock` (shared or exclusive) and checked `isClosed`.
    func lockedMapUsage() -> (mapSize: Int, used: Int) {
        var info = MDB_envinfo()
        var stat = MDB_stat()
        _ = mdb_env_info(env, &info)
        _ = mdb_env_stat(env, &stat)
        return (info.me_mapsize, (info.me_last_pgno + 1) * Int(stat.ms_psize))
    }

    private func mapFullError() throws -> StoreError {
        .mapFull(mapSize: try mapUsage().mapSize, maximumMapSize: options.maximumMapSize)
    }

    /// The error for a full map; the caller holds `resizeLock`.
    func lockedMapFullError() -> StoreError {
        .mapFull(mapSize: lockedMapUsage().mapSize, maximumMapSize: options.maximumMapSize)
    }

    /// Doubles the map (capped at the maximum) when `force` is set or more than 80 % of it is in
    /// use, so most writes never see MAP_FULL. Waits for every transaction of this process to end.
    /// - Throws: ``StoreError/closed``; ``StoreError/mapFull(mapSize:maximumMapSize:)`` when
    ///   `force` is set and the map is already at its maximum.
    func grow(force: Bool) throws {
        resizeLock.lockExclusive()
        defer { resizeLock.unlock() }
        guard !isClosed else { throw StoreError.closed }
        let usage = lockedMapUsage()
        guard force || usage.used * 5 > usage.mapSize * 4 else { return }
        guard usage.mapSize < options.maximumMapSize else {
            if force { throw lockedMapFullError() }
            return
        }
        let doubled = usage.mapSize.multipliedReportingOverflow(by: 2)
        let target = doubled.overflow ? options.maximumMapSize : min(doubled.partialValue, options.maximumMapSize)
        let rc = injectedFault(.resize) ?? mdb_env_set_mapsize(env, target)
        guard rc == 0 else { throw StoreError.lmdb(rc, "grow map to \(target) bytes") }
    }

    /// Whether the proactive growth check is worth an exclusive lock (read under the shared lock).
    private func isNearlyFull() -> Bool {
        resizeLock.lockShared()
        defer { resizeLock.unlock() }
        guard !isClosed else { return false }
        let usage = lockedMapUsage()
        return usage.used * 5 > usage.mapSize * 4 && usage.mapSize < options.maximumMapSize
    }

    // MARK: Tables

    /// The handle of a declared table, checking its types.
    func handle(for definition: AnyTableDefinition, in state: TransactionState) throws -> MDB_dbi {
        if let table = tables[definition.name] {
            guard table.keyType == definition.keyTypeName, table.valueType == definition.valueTypeName else {
                throw StoreError.tableTypeMismatch(
                    table: definition.name, stored: "\(table.keyType) -> \(table.valueType)", requested: definition.typeSignature)
            }
            return table.dbi
        }
        guard state.isMigrating, let txn = state.txn else { throw StoreError.unknownTable(definition.name) }
        return try openDBI(definition.name, txn: txn)
    }

    func validateKey(_ key: UnsafeRawBufferPointer) throws {
        guard key.count >= 1, key.count <= maximumKeySize else {
            throw StoreError.invalidKeySize(size: key.count, maximum: maximumKeySize)
        }
    }

    private func openDBI(_ name: String, txn: OpaquePointer) throws -> MDB_dbi {
        var dbi = MDB_dbi()
        let rc = mdb_dbi_open(txn, name, UInt32(MDB_CREATE), &dbi)
        if rc == MDB_DBS_FULL { throw StoreError.tooManyTables(options.maximumTables) }
        guard rc == 0 else { throw StoreError.lmdb(rc, "open table \(name)") }
        return dbi
    }

    private func openTables(schema: Schema) throws {
        let txn = try begin(readOnly: false)
        let state = TransactionState(txn: txn, writable: true, database: self, sealer: currentSealer)
        do {
            let meta = try openDBI(Self.metadataTable, txn: txn)
            tables[Self.metadataTable] = (meta, AnyTableDefinition.metadata.keyTypeName, AnyTableDefinition.metadata.valueTypeName)
            let stored = try state.get(dbi: meta, table: Self.metadataTable, key: Self.schemaVersionKey, as: UInt32.self)
            let check = try Self.sealCheckKey.withStoreBytes { k in try state.rawGet(dbi: meta, key: k, table: Self.metadataTable).map { Array($0) } }
            switch (options.sealer, check) {
            case (let sealer?, let check?):
                guard check.withUnsafeBytes({ sealer.verifyCheckValue($0) }) else { throw StoreError.wrongStoreKey }
            case (let sealer?, nil):
                guard stored == nil else { throw StoreError.unsealedStore }
                try state.put(dbi: meta, key: Self.sealCheckKey, value: try sealer.makeCheckValue())
            case (nil, _?): throw StoreError.storeKeyRequired
            case (nil, nil): break
            }
            if let stored {
                guard stored <= schema.version else { throw StoreError.schemaTooNew(stored: stored, supported: schema.version) }
                state.isMigrating = true
                for migration in schema.migrations where migration.version > stored && migration.version <= schema.version {
                    do {
                        try migration.body(WriteTransaction(state: state))
                    } catch {
                        throw StoreError.migrationFailed(from: migration.version - 1, to: migration.version, reason: "\(error)")
                    }
                }
                state.isMigrating = false
            }
            for definition in schema.tables {
                guard !definition.name.hasPrefix("__") else { throw StoreError.unknownTable(definition.name) }
                let dbi = try openDBI(definition.name, txn: txn)
                let key = "table:" + definition.name
                if let signature = try state.get(dbi: meta, table: Self.metadataTable, key: key, as: String.self),
                    signature != definition.typeSignature
                {
                    throw StoreError.tableTypeMismatch(table: definition.name, stored: signature, requested: definition.typeSignature)
                }
                try state.put(dbi: meta, key: key, value: definition.typeSignature)
                tables[definition.name] = (dbi, definition.keyTypeName, definition.valueTypeName)
                visibilities[definition.name] = definition.visibility
            }
            try state.put(dbi: meta, key: Self.schemaVersionKey, value: schema.version)
            let rc = state.finish(commit: true)
            guard rc == 0 else { throw StoreError.lmdb(rc, "commit schema") }
        } catch {
            state.finish(commit: false)
            tables = [:]
            throw error
        }
    }

    /// The sealer transactions use now.
    var currentSealer: StoreSealer? { sealerBox.withLock { $0 } }

    /// Whether values are sealed at rest.
    public var isSealed: Bool { currentSealer != nil }

    /// The metadata table's handle (nil before the schema was opened).
    var metadataDBI: MDB_dbi? { tables[Self.metadataTable]?.dbi }

    /// Records a table's new types (used by migrations through ``WriteTransaction/redefine(_:)``).
    func recordSignature(of definition: AnyTableDefinition, in state: TransactionState) throws {
        guard let meta = tables[Self.metadataTable]?.dbi else { throw StoreError.unknownTable(Self.metadataTable) }
        try state.put(dbi: meta, key: "table:" + definition.name, value: definition.typeSignature)
    }

    /// The stored schema version.
    public func schemaVersion() throws -> UInt32? {
        try read { tx in try tx.open(AnyTableDefinition.metadataDefinition).get(Self.schemaVersionKey).map { try UInt32(storeBytes: $0) } }
    }
}

extension AnyTableDefinition {
    static let metadata = AnyTableDefinition(name: Database.metadataTable, keyTypeName: "string", valueTypeName: "bytes")
    static let metadataDefinition = TableDefinition<String, [UInt8]>(Database.metadataTable)
}

extension UInt32 {
    /// Decodes a metadata value.
    init(storeBytes bytes: [UInt8]) throws {
        self = try bytes.withUnsafeBytes { try UInt32(storeBytes: $0) }
    }
}

/// `coords_open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)` (outside ``Database``, whose
/// `open`/`close` members would shadow the C functions).
private func createExclusive(_ path: String, mode: mode_t) -> Int32 { coords_open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode) }

/// `close(fd)`.
private func closeDescriptor(_ fd: Int32) { close(fd) }
