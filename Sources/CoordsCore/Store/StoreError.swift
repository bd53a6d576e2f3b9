internal import CLMDB

/// An LMDB return code, every one of them named (none is ignored or collapsed).
public enum LMDBCode: Sendable, Equatable, CustomStringConvertible {
    /// `MDB_KEYEXIST`: the key is already there (a no-overwrite put).
    case keyExists
    /// `MDB_NOTFOUND`: no such key, or the cursor is at the end.
    case notFound
    /// `MDB_PAGE_NOTFOUND`: a requested page is missing (the file is damaged).
    case pageNotFound
    /// `MDB_CORRUPTED`: a page has the wrong type (the file is damaged).
    case corrupted
    /// `MDB_PANIC`: an earlier fatal error left the environment unusable; reopen it.
    case panic
    /// `MDB_VERSION_MISMATCH`: the file was written by an incompatible LMDB version.
    case versionMismatch
    /// `MDB_INVALID`: the file is not an LMDB file.
    case invalid
    /// `MDB_MAP_FULL`: the map size is reached.
    case mapFull
    /// `MDB_DBS_FULL`: more named tables than the environment was opened for.
    case dbsFull
    /// `MDB_READERS_FULL`: every reader slot is taken.
    case readersFull
    /// `MDB_TLS_FULL`: too many thread-local storage keys in use.
    case tlsFull
    /// `MDB_TXN_FULL`: the transaction has too many dirty pages.
    case txnFull
    /// `MDB_CURSOR_FULL`: the cursor stack is too deep (internal).
    case cursorFull
    /// `MDB_PAGE_FULL`: a page has no room (internal).
    case pageFull
    /// `MDB_MAP_RESIZED`: another process grew the map beyond this environment's size.
    case mapResized
    /// `MDB_INCOMPATIBLE`: the operation does not fit the table's flags, or the table changed.
    case incompatible
    /// `MDB_BAD_RSLOT`: a reader slot was misused (a read transaction used from another thread).
    case badReaderSlot
    /// `MDB_BAD_TXN`: the transaction failed earlier and must be aborted, or is used wrongly.
    case badTransaction
    /// `MDB_BAD_VALSIZE`: a key or value of an unsupported size (an empty or too long key).
    case badValueSize
    /// `MDB_BAD_DBI`: the table handle changed unexpectedly.
    case badDBI
    /// An operating-system error (`errno`: ENOENT, EACCES, ENOSPC, EIO, ENOMEM, EINVAL, …).
    case system(Int32)

    /// Maps a non-zero LMDB return value.
    init(_ rc: Int32) {
        switch rc {
        case MDB_KEYEXIST: self = .keyExists
        case MDB_NOTFOUND: self = .notFound
        case MDB_PAGE_NOTFOUND: self = .pageNotFound
        case MDB_CORRUPTED: self = .corrupted
        case MDB_PANIC: self = .panic
        case MDB_VERSION_MISMATCH: self = .versionMismatch
        case MDB_INVALID: self = .invalid
        case MDB_MAP_FULL: self = .mapFull
        case MDB_DBS_FULL: self = .dbsFull
        case MDB_READERS_FULL: self = .readersFull
        case MDB_TLS_FULL: self = .tlsFull
        case MDB_TXN_FULL: self = .txnFull
        case MDB_CURSOR_FULL: self = .cursorFull
        case MDB_PAGE_FULL: self = .pageFull
        case MDB_MAP_RESIZED: self = .mapResized
        case MDB_INCOMPATIBLE: self = .incompatible
        case MDB_BAD_RSLOT: self = .badReaderSlot
        case MDB_BAD_TXN: self = .badTransaction
        case MDB_BAD_VALSIZE: self = .badValueSize
        case MDB_BAD_DBI: self = .badDBI
        default: self = .system(rc)
        }
    }

    /// The raw LMDB/errno value.
    public var rawValue: Int32 {
        switch self {
        case .keyExists: MDB_KEYEXIST
        case .notFound: MDB_NOTFOUND
        case .pageNotFound: MDB_PAGE_NOTFOUND
        case .corrupted: MDB_CORRUPTED
        case .panic: MDB_PANIC
        case .versionMismatch: MDB_VERSION_MISMATCH
        case .invalid: MDB_INVALID
        case .mapFull: MDB_MAP_FULL
        case .dbsFull: MDB_DBS_FULL
        case .readersFull: MDB_READERS_FULL
        case .tlsFull: MDB_TLS_FULL
        case .txnFull: MDB_TXN_FULL
        case .cursorFull: MDB_CURSOR_FULL
        case .pageFull: MDB_PAGE_FULL
        case .mapResized: MDB_MAP_RESIZED
        case .incompatible: MDB_INCOMPATIBLE
        case .badReaderSlot: MDB_BAD_RSLOT
        case .badTransaction: MDB_BAD_TXN
        case .badValueSize: MDB_BAD_VALSIZE
        case .badDBI: MDB_BAD_DBI
        case .system(let errno): errno
        }
    }

    /// Whether the code means the file is damaged or not an LMDB file at all.
    public var isCorruption: Bool {
        switch self {
        case .pageNotFound, .corrupted, .panic, .invalid, .versionMismatch: true
        default: false
        }
    }

    /// LMDB's own text (`mdb_strerror`, which covers errno values too).
    public var description: String {
        guard let text = mdb_strerror(rawValue) else { return "LMDB error \(rawValue)" }
        return String(cString: text)
    }
}

/// Errors of the store layer. Codes 400–499, stable. Families: 400–409 storage (the file and
/// LMDB itself), 410–419 tables, 420–429 transactions, 430–439 values, 440–449 schema.
public enum StoreError: CoordsCoreError, Equatable {
    // 400–409 storage
    /// Creating or opening the environment failed (permissions, a missing disk, a damaged file).
    case openFailed(path: String, LMDBCode)
    /// This process already has a database open at this path (LMDB forbids a second handle).
    case alreadyOpen(path: String)
    /// The store reached its maximum size.
    case mapFull(mapSize: Int, maximumMapSize: Int)
    /// LMDB reported that the file is damaged or not an LMDB file.
    case corrupted(LMDBCode)
    /// Another LMDB failure, with the operation that hit it.
    case storage(operation: String, LMDBCode)
    /// The database was closed.
    case closed

    // 410–419 tables
    /// The table was not declared in the schema the database was opened with.
    case unknownTable(String)
    /// The table exists with other key/value type names (stored, requested).
    case tableTypeMismatch(table: String, stored: String, requested: String)
    /// More tables than `Options.maximumTables`.
    case tooManyTables(Int)

    // 420–429 transactions
    /// The transaction already ended (it was used outside its closure).
    case transactionClosed
    /// `write` was called inside a `write` on the same thread (LMDB would deadlock).
    case nestedWrite

    // 430–439 values
    /// A stored value could not be decoded as the table's type.
    case decodingFailed(table: String, type: String, reason: String)
    /// A value could not be encoded.
    case encodingFailed(type: String, reason: String)
    /// A key is empty or longer than LMDB allows (511 bytes by default).
    case invalidKeySize(size: Int, maximum: Int)

    // 440–449 schema
    /// The file was written by a newer schema than this build knows.
    case schemaTooNew(stored: UInt32, supported: UInt32)
    /// A migration threw.
    case migrationFailed(from: UInt32, to: UInt32, reason: String)

    // 450–459 sealing at rest
    /// A sealed value does not open: a flipped bit, a value copied from another key or table, a
    /// truncated value, a file from another installation, or an expired value whose key is gone.
    case sealedValueRejected(table: String, reason: String)
    /// The store key (DEK) does not open this store: another installation's store or a wrong key.
    /// Nothing was changed.
    case wrongStoreKey
    /// The store is sealed and was opened without its key.
    case storeKeyRequired
    /// The store key is missing from the keychain while the store is sealed: restore the keychain
    /// (or a backup). Nothing was changed.
    case storeKeyMissing
    /// The store was written in the clear (1.0.0) and must be migrated before a sealed open
    /// (``CoordsApp/open(directory:options:)`` does that).
    case unsealedStore
    /// A range or prefix scan of a table whose keys are hidden (``KeyVisibility``) names less
    /// than the kept part of the key.
    case unsupportedScan(table: String)

    /// The stable numeric code.
    public var code: Int32 {
        switch self {
        case .openFailed: 400
        case .alreadyOpen: 401
        case .mapFull: 402
        case .corrupted: 403
        case .storage: 404
        case .closed: 405
        case .unknownTable: 410
        case .tableTypeMismatch: 411
        case .tooManyTables: 412
        case .transactionClosed: 420
        case .nestedWrite: 421
        case .decodingFailed: 430
        case .encodingFailed: 431
        case .invalidKeySize: 432
        case .schemaTooNew: 440
        case .migrationFailed: 441
        case .sealedValueRejected: 450
        case .wrongStoreKey: 451
        case .storeKeyRequired: 452
        case .storeKeyMissing: 453
        case .unsealedStore: 454
        case .unsupportedScan: 455
        }
    }

    /// A sentence saying what was wrong and what to do.
    public var description: String {
        switch self {
        case .openFailed(let path, let code):
            "cannot open the store at \(path): \(code) (check that the directory exists, is writable and is on a local disk)"
        case .alreadyOpen(let path):
            "the store at \(path) is already open in this process; share that instance or close it first"
        case .mapFull(let size, let maximum):
            "the store is full: it uses its whole map of \(size) bytes and may not grow past \(maximum); raise Options.maximumMapSize"
        case .corrupted(let code): "the store file is damaged or not an LMDB file: \(code); restore it from a backup"
        case .storage(let operation, let code): "store operation \(operation) failed: \(code)"
        case .closed: "the store is closed"
        case .unknownTable(let name): "table \"\(name)\" is not part of the schema this store was opened with"
        case .tableTypeMismatch(let table, let stored, let requested):
            "table \"\(table)\" holds \(stored) but was opened as \(requested); add a migration that converts it"
        case .tooManyTables(let n): "the schema declares \(n) tables, more than Options.maximumTables"
        case .transactionClosed: "the transaction has ended; use tables only inside the read/write closure"
        case .nestedWrite: "write() called inside another write() on the same thread; do the work in the outer transaction"
        case .decodingFailed(let table, let type, let reason): "a value in table \"\(table)\" is not a valid \(type): \(reason)"
        case .encodingFailed(let type, let reason): "cannot encode \(type): \(reason)"
        case .invalidKeySize(let size, let maximum): "keys must be 1…\(maximum) bytes, got \(size)"
        case .schemaTooNew(let stored, let supported):
            "the store was written by schema version \(stored) but this build knows up to \(supported); update the app"
        case .migrationFailed(let from, let to, let reason): "migration from schema \(from) to \(to) failed: \(reason)"
        case .sealedValueRejected(let table, let reason):
            "a value in table \"\(table)\" was refused: \(reason); restore the store from a backup if this persists"
        case .wrongStoreKey:
            "the store key does not open this store (another installation's store, or the wrong keychain); nothing was changed"
        case .storeKeyRequired: "the store is sealed at rest: open it with its store key"
        case .storeKeyMissing:
            "the store is sealed but its key (store.dek) is not in the keychain: restore the keychain or import a backup; nothing was changed"
        case .unsealedStore: "the store was written in the clear by 1.0.0 and must be migrated (open it through CoordsApp)"
        case .unsupportedScan(let table): "table \"\(table)\" hides its keys: scan it whole or by a full hidden prefix"
        }
    }

    /// Wraps a non-zero LMDB return value of `operation` in the right family.
    static func lmdb(_ rc: Int32, _ operation: String) -> StoreError {
        let code = LMDBCode(rc)
        return code.isCorruption ? .corrupted(code) : .storage(operation: operation, code)
    }
}
