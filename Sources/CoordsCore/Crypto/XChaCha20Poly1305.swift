internal import CSodium

/// XChaCha20-Poly1305-IETF through libsodium (`crypto_aead_xchacha20poly1305_ietf_*`): a 32-byte
/// key, a 24-byte nonce, ciphertext ‖ 16-byte tag. Runs on every CPU (unlike ``AES256GCM``).
/// Used for attachment chunks (PROTOCOL.md §12.2); the store seals its values with the same
/// primitive in its own code (StoreSealing).
public enum XChaCha20Poly1305 {
    /// Key size in bytes (`crypto_aead_xchacha20poly1305_ietf_keybytes()`, 32).
    public static let keyByteCount = 32
    /// Nonce size in bytes (`crypto_aead_xchacha20poly1305_ietf_npubbytes()`, 24).
    public static let nonceByteCount = 24
    /// Tag size in bytes (`crypto_aead_xchacha20poly1305_ietf_abytes()`, 16).
    public static let tagByteCount = 16

    /// Whether the constants above are what this libsodium reports.
    static var sizesMatchLibsodium: Bool {
        keyByteCount == Int(crypto_aead_xchacha20poly1305_ietf_keybytes())
            && nonceByteCount == Int(crypto_aead_xchacha20poly1305_ietf_npubbytes())
            && tagByteCount == Int(crypto_aead_xchacha20poly1305_ietf_abytes())
    }

    /// Seals `plaintext` and appends ciphertext ‖ tag (`plaintext.count + 16` bytes) to `out`.
    /// - Parameters:
    ///   - plaintext: read during the call only (may be empty).
    ///   - key: 32 bytes.
    ///   - nonce: 24 bytes, unique for this key.
    ///   - associatedData: authenticated, not encrypted (may be empty).
    ///   - out: grows by `plaintext.count + 16` bytes; the caller owns it.
    /// - Throws: ``CryptoError/invalidKeyLength(what:expected:actual:)``,
    ///   ``CryptoError/invalidNonceLength(expected:actual:)``.
    public static func seal(
        _ plaintext: UnsafeRawBufferPointer, key: SecretBytes, nonce: [UInt8], associatedData: [UInt8], appendingTo out: inout [UInt8]
    ) throws {
        try CryptoError.checkKeyLength("XChaCha20-Poly1305 key", expected: keyByteCount, actual: key.count)
        guard nonce.count == nonceByteCount else { throw CryptoError.invalidNonceLength(expected: nonceByteCount, actual: nonce.count) }
        let start = out.count
        let count = plaintext.count + tagByteCount
        out.appendZeros(count)
        out.withUnsafeMutableBytes { buffer in
            let target = UnsafeMutableRawBufferPointer(rebasing: buffer[start..<(start + count)])
            key.withUnsafeBytes { k in
                nonce.withUnsafeBytes { n in
                    associatedData.withUnsafeBytes { ad in
                        _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                            target.u8, nil, plaintext.u8, UInt64(plaintext.count), ad.u8, UInt64(ad.count), nil, n.u8, k.u8)
                    }
                }
            }
        }
    }

    /// Opens `sealed` (ciphertext ‖ tag) and appends the plaintext (`sealed.count - 16` bytes)
    /// to `out`; on any failure `out` is left as it was.
    /// - Throws: ``CryptoError/authenticationFailed`` (a changed bit anywhere, the wrong key,
    ///   nonce or associated data), ``CryptoError/ciphertextTooShort(minimum:actual:)``, and the
    ///   key and nonce errors of ``seal(_:key:nonce:associatedData:appendingTo:)``.
    public static func open(
        _ sealed: UnsafeRawBufferPointer, key: SecretBytes, nonce: [UInt8], associatedData: [UInt8], appendingTo out: inout [UInt8]
    ) throws {
        try CryptoError.checkKeyLength("XChaCha20-Poly1305 key", expected: keyByteCount, actual: key.count)
        guard nonce.count == nonceByteCount else { throw CryptoError.invalidNonceLength(expected: nonceByteCount, actual: nonce.count) }
        guard sealed.count >= tagByteCount else { throw CryptoError.ciphertextTooShort(minimum: tagByteCount, actual: sealed.count) }
        let start = out.count
        let count = sealed.count - tagByteCount
        out.appendZeros(count)
        let ok = out.withUnsafeMutableBytes { buffer in
            let target = UnsafeMutableRawBufferPointer(rebasing: buffer[start..<(start + count)])
            return key.withUnsafeBytes { k in
                nonce.withUnsafeBytes { n in
                    associatedData.withUnsafeBytes { ad in
                        crypto_aead_xchacha20poly1305_ietf_decrypt(
                            target.u8, nil, nil, sealed.u8, UInt64(sealed.count), ad.u8, UInt64(ad.count), n.u8, k.u8) == 0
                    }
                }
            }
        }
        guard ok else {
            out.removeSubrange(start...)
            throw CryptoError.authenticationFailed
        }
    }
}
