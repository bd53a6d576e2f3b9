import Testing

@testable import CoordsCore

@Suite struct Ed25519Tests {
    @Test(arguments: try StandardVectors.load().ed25519_rfc8032)
    func rfc8032SignAndVerify(_ v: StandardVectors.Ed25519Case) throws {
        let key = try Ed25519SigningKey(seed: Hex.vector(v.secret_key))
        #expect(Hex.encode(key.publicKey.rawRepresentation) == v.public_key)
        let message = try Hex.vector(v.message)
        let signature = key.signature(for: message)
        #expect(Hex.encode(signature) == v.signature)
        #expect(key.publicKey.isValidSignature(signature, for: message))
    }

    @Test(arguments: try CoordsV3Vectors.load().keys)
    func coordsKeysDeriveTheirPublicKey(_ v: CoordsV3Vectors.Key) throws {
        let key = try Ed25519SigningKey(seed: Hex.vector(v.seed))
        #expect(Hex.encode(key.publicKey.rawRepresentation) == v.ed25519_public)
        #expect(key.seed == SecretBytes(copying: try Hex.vector(v.seed)))
    }

    @Test func verificationRefusesModifiedMessageAndSignature() throws {
        let key = try Ed25519SigningKey.generate()
        let message = Array("on my way".utf8)
        let signature = key.signature(for: message)
        #expect(key.publicKey.isValidSignature(signature, for: message))
        var otherMessage = message
        otherMessage[0] ^= 1
        #expect(!key.publicKey.isValidSignature(signature, for: otherMessage))
        for index in [0, 31, 32, 63] {
            var bad = signature
            bad[index] ^= 0x20
            #expect(!key.publicKey.isValidSignature(bad, for: message), "bit flip at byte \(index)")
        }
        #expect(!key.publicKey.isValidSignature([UInt8](repeating: 0, count: 64), for: message))
        #expect(!key.publicKey.isValidSignature([], for: message))
        #expect(!key.publicKey.isValidSignature(Array(signature.dropLast()), for: message))
        #expect(!key.publicKey.isValidSignature(signature + [0], for: message))
        let other = try Ed25519SigningKey.generate()
        #expect(!other.publicKey.isValidSignature(signature, for: message))
    }

    @Test func publicKeyRefusesWrongLengthsAndInvalidPoints() throws {
        for count in [0, 1, 31, 33, 64] {
            #expect(throws: CryptoError.invalidKeyLength(what: "Ed25519 public key", expected: 32, actual: count)) {
                try Ed25519PublicKey(rawRepresentation: [UInt8](repeating: 7, count: count))
            }
        }
        // y = 2 is not on the curve (x² = (y²−1)/(d·y²+1) has no square root).
        var notOnCurve = [UInt8](repeating: 0, count: 32)
        notOnCurve[0] = 2
        #expect(throws: CryptoError.invalidPublicKey) { try Ed25519PublicKey(rawRepresentation: notOnCurve) }
        // The identity point (y = 1) is of small order.
        var identity = [UInt8](repeating: 0, count: 32)
        identity[0] = 1
        #expect(throws: CryptoError.invalidPublicKey) { try Ed25519PublicKey(rawRepresentation: identity) }
        // All-ones is a non-canonical encoding.
        #expect(throws: CryptoError.invalidPublicKey) { try Ed25519PublicKey(rawRepresentation: [UInt8](repeating: 0xff, count: 32)) }
        let valid = try Ed25519SigningKey.generate().publicKey
        #expect(try Ed25519PublicKey(rawRepresentation: valid.rawRepresentation) == valid)
    }

    @Test func validKeysAreRememberedAndInvalidOnesCheckedEveryTime() throws {
        var notOnCurve = [UInt8](repeating: 0, count: 32)
        notOnCurve[0] = 2
        for _ in 0..<3 {  // a refusal is never remembered
            #expect(throws: CryptoError.invalidPublicKey) { try Ed25519PublicKey(rawRepresentation: notOnCurve) }
        }
        #expect(!ValidKeyMemo.shared.contains(ValidKeyMemo.Key(notOnCurve)))
        let valid = try Ed25519SigningKey.generate().publicKey.rawRepresentation
        #expect(try Ed25519PublicKey(rawRepresentation: valid).rawRepresentation == valid)
        #expect(ValidKeyMemo.shared.contains(ValidKeyMemo.Key(valid)))
        #expect(try Ed25519PublicKey(rawRepresentation: valid).rawRepresentation == valid)  // from the memo
        // Bounded: at capacity it starts over instead of growing.
        let memo = ValidKeyMemo()
        for index in 0..<(ValidKeyMemo.capacity + 10) {
            var bytes = [UInt8](repeating: 0, count: 32)
            withUnsafeBytes(of: UInt64(index).littleEndian) { for (i, byte) in $0.enumerated() { bytes[i] = byte } }
            memo.insert(ValidKeyMemo.Key(bytes))
            #expect(memo.count <= ValidKeyMemo.capacity)
        }
        #expect(memo.count == 10)
        #expect(ValidKeyMemo.Key([1, 2, 3]) == ValidKeyMemo.Key([]))  // short input never reads past the end
    }

    @Test func seedOfWrongLengthIsAnError() {
        for count in [0, 16, 31, 33, 64] {
            #expect(throws: CryptoError.invalidKeyLength(what: "Ed25519 seed", expected: 32, actual: count)) {
                try Ed25519SigningKey(seed: [UInt8](repeating: 1, count: count))
            }
        }
    }

    @Test func generatedKeysAreDistinctAndReproducibleFromSeededSource() throws {
        let a = try Ed25519SigningKey.generate()
        let b = try Ed25519SigningKey.generate()
        #expect(a.publicKey != b.publicKey)
        let c = try Ed25519SigningKey.generate(using: SeededRandomSource(seed: 42))
        let d = try Ed25519SigningKey.generate(using: SeededRandomSource(seed: 42))
        #expect(c.publicKey == d.publicKey)
    }

    @Test func signingEmptyAndLargeMessages() throws {
        let key = try Ed25519SigningKey.generate()
        for size in [0, 1, 64, 65_536] {
            let message = [UInt8](repeating: 0xab, count: size)
            #expect(key.publicKey.isValidSignature(key.signature(for: message), for: message))
        }
    }
}
