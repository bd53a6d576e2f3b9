import Testing

@testable import CoordsCore

@Suite struct SecretBytesTests {
    @Test func descriptionNeverShowsTheBytes() {
        let secret = SecretBytes(copying: Array("hunter2-hunter2".utf8))
        for text in [secret.description, secret.debugDescription, "\(secret)", String(reflecting: secret)] {
            #expect(!text.contains("hunter"))
            #expect(!text.contains("68"))  // hex of 'h'
            #expect(text.contains("15 bytes"))
        }
        var dumped = ""
        dump(secret, to: &dumped)
        #expect(!dumped.contains("hunter"))
    }

    @Test func equalityComparesContentsAndLengths() {
        #expect(SecretBytes(copying: [1, 2, 3]) == SecretBytes(copying: [1, 2, 3]))
        #expect(SecretBytes(copying: [1, 2, 3]) != SecretBytes(copying: [1, 2, 4]))
        #expect(SecretBytes(copying: [1, 2, 3]) != SecretBytes(copying: [1, 2]))
        #expect(SecretBytes(copying: []) == SecretBytes(copying: []))
    }

    @Test func failingInitializerWipesAndPropagates() {
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try SecretBytes(count: 8) { buffer in
                buffer[0] = 1
                throw Boom()
            }
        }
        let negative = SecretBytes(count: -5) { _ in }
        #expect(negative.count == 0)
    }

    @Test func sliceChecksBounds() throws {
        let secret = SecretBytes(copying: [0, 1, 2, 3, 4])
        #expect(try secret.slice(1..<3).copyBytes() == [1, 2])
        #expect(throws: CryptoError.self) { try secret.slice(3..<6) }
    }
}

@Suite struct RandomSourceTests {
    @Test func seededSourceIsDeterministicPerCallSequence() throws {
        let a = SeededRandomSource(seed: 7)
        let b = SeededRandomSource(seed: 7)
        let c = SeededRandomSource(seed: 8)
        let a1 = try a.bytes(32)
        let a2 = try a.bytes(32)
        #expect(a1 == (try b.bytes(32)))
        #expect(a2 == (try b.bytes(32)))
        #expect(a1 != a2)
        #expect(a1 != (try c.bytes(32)))
        #expect(throws: CryptoError.self) { try SeededRandomSource(seed: [1, 2, 3]) }
    }

    @Test func replaySourceChecksSizesAndExhaustion() throws {
        let source = ReplayRandomSource([[1, 2], [3, 4, 5]])
        #expect(try source.bytes(2) == [1, 2])
        #expect(!source.isExhausted)
        #expect(throws: CryptoError.self) { try source.bytes(2) }  // wrong size for the next chunk
        #expect(try source.bytes(3) == [3, 4, 5])
        #expect(source.isExhausted)
        #expect(throws: CryptoError.self) { try source.bytes(1) }
    }

    @Test func systemSourceProducesDifferentBytes() throws {
        let s = SystemRandomSource()
        #expect(try s.bytes(32) != (try s.bytes(32)))
        #expect(try s.bytes(0).isEmpty)
    }
}
