internal import CSodium

/// libsodium's sealed box (`crypto_box_seal`, `crypto_box_seal_open`): anonymous encryption to an
/// X25519 public key — a fresh key pair per message, the nonce BLAKE2b-192 of both public keys,
/// XSalsa20-Poly1305. The push gateway's token (PROTOCOL.md §8.8) is one.
public enum SealedBox {
    /// What a sealed box adds to its plaintext: the 32-byte ephemeral public key and the 16-byte tag.
    public static let overhead = 48

    /// Whether ``overhead`` is what this libsodium reports.
    static var sizesMatchLibsodium: Bool { overhead == Int(crypto_box_sealbytes()) }

    /// Seals `plaintext` to `recipient` (randomness from libsodium).
    /// - Returns: `plaintext.count + 48` bytes; the caller owns them.
    /// - Throws: ``CryptoError/weakPublicKey`` when libsodium refuses the key (small order),
    ///   ``CryptoError/libraryInitializationFailed``.
    public static func seal(_ plaintext: [UInt8], to recipient: X25519PublicKey) throws -> [UInt8] {
        try Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: plaintext.count + overhead)
        let status = out.withUnsafeMutableBytes { sealed in
            plaintext.withUnsafeBytes { message in
                recipient.rawRepresentation.withUnsafeBytes { key in
                    crypto_box_seal(sealed.u8, message.u8, UInt64(message.count), key.u8)
                }
            }
        }
        guard status == 0 else { throw CryptoError.weakPublicKey }
        return out
    }

    /// Opens `sealed` with `key`.
    /// - Returns: the plaintext in wiped memory, or nil when `sealed` was not sealed to `key`,
    ///   was changed, or is shorter than ``overhead``.
    public static func open(_ sealed: [UInt8], with key: X25519PrivateKey) -> SecretBytes? {
        guard sealed.count >= overhead, (try? Sodium.ensureInitialized()) != nil else { return nil }  // no library: nothing opens
        var opened = true
        let plaintext = SecretBytes(count: sealed.count - overhead) { message in
            opened =
                sealed.withUnsafeBytes { box in
                    key.publicKey.rawRepresentation.withUnsafeBytes { publicKey in
                        key.rawRepresentation.withUnsafeBytes { secretKey in
                            crypto_box_seal_open(message.u8, box.u8, UInt64(box.count), publicKey.u8, secretKey.u8)
                        }
                    }
                } == 0
        }
        return opened ? plaintext : nil
    }
}
