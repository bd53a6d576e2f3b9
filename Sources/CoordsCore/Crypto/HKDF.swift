internal import CSodium

/// HKDF with HMAC-SHA256 (RFC 5869), built on libsodium's `crypto_auth_hmacsha256_*`.
///
/// libsodium 1.0.18 (Debian 12) has no HKDF API of its own; extract and expand are the two
/// HMAC loops of the RFC, and every intermediate value lives in wiped memory.
public enum HKDF {
    /// HMAC-SHA256 output size (32).
    public static var hashByteCount: Int { Int(crypto_auth_hmacsha256_bytes()) }
    /// The most bytes one derivation can produce (255 × 32 = 8160).
    public static var maximumOutputByteCount: Int { 255 * hashByteCount }

    /// Derives `outputByteCount` bytes from `inputKeyMaterial`.
    /// - Parameters:
    ///   - inputKeyMaterial: the secret input (IKM).
    ///   - salt: optional salt; empty means "no salt" (HMAC treats it as 32 zero bytes).
    ///   - info: context and application-specific information.
    ///   - outputByteCount: 1…8160.
    /// - Returns: the output keying material (OKM) in wiped memory.
    /// - Throws: ``CryptoError/invalidParameter(_:)`` when `outputByteCount` is out of range.
    public static func deriveKey(
        inputKeyMaterial: SecretBytes, salt: [UInt8] = [], info: [UInt8] = [],
        outputByteCount: Int
    ) throws -> SecretBytes {
        try inputKeyMaterial.withUnsafeBytes { ikm in
            try deriveKey(ikm: ikm, salt: salt, info: info, outputByteCount: outputByteCount)
        }
    }

    /// Convenience for non-secret or test inputs; see ``deriveKey(inputKeyMaterial:salt:info:outputByteCount:)-(SecretBytes,_,_,_)``.
    public static func deriveKey(
        inputKeyMaterial: [UInt8], salt: [UInt8] = [], info: [UInt8] = [],
        outputByteCount: Int
    ) throws -> SecretBytes {
        try inputKeyMaterial.withUnsafeBytes { ikm in
            try deriveKey(ikm: ikm, salt: salt, info: info, outputByteCount: outputByteCount)
        }
    }

    static func deriveKey(
        ikm: UnsafeRawBufferPointer, salt: [UInt8], info: [UInt8],
        outputByteCount: Int
    ) throws -> SecretBytes {
        guard outputByteCount >= 1, outputByteCount <= maximumOutputByteCount else {
            throw CryptoError.invalidParameter("HKDF output length must be 1…\(maximumOutputByteCount) bytes, got \(outputByteCount)")
        }
        try Sodium.ensureInitialized()
        let hashLength = hashByteCount
        // Extract: PRK = HMAC(salt, IKM).
        let prk = SecretBytes(count: hashLength) { prkOut in
            salt.withUnsafeBytes { s in hmac(key: s, parts: [ikm], into: prkOut) }
        }
        // Expand: T(i) = HMAC(PRK, T(i-1) ‖ info ‖ i), OKM = first L bytes of T(1) ‖ T(2) ‖ …
        return SecretBytes(count: outputByteCount) { okm in
            prk.withUnsafeBytes { prkBytes in
                info.withUnsafeBytes { infoBytes in
                    let block = SecretBytes(count: hashLength) { _ in }
                    block.withUnsafeBytes { previous in
                        let previousMutable = UnsafeMutableRawBufferPointer(mutating: previous)
                        var written = 0
                        var counter: UInt8 = 1
                        while written < outputByteCount {
                            let isFirstBlock = counter == 1
                            withUnsafeBytes(of: counter) { counterBytes in
                                let prefix = isFirstBlock ? UnsafeRawBufferPointer(start: nil, count: 0) : previous
                                hmac(key: prkBytes, parts: [prefix, infoBytes, counterBytes], into: previousMutable)
                            }
                            let take = min(hashLength, outputByteCount - written)
                            if let dst = okm.baseAddress, let src = previous.baseAddress {
                                (dst + written).copyMemory(from: src, byteCount: take)
                            }
                            written += take
                            counter &+= 1
                        }
                    }
                }
            }
        }
    }

    /// HMAC-SHA256 of the concatenation of `parts` under `key`, written to `out` (32 bytes).
    private static func hmac(key: UnsafeRawBufferPointer, parts: [UnsafeRawBufferPointer], into out: UnsafeMutableRawBufferPointer) {
        var state = crypto_auth_hmacsha256_state()
        defer { withUnsafeMutableBytes(of: &state) { sodium_memzero($0.u8, $0.count) } }
        _ = crypto_auth_hmacsha256_init(&state, key.u8, key.count)
        for part in parts where part.count > 0 {
            _ = crypto_auth_hmacsha256_update(&state, part.u8, UInt64(part.count))
        }
        _ = crypto_auth_hmacsha256_final(&state, out.u8)
    }
}
