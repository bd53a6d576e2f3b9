internal import CSodium

/// SHA-256 (libsodium `crypto_hash_sha256`). Pure computation: never throws, never traps.
public enum SHA256 {
    /// Digest size in bytes (32).
    public static var byteCount: Int { Int(crypto_hash_sha256_bytes()) }

    /// The SHA-256 digest of `data`.
    public static func hash(_ data: [UInt8]) -> [UInt8] {
        data.withUnsafeBytes { hash($0) }
    }

    /// Pointer form of ``hash(_:)-([UInt8])``.
    public static func hash(_ data: UnsafeRawBufferPointer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: byteCount)
        _ = crypto_hash_sha256(&out, data.u8, UInt64(data.count))
        return out
    }
}

/// SHA-512 (libsodium `crypto_hash_sha512`). Pure computation: never throws, never traps.
public enum SHA512 {
    /// Digest size in bytes (64).
    public static var byteCount: Int { Int(crypto_hash_sha512_bytes()) }

    /// The SHA-512 digest of `data`.
    public static func hash(_ data: [UInt8]) -> [UInt8] {
        data.withUnsafeBytes { hash($0) }
    }

    /// Pointer form of ``hash(_:)-([UInt8])``.
    public static func hash(_ data: UnsafeRawBufferPointer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: byteCount)
        _ = crypto_hash_sha512(&out, data.u8, UInt64(data.count))
        return out
    }
}
