internal import CSodium

/// Argon2id password hashing (libsodium `crypto_pwhash` with `ALG_ARGON2ID13`), used to turn a
/// passphrase into a key for backups and the file keychain.
public enum Argon2id {
    /// Cost parameters. Both are stored next to anything encrypted with the derived key, so a
    /// later release can raise the defaults and still open old data.
    public struct Parameters: Sendable, Hashable, Codable {
        /// Number of passes (libsodium `opslimit`).
        public var opsLimit: UInt64
        /// Memory in bytes (libsodium `memlimit`).
        public var memLimitBytes: UInt64

        /// Creates parameters; they are validated when used.
        public init(opsLimit: UInt64, memLimitBytes: UInt64) {
            self.opsLimit = opsLimit
            self.memLimitBytes = memLimitBytes
        }

        /// Checks the limits: opsLimit 1…64 and memLimit 8 KiB…4 GiB.
        /// - Throws: ``CryptoError/invalidParameter(_:)`` naming the value out of range.
        public func validate() throws {
            let minimumOps = UInt64(crypto_pwhash_opslimit_min())
            guard opsLimit >= minimumOps, opsLimit <= Argon2id.maximumOpsLimit else {
                throw CryptoError.invalidParameter("Argon2id opsLimit must be \(minimumOps)…\(Argon2id.maximumOpsLimit), got \(opsLimit)")
            }
            let minimumMemory = UInt64(crypto_pwhash_memlimit_min())
            let maximumMemory = min(Argon2id.maximumMemLimitBytes, UInt64(crypto_pwhash_memlimit_max()))
            guard memLimitBytes >= minimumMemory, memLimitBytes <= maximumMemory else {
                throw CryptoError.invalidParameter("Argon2id memLimit must be \(minimumMemory)…\(maximumMemory) bytes, got \(memLimitBytes)")
            }
        }

        /// libsodium's interactive profile (2 passes, 64 MiB): about 0.1 s here.
        public static var interactive: Parameters {
            Parameters(
                opsLimit: UInt64(crypto_pwhash_opslimit_interactive()),
                memLimitBytes: UInt64(crypto_pwhash_memlimit_interactive()))
        }
        /// libsodium's moderate profile (3 passes, 256 MiB): the default for backups.
        public static var moderate: Parameters {
            Parameters(
                opsLimit: UInt64(crypto_pwhash_opslimit_moderate()),
                memLimitBytes: UInt64(crypto_pwhash_memlimit_moderate()))
        }
        /// The cheapest setting libsodium accepts (1 pass, 8 KiB). Tests only: it protects nothing.
        public static var minimum: Parameters {
            Parameters(opsLimit: 1, memLimitBytes: UInt64(crypto_pwhash_memlimit_min()))
        }
    }

    /// Salt size in bytes (`crypto_pwhash_saltbytes()`, 16).
    public static var saltByteCount: Int { Int(crypto_pwhash_saltbytes()) }
    /// The highest pass count we accept. libsodium would take 2³²−1, which never finishes;
    /// anything above this is treated as a mistake.
    public static let maximumOpsLimit: UInt64 = 64
    /// The largest memory limit we accept (4 GiB): above that a phone or a small server would
    /// fail or swap, so it is refused up front rather than attempted.
    public static let maximumMemLimitBytes: UInt64 = 4 << 30

    /// Derives `outputByteCount` bytes from `password` and `salt`.
    /// - Parameters:
    ///   - password: the passphrase bytes (UTF-8 for text).
    ///   - salt: exactly ``saltByteCount`` random bytes, stored with the ciphertext.
    ///   - outputByteCount: 16…4096 bytes.
    ///   - parameters: cost; opsLimit 1…64, memLimit 8 KiB…4 GiB.
    /// - Returns: the key, in wiped memory.
    /// - Throws: ``CryptoError/invalidParameter(_:)`` for a bad salt length, output length or
    ///   limits outside the ranges above; ``CryptoError/outOfMemory(_:)`` when libsodium cannot
    ///   allocate the memory limit.
    public static func deriveKey(
        password: [UInt8], salt: [UInt8], outputByteCount: Int = 32,
        parameters: Parameters
    ) throws -> SecretBytes {
        try Sodium.ensureInitialized()
        guard salt.count == saltByteCount else {
            throw CryptoError.invalidParameter("Argon2id salt must be \(saltByteCount) bytes, got \(salt.count)")
        }
        let minimumOutput = max(Int(crypto_pwhash_bytes_min()), 16)
        guard outputByteCount >= minimumOutput, outputByteCount <= 4096 else {
            throw CryptoError.invalidParameter("Argon2id output must be \(minimumOutput)…4096 bytes, got \(outputByteCount)")
        }
        try parameters.validate()
        guard UInt64(password.count) <= UInt64(crypto_pwhash_passwd_max()) else {
            throw CryptoError.invalidParameter("passphrase is too long (\(password.count) bytes)")
        }
        var status: Int32 = 0
        let key = SecretBytes(count: outputByteCount) { out in
            password.withUnsafeBytes { pw in
                salt.withUnsafeBytes { s in
                    let pwChars = UnsafeRawPointer(pw.u8).assumingMemoryBound(to: CChar.self)
                    status = crypto_pwhash(
                        out.u8, UInt64(out.count), pwChars, UInt64(pw.count), s.u8,
                        parameters.opsLimit, Int(parameters.memLimitBytes), crypto_pwhash_ALG_ARGON2ID13)
                }
            }
        }
        guard status == 0 else {
            throw CryptoError.outOfMemory("Argon2id could not allocate \(parameters.memLimitBytes) bytes")
        }
        return key
    }

    /// Convenience: derives a key from a text passphrase (its UTF-8 bytes).
    public static func deriveKey(
        passphrase: String, salt: [UInt8], outputByteCount: Int = 32,
        parameters: Parameters
    ) throws -> SecretBytes {
        try deriveKey(password: Array(passphrase.utf8), salt: salt, outputByteCount: outputByteCount, parameters: parameters)
    }
}
