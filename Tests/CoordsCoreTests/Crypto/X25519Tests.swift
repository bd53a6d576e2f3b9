import Testing

@testable import CoordsCore

@Suite struct X25519Tests {
    /// RFC 7748 clamping, applied to the vectors' unclamped scalars.
    static func clamp(_ bytes: [UInt8]) -> [UInt8] {
        var s = bytes
        s[0] &= 248
        s[31] &= 127
        s[31] |= 64
        return s
    }

    @Test func rfc7748ScalarMultiplication() throws {
        let section = try StandardVectors.load().x25519_rfc7748
        for v in section.scalar_mult {
            let key = try X25519PrivateKey(rawRepresentation: SecretBytes(copying: Hex.vector(v.scalar)))
            let shared = try key.sharedSecret(with: X25519PublicKey(rawRepresentation: Hex.vector(v.u)))
            #expect(Hex.encode(shared.copyBytes()) == v.output)
        }
    }

    @Test func rfc7748DiffieHellman() throws {
        let v = try StandardVectors.load().x25519_rfc7748.exchange
        let alice = try X25519PrivateKey(rawRepresentation: SecretBytes(copying: Hex.vector(v.alice_private)))
        let bob = try X25519PrivateKey(rawRepresentation: SecretBytes(copying: Hex.vector(v.bob_private)))
        #expect(Hex.encode(alice.publicKey.rawRepresentation) == v.alice_public)
        #expect(Hex.encode(bob.publicKey.rawRepresentation) == v.bob_public)
        let ab = try alice.sharedSecret(with: bob.publicKey)
        let ba = try bob.sharedSecret(with: alice.publicKey)
        #expect(Hex.encode(ab.copyBytes()) == v.shared)
        #expect(ab == ba)
    }

    @Test(arguments: try CoordsV3Vectors.load().keys)
    func ed25519ToX25519MatchesEveryCoordsKey(_ v: CoordsV3Vectors.Key) throws {
        let signing = try Ed25519SigningKey(seed: Hex.vector(v.seed))
        let fromPublic = try X25519PublicKey(ed25519: signing.publicKey)
        #expect(Hex.encode(fromPublic.rawRepresentation) == v.x25519_public)
        let fromSeed = try X25519PrivateKey(ed25519: signing)
        #expect(Hex.encode(fromSeed.rawRepresentation.copyBytes()) == Hex.encode(Self.clamp(try Hex.vector(v.x25519_private_unclamped))))
        #expect(fromSeed.publicKey == fromPublic)
        // The unclamped scalar from the vectors gives the same public key (X25519 clamps on use).
        let unclamped = try X25519PrivateKey(rawRepresentation: SecretBytes(copying: Hex.vector(v.x25519_private_unclamped)))
        #expect(unclamped.publicKey == fromPublic)
    }

    @Test func agreementBetweenConvertedIdentities() throws {
        let a = try Ed25519SigningKey.generate()
        let b = try Ed25519SigningKey.generate()
        let ab = try X25519PrivateKey(ed25519: a).sharedSecret(with: X25519PublicKey(ed25519: b.publicKey))
        let ba = try X25519PrivateKey(ed25519: b).sharedSecret(with: X25519PublicKey(ed25519: a.publicKey))
        #expect(ab == ba)
    }

    @Test func invalidInputsAreErrors() throws {
        #expect(throws: CryptoError.self) { try X25519PublicKey(rawRepresentation: []) }
        #expect(throws: CryptoError.self) { try X25519PublicKey(rawRepresentation: [UInt8](repeating: 1, count: 33)) }
        #expect(throws: CryptoError.self) { try X25519PrivateKey(rawRepresentation: SecretBytes(copying: [1, 2, 3])) }
        // u = 0 and u = 1 are of small order: the shared secret would be all zeros.
        let key = try X25519PrivateKey.generate()
        var zero = [UInt8](repeating: 0, count: 32)
        #expect(throws: CryptoError.weakPublicKey) { try key.sharedSecret(with: X25519PublicKey(rawRepresentation: zero)) }
        zero[0] = 1
        #expect(throws: CryptoError.weakPublicKey) { try key.sharedSecret(with: X25519PublicKey(rawRepresentation: zero)) }
    }
}
