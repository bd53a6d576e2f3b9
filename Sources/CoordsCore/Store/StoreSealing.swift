internal import CSodium
import Synchronization

/// How a table's keys appear in the file of a sealed store (docs/STORE.md, "Sealed at rest").
public enum KeyVisibility: Sendable, Hashable {
    /// The whole key is replaced by its keyed hash (the default): lookups work, key order does not,
    /// so only whole-table walks (in hash order) and exact lookups are possible.
    case hidden
    /// The first `n` bytes are replaced by their keyed hash and the rest is kept, so the entries of
    /// one prefix stay in order (messages: friend key (hidden) ‖ sequence number (kept)). Scans
    /// must name a prefix of at least `n` bytes.
    case hiddenPrefix(Int)
    /// Kept as it is: only for keys that reveal nothing but a count (outbox ids).
    case visible
}

/// Where the keys of shred groups live (the app's keychain). A shred group's key seals every
/// value put with ``TableHandle/put(_:_:expiringAt:)`` for one minute of expiry times; deleting
/// the key makes those values unreadable in every copy of the file (crypto-shredding).
public protocol ShredKeyStore: Sendable {
    /// The key of group `id`, or nil when there is none (never made, or destroyed).
    /// - Throws: the keychain's errors.
    func loadShredKey(_ id: UInt64) throws -> SecretBytes?
    /// Keeps `key` for group `id` (replacing any).
    /// - Throws: the keychain's errors.
    func saveShredKey(_ key: SecretBytes, id: UInt64) throws
    /// Destroys the key of group `id`; absent is fine.
    /// - Throws: the keychain's errors.
    func deleteShredKey(_ id: UInt64) throws
}

/// Seals a store's values and hides its keys under one data-encryption key (DEK).
///
/// Every value is XChaCha20-Poly1305 under a subkey of the DEK with a fresh random 24-byte nonce,
/// authenticated with the table's name and the stored key, so a value moved to another key or
/// table does not open. Keys are replaced by a keyed hash, libsodium's SipHash-2-4 with a 128-bit
/// output (``KeyVisibility``), under another subkey. The exact
/// layout is in docs/STORE.md. Immutable and thread-safe; the subkeys live in ``SecretBytes``.
public final class StoreSealer: Sendable {
    /// The DEK's size: 32 bytes.
    public static let keyByteCount = 32
    /// Nonce size of XChaCha20-Poly1305 (`crypto_aead_xchacha20poly1305_ietf_npubbytes()`).
    static let nonceByteCount = 24
    /// Tag size (`crypto_aead_xchacha20poly1305_ietf_abytes()`).
    static let tagByteCount = 16
    /// Size of a stored key's hashed part (`crypto_shorthash_siphashx24_BYTES`).
    static let hashByteCount = 16
    /// Size of the key-hashing subkey (`crypto_shorthash_siphashx24_KEYBYTES`).
    static let hashKeyByteCount = 16
    /// First byte of a value sealed under the DEK's value key.
    static let formatDEK: UInt8 = 1
    /// First byte of a value sealed under a shred group's key (followed by the group id, u64 BE).
    static let formatShred: UInt8 = 2
    /// The length of a shred group in milliseconds: a group's key is destroyed once its minute has passed.
    public static let shredGroupMilliseconds: UInt64 = 60_000

    let valueKey: SecretBytes
    let hashKey: SecretBytes
    let checkKey: SecretBytes
    let shredKeys: (any ShredKeyStore)?
    private let shredCache = Mutex<[UInt64: SecretBytes]>([:])
    /// Nonces drawn ahead (``NonceReserve``).
    private let nonces = NonceReserve()

    /// Random bytes from the OS for ``count`` nonces, handed out once each and wiped as they are:
    /// a send that writes a dozen values makes one `getrandom` call, not a dozen. Like the LMDB
    /// environment it serves, it must not be used across `fork()`. (A `pthread_mutex_t`, which
    /// ThreadSanitizer sees, rather than `Synchronization.Mutex`, which it does not.)
    private final class NonceReserve: @unchecked Sendable {
        static let count = 10
        private let mutex = PthreadMutex()
        private let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: count * StoreSealer.nonceByteCount, alignment: 8)
        /// Bytes handed out (or never drawn), guarded by `mutex`: all of them at first.
        private var used: Int

        init() { used = bytes.count }

        deinit {
            if let base = bytes.baseAddress { sodium_memzero(base, bytes.count) }
            bytes.deallocate()
        }

        /// Writes a fresh random 24-byte nonce to `out` (never the same bytes twice).
        func draw(into out: UnsafeMutableRawPointer) {
            let size = StoreSealer.nonceByteCount
            mutex.withLock {
                guard let base = bytes.baseAddress else { return randombytes_buf(out, size) }
                if used > bytes.count - size {
                    randombytes_buf(base, bytes.count)
                    used = 0
                }
                out.copyMemory(from: base + used, byteCount: size)
                sodium_memzero(base + used, size)
                used += size
            }
        }
    }

    /// A sealer for `dek`.
    /// - Parameters:
    ///   - dek: the store's 32-byte data-encryption key (kept by the keychain).
    ///   - shredKeys: where shred-group keys live; without it, values put with an expiry are
    ///     sealed under the DEK like every other (no crypto-shredding).
    /// - Throws: ``StoreError/wrongStoreKey`` unless `dek` is 32 bytes; ``CryptoError`` when libsodium fails to start.
    public init(dek: SecretBytes, shredKeys: (any ShredKeyStore)? = nil) throws {
        guard dek.count == Self.keyByteCount else { throw StoreError.wrongStoreKey }
        try Sodium.ensureInitialized()
        func derive(_ id: UInt64, count: Int = 32) throws -> SecretBytes {
            try SecretBytes(count: count) { out in
                let rc = dek.withUnsafeBytes { k -> Int32 in
                    guard let target = out.baseAddress, let source = k.baseAddress else { return -1 }
                    return crypto_kdf_derive_from_key(
                        target.assumingMemoryBound(to: UInt8.self), count, id, "coordsst", source.assumingMemoryBound(to: UInt8.self))
                }
                guard rc == 0 else { throw StoreError.wrongStoreKey }
            }
        }
        valueKey = try derive(1)
        hashKey = try derive(2, count: Self.hashKeyByteCount)
        checkKey = try derive(3)
        self.shredKeys = shredKeys
    }

    /// A new random DEK.
    /// - Throws: ``CryptoError`` from the random source.
    public static func makeKey(using random: any RandomSource = SystemRandomSource()) throws -> SecretBytes {
        try SecretBytes(randomCount: keyByteCount, using: random)
    }

    /// The shred group of a value that expires at `milliseconds` (ms since the epoch): the
    /// number of the minute that ends at or after it (its key is destroyed at that minute's end).
    public static func shredGroup(expiringAt milliseconds: UInt64) -> UInt64 {
        milliseconds / shredGroupMilliseconds + (milliseconds % shredGroupMilliseconds == 0 ? 0 : 1)
    }

    /// When group `id`'s key is destroyed: the end of its minute (ms since the epoch).
    public static func shredTime(of id: UInt64) -> UInt64 { id.multipliedSaturating(by: shredGroupMilliseconds) }

    // MARK: Keys

    /// Calls `body` with the stored form of `key` in `table`.
    func withStoredKey<R>(table: String, visibility: KeyVisibility, key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        let hidden: Int
        switch visibility {
        case .visible: return try body(key)
        case .hidden: hidden = key.count
        case .hiddenPrefix(let n):
            guard key.count >= n else { throw StoreError.unsupportedScan(table: table) }
            hidden = n
        }
        let total = Self.hashByteCount + (key.count - hidden)
        // The hash input is the table's name, a zero byte and the hidden part of the key.
        var name = table
        return try name.withUTF8 { nameBytes in
            let inputCount = nameBytes.count + 1 + hidden
            return try withUnsafeTemporaryAllocation(byteCount: total + inputCount, alignment: 1) { buffer in
                guard let base = buffer.baseAddress else { throw StoreError.encodingFailed(type: table, reason: "no memory") }
                let input = base + total
                let at = nameBytes.count
                if let source = nameBytes.baseAddress { input.copyMemory(from: source, byteCount: at) }
                (input + at).storeBytes(of: 0, as: UInt8.self)
                if hidden > 0, let source = key.baseAddress { (input + at + 1).copyMemory(from: source, byteCount: hidden) }
                // Not wiped: it holds the table's name and the key being looked up, which the
                // caller holds in the clear anyway; the sealed plaintext buffers are wiped.
                let rc = hashKey.withUnsafeBytes { k -> Int32 in
                    guard let hk = k.baseAddress else { return -1 }
                    return crypto_shorthash_siphashx24(
                        base.assumingMemoryBound(to: UInt8.self), input.assumingMemoryBound(to: UInt8.self), UInt64(inputCount),
                        hk.assumingMemoryBound(to: UInt8.self))
                }
                guard rc == 0 else { throw StoreError.encodingFailed(type: table, reason: "key hashing failed") }
                if hidden < key.count, let source = key.baseAddress {
                    (base + Self.hashByteCount).copyMemory(from: source + hidden, byteCount: key.count - hidden)
                }
                return try body(UnsafeRawBufferPointer(start: base, count: total))
            }
        }
    }

    // MARK: Values

    /// The associated data of a value: table, a zero byte, stored key and the value's header
    /// (built in a stack buffer: this runs on every read and write). No label: the subkey is
    /// already separated by its KDF context, and every AD byte is Poly1305 work on every read.
    private func withAssociatedData<R>(
        table: String, storedKey: UnsafeRawBufferPointer, header: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> R
    ) rethrows -> R {
        var name = table
        return try name.withUTF8 { tableBytes in
            let total = tableBytes.count + 1 + storedKey.count + header.count
            return try withUnsafeTemporaryAllocation(byteCount: total, alignment: 1) { buffer in
                var at = 0
                func append(_ bytes: UnsafeRawBufferPointer) {
                    guard let source = bytes.baseAddress, let target = buffer.baseAddress, !bytes.isEmpty else { return }
                    (target + at).copyMemory(from: source, byteCount: bytes.count)
                    at += bytes.count
                }
                append(UnsafeRawBufferPointer(tableBytes))
                buffer[at] = 0
                at += 1
                append(storedKey)
                append(header)
                return try body(UnsafeRawBufferPointer(buffer))
            }
        }
    }

    /// The key of shred group `id`; made (and kept by the ``ShredKeyStore``) when `create` is set.
    func shredKey(_ id: UInt64, create: Bool) throws -> SecretBytes? {
        if let cached = shredCache.withLock({ $0[id] }) { return cached }
        guard let store = shredKeys else { return nil }
        if let loaded = try store.loadShredKey(id) {
            guard loaded.count == Self.keyByteCount else { return nil }
            shredCache.withLock { $0[id] = loaded }
            return loaded
        }
        guard create else { return nil }
        let key = try Self.makeKey()
        try store.saveShredKey(key, id: id)
        shredCache.withLock { $0[id] = key }
        return key
    }

    /// Destroys shred group `id`'s key (keychain and cache).
    func destroyShredKey(_ id: UInt64) throws {
        _ = shredCache.withLock { $0.removeValue(forKey: id) }
        try shredKeys?.deleteShredKey(id)
    }

    /// Seals `plaintext` (already holding the embedded key when the table hides keys) for
    /// `storedKey` in `table`, under the DEK or shred group `shred`, and calls `body` with the
    /// stored bytes (wiped afterwards).
    func seal<R>(
        table: String, storedKey: UnsafeRawBufferPointer, plaintext: UnsafeRawBufferPointer, shred: UInt64?,
        key explicitKey: SecretBytes? = nil, _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R {
        let groupKey = try shred.flatMap { try self.shredKey($0, create: true) }
        let headerCount = groupKey == nil ? 1 : 9
        let (total, overflow) = plaintext.count.addingReportingOverflow(headerCount + Self.nonceByteCount + Self.tagByteCount)
        guard !overflow else { throw StoreError.encodingFailed(type: table, reason: "value too large") }
        let key = explicitKey ?? groupKey ?? valueKey
        return try withUnsafeTemporaryAllocation(byteCount: total, alignment: 1) { out in
            guard let base = out.baseAddress else { throw StoreError.encodingFailed(type: table, reason: "no memory") }
            base.storeBytes(of: groupKey == nil ? Self.formatDEK : Self.formatShred, as: UInt8.self)
            if let shred, groupKey != nil {
                for i in 0..<8 { (base + 1 + i).storeBytes(of: UInt8(truncatingIfNeeded: shred >> (56 - 8 * i)), as: UInt8.self) }
            }
            let nonce = base + headerCount
            nonces.draw(into: nonce)
            let header = UnsafeRawBufferPointer(start: base, count: headerCount)
            let rc = withAssociatedData(table: table, storedKey: storedKey, header: header) { ad in
                Self.encrypt(into: nonce + Self.nonceByteCount, plaintext: plaintext, ad: ad, nonce: UnsafeRawPointer(nonce), key: key)
            }
            defer { sodium_memzero(base, total) }
            guard rc == 0 else { throw StoreError.encodingFailed(type: table, reason: "sealing failed") }
            return try body(UnsafeRawBufferPointer(out))
        }
    }

    /// The shred group a stored value is sealed under (nil: the DEK), without opening it.
    static func shredGroup(ofStored stored: UnsafeRawBufferPointer) -> UInt64? {
        guard stored.count >= 9, stored[0] == formatShred else { return nil }
        var id: UInt64 = 0
        for byte in stored[1..<9] { id = id << 8 | UInt64(byte) }
        return id
    }

    /// Opens a stored value and calls `body` with its plaintext (wiped afterwards) and its shred group.
    /// - Throws: ``StoreError/sealedValueRejected(table:reason:)`` when it does not open.
    func open<R>(
        table: String, storedKey: UnsafeRawBufferPointer, stored: UnsafeRawBufferPointer,
        key explicitKey: SecretBytes? = nil, _ body: (UnsafeRawBufferPointer, UInt64?) throws -> R
    ) throws -> R {
        guard let format = stored.first else { throw StoreError.sealedValueRejected(table: table, reason: "an empty value") }
        let headerCount: Int
        var key = explicitKey ?? valueKey
        var shred: UInt64?
        switch format {
        case Self.formatDEK: headerCount = 1
        case Self.formatShred:
            headerCount = 9
            guard let id = Self.shredGroup(ofStored: stored) else {
                throw StoreError.sealedValueRejected(table: table, reason: "a truncated value")
            }
            guard let found = try shredKey(id, create: false) else {
                throw StoreError.sealedValueRejected(table: table, reason: "its expiry key was destroyed (the value has expired)")
            }
            key = found
            shred = id
        default: throw StoreError.sealedValueRejected(table: table, reason: "an unknown format \(format) (not a sealed value)")
        }
        let overhead = headerCount + Self.nonceByteCount + Self.tagByteCount
        guard stored.count >= overhead, let base = stored.baseAddress else {
            throw StoreError.sealedValueRejected(table: table, reason: "a truncated value")
        }
        let count = stored.count - overhead
        return try withUnsafeTemporaryAllocation(byteCount: max(count, 1), alignment: 1) { out in
            guard let outBase = out.baseAddress else { throw StoreError.sealedValueRejected(table: table, reason: "no memory") }
            defer { sodium_memzero(outBase, max(count, 1)) }
            let nonce = base + headerCount
            let header = UnsafeRawBufferPointer(start: base, count: headerCount)
            let sealed = UnsafeRawBufferPointer(start: nonce + Self.nonceByteCount, count: count + Self.tagByteCount)
            let rc = withAssociatedData(table: table, storedKey: storedKey, header: header) { ad in
                Self.decrypt(into: outBase, sealed: sealed, ad: ad, nonce: nonce, key: key)
            }
            guard rc == 0 else {
                throw StoreError.sealedValueRejected(
                    table: table, reason: "it does not authenticate (damaged, moved from another key or table, or sealed by another installation)")
            }
            return try body(UnsafeRawBufferPointer(start: outBase, count: count), shred)
        }
    }

    /// XChaCha20-Poly1305 seal of `plaintext` into `out` (ciphertext ‖ tag); libsodium's code.
    private static func encrypt(
        into out: UnsafeMutableRawPointer, plaintext: UnsafeRawBufferPointer, ad: UnsafeRawBufferPointer, nonce: UnsafeRawPointer, key: SecretBytes
    ) -> Int32 {
        var empty: UInt8 = 0
        return withUnsafeMutablePointer(to: &empty) { placeholder in
            key.withUnsafeBytes { k -> Int32 in
                guard let kb = k.baseAddress else { return -1 }
                return crypto_aead_xchacha20poly1305_ietf_encrypt(
                    out.assumingMemoryBound(to: UInt8.self), nil,
                    plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(placeholder), UInt64(plaintext.count),
                    ad.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(placeholder), UInt64(ad.count), nil,
                    nonce.assumingMemoryBound(to: UInt8.self), kb.assumingMemoryBound(to: UInt8.self))
            }
        }
    }

    /// XChaCha20-Poly1305 open of `sealed` (ciphertext ‖ tag) into `out`; libsodium's code.
    private static func decrypt(
        into out: UnsafeMutableRawPointer, sealed: UnsafeRawBufferPointer, ad: UnsafeRawBufferPointer, nonce: UnsafeRawPointer, key: SecretBytes
    ) -> Int32 {
        var empty: UInt8 = 0
        return withUnsafeMutablePointer(to: &empty) { placeholder in
            key.withUnsafeBytes { k -> Int32 in
                guard let kb = k.baseAddress, let sb = sealed.baseAddress else { return -1 }
                return crypto_aead_xchacha20poly1305_ietf_decrypt(
                    out.assumingMemoryBound(to: UInt8.self), nil, nil, sb.assumingMemoryBound(to: UInt8.self), UInt64(sealed.count),
                    ad.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(placeholder), UInt64(ad.count),
                    nonce.assumingMemoryBound(to: UInt8.self), kb.assumingMemoryBound(to: UInt8.self))
            }
        }
    }

    // MARK: Check value

    /// The label sealed as the store's check value.
    private static let checkText = Array("coords-store-check/1".utf8)

    /// The check value written into a new sealed store's metadata (sealed under its own subkey).
    func makeCheckValue() throws -> [UInt8] {
        try Self.checkText.withUnsafeBytes { text in
            try seal(table: Database.metadataTable, storedKey: UnsafeRawBufferPointer(start: nil, count: 0), plaintext: text, shred: nil, key: checkKey) {
                Array($0)
            }
        }
    }

    /// Whether `stored` is this DEK's check value.
    func verifyCheckValue(_ stored: UnsafeRawBufferPointer) -> Bool {
        // Any failure to open is the answer: not this DEK's check value (wrongStoreKey upstream).
        let matches = try? open(table: Database.metadataTable, storedKey: UnsafeRawBufferPointer(start: nil, count: 0), stored: stored, key: checkKey) {
            plain, _ in plain.elementsEqual(Self.checkText)
        }
        return matches ?? false
    }
}
