import CPlatform
import Synchronization

/// Where the identity's private key lives. Hosts plug in their platform store (iOS Keychain,
/// Android Keystore through the C ABI callbacks); CoordsCore ships ``FileKeychain`` (sealed
/// file in the data directory) and ``MemoryKeychain``.
///
/// Implementations must be thread-safe. Secrets cross this boundary only as ``SecretBytes``.
public protocol Keychain: Sendable {
    /// Stores `secret` under `name`, replacing what was there.
    /// - Throws: ``KeychainError`` (or the host's own error).
    func save(_ secret: SecretBytes, name: String) throws
    /// The secret stored under `name`, or nil.
    /// - Throws: ``KeychainError``.
    func load(name: String) throws -> SecretBytes?
    /// Removes `name` (no error when absent).
    /// - Throws: ``KeychainError``.
    func delete(name: String) throws
}

/// Errors of keychains. Codes 650–659, stable.
public enum KeychainError: CoordsCoreError, Equatable {
    /// The passphrase (or host key) does not open the keychain file.
    case wrongPassphrase
    /// The keychain file is damaged or not a keychain.
    case corrupted(String)
    /// Reading or writing the file failed.
    case io(operation: String, errno: Int32)
    /// A name was empty or longer than 255 bytes.
    case invalidName(String)
    /// A host keychain (C ABI callback) reported a failure.
    case hostFailure(code: Int32, message: String)

    public var code: Int32 {
        switch self {
        case .wrongPassphrase: 650
        case .corrupted: 651
        case .io: 652
        case .invalidName: 653
        case .hostFailure: 654
        }
    }

    public var description: String {
        switch self {
        case .wrongPassphrase: "the passphrase does not unlock this keychain (or the host key is wrong)"
        case .corrupted(let why): "the keychain file is damaged: \(why); restore the identity from a backup"
        case .io(let operation, let errno): "keychain \(operation) failed: \(String(cString: strerror(errno)))"
        case .invalidName(let name): "keychain entry names must be 1…255 bytes, got \(name.utf8.count)"
        case .hostFailure(let code, let message): "the host keychain failed (\(code)): \(message)"
        }
    }
}

/// A keychain in memory only (tests, or hosts that persist the key themselves).
public final class MemoryKeychain: Keychain {
    private let entries = Mutex<[String: SecretBytes]>([:])
    /// An empty keychain.
    public init() {}
    public func save(_ secret: SecretBytes, name: String) throws { entries.withLock { $0[name] = secret } }
    public func load(name: String) throws -> SecretBytes? { entries.withLock { $0[name] } }
    public func delete(name: String) throws { _ = entries.withLock { $0.removeValue(forKey: name) } }
}

/// A keychain sealed in one file (mode 0600) with AES-256-GCM, under a key the host supplies or
/// one derived from a passphrase with Argon2id.
///
/// File layout (big-endian), the first 50 bytes authenticated as associated data:
/// ```
/// "CKC1" | version 1 | kdf (0 host key, 1 Argon2id) | opsLimit u64 | memLimit u64 | salt (16)
///        | nonce (12) | AES-256-GCM( count u32, count × [nameLen u16 | name | secretLen u32 | secret] )
/// ```
/// Every save rewrites the file atomically (temporary file, fsync, rename, fsync of the
/// directory) with a fresh nonce; a crash leaves the old or the new file, never a mix.
public final class FileKeychain: Keychain {
    /// How the file is unlocked.
    public enum Unlock: Sendable {
        /// A 32-byte key from the host (e.g. kept in the platform's secure storage).
        case key(SecretBytes)
        /// A passphrase, stretched with Argon2id (parameters stored in the file).
        case passphrase(String)
    }

    static let magic: [UInt8] = Array("CKC1".utf8)
    static let headerByteCount = 38
    static let associatedByteCount = 50

    /// The file path.
    public let path: String
    private let lock = PthreadMutex()
    private let header: [UInt8]  // the 38 bytes before the nonce
    private let key: SecretBytes

    /// Opens the keychain at `path`, creating an empty one (sealed under `unlock`) if absent.
    /// - Parameters:
    ///   - path: the keychain file (created 0600).
    ///   - unlock: the host key or passphrase that seals it.
    ///   - parameters: Argon2id cost for a *new* passphrase keychain (an existing file keeps the
    ///     parameters it was created with).
    ///   - random: draws the salt and nonces.
    /// - Throws: ``CryptoError/invalidParameter(_:)`` when `parameters` are out of range for a new file,
    ///   ``KeychainError/wrongPassphrase`` when `unlock` does not open an existing file,
    ///   ``KeychainError/corrupted(_:)``, ``KeychainError/io(operation:errno:)``, ``CryptoError``.
    public init(
        path: String, unlock: Unlock, parameters: Argon2id.Parameters = .interactive,
        random: any RandomSource = SystemRandomSource()
    ) throws {
        self.path = path
        if let existing = try Self.readFile(path) {
            guard existing.count >= Self.associatedByteCount + AES256GCM.tagByteCount,
                Array(existing[0..<4]) == Self.magic
            else { throw KeychainError.corrupted("not a CoordsCore keychain file") }
            guard existing[4] == 1 else { throw KeychainError.corrupted("unsupported keychain version \(existing[4])") }
            header = Array(existing[0..<Self.headerByteCount])
            key = try Self.deriveKey(header: header, unlock: unlock)
            _ = try Self.open(existing, key: key)  // wrong passphrase shows up here, at open
        } else {
            if case .passphrase = unlock { try parameters.validate() }  // a bad cost is the caller's mistake, not damage
            var h = Self.magic + [1]
            let salt = try random.bytes(Argon2id.saltByteCount)
            switch unlock {
            case .key:
                h += [0] + [UInt8](repeating: 0, count: 16)
            case .passphrase:
                h += [1]
                h.appendBigEndian(parameters.opsLimit)
                h.appendBigEndian(parameters.memLimitBytes)
            }
            header = h + salt
            key = try Self.deriveKey(header: header, unlock: unlock)
            try write(entries: [:], random: random)
        }
    }

    public func save(_ secret: SecretBytes, name: String) throws {
        try Self.check(name)
        try lock.withLock {
            var entries = try readEntries()
            entries[name] = secret
            try write(entries: entries, random: SystemRandomSource())
        }
    }

    public func load(name: String) throws -> SecretBytes? {
        try Self.check(name)
        return try lock.withLock { try readEntries()[name] }
    }

    public func delete(name: String) throws {
        try Self.check(name)
        try lock.withLock {
            var entries = try readEntries()
            guard entries.removeValue(forKey: name) != nil else { return }
            try write(entries: entries, random: SystemRandomSource())
        }
    }

    // MARK: Format

    private static func check(_ name: String) throws {
        guard !name.isEmpty, name.utf8.count <= 255 else { throw KeychainError.invalidName(name) }
    }

    private static func deriveKey(header: [UInt8], unlock: Unlock) throws -> SecretBytes {
        let kdf = header[5]
        switch (unlock, kdf) {
        case (.key(let key), 0):
            try CryptoError.checkKeyLength("keychain key", expected: AES256GCM.keyByteCount, actual: key.count)
            return key
        case (.passphrase(let passphrase), 1):
            let parameters = Argon2id.Parameters(
                opsLimit: try ByteReader.bigEndian(UInt64.self, in: header, at: 6),
                memLimitBytes: try ByteReader.bigEndian(UInt64.self, in: header, at: 14))
            let salt = Array(header[22..<38])
            do {
                return try Argon2id.deriveKey(passphrase: passphrase, salt: salt, parameters: parameters)
            } catch let error as CryptoError {
                if case .invalidParameter = error { throw KeychainError.corrupted("stored Argon2id parameters are out of range") }
                throw error
            }
        case (.key, _): throw KeychainError.wrongPassphrase  // file is passphrase-sealed
        case (.passphrase, _): throw KeychainError.wrongPassphrase  // file is sealed with a host key
        }
    }

    /// Decrypts a whole file into its plaintext (wiped memory).
    private static func open(_ file: [UInt8], key: SecretBytes) throws -> SecretBytes {
        let aad = Array(file[0..<associatedByteCount])
        let nonce = try AES256GCM.Nonce(Array(file[headerByteCount..<associatedByteCount]))
        let sealed = Array(file[associatedByteCount...])
        do {
            return try AES256GCM.openSecret(sealed, key: key, nonce: nonce, associatedData: aad)
        } catch CryptoError.authenticationFailed {
            throw KeychainError.wrongPassphrase
        }
    }

    private func readEntries() throws -> [String: SecretBytes] {
        guard let file = try Self.readFile(path) else { throw KeychainError.corrupted("the keychain file disappeared") }
        guard file.count >= Self.associatedByteCount + AES256GCM.tagByteCount, Array(file[0..<Self.headerByteCount]) == header else {
            throw KeychainError.corrupted("the keychain file header changed")
        }
        let plaintext = try Self.open(file, key: key)
        return try plaintext.withUnsafeBytes { p in
            var reader = ByteReader(p)
            var entries: [String: SecretBytes] = [:]
            do {
                let count = try reader.read(UInt32.self)
                for _ in 0..<count {
                    let nameBytes = try reader.readBuffer(count: Int(try reader.read(UInt16.self)))
                    guard let name = String(validating: nameBytes, as: UTF8.self) else { throw KeychainError.corrupted("entry name is not UTF-8") }
                    // A view into the wiped plaintext, copied straight into wiped memory.
                    let secret = try reader.readBuffer(count: Int(try reader.read(UInt32.self)))
                    entries[name] = SecretBytes(count: secret.count) { $0.copyMemory(from: secret) }
                }
            } catch is ByteReaderError {
                throw KeychainError.corrupted("truncated entry table")
            }
            guard reader.isAtEnd else { throw KeychainError.corrupted("trailing bytes after the entry table") }
            return entries
        }
    }

    private func write(entries: [String: SecretBytes], random: any RandomSource) throws {
        let size = 4 + entries.reduce(0) { $0 + 2 + $1.key.utf8.count + 4 + $1.value.count }
        let plaintext = SecretBytes(count: size) { out in
            var offset = 0
            func put(_ value: Int, _ width: Int) {
                for i in 0..<width { out[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * (width - 1 - i))) }
                offset += width
            }
            put(entries.count, 4)
            for (name, secret) in entries.sorted(by: { $0.key < $1.key }) {
                put(name.utf8.count, 2)
                for byte in name.utf8 {
                    out[offset] = byte
                    offset += 1
                }
                put(secret.count, 4)
                secret.withUnsafeBytes { s in
                    UnsafeMutableRawBufferPointer(rebasing: out[offset..<offset + s.count]).copyMemory(from: s)
                }
                offset += secret.count
            }
        }
        let nonce = try AES256GCM.Nonce.random(using: random)
        let aad = header + nonce.bytes
        let sealed = try AES256GCM.seal(plaintext, key: key, nonce: nonce, associatedData: aad)
        try Self.writeFileAtomically(path, aad + sealed)
    }

    // MARK: Files

    static func readFile(_ path: String) throws -> [UInt8]? {
        do {
            return try Files.read(path, limit: 1 << 24)
        } catch {
            switch error {
            case .system(let operation, let code): throw KeychainError.io(operation: operation, errno: code)
            case .tooLarge: throw KeychainError.corrupted("file larger than 16 MiB")
            }
        }
    }

    /// Writes `bytes` to a temporary file (0600), fsyncs it, renames it over `path` and fsyncs
    /// the directory.
    static func writeFileAtomically(_ path: String, _ bytes: [UInt8]) throws {
        let temporary = path + ".tmp"
        let fd = coords_open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw KeychainError.io(operation: "create \(temporary)", errno: coords_errno()) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { coords_write(fd, $0.baseAddress?.advanced(by: written), bytes.count - written) }
            if n < 0 {
                if coords_errno() == EINTR { continue }
                let e = coords_errno()
                close(fd)
                throw KeychainError.io(operation: "write \(temporary)", errno: e)
            }
            written += n
        }
        guard coords_sync_file(fd) == 0 else {
            let e = coords_errno()
            close(fd)
            throw KeychainError.io(operation: "fsync \(temporary)", errno: e)
        }
        close(fd)
        guard rename(temporary, path) == 0 else { throw KeychainError.io(operation: "rename to \(path)", errno: coords_errno()) }
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let dirfd = coords_open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)
        if dirfd >= 0 {
            _ = fsync(dirfd)
            close(dirfd)
        }
    }
}
