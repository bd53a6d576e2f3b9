internal import CSodium

/// A one-shot hash function from libsodium (swift-crypto's `HashFunction`, without the streaming
/// part we do not need). Pure computation: never throws, never traps.
public protocol SodiumHashFunction {
    /// Digest size in bytes.
    static var byteCount: Int { get }
    /// The digest of the bytes `data` points to, as a new `[UInt8]` of ``byteCount`` bytes
    /// (the caller owns it; `data` is only read during the call).
    static func hash(_ data: UnsafeRawBufferPointer) -> [UInt8]
}

extension SodiumHashFunction {
    /// The digest of `data`, as a new `[UInt8]` of ``byteCount`` bytes.
    public static func hash(_ data: [UInt8]) -> [UInt8] {
        data.withUnsafeBytes { hash($0) }
    }

    /// Runs libsodium's one-shot `crypto_hash_*` function into a new digest buffer. Its status
    /// is always 0 (the functions cannot fail), so it is not read.
    static func digest(
        _ data: UnsafeRawBufferPointer, _ function: (UnsafeMutablePointer<UInt8>, UnsafePointer<UInt8>?, UInt64) -> Int32
    ) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: byteCount)
        _ = function(&out, data.u8, UInt64(data.count))
        return out
    }
}

/// SHA-256 (libsodium `crypto_hash_sha256`).
public enum SHA256: SodiumHashFunction {
    /// Digest size in bytes (32).
    public static var byteCount: Int { Int(crypto_hash_sha256_bytes()) }
    /// The SHA-256 digest of the bytes `data` points to.
    public static func hash(_ data: UnsafeRawBufferPointer) -> [UInt8] { digest(data, crypto_hash_sha256) }
}

/// SHA-512 (libsodium `crypto_hash_sha512`).
public enum SHA512: SodiumHashFunction {
    /// Digest size in bytes (64).
    public static var byteCount: Int { Int(crypto_hash_sha512_bytes()) }
    /// The SHA-512 digest of the bytes `data` points to.
    public static func hash(_ data: UnsafeRawBufferPointer) -> [UInt8] { digest(data, crypto_hash_sha512) }
}

/// SHA-256 over bytes that arrive in pieces (libsodium `crypto_hash_sha256_init/update/final`):
/// the digest of a file or an object that is never in memory whole. A value type; copying one
/// forks the computation. Never throws, never traps.
public struct SHA256Stream: Sendable {
    private var state = crypto_hash_sha256_state()

    /// A computation over no bytes yet.
    public init() {
        _ = crypto_hash_sha256_init(&state)
    }

    /// Adds the bytes `data` points to (only read during the call).
    public mutating func update(_ data: UnsafeRawBufferPointer) {
        _ = crypto_hash_sha256_update(&state, data.u8, UInt64(data.count))
    }

    /// Adds `data`.
    public mutating func update(_ data: [UInt8]) {
        data.withUnsafeBytes { update($0) }
    }

    /// The digest of every byte added (32 bytes, a new array the caller owns). The stream can
    /// still be updated afterwards only as a copy taken before: this one is spent.
    public mutating func finish() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        _ = crypto_hash_sha256_final(&state, &out)
        return out
    }
}
