import Testing

@testable import CoordsCore

@Suite struct AES256GCMTests {
    @Test(arguments: try StandardVectors.load().aes256gcm_mcgrew_viega)
    func gcmSpecificationCases(_ v: StandardVectors.GCMCase) throws {
        let key = SecretBytes(copying: try Hex.vector(v.key))
        let nonce = try Hex.vector(v.iv)
        let aad = try Hex.vector(v.aad)
        let plaintext = try Hex.vector(v.plaintext)
        let expected = try Hex.vector(v.ciphertext) + Hex.vector(v.tag)
        #expect(try AES256GCM.seal(plaintext, key: key, nonce: AES256GCM.Nonce(nonce), associatedData: aad) == expected)
        #expect(try AES256GCM.open(expected, key: key, nonce: AES256GCM.Nonce(nonce), associatedData: aad) == plaintext)
        let precomputed = try AES256GCM.PrecomputedKey(key: key)
        #expect(try precomputed.seal(plaintext, nonce: AES256GCM.Nonce(nonce), associatedData: aad) == expected)
        #expect(try precomputed.open(expected, nonce: AES256GCM.Nonce(nonce), associatedData: aad) == plaintext)
    }

    @Test func tamperingWithAnyPartFailsToOpen() throws {
        let key = try SecretBytes(randomCount: 32)
        let nonce = try SystemRandomSource().bytes(12)
        let aad = Array("header".utf8)
        let plaintext = Array("47.3769 8.5417".utf8)
        let sealed = try AES256GCM.seal(plaintext, key: key, nonce: AES256GCM.Nonce(nonce), associatedData: aad)
        let precomputed = try AES256GCM.PrecomputedKey(key: key)
        for index in sealed.indices {  // every ciphertext and tag byte
            var bad = sealed
            bad[index] ^= 0x01
            #expect(throws: CryptoError.authenticationFailed) { try AES256GCM.open(bad, key: key, nonce: AES256GCM.Nonce(nonce), associatedData: aad) }
            #expect(throws: CryptoError.authenticationFailed) { try precomputed.open(bad, nonce: AES256GCM.Nonce(nonce), associatedData: aad) }
        }
        for index in nonce.indices {
            var badNonce = nonce
            badNonce[index] ^= 0x80
            #expect(throws: CryptoError.authenticationFailed) { try AES256GCM.open(sealed, key: key, nonce: AES256GCM.Nonce(badNonce), associatedData: aad) }
        }
        var badAAD = aad
        badAAD[0] ^= 0x01
        #expect(throws: CryptoError.authenticationFailed) { try AES256GCM.open(sealed, key: key, nonce: AES256GCM.Nonce(nonce), associatedData: badAAD) }
        #expect(throws: CryptoError.authenticationFailed) { try AES256GCM.open(sealed, key: key, nonce: AES256GCM.Nonce(nonce)) }
        #expect(throws: CryptoError.authenticationFailed) {
            try AES256GCM.open(sealed, key: try SecretBytes(randomCount: 32), nonce: AES256GCM.Nonce(nonce), associatedData: aad)
        }
        #expect(throws: CryptoError.authenticationFailed) {
            try AES256GCM.open(Array(sealed.dropLast()), key: key, nonce: AES256GCM.Nonce(nonce), associatedData: aad)
        }
    }

    /// The sizes are literals (no call into libsodium per seal); they must be libsodium's.
    @Test func sizeConstantsAreLibsodiums() {
        #expect(AES256GCM.sizesMatchLibsodium)
        #expect(AES256GCM.maximumPlaintextByteCount == 68_719_476_704)
    }

    @Test func argumentErrorsNeverTrap() throws {
        let key = try SecretBytes(randomCount: 32)
        let nonce = [UInt8](repeating: 0, count: 12)
        #expect(throws: CryptoError.invalidKeyLength(what: "AES-256-GCM key", expected: 32, actual: 16)) {
            try AES256GCM.seal([1], key: SecretBytes(copying: [UInt8](repeating: 0, count: 16)), nonce: AES256GCM.Nonce(nonce))
        }
        #expect(throws: CryptoError.invalidNonceLength(expected: 12, actual: 0)) { try AES256GCM.seal([1], key: key, nonce: AES256GCM.Nonce([])) }
        #expect(throws: CryptoError.invalidNonceLength(expected: 12, actual: 24)) {
            try AES256GCM.open([UInt8](repeating: 0, count: 16), key: key, nonce: AES256GCM.Nonce([UInt8](repeating: 0, count: 24)))
        }
        for count in 0..<16 {
            #expect(throws: CryptoError.ciphertextTooShort(minimum: 16, actual: count)) {
                try AES256GCM.open([UInt8](repeating: 0, count: count), key: key, nonce: AES256GCM.Nonce(nonce))
            }
        }
        #expect(throws: CryptoError.self) { try AES256GCM.PrecomputedKey(key: SecretBytes(copying: [])) }
    }

    @Test(arguments: [0, 1, 15, 16, 17, 20, 1024, 65_536])
    func roundTripsEverySize(_ size: Int) throws {
        let key = try SecretBytes(randomCount: 32)
        let nonce = try SystemRandomSource().bytes(12)
        let plaintext = try SystemRandomSource().bytes(size)
        let sealed = try AES256GCM.seal(plaintext, key: key, nonce: AES256GCM.Nonce(nonce))
        #expect(sealed.count == size + 16)
        #expect(try AES256GCM.open(sealed, key: key, nonce: AES256GCM.Nonce(nonce)) == plaintext)
        #expect(try AES256GCM.PrecomputedKey(key: key).open(sealed, nonce: AES256GCM.Nonce(nonce)) == plaintext)
    }
}
