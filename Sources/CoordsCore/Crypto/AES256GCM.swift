internal import CSodium

/// AES-256-GCM through libsodium (`crypto_aead_aes256gcm_*`), with explicit 12-byte nonces.
///
/// Output is ciphertext ‖ 16-byte tag, the layout Coords uses everywhere. libsodium implements
/// AES-GCM only with AES-NI and CLMUL; on a CPU without them every call throws
/// ``CryptoError/unsupportedHardware`` (check ``isAvailable`` up front for a friendlier message).
///
/// Nonces must never repeat under one key; Coords draws a fresh random nonce per call.
public enum AES256GCM {
    // The sizes are constants of the algorithm, so every call compares against a literal instead
    // of asking libsodium each time (at 20 bytes those calls were a measurable share of a seal);
    // ``sizesMatchLibsodium`` (checked by the tests) ties them to libsodium's own functions.

    /// Key size in bytes (`crypto_aead_aes256gcm_keybytes()`, 32).
    public static let keyByteCount = 32
    /// Nonce size in bytes (`crypto_aead_aes256gcm_npubbytes()`, 12).
    public static let nonceByteCount = 12
    /// Tag size in bytes (`crypto_aead_aes256gcm_abytes()`, 16).
    public static let tagByteCount = 16
    /// The largest plaintext libsodium accepts (`crypto_aead_aes256gcm_messagebytes_max()`:
    /// 16 × (2³² − 2) bytes, the GCM counter's limit).
    public static let maximumPlaintextByteCount = 16 * (1 << 32 - 2)

    /// Whether the constants above are what this libsodium reports.
    static var sizesMatchLibsodium: Bool {
        keyByteCount == Int(crypto_aead_aes256gcm_keybytes()) && nonceByteCount == Int(crypto_aead_aes256gcm_npubbytes())
            && tagByteCount == Int(crypto_aead_aes256gcm_abytes())
            && maximumPlaintextByteCount == Int(clamping: UInt64(crypto_aead_aes256gcm_messagebytes_max()))
    }

    /// Whether this CPU can run AES-256-GCM (AES-NI and CLMUL present).
    public static var isAvailable: Bool { Sodium.isAESAvailable }

    /// A 12-byte nonce, checked once when it is made; never reuse one under the same key.
    public struct Nonce: Sendable, Equatable {
        /// The 12 bytes.
        public let bytes: [UInt8]

        /// Wraps `bytes`.
        /// - Throws: ``CryptoError/invalidNonceLength(expected:actual:)`` unless it is 12 bytes.
        public init(_ bytes: [UInt8]) throws {
            guard bytes.count == AES256GCM.nonceByteCount else {
                throw CryptoError.invalidNonceLength(expected: AES256GCM.nonceByteCount, actual: bytes.count)
            }
            self.bytes = bytes
        }

        /// A fresh random nonce (what Coords uses for every seal).
        /// - Throws: ``CryptoError`` from the random source.
        public static func random(using random: any RandomSource = SystemRandomSource()) throws -> Nonce {
            try Nonce(try random.bytes(AES256GCM.nonceByteCount))
        }
    }

    /// Encrypts and authenticates `plaintext`: an array, or ``SecretBytes`` for secrets (never
    /// copied into memory that is not wiped).
    /// - Parameters:
    ///   - plaintext: the bytes to encrypt (may be empty).
    ///   - key: a 32-byte key.
    ///   - nonce: unique for this key.
    ///   - associatedData: authenticated but not encrypted (may be empty).
    /// - Returns: ciphertext ‖ tag (`plaintext.count + 16` bytes).
    /// - Throws: ``CryptoError/invalidKeyLength(what:expected:actual:)``, ``CryptoError/invalidParameter(_:)``
    ///   (plaintext too long), ``CryptoError/unsupportedHardware``.
    ///
    /// Inlinable so it specialises for the plaintext's type in the caller: a generic call through
    /// the protocol cost about 70 instructions, a third of a 20-byte seal's overhead.
    @inlinable
    public static func seal(_ plaintext: some AEADPlaintext, key: SecretBytes, nonce: Nonce, associatedData: [UInt8] = []) throws -> [UInt8] {
        try plaintext.withPlaintextBytes { try seal(bytes: $0, key: key, nonce: nonce.bytes, associatedData: associatedData) }
    }

    /// Verifies and decrypts `sealed` (ciphertext ‖ tag).
    /// - Returns: the plaintext (`sealed.count - 16` bytes).
    /// - Throws: ``CryptoError/authenticationFailed`` when the tag does not verify (any changed
    ///   bit in ciphertext, tag, nonce or associated data, or the wrong key);
    ///   ``CryptoError/ciphertextTooShort(minimum:actual:)``; the key and hardware errors of ``seal(_:key:nonce:associatedData:)``.
    public static func open(_ sealed: [UInt8], key: SecretBytes, nonce: Nonce, associatedData: [UInt8] = []) throws -> [UInt8] {
        var out: [UInt8] = []
        try open(sealed, key: key, nonce: nonce.bytes, associatedData: associatedData) { count, fill in
            out = [UInt8](repeating: 0, count: count)
            return out.withUnsafeMutableBytes { fill($0) }
        }
        return out
    }

    /// Opens into wiped memory, for plaintexts that are secrets. Same errors as
    /// ``open(_:key:nonce:associatedData:)``.
    public static func openSecret(_ sealed: [UInt8], key: SecretBytes, nonce: Nonce, associatedData: [UInt8] = []) throws -> SecretBytes {
        var plaintext = SecretBytes(count: 0) { _ in }
        try open(sealed, key: key, nonce: nonce.bytes, associatedData: associatedData) { count, fill in
            var ok = false
            plaintext = SecretBytes(count: count) { ok = fill($0) }
            return ok
        }
        return plaintext
    }

    /// The checked seal behind the public variants. The output is not zeroed first: libsodium
    /// writes every one of its `plaintext.count + 16` bytes (the arguments are checked above).
    @usableFromInline
    static func seal(bytes plaintext: UnsafeRawBufferPointer, key: SecretBytes, nonce: [UInt8], associatedData: [UInt8]) throws -> [UInt8] {
        try checkArguments(keyCount: key.count, nonceCount: nonce.count, plaintextCount: plaintext.count)
        let count = plaintext.count + tagByteCount
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            key.withUnsafeBytes { k in
                nonce.withUnsafeBytes { n in
                    associatedData.withUnsafeBytes { ad in
                        sealRaw(plaintext, key: k, nonce: n, associatedData: ad, into: UnsafeMutableRawBufferPointer(buffer))
                    }
                }
            }
            initialized = count
        }
    }

    /// The checked open behind the public variants: `output` gets the plaintext length and a
    /// function that decrypts into a buffer of that length (returning whether the tag verified),
    /// so each caller chooses where the plaintext lives.
    static func open(
        _ sealed: [UInt8], key: SecretBytes, nonce: [UInt8], associatedData: [UInt8],
        output: (Int, (UnsafeMutableRawBufferPointer) -> Bool) -> Bool
    ) throws {
        try checkArguments(keyCount: key.count, nonceCount: nonce.count, plaintextCount: 0)
        guard sealed.count >= tagByteCount else { throw CryptoError.ciphertextTooShort(minimum: tagByteCount, actual: sealed.count) }
        let ok = key.withUnsafeBytes { k in
            sealed.withUnsafeBytes { c in
                nonce.withUnsafeBytes { n in
                    associatedData.withUnsafeBytes { ad in
                        output(sealed.count - tagByteCount) { m in openRaw(c, key: k, nonce: n, associatedData: ad, into: m) }
                    }
                }
            }
        }
        guard ok else { throw CryptoError.authenticationFailed }
    }

    static func checkArguments(keyCount: Int, nonceCount: Int, plaintextCount: Int) throws {
        try Sodium.ensureAESAvailable()
        try CryptoError.checkKeyLength("AES-256-GCM key", expected: keyByteCount, actual: keyCount)
        guard nonceCount == nonceByteCount else { throw CryptoError.invalidNonceLength(expected: nonceByteCount, actual: nonceCount) }
        guard plaintextCount <= maximumPlaintextByteCount else {
            throw CryptoError.invalidParameter("plaintext of \(plaintextCount) bytes exceeds the AES-256-GCM limit")
        }
    }

    /// Unchecked one-shot seal: the caller guarantees a 32-byte key, a 12-byte nonce, AES
    /// availability and `plaintext.count + 16` writable bytes in `out`.
    @inline(__always)
    static func sealRaw(
        _ plaintext: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer,
        associatedData: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer
    ) {
        _ = crypto_aead_aes256gcm_encrypt(
            out.u8, nil, plaintext.u8, UInt64(plaintext.count),
            associatedData.u8, UInt64(associatedData.count), nil, nonce.u8, key.u8)
    }

    /// Unchecked one-shot open: `sealed.count >= 16`, `sealed.count - 16` writable bytes in `out`.
    /// - Returns: whether the tag verified (on failure `out` holds no plaintext).
    @inline(__always)
    static func openRaw(
        _ sealed: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer,
        associatedData: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer
    ) -> Bool {
        crypto_aead_aes256gcm_decrypt(
            out.u8, nil, nil, sealed.u8, UInt64(sealed.count),
            associatedData.u8, UInt64(associatedData.count), nonce.u8, key.u8) == 0
    }

    /// A key expanded once (libsodium `beforenm`) for many seal/open calls (`afternm`).
    ///
    /// Use it when one key protects many messages, or when one key is tried against many
    /// ciphertexts. The expanded state is secret and wiped on deinit; it is read-only after
    /// creation, so one instance may be used from several threads at once.
    public final class PrecomputedKey: @unchecked Sendable {
        private let state: UnsafeMutableRawPointer
        private let stateByteCount: Int

        /// Expands `key`.
        /// - Throws: ``CryptoError/invalidKeyLength(what:expected:actual:)``, ``CryptoError/unsupportedHardware``.
        public init(key: SecretBytes) throws {
            try Sodium.ensureAESAvailable()
            try CryptoError.checkKeyLength("AES-256-GCM key", expected: AES256GCM.keyByteCount, actual: key.count)
            stateByteCount = crypto_aead_aes256gcm_statebytes()
            state = UnsafeMutableRawPointer.allocate(byteCount: stateByteCount, alignment: 16)
            state.initializeMemory(as: UInt8.self, repeating: 0, count: stateByteCount)
            key.withUnsafeBytes { k in
                _ = crypto_aead_aes256gcm_beforenm(statePointer, k.u8)
            }
        }

        /// Creates the expanded key directly from raw key bytes (internal hot paths).
        init(unsafeKey key: UnsafeRawPointer) {
            stateByteCount = crypto_aead_aes256gcm_statebytes()
            state = UnsafeMutableRawPointer.allocate(byteCount: stateByteCount, alignment: 16)
            state.initializeMemory(as: UInt8.self, repeating: 0, count: stateByteCount)
            _ = crypto_aead_aes256gcm_beforenm(statePointer, key.assumingMemoryBound(to: UInt8.self))
        }

        deinit {
            sodium_memzero(state, stateByteCount)
            state.deallocate()
        }

        /// Same as ``AES256GCM/seal(_:key:nonce:associatedData:)`` with this key.
        public func seal(_ plaintext: [UInt8], nonce: Nonce, associatedData: [UInt8] = []) throws -> [UInt8] {
            try AES256GCM.checkArguments(keyCount: AES256GCM.keyByteCount, nonceCount: nonce.bytes.count, plaintextCount: plaintext.count)
            var out = [UInt8](repeating: 0, count: plaintext.count + AES256GCM.tagByteCount)
            plaintext.withUnsafeBytes { m in
                nonce.bytes.withUnsafeBytes { n in
                    associatedData.withUnsafeBytes { ad in
                        out.withUnsafeMutableBytes { c in sealRaw(m, nonce: n, associatedData: ad, into: c) }
                    }
                }
            }
            return out
        }

        /// Same as ``AES256GCM/open(_:key:nonce:associatedData:)`` with this key.
        public func open(_ sealed: [UInt8], nonce: Nonce, associatedData: [UInt8] = []) throws -> [UInt8] {
            try AES256GCM.checkArguments(keyCount: AES256GCM.keyByteCount, nonceCount: nonce.bytes.count, plaintextCount: 0)
            guard sealed.count >= AES256GCM.tagByteCount else {
                throw CryptoError.ciphertextTooShort(minimum: AES256GCM.tagByteCount, actual: sealed.count)
            }
            var out = [UInt8](repeating: 0, count: sealed.count - AES256GCM.tagByteCount)
            let ok = sealed.withUnsafeBytes { c in
                nonce.bytes.withUnsafeBytes { n in
                    associatedData.withUnsafeBytes { ad in
                        out.withUnsafeMutableBytes { m in openRaw(c, nonce: n, associatedData: ad, into: m) }
                    }
                }
            }
            guard ok else { throw CryptoError.authenticationFailed }
            return out
        }

        private var statePointer: UnsafeMutablePointer<crypto_aead_aes256gcm_state> {
            state.assumingMemoryBound(to: crypto_aead_aes256gcm_state.self)
        }

        /// Unchecked seal with this key (see ``AES256GCM/sealRaw(_:key:nonce:associatedData:into:)``).
        @inline(__always)
        func sealRaw(
            _ plaintext: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, associatedData: UnsafeRawBufferPointer,
            into out: UnsafeMutableRawBufferPointer
        ) {
            _ = crypto_aead_aes256gcm_encrypt_afternm(
                out.u8, nil, plaintext.u8, UInt64(plaintext.count),
                associatedData.u8, UInt64(associatedData.count), nil, nonce.u8, statePointer)
        }

        /// Unchecked open with this key (see ``AES256GCM/openRaw(_:key:nonce:associatedData:into:)``).
        @inline(__always)
        func openRaw(
            _ sealed: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, associatedData: UnsafeRawBufferPointer,
            into out: UnsafeMutableRawBufferPointer
        ) -> Bool {
            crypto_aead_aes256gcm_decrypt_afternm(
                out.u8, nil, nil, sealed.u8, UInt64(sealed.count),
                associatedData.u8, UInt64(associatedData.count), nonce.u8, statePointer) == 0
        }
    }
}

/// What ``AES256GCM/seal(_:key:nonce:associatedData:)`` can encrypt: `[UInt8]`, or
/// ``SecretBytes`` for secrets.
public protocol AEADPlaintext {
    /// Calls `body` with the plaintext's bytes.
    func withPlaintextBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R
}

extension Array: AEADPlaintext where Element == UInt8 {
    @inlinable
    public func withPlaintextBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R { try withUnsafeBytes(body) }
}

extension SecretBytes: AEADPlaintext {
    public func withPlaintextBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try withUnsafeBytes { (buffer) throws -> R in try body(buffer) }
    }
}
