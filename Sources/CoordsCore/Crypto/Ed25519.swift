internal import CSodium
import Synchronization

/// An Ed25519 public key: 32 bytes that decode to a valid point.
///
/// In Coords this key *is* the user's identity (its base64url form is the id in links, on the
/// relay and in fetch maps), and it doubles as an X25519 key (see ``X25519PublicKey/init(ed25519:)``).
public struct Ed25519PublicKey: Hashable, Sendable {
    /// The number of bytes in a public key (`crypto_sign_publickeybytes()`, 32).
    public static var byteCount: Int { Int(crypto_sign_publickeybytes()) }
    /// The number of bytes in a signature (`crypto_sign_bytes()`, 64).
    public static var signatureByteCount: Int { Int(crypto_sign_bytes()) }

    /// The 32 key bytes.
    public let rawRepresentation: [UInt8]

    /// Validates and wraps 32 public key bytes.
    /// - Parameter rawRepresentation: the encoded point.
    /// - Throws: ``CryptoError/invalidKeyLength(what:expected:actual:)`` for a length other than
    ///   32; ``CryptoError/invalidPublicKey`` when the bytes are not a canonical point of the
    ///   main subgroup (libsodium `crypto_core_ed25519_is_valid_point`), which also refuses the
    ///   small-order points no real key pair produces; ``CryptoError/libraryInitializationFailed``.
    ///
    /// The point check costs a scalar multiplication (about as much as a signature
    /// verification), and the same few keys come back all the time (every friend row read from
    /// the store, every id in a fetch answer), so keys that passed it are remembered
    /// (a bounded memo): a key seen before costs one hash lookup.
    public init(rawRepresentation: [UInt8]) throws {
        try CryptoError.checkKeyLength("Ed25519 public key", expected: Self.byteCount, actual: rawRepresentation.count)
        let memoKey = ValidKeyMemo.Key(rawRepresentation)
        if !ValidKeyMemo.shared.contains(memoKey) {
            try Sodium.ensureInitialized()
            guard crypto_core_ed25519_is_valid_point(rawRepresentation) == 1 else { throw CryptoError.invalidPublicKey }
            ValidKeyMemo.shared.insert(memoKey)
        }
        self.rawRepresentation = rawRepresentation
    }

    /// Wraps bytes already known to be a valid key (derived from a seed by libsodium).
    init(validatedBytes: [UInt8]) {
        rawRepresentation = validatedBytes
    }

    /// Checks an Ed25519 signature over `message`.
    ///
    /// Never traps: a signature of the wrong length, or one libsodium refuses (non-canonical,
    /// small order), simply yields `false`.
    /// - Returns: `true` only if `signature` is a valid signature by this key over `message`.
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        signature.withUnsafeBytes { sig in
            message.withUnsafeBytes { msg in isValidSignature(sig, for: msg) }
        }
    }

    /// Pointer form of ``isValidSignature(_:for:)`` for hot paths that already hold the bytes.
    func isValidSignature(_ signature: UnsafeRawBufferPointer, for message: UnsafeRawBufferPointer) -> Bool {
        guard signature.count == Self.signatureByteCount, let sig = signature.baseAddress,
            // No libsodium means nothing verifies: false, never a trap.
            (try? Sodium.ensureInitialized()) != nil
        else { return false }
        return rawRepresentation.withUnsafeBytes { pk in
            crypto_sign_verify_detached(
                sig.assumingMemoryBound(to: UInt8.self),
                message.u8,
                UInt64(message.count), pk.u8) == 0
        }
    }
}

/// An Ed25519 signing key (identity private key), held as libsodium's 64-byte secret key
/// (seed ‖ public key) in wiped memory.
public struct Ed25519SigningKey: Sendable {
    /// The number of bytes in a seed (`crypto_sign_seedbytes()`, 32).
    public static var seedByteCount: Int { Int(crypto_sign_seedbytes()) }

    /// libsodium's expanded secret key: seed (32) ‖ public key (32).
    let secretKey: SecretBytes
    /// The 32-byte seed the key was derived from, kept as given (checked in ``init(seed:)-(SecretBytes)``),
    /// so ``seed`` never has to cut it out of `secretKey` and has no failure path.
    private let seedBytes: SecretBytes
    /// The matching public key.
    public let publicKey: Ed25519PublicKey

    /// Derives the key pair from a 32-byte seed (the private part of a Coords identity).
    /// - Throws: ``CryptoError/invalidKeyLength(what:expected:actual:)`` when `seed` is not 32
    ///   bytes; ``CryptoError/libraryInitializationFailed``.
    public init(seed: SecretBytes) throws {
        try CryptoError.checkKeyLength("Ed25519 seed", expected: Self.seedByteCount, actual: seed.count)
        try Sodium.ensureInitialized()
        var pk = [UInt8](repeating: 0, count: Ed25519PublicKey.byteCount)
        let sk = SecretBytes(count: Int(crypto_sign_secretkeybytes())) { skBuffer in
            seed.withUnsafeBytes { seedBuffer in
                _ = crypto_sign_seed_keypair(&pk, skBuffer.u8, seedBuffer.u8)
            }
        }
        secretKey = sk
        seedBytes = SecretBytes(count: seed.count) { copy in seed.withUnsafeBytes { copy.copyMemory(from: $0) } }
        publicKey = Ed25519PublicKey(validatedBytes: pk)
    }

    /// Convenience for ``init(seed:)-(SecretBytes)`` from an array (copied into wiped memory;
    /// the caller's array is not wiped).
    public init(seed: [UInt8]) throws {
        try self.init(seed: SecretBytes(copying: seed))
    }

    /// Creates a new identity from 32 bytes of `random`.
    /// - Throws: ``CryptoError`` from the random source or initialisation.
    public static func generate(using random: any RandomSource = SystemRandomSource()) throws -> Ed25519SigningKey {
        let seed = try SecretBytes(count: seedByteCount) { buffer in try random.fill(buffer) }
        return try Ed25519SigningKey(seed: seed)
    }

    /// The 32-byte seed, in a new wiped buffer. Treat it like the key itself.
    public var seed: SecretBytes {
        SecretBytes(count: seedBytes.count) { copy in seedBytes.withUnsafeBytes { copy.copyMemory(from: $0) } }
    }

    /// Signs `message` (deterministic Ed25519, RFC 8032).
    /// - Returns: the 64-byte signature.
    public func signature(for message: [UInt8]) -> [UInt8] {
        message.withUnsafeBytes { signature(for: $0) }
    }

    /// Pointer form of ``signature(for:)-([UInt8])``.
    func signature(for message: UnsafeRawBufferPointer) -> [UInt8] {
        var sig = [UInt8](repeating: 0, count: Ed25519PublicKey.signatureByteCount)
        secretKey.withUnsafeBytes { sk in
            _ = crypto_sign_detached(
                &sig, nil, message.u8,
                UInt64(message.count), sk.u8)
        }
        return sig
    }
}

/// The Ed25519 public keys that passed `crypto_core_ed25519_is_valid_point` lately (a pure
/// function of the 32 bytes, so remembering a pass is exact). Bounded: at ``capacity`` keys it
/// starts over, so a stream of fresh keys (a relay's uploaders, hostile ids) costs at most
/// ``capacity`` × 32 bytes and never grows. Only passes are remembered; a refused key is checked
/// again every time.
final class ValidKeyMemo: Sendable {
    /// 32 key bytes as four words: hashing and comparing them is cheaper than an array's.
    struct Key: Hashable {
        let a: UInt64
        let b: UInt64
        let c: UInt64
        let d: UInt64

        /// The first 32 bytes of `bytes` (callers pass exactly 32; fewer give the zero key).
        init(_ bytes: [UInt8]) {
            (a, b, c, d) = bytes.withUnsafeBytes { raw in
                guard raw.count >= 32 else { return (0, 0, 0, 0) }
                return (
                    raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self), raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
                    raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self), raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self)
                )
            }
        }
    }

    /// How many keys are remembered before the memo starts over.
    static let capacity = 4096
    static let shared = ValidKeyMemo()

    private let keys = Mutex<Set<Key>>([])

    func contains(_ key: Key) -> Bool { keys.withLock { $0.contains(key) } }

    func insert(_ key: Key) {
        keys.withLock { keys in
            if keys.count >= Self.capacity { keys.removeAll(keepingCapacity: true) }
            keys.insert(key)
        }
    }

    /// How many keys are remembered now (tests).
    var count: Int { keys.withLock { $0.count } }
}
