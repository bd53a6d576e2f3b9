// What the benchmark suite (CoordsBenchmarks) and the instruction-count gate (InstructionGate)
// both build: identities with the raw forms their C baselines take, and a relay's signed fetch
// answer with the pieces of its C floor.
import CBaseline
import CoordsCore

/// A test identity and its raw forms for the C baselines.
public struct Identity: Sendable {
    public let key: Ed25519SigningKey
    public let x25519: X25519PrivateKey
    /// libsodium's 64-byte secret key (seed ‖ public key).
    public let rawSecretKey: [UInt8]
    public let rawX25519Scalar: [UInt8]

    /// The identity of `key` (the suite passes fresh keys, the gate keys from its fixed stream).
    /// - Throws: ``CryptoError`` only if libsodium cannot initialise.
    public init(key: Ed25519SigningKey) throws {
        self.key = key
        x25519 = try X25519PrivateKey(ed25519: key)
        rawSecretKey = key.seed.copyBytes() + key.publicKey.rawRepresentation
        rawX25519Scalar = x25519.rawRepresentation.copyBytes()
    }
}

/// A relay's answer to a fetch: one entry per friend, its location sealed for the friend and
/// `reader` and its upload signed by the friend — and the same work in C, the floor a client's
/// processing is measured against (an Ed25519 verification and a blob open per entry).
public struct SignedFetchAnswer: @unchecked Sendable {
    /// The JSON body, as a relay sends it.
    public let body: [UInt8]
    /// Per entry: the friend's raw public key, the signed bytes, the signature, the blob.
    public let entries: [(key: [UInt8], message: [UInt8], signature: [UInt8], blob: [UInt8])]
    private let scalar: [UInt8]
    private let out = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 20)

    /// - Parameters:
    ///   - friends: the uploaders; entry `i` carries a fix taken at `firstFix + i` ms.
    ///   - reader: who processes the answer (each blob is sealed for the friend and the reader).
    ///   - uploadTimestamp: the signed upload time (s) of every entry.
    ///   - random: the source of the blobs' ephemeral keys and nonces.
    /// - Throws: ``WireError`` or ``CryptoError`` from sealing.
    public init(
        friends: some Sequence<Ed25519SigningKey>, reader: Identity, firstFix: UInt64, uploadTimestamp: UInt64 = 1_763_805_600,
        random: any RandomSource = SystemRandomSource()
    ) throws {
        var response = JSONObject()
        var entries: [(key: [UInt8], message: [UInt8], signature: [UInt8], blob: [UInt8])] = []
        for (index, friend) in friends.enumerated() {
            let fix = try Location(latitude: 1, longitude: 2, timestamp: firstFix + UInt64(index)).wire
            let blob = try LocationBlob.seal(fix, for: [friend.publicKey, reader.key.publicKey], using: random)
            let message = RelayAPI.uploadSignedMessage(blob: blob, timestamp: uploadTimestamp)
            let signature = friend.signature(for: message)
            entries.append((friend.publicKey.rawRepresentation, message, signature, blob))
            response[friend.publicKey.base64URL] = .object([
                "blob": .string(Base64.encode(blob)), "updated": .integer(uploadTimestamp),
                "signature": .string(Base64.encode(signature)), "timestamp": .integer(uploadTimestamp)
            ])
        }
        body = JSONValue.object(response).serialized()
        self.entries = entries
        scalar = reader.rawX25519Scalar
    }

    /// The floor in C: `crypto_sign_verify_detached` and the blob open for every entry.
    /// - Returns: how many entries verified and opened (all of them).
    @discardableResult public func floor() -> Int {
        var good = 0
        for entry in entries where cb_verify(entry.key, entry.message, entry.message.count, entry.signature) == 0 {
            if cb_blob_open(scalar, entry.blob, entry.blob.count, out.baseAddress) == 0 { good += 1 }
        }
        return good
    }
}
