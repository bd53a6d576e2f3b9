/// Errors thrown by the crypto layer. Codes 200–299, stable (see ``CoordsCoreError``).
public enum CryptoError: CoordsCoreError, Equatable {
    /// `sodium_init()` failed; no crypto operation can run in this process.
    case libraryInitializationFailed
    /// AES-256-GCM needs AES-NI and CLMUL (libsodium's implementation), and this CPU lacks them.
    case unsupportedHardware
    /// A key, seed, scalar or public key had the wrong number of bytes.
    case invalidKeyLength(what: String, expected: Int, actual: Int)
    /// The bytes are not a valid Ed25519 point (or it is of small order), so they are no public key.
    case invalidPublicKey
    /// A nonce had the wrong number of bytes.
    case invalidNonceLength(expected: Int, actual: Int)
    /// An AEAD ciphertext did not authenticate: wrong key, nonce or associated data, or tampered bytes.
    case authenticationFailed
    /// A ciphertext is shorter than its authentication tag.
    case ciphertextTooShort(minimum: Int, actual: Int)
    /// X25519 produced the all-zero output: the peer key is of small order.
    case weakPublicKey
    /// A parameter is outside the range the primitive accepts (lengths, Argon2id limits, …).
    case invalidParameter(String)
    /// A ``ReplayRandomSource`` ran out of scripted bytes or was asked for a different size.
    case randomSourceMismatch(String)
    /// The primitive could not allocate the memory it needs (Argon2id with a large memory limit).
    case outOfMemory(String)

    /// The stable numeric code of this error.
    public var code: Int32 {
        switch self {
        case .libraryInitializationFailed: 200
        case .unsupportedHardware: 201
        case .invalidKeyLength: 202
        case .invalidPublicKey: 203
        case .invalidNonceLength: 204
        case .authenticationFailed: 205
        case .ciphertextTooShort: 206
        case .weakPublicKey: 207
        case .invalidParameter: 208
        case .randomSourceMismatch: 209
        case .outOfMemory: 210
        }
    }

    /// A sentence saying what was wrong and, where possible, what to do.
    public var description: String {
        switch self {
        case .libraryInitializationFailed:
            "libsodium failed to initialise (sodium_init returned -1); check that the process can read /dev/urandom"
        case .unsupportedHardware:
            "AES-256-GCM is not available on this CPU (libsodium needs AES-NI and CLMUL); Coords v3 blobs cannot be sealed or opened on this machine"
        case .invalidKeyLength(let what, let expected, let actual):
            "\(what) must be \(expected) bytes, got \(actual)"
        case .invalidPublicKey:
            "the bytes are not a valid Ed25519 public key (not a canonical point of the main subgroup)"
        case .invalidNonceLength(let expected, let actual):
            "nonce must be \(expected) bytes, got \(actual)"
        case .authenticationFailed:
            "decryption failed: the ciphertext does not authenticate under this key, nonce and associated data"
        case .ciphertextTooShort(let minimum, let actual):
            "ciphertext must be at least \(minimum) bytes (the tag), got \(actual)"
        case .weakPublicKey:
            "key agreement produced the all-zero secret: the peer's public key is of small order"
        case .invalidParameter(let what):
            "invalid parameter: \(what)"
        case .randomSourceMismatch(let what):
            "replayed randomness does not match the request: \(what)"
        case .outOfMemory(let what):
            "out of memory: \(what)"
        }
    }
}

extension CryptoError {
    /// The one length check every key, seed and scalar initialiser makes.
    /// - Throws: ``invalidKeyLength(what:expected:actual:)`` unless `actual == expected`.
    static func checkKeyLength(_ what: String, expected: Int, actual: Int) throws(CryptoError) {
        guard actual == expected else { throw .invalidKeyLength(what: what, expected: expected, actual: actual) }
    }
}
