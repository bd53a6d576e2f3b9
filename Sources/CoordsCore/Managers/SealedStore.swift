import CPlatform

/// The keychain names of the store's keys (docs/STORE.md, "Key management").
public enum StoreKeyNames {
    /// The store's data-encryption key (32 random bytes).
    public static let dek = "store.dek"
    /// The next DEK while a rekey is under way (promoted to ``dek`` once the store uses it).
    public static let nextDEK = "store.dek.next"
    /// The key of shred group `id` (its id as 16 hex digits).
    public static func shred(_ id: UInt64) -> String {
        let hex = String(id, radix: 16)
        return "store.shred." + String(repeating: "0", count: max(0, 16 - hex.count)) + hex
    }
}

/// Shred-group keys kept in the app's keychain.
struct KeychainShredKeys: ShredKeyStore {
    let keychain: any Keychain
    func loadShredKey(_ id: UInt64) throws -> SecretBytes? { try keychain.load(name: StoreKeyNames.shred(id)) }
    func saveShredKey(_ key: SecretBytes, id: UInt64) throws { try keychain.save(key, name: StoreKeyNames.shred(id)) }
    func deleteShredKey(_ id: UInt64) throws { try keychain.delete(name: StoreKeyNames.shred(id)) }
}

/// Opens, migrates and rekeys the app's sealed store (`<directory>/store`).
///
/// Files while a 1.0.0 store is migrated: `store.tmp` (being written), `store.new` (complete
/// and synced), `store.old` (the plaintext store, being wiped). ``recover(path:)`` finishes or
/// undoes whatever a crash left, so every state opens.
enum SealedStore {
    /// Entries copied per write transaction during a migration (bounds its memory).
    static let copyBatch = 1_000

    /// Opens the store under the DEK from `keychain`, making the DEK for a new store and
    /// migrating a plaintext (1.0.0) store first.
    /// - Throws: ``StoreError/storeKeyMissing`` (sealed store, no DEK), ``StoreError/wrongStoreKey``,
    ///   store and keychain errors. Nothing is overwritten when the key is missing or wrong.
    static func open(
        directory: String, options: Database.Options, keychain: any Keychain, random: any RandomSource,
        progress: ((String) -> Void)? = nil
    ) throws -> Database {
        let path = directory + "/store"
        // One process at a time finishes a migration (others wait here, then find it done): an
        // advisory lock on the data directory itself, so no lock file is left beside the store.
        let lock = coords_open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)
        guard lock >= 0 else { throw StoreError.openFailed(path: directory, .system(coords_errno())) }
        defer { close(lock) }
        while flock(lock, LOCK_EX) != 0 {
            guard coords_errno() == EINTR else { throw StoreError.openFailed(path: directory, .system(coords_errno())) }
        }
        try recover(path: path)
        let shredKeys = KeychainShredKeys(keychain: keychain)
        func attempt(_ dek: SecretBytes) throws -> Database {
            var sealed = options
            sealed.sealer = try StoreSealer(dek: dek, shredKeys: shredKeys)
            return try Database.open(path: path, options: sealed, schema: AppSchema.current)
        }
        func migrated(_ dek: SecretBytes) throws -> Database {
            try migrate(path: path, options: options, sealer: try StoreSealer(dek: dek, shredKeys: shredKeys), progress: progress)
            return try attempt(dek)
        }
        let next = try keychain.load(name: StoreKeyNames.nextDEK)
        guard let dek = try keychain.load(name: StoreKeyNames.dek) else {
            // A new store or a 1.0.0 one: keep a new DEK before anything is sealed with it, and
            // take it back if the store turns out to be sealed under a key we do not have.
            let dek = try StoreSealer.makeKey(using: random)
            try keychain.save(dek, name: StoreKeyNames.dek)
            do {
                return try attempt(dek)
            } catch StoreError.unsealedStore {
                return try migrated(dek)
            } catch StoreError.wrongStoreKey {
                try keychain.delete(name: StoreKeyNames.dek)
                throw StoreError.storeKeyMissing
            }
        }
        do {
            let database = try attempt(dek)
            // A rekey that never reached its commit: the next key sealed nothing.
            if next != nil { try keychain.delete(name: StoreKeyNames.nextDEK) }
            return database
        } catch StoreError.wrongStoreKey {
            // A rekey committed but the new key was not promoted yet.
            guard let next else { throw StoreError.wrongStoreKey }
            let database = try attempt(next)
            try keychain.save(next, name: StoreKeyNames.dek)
            try keychain.delete(name: StoreKeyNames.nextDEK)
            return database
        } catch StoreError.unsealedStore {
            return try migrated(dek)
        }
    }

    /// Replaces the DEK: the new key is kept as `store.dek.next`, every value re-sealed in one
    /// transaction, then the new key becomes `store.dek` and the old one is destroyed. A crash
    /// at any point leaves a store that ``open(directory:options:keychain:random:progress:)``
    /// opens with the old key or the new one.
    /// - Throws: store and keychain errors.
    static func rekey(database: Database, keychain: any Keychain, random: any RandomSource) throws {
        let dek = try StoreSealer.makeKey(using: random)
        try keychain.save(dek, name: StoreKeyNames.nextDEK)
        try database.rekey(to: try StoreSealer(dek: dek, shredKeys: KeychainShredKeys(keychain: keychain)))
        try keychain.save(dek, name: StoreKeyNames.dek)
        try keychain.delete(name: StoreKeyNames.nextDEK)
    }

    // MARK: Migration from 1.0.0

    /// Copies the plaintext store at `path` into a new sealed one and swaps them (see the type's
    /// comment); the plaintext file is overwritten with zeros and removed.
    static func migrate(path: String, options: Database.Options, sealer: StoreSealer, progress: ((String) -> Void)?) throws {
        var plainOptions = options
        plainOptions.sealer = nil
        let temporary = path + ".tmp"
        try removeStore(temporary, wipe: false)
        do {
            let plain = try Database.open(path: path, options: plainOptions, schema: AppSchema.current)
            defer { plain.close() }
            var sealedOptions = options
            sealedOptions.sealer = sealer
            sealedOptions.durability = .noSync
            let sealed = try Database.open(path: temporary, options: sealedOptions, schema: AppSchema.current)
            defer { sealed.close() }
            progress?("sealing the store at rest (a one-time migration from 1.0.0)")
            try copyAll(from: plain, to: sealed, progress: progress)
            try sealed.sync()
        }
        try syncDirectory(temporary)
        guard rename(temporary, path + ".new") == 0 else { throw StoreError.openFailed(path: path + ".new", .system(coords_errno())) }
        try syncDirectory(parent(of: path))
        try recover(path: path)
    }

    /// Copies every table of ``AppSchema`` (messages with their expiry, so a sealed target seals
    /// them under their shred groups).
    static func copyAll(from plain: Database, to sealed: Database, progress: ((String) -> Void)? = nil) throws {
        try copy(Tables.friends, plain, sealed)
        try copy(Tables.locations, plain, sealed)
        try copy(Tables.uploadState, plain, sealed)
        try copy(Tables.settings, plain, sealed)
        try copy(Tables.outbox, plain, sealed)
        try copy(Tables.messages, plain, sealed, progress: progress) { $0.disappearsAt }
        try copy(Tables.messageIDs, plain, sealed)
        try copy(Tables.conversations, plain, sealed)
        try copy(Tables.shareLimits, plain, sealed)
        try copy(Tables.retiredKeys, plain, sealed)
        try copy(Tables.rotation, plain, sealed)
    }

    /// Copies one table in batches (one read snapshot of the source, a write per batch).
    private static func copy<K, V>(
        _ definition: TableDefinition<K, V>, _ source: Database, _ target: Database, progress: ((String) -> Void)? = nil,
        expiry: ((V) -> UInt64?)? = nil
    ) throws {
        try source.read { tx in
            let table = try tx.open(definition)
            var batch: [(K, V)] = []
            var copied = 0
            func flush() throws {
                guard !batch.isEmpty else { return }
                try target.write { out in
                    let written = try out.open(definition)
                    for (key, value) in batch { try written.put(key, value, expiringAt: expiry?(value)) }
                }
                copied += batch.count
                batch.removeAll(keepingCapacity: true)
                if let progress, copied % 10_000 == 0 { progress("sealed \(copied) entries of \(definition.name)") }
            }
            try table.forEach { key, value in
                batch.append((key, value))
                if batch.count >= copyBatch { try flush() }
                return true
            }
            try flush()
        }
    }

    // MARK: Files

    /// Finishes or undoes an interrupted migration: drops a partial `store.tmp`, moves a
    /// complete `store.new` into place, and wipes `store.old`.
    static func recover(path: String) throws {
        try removeStore(path + ".tmp", wipe: false)
        if exists(path + ".new") {
            if exists(path) {
                guard rename(path, path + ".old") == 0 else { throw StoreError.openFailed(path: path, .system(coords_errno())) }
            }
            guard rename(path + ".new", path) == 0 else { throw StoreError.openFailed(path: path, .system(coords_errno())) }
            try syncDirectory(parent(of: path))
        }
        try removeStore(path + ".old", wipe: true)
    }

    private static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    private static func parent(of path: String) -> String {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        return parts.isEmpty ? "." : parts
    }

    private static func syncDirectory(_ path: String) throws {
        let fd = coords_open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)
        guard fd >= 0 else { throw StoreError.openFailed(path: path, .system(coords_errno())) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw StoreError.openFailed(path: path, .system(coords_errno())) }
    }

    /// Removes a store directory (its `data.mdb` and `lock.mdb`), first overwriting the data file
    /// with zeros when `wipe` is set. Absent is fine.
    private static func removeStore(_ directory: String, wipe: Bool) throws {
        guard exists(directory) else { return }
        for name in ["data.mdb", "lock.mdb"] {
            let file = directory + "/" + name
            if wipe && name == "data.mdb" { try overwriteWithZeros(file) }
            if unlink(file) != 0 && coords_errno() != ENOENT { throw StoreError.openFailed(path: file, .system(coords_errno())) }
        }
        if rmdir(directory) != 0 && coords_errno() != ENOENT { throw StoreError.openFailed(path: directory, .system(coords_errno())) }
    }

    /// Overwrites a file's bytes with zeros and syncs it (best effort against the file being
    /// read later through another name; on flash storage the old blocks may survive).
    private static func overwriteWithZeros(_ file: String) throws {
        let fd = coords_open(file, O_WRONLY | O_CLOEXEC, 0)
        if fd < 0 {
            if coords_errno() == ENOENT { return }
            throw StoreError.openFailed(path: file, .system(coords_errno()))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw StoreError.openFailed(path: file, .system(coords_errno())) }
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        var offset: off_t = 0
        while offset < info.st_size {
            let count = Int(min(off_t(zeros.count), info.st_size - offset))
            let n = zeros.withUnsafeBytes { pwrite(fd, $0.baseAddress, count, offset) }
            if n < 0 {
                if coords_errno() == EINTR { continue }
                throw StoreError.openFailed(path: file, .system(coords_errno()))
            }
            offset += off_t(n)
        }
        guard coords_sync_file(fd) == 0 else { throw StoreError.openFailed(path: file, .system(coords_errno())) }
    }
}
