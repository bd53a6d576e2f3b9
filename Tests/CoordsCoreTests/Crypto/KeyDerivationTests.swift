import Testing

@testable import CoordsCore

@Suite struct HKDFTests {
    @Test(arguments: try StandardVectors.load().hkdf_sha256_rfc5869)
    func rfc5869Cases(_ v: StandardVectors.HKDFCase) throws {
        let okm = try HKDF.deriveKey(
            inputKeyMaterial: Hex.vector(v.ikm), salt: Hex.vector(v.salt),
            info: Hex.vector(v.info), outputByteCount: v.length)
        #expect(Hex.encode(okm.copyBytes()) == v.okm)
        let fromSecret = try HKDF.deriveKey(
            inputKeyMaterial: SecretBytes(copying: Hex.vector(v.ikm)), salt: Hex.vector(v.salt),
            info: Hex.vector(v.info), outputByteCount: v.length)
        #expect(fromSecret == okm)
    }

    @Test func prefixPropertyAndLengthLimits() throws {
        let ikm = Array("input key material".utf8)
        let long = try HKDF.deriveKey(inputKeyMaterial: ikm, info: [1], outputByteCount: 100)
        let short = try HKDF.deriveKey(inputKeyMaterial: ikm, info: [1], outputByteCount: 33)
        #expect(Array(long.copyBytes().prefix(33)) == short.copyBytes())
        #expect(try HKDF.deriveKey(inputKeyMaterial: ikm, outputByteCount: 8160).count == 8160)
        for bad in [0, -1, 8161, Int.max] {
            #expect(throws: CryptoError.self) { try HKDF.deriveKey(inputKeyMaterial: ikm, outputByteCount: bad) }
        }
        #expect(try HKDF.deriveKey(inputKeyMaterial: [], outputByteCount: 32).count == 32)
    }
}

@Suite struct Argon2idTests {
    let salt = [UInt8](repeating: 0x5a, count: 16)

    @Test func sameInputsGiveTheSameKeyAndOtherSaltAnother() throws {
        let a = try Argon2id.deriveKey(passphrase: "correct horse", salt: salt, parameters: .minimum)
        let b = try Argon2id.deriveKey(passphrase: "correct horse", salt: salt, parameters: .minimum)
        #expect(a == b)
        #expect(a.count == 32)
        let otherSalt = try Argon2id.deriveKey(passphrase: "correct horse", salt: [UInt8](repeating: 0x5b, count: 16), parameters: .minimum)
        #expect(a != otherSalt)
        let otherPassphrase = try Argon2id.deriveKey(passphrase: "correct horsf", salt: salt, parameters: .minimum)
        #expect(a != otherPassphrase)
        let otherCost = try Argon2id.deriveKey(
            passphrase: "correct horse", salt: salt,
            parameters: .init(opsLimit: 2, memLimitBytes: 8192))
        #expect(a != otherCost)
        #expect(try Argon2id.deriveKey(passphrase: "", salt: salt, parameters: .minimum).count == 32)
    }

    @Test func absurdLimitsAreClearErrors() throws {
        let absurd: [Argon2id.Parameters] = [
            .init(opsLimit: 0, memLimitBytes: 8192),
            .init(opsLimit: 1, memLimitBytes: 1),
            .init(opsLimit: 1, memLimitBytes: 0),
            .init(opsLimit: .max, memLimitBytes: 8192),
            .init(opsLimit: 1, memLimitBytes: .max),
            .init(opsLimit: 1, memLimitBytes: 1 << 40)
        ]
        for parameters in absurd {
            #expect(throws: CryptoError.self, "\(parameters)") {
                try Argon2id.deriveKey(passphrase: "x", salt: salt, parameters: parameters)
            }
        }
        #expect(throws: CryptoError.self) { try Argon2id.deriveKey(passphrase: "x", salt: [1, 2, 3], parameters: .minimum) }
        #expect(throws: CryptoError.self) { try Argon2id.deriveKey(passphrase: "x", salt: salt, outputByteCount: 0, parameters: .minimum) }
        #expect(throws: CryptoError.self) { try Argon2id.deriveKey(passphrase: "x", salt: salt, outputByteCount: 1 << 20, parameters: .minimum) }
    }
}

@Suite struct SHA2Tests {
    // FIPS 180-2 appendix examples ("abc").
    @Test func publishedDigestsOfABC() {
        #expect(Hex.encode(SHA256.hash(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            Hex.encode(SHA512.hash(Array("abc".utf8)))
                == "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f")
        #expect(Hex.encode(SHA256.hash([])) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }
}
