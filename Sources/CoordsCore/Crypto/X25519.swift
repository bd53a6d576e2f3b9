internal import CSodium

/// An X25519 public key (a Montgomery u-coordinate, 32 bytes).
public struct X25519PublicKey: Hashable, Sendable {
    /// The number of bytes in an X25519 key (`crypto_scalarmult_bytes()`, 32).
    public static var byteCount: Int { Int(crypto_scalarmult_bytes()) }

    /// The 32 key bytes.
    public let rawRepresentation: [UInt8]

    /// Wraps 32 bytes. Any 32 bytes are an X25519 public key; a small-order one is caught when
    /// it is used (``X25519PrivateKey/sharedSecret(with:)`` throws ``CryptoError/weakPublicKey``).
    /// - Throws: ``CryptoError/invalidKeyLength(what:expected:actual:)`` for a length other than 32.
    public init(rawRepresentation: [UInt8]) throws {
        try CryptoError.checkKeyLength("X25519 public key", expected: Self.byteCount, actual: rawRepresentation.count)
        self.rawRepresentation = rawRepresentation
    }

    init(validatedBytes: [UInt8]) {
        rawRepresentation = validatedBytes
    }

    /// Whether every key agreement with this key gives the all-zero secret: a point of small order
    /// (the all-zero key among them), on the curve or its twist. X25519 clamps every scalar to a
    /// multiple of 8, so one agreement with a fixed public scalar decides it for all scalars.
    /// Public data only: nothing secret is involved.
    public var isSmallOrder: Bool {
        guard (try? Sodium.ensureInitialized()) != nil else { return true }  // no libsodium: refuse rather than trust
        let scalar = [UInt8](repeating: 0x5A, count: Self.byteCount)
        var out = [UInt8](repeating: 0, count: Self.byteCount)
        return crypto_scalarmult(&out, scalar, rawRepresentation) != 0
    }

    /// Maps an Ed25519 public key to its X25519 form (PROTOCOL.md §1): the Edwards point in
    /// Montgomery form, via libsodium `crypto_sign_ed25519_pk_to_curve25519`.
    ///
    /// This costs a point decompression (tens of microseconds); callers that seal for the same
    /// friends repeatedly should keep the result.
    /// - Throws: ``CryptoError/invalidPublicKey`` when the point does not decode (or is of small
    ///   order); ``CryptoError/libraryInitializationFailed``.
    public init(ed25519 key: Ed25519PublicKey) throws {
        try Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: Self.byteCount)
        guard crypto_sign_ed25519_pk_to_curve25519(&out, key.rawRepresentation) == 0 else { throw CryptoError.invalidPublicKey }
        rawRepresentation = out
    }
}

/// An X25519 private scalar in wiped memory, with its public key.
public struct X25519PrivateKey: Sendable {
    /// The 32-byte scalar (clamped when it comes from an Ed25519 seed; X25519 clamps on use anyway).
    public let rawRepresentation: SecretBytes
    /// The matching public key (`crypto_scalarmult_base`).
    public let publicKey: X25519PublicKey

    /// Wraps a 32-byte scalar and computes its public key.
    /// - Throws: ``CryptoError/invalidKeyLength(what:expected:actual:)`` when not 32 bytes;
    ///   ``CryptoError/weakPublicKey`` in the (negligible) case the public key is the identity.
    public init(rawRepresentation: SecretBytes) throws {
        try CryptoError.checkKeyLength("X25519 private key", expected: X25519PublicKey.byteCount, actual: rawRepresentation.count)
        try Sodium.ensureInitialized()
        var pk = [UInt8](repeating: 0, count: X25519PublicKey.byteCount)
        let status = rawRepresentation.withUnsafeBytes { scalar in
            crypto_scalarmult_base(&pk, scalar.u8)
        }
        guard status == 0 else { throw CryptoError.weakPublicKey }
        self.rawRepresentation = rawRepresentation
        publicKey = X25519PublicKey(validatedBytes: pk)
    }

    /// A scalar with the public key stored next to it (the app's sealed store: authenticated, so
    /// the pair is the one that was written), without the base-point multiplication.
    init(storedScalar: SecretBytes, publicKey: X25519PublicKey) {
        rawRepresentation = storedScalar
        self.publicKey = publicKey
    }

    /// The X25519 form of an identity (PROTOCOL.md §1): the first 32 bytes of SHA-512(seed),
    /// clamped, via libsodium `crypto_sign_ed25519_sk_to_curve25519`.
    /// - Throws: ``CryptoError`` only if libsodium cannot initialise.
    public init(ed25519 signingKey: Ed25519SigningKey) throws {
        try Sodium.ensureInitialized()
        let scalar = SecretBytes(count: X25519PublicKey.byteCount) { out in
            signingKey.secretKey.withUnsafeBytes { sk in
                _ = crypto_sign_ed25519_sk_to_curve25519(
                    out.u8,
                    sk.u8)
            }
        }
        try self.init(rawRepresentation: scalar)
    }

    /// A fresh random key pair (ephemeral keys).
    /// - Throws: ``CryptoError`` from the random source.
    public static func generate(using random: any RandomSource = SystemRandomSource()) throws -> X25519PrivateKey {
        let scalar = try SecretBytes(count: X25519PublicKey.byteCount) { b in try random.fill(b) }
        return try X25519PrivateKey(rawRepresentation: scalar)
    }

    /// X25519(self, peer): the raw 32-byte shared secret (no KDF applied).
    /// - Throws: ``CryptoError/weakPublicKey`` when the result is all zeros (small-order peer key).
    public func sharedSecret(with peer: X25519PublicKey) throws -> SecretBytes {
        try SecretBytes(count: X25519PublicKey.byteCount) { out in
            guard let base = out.baseAddress else { return }
            let ok = peer.rawRepresentation.withUnsafeBytes { peerBytes in
                peerBytes.baseAddress.map { sharedSecret(withRaw: $0, into: base) } ?? false
            }
            guard ok else { throw CryptoError.weakPublicKey }
        }
    }

    /// Pointer form of ``sharedSecret(with:)``: writes 32 bytes to `out`; `false` on a weak key.
    @inline(__always)
    func sharedSecret(withRaw peer: UnsafeRawPointer, into out: UnsafeMutableRawPointer) -> Bool {
        rawRepresentation.withUnsafeBytes { scalar in
            crypto_scalarmult(
                out.assumingMemoryBound(to: UInt8.self),
                scalar.u8,
                peer.assumingMemoryBound(to: UInt8.self)) == 0
        }
    }
}
