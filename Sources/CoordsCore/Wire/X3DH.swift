/// The handshake of PROTOCOL.md §10.5 (X3DH-style): a shared secret `SK` from the initiator's
/// identity and base key and the responder's identity, signed prekey and optional one-time prekey.
public enum X3DH {
    static let info = Array("CoordsCore/x3dh/v1".utf8)

    /// The initiator's side: `SK` from `bundle` (already verified) and a fresh base key.
    /// - Parameters:
    ///   - identity: the initiator's identity (A).
    ///   - bundle: B's verified bundle.
    ///   - baseKey: the fresh `EK_A`.
    /// - Returns: the 32-byte `SK` in wiped memory.
    /// - Throws: ``CryptoError/weakPublicKey`` when an agreement is all zeros (a bad prekey);
    ///   ``CryptoError`` from the key conversion.
    public static func initiate(identity: Ed25519SigningKey, bundle: PrekeyBundle, baseKey: X25519PrivateKey) throws -> SecretBytes {
        let identityX = try X25519PrivateKey(ed25519: identity)
        let responderX = try X25519PublicKey(ed25519: bundle.identity)
        var parts = [
            try identityX.sharedSecret(with: bundle.signedPrekey.key),
            try baseKey.sharedSecret(with: responderX),
            try baseKey.sharedSecret(with: bundle.signedPrekey.key)
        ]
        if let oneTime = bundle.oneTimePrekey { parts.append(try baseKey.sharedSecret(with: oneTime.key)) }
        return try derive(parts, initiator: identity.publicKey, responder: bundle.identity)
    }

    /// The responder's side, with the private halves the handshake names.
    /// - Parameters:
    ///   - identity: the responder's identity (B).
    ///   - signedPrekey: the private half of the signed prekey the handshake names.
    ///   - oneTimePrekey: the private half of the one-time prekey it names, if any.
    ///   - initiator: A's identity key (the envelope's `senderKey`, a known friend).
    ///   - baseKey: `EK_A` from the message.
    /// - Returns: the same `SK` as ``initiate(identity:bundle:baseKey:)``.
    /// - Throws: ``CryptoError/weakPublicKey`` for a small-order base key or initiator key.
    public static func respond(
        identity: Ed25519SigningKey, signedPrekey: X25519PrivateKey, oneTimePrekey: X25519PrivateKey?,
        initiator: Ed25519PublicKey, baseKey: X25519PublicKey
    ) throws -> SecretBytes {
        let identityX = try X25519PrivateKey(ed25519: identity)
        let initiatorX = try X25519PublicKey(ed25519: initiator)
        var parts = [
            try signedPrekey.sharedSecret(with: initiatorX),
            try identityX.sharedSecret(with: baseKey),
            try signedPrekey.sharedSecret(with: baseKey)
        ]
        if let oneTimePrekey { parts.append(try oneTimePrekey.sharedSecret(with: baseKey)) }
        return try derive(parts, initiator: initiator, responder: identity.publicKey)
    }

    /// `HKDF(0xFF×32 ‖ DH1 ‖ DH2 ‖ DH3 [‖ DH4], salt = 0x00×32, info = label ‖ IK_A ‖ IK_B, 32)`.
    static func derive(_ agreements: [SecretBytes], initiator: Ed25519PublicKey, responder: Ed25519PublicKey) throws -> SecretBytes {
        let ikm = SecretBytes(count: 32 + 32 * agreements.count) { out in
            for i in 0..<32 { out[i] = 0xFF }
            for (index, part) in agreements.enumerated() {
                part.withUnsafeBytes { bytes in
                    UnsafeMutableRawBufferPointer(rebasing: out[32 + 32 * index..<64 + 32 * index]).copyMemory(from: bytes)
                }
            }
        }
        return try HKDF.deriveKey(
            inputKeyMaterial: ikm, salt: [UInt8](repeating: 0, count: 32),
            info: info + initiator.rawRepresentation + responder.rawRepresentation, outputByteCount: 32)
    }
}
