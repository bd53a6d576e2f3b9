internal import CSodium
import Synchronization

/// Where the crypto layer gets its randomness.
///
/// Every function that needs randomness takes a `RandomSource` (defaulting to
/// ``SystemRandomSource``), so tests can reproduce known-answer vectors byte for byte with
/// ``ReplayRandomSource`` or get repeatable runs with ``SeededRandomSource``.
public protocol RandomSource: Sendable {
    /// Fills every byte of `buffer` with random bytes.
    /// - Throws: ``CryptoError/randomSourceMismatch(_:)`` from sources that replay fixed bytes;
    ///   the system source never throws.
    func fill(_ buffer: UnsafeMutableRawBufferPointer) throws
}

extension RandomSource {
    /// Returns `count` random bytes as an array (for non-secret values such as nonces).
    public func bytes(_ count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: max(count, 0))
        try out.withUnsafeMutableBytes { buffer in try fill(buffer) }
        return out
    }
}

/// The operating system's CSPRNG through libsodium's `randombytes_buf`. Use this in production.
public struct SystemRandomSource: RandomSource {
    /// Creates the system source (stateless).
    public init() {}

    /// Fills `buffer` from `randombytes_buf` (getrandom(2) on Linux). Never throws.
    @inline(__always)
    public func fill(_ buffer: UnsafeMutableRawBufferPointer) throws {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        try Sodium.ensureInitialized()
        randombytes_buf(base, buffer.count)
    }
}

/// A deterministic source for tests: a ChaCha20 (IETF) keystream keyed by a 32-byte seed.
///
/// Call *n* is answered with the keystream for nonce *n* (little-endian counter), so the same
/// seed and the same sequence of requests give the same bytes on every machine. Never use it
/// for real keys.
public final class SeededRandomSource: RandomSource {
    private let seed: SecretBytes
    private let counter = Mutex<UInt64>(0)

    /// Creates a source from a 32-byte seed.
    /// - Throws: ``CryptoError/invalidKeyLength(what:expected:actual:)`` if `seed` is not 32 bytes.
    public init(seed: [UInt8]) throws {
        let keyBytes = Int(crypto_stream_chacha20_ietf_keybytes())
        try CryptoError.checkKeyLength("random seed", expected: keyBytes, actual: seed.count)
        self.seed = SecretBytes(copying: seed)
    }

    /// Creates a source whose seed is the 8-byte little-endian value of `seed`, zero-padded.
    public convenience init(seed: UInt64) {
        var bytes = [UInt8](repeating: 0, count: 32)
        for i in 0..<8 { bytes[i] = UInt8(truncatingIfNeeded: seed >> (8 * UInt64(i))) }
        // 32 bytes by construction, so the throwing initialiser cannot fail; fall back to zeros.
        self.init(validatedSeed: SecretBytes(copying: bytes))
    }

    private init(validatedSeed: SecretBytes) { seed = validatedSeed }

    /// Fills `buffer` with the next block of the keystream. Never throws.
    public func fill(_ buffer: UnsafeMutableRawBufferPointer) throws {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        try Sodium.ensureInitialized()
        let call = counter.withLock { value -> UInt64 in
            defer { value &+= 1 }
            return value
        }
        var nonce = [UInt8](repeating: 0, count: Int(crypto_stream_chacha20_ietf_noncebytes()))
        for i in 0..<8 { nonce[i] = UInt8(truncatingIfNeeded: call >> (8 * UInt64(i))) }
        seed.withUnsafeBytes { key in
            _ = crypto_stream_chacha20_ietf(
                base.assumingMemoryBound(to: UInt8.self), UInt64(buffer.count),
                nonce, key.u8)
        }
    }
}

/// Replays fixed byte strings, one per request, to reproduce known-answer vectors exactly.
///
/// Request *n* must ask for exactly as many bytes as chunk *n* holds; a different size or a
/// request after the last chunk throws ``CryptoError/randomSourceMismatch(_:)``, so a test
/// notices when an implementation draws its randomness in another order.
public final class ReplayRandomSource: RandomSource {
    private let state: Mutex<(chunks: [[UInt8]], next: Int)>

    /// Creates a source that will answer requests with `chunks`, in order.
    public init(_ chunks: [[UInt8]]) {
        state = Mutex((chunks, 0))
    }

    /// True when every chunk has been handed out.
    public var isExhausted: Bool {
        state.withLock { $0.next == $0.chunks.count }
    }

    /// Copies the next chunk into `buffer`.
    /// - Throws: ``CryptoError/randomSourceMismatch(_:)`` when no chunk is left or its size
    ///   differs from `buffer.count`.
    public func fill(_ buffer: UnsafeMutableRawBufferPointer) throws {
        let chunk: [UInt8] = try state.withLock { s in
            guard s.next < s.chunks.count else {
                throw CryptoError.randomSourceMismatch("request \(s.next + 1) for \(buffer.count) bytes, but only \(s.chunks.count) chunks were scripted")
            }
            let chunk = s.chunks[s.next]
            guard chunk.count == buffer.count else {
                throw CryptoError.randomSourceMismatch("request \(s.next + 1) asked for \(buffer.count) bytes, the scripted chunk has \(chunk.count)")
            }
            s.next += 1
            return chunk
        }
        chunk.withUnsafeBytes { buffer.copyMemory(from: $0) }
    }
}
