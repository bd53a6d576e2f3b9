import Testing

@testable import CoordsCore

@Suite struct LocationBlobTests {
    static func identity(_ index: Int) throws -> Ed25519SigningKey {
        try Ed25519SigningKey(seed: Hex.vector(CoordsV3Vectors.load().keys[index].seed))
    }

    @Test(arguments: try CoordsV3Vectors.load().padding)
    func paddedEntryCounts(_ pair: [Int]) {
        #expect(LocationBlob.paddedEntryCount(forRecipientCount: pair[0]) == pair[1])
    }

    @Test(arguments: try CoordsV3Vectors.load().blobs)
    func reproducesVectorBlobFromItsSecrets(_ v: CoordsV3Vectors.Blob) throws {
        let recipients = try v.recipients.map { try Self.identity($0).publicKey }
        var chunks: [[UInt8]] = [try Hex.vector(v.ephemeral_secret), try Hex.vector(v.dek)]
        chunks += try v.entry_nonces.map { try Hex.vector($0) }
        chunks += try v.padding_entries.map { try Hex.vector($0) }
        chunks.append(try Hex.vector(v.data_nonce))
        let random = ReplayRandomSource(chunks)
        let location = try WireLocation(bytes: Hex.vector(v.location_wire_hex))
        let blob = try LocationBlob.seal(location, for: recipients, using: random)
        #expect(Hex.encode(blob) == v.blob_hex)
        #expect(random.isExhausted)
        #expect(blob.count == LocationBlob.byteCount(forEntryCount: LocationBlob.paddedEntryCount(forRecipientCount: recipients.count)))

        // The cached-key path produces the same bytes.
        let cached = try recipients.map { try X25519PublicKey(ed25519: $0) }
        let replay = ReplayRandomSource(chunks)
        #expect(try LocationBlob.seal(location, for: cached, using: replay) == blob)
    }

    @Test(arguments: try CoordsV3Vectors.load().blobs)
    func vectorBlobOpensForEveryRecipientAndNoOutsider(_ v: CoordsV3Vectors.Blob) throws {
        let blob = try Hex.vector(v.blob_hex)
        let expected = try WireLocation(bytes: Hex.vector(v.location_wire_hex))
        for index in v.recipients {
            #expect(try LocationBlob.open(blob, with: Self.identity(index)) == expected, "recipient \(index)")
        }
        for index in v.not_readable_by {
            #expect(throws: WireError.notARecipient) { try LocationBlob.open(blob, with: Self.identity(index)) }
        }
    }

    @Test(arguments: try CoordsV3Vectors.load().blob_rejects)
    func refusesMalformedBlobs(_ v: CoordsV3Vectors.BlobReject) throws {
        let reader = try X25519PrivateKey(ed25519: Self.identity(0))
        #expect(throws: WireError.self) { try LocationBlob.open(Hex.vector(v.blob_hex), with: reader) }
    }

    @Test func rejectReasonsAreSpecific() throws {
        let rejects = Dictionary(uniqueKeysWithValues: try CoordsV3Vectors.load().blob_rejects.map { ($0.why, $0.blob_hex) })
        let reader = try X25519PrivateKey(ed25519: Self.identity(0))
        func error(_ why: String) throws -> WireError? {
            do {
                _ = try LocationBlob.open(Hex.vector(rejects[why] ?? ""), with: reader)
                return nil
            } catch let e as WireError { return e }
        }
        #expect(try error("empty") == .blobTooShort(actual: 0, minimum: 123))
        #expect(try error("version 0x02") == .unsupportedBlobVersion(2))
        #expect(try error("entry count larger than the blob") == .blobTruncated(entryCount: 3, required: 243, actual: 143))
        #expect(try error("trailing byte breaks the data tag") == .blobDataTampered)
        #expect(try error("flipped bit in data ciphertext") == .blobDataTampered)
    }

    @Test(arguments: Array(1...70))
    func sealThenOpenForEveryRecipient(_ n: Int) throws {
        let keys = try (0..<n).map { _ in try Ed25519SigningKey.generate() }
        let location = try Location(latitude: 47.3769, longitude: 8.5417, altitude: 408, accuracy: 12.5, timestamp: 1_763_805_600_000).wire
        let blob = try LocationBlob.seal(location, for: keys.map(\.publicKey))
        #expect(blob.count == 83 + 60 * LocationBlob.paddedEntryCount(forRecipientCount: n))
        for key in keys {
            #expect(try LocationBlob.open(blob, with: key) == location)
        }
        #expect(throws: WireError.notARecipient) { try LocationBlob.open(blob, with: try Ed25519SigningKey.generate()) }
    }

    @Test func refusesTooManyOrNoRecipients() throws {
        let key = try X25519PrivateKey.generate().publicKey
        let location = WireLocation(latitudeE6: 0, longitudeE6: 0, altitude: 0, accuracy: 0, timestamp: 1)
        #expect(throws: WireError.noRecipients) { try LocationBlob.seal(location, for: [X25519PublicKey]()) }
        #expect(throws: WireError.tooManyRecipients(count: 1051, maximum: 1050)) {
            try LocationBlob.seal(location, for: [X25519PublicKey](repeating: key, count: 1051))
        }
        let largest = try LocationBlob.seal(location, for: [X25519PublicKey](repeating: key, count: 1050))
        #expect(largest.count == 83 + 60 * 1050)
        #expect(largest.count <= 65_536)
        var smallOrder = [UInt8](repeating: 0, count: 32)
        smallOrder[0] = 1
        #expect(throws: WireError.invalidRecipientKey(index: 1)) {
            try LocationBlob.seal(location, for: [key, try X25519PublicKey(rawRepresentation: smallOrder)])
        }
    }

    @Test func randomMutationNeverTrapsAndNeverOpensToAnotherLocation() throws {
        let sender = try Ed25519SigningKey.generate(using: SeededRandomSource(seed: 1))
        let friend = try Ed25519SigningKey.generate(using: SeededRandomSource(seed: 2))
        let reader = try X25519PrivateKey(ed25519: friend)
        let location = try Location(latitude: -33.8688, longitude: 151.2093, accuracy: 5, timestamp: 1_700_000_000_000).wire
        let blob = try LocationBlob.seal(location, for: [sender.publicKey, friend.publicKey], using: SeededRandomSource(seed: 3))
        let random = SeededRandomSource(seed: 4)
        func next(_ bound: Int) throws -> Int {
            let bytes = try random.bytes(4)
            let value = bytes.reduce(0) { $0 << 8 | Int($1) }
            return value % max(bound, 1)
        }
        for round in 0..<3000 {
            var mutated = blob
            switch round % 4 {
            case 0: mutated.removeLast(try next(blob.count) + 1)
            case 1: mutated += try random.bytes(try next(64) + 1)
            case 2:
                for _ in 0...(try next(4)) { mutated[try next(mutated.count)] ^= UInt8(1 << (try next(8))) }
            default:
                mutated = Array(mutated.prefix(try next(blob.count)))
                if !mutated.isEmpty { mutated[try next(mutated.count)] ^= 0xff }
            }
            if let result = try? LocationBlob.open(mutated, with: reader) {
                #expect(result == location, "a mutated blob opened to a different location")
            }
        }
    }

    /// Every bit the reader depends on is authenticated: flipping any bit of the header (the
    /// top bit of the ephemeral key included, which X25519 itself ignores), of the reader's own
    /// entry or of the data section makes opening fail, while flipping a bit of someone else's
    /// entry leaves the reader's view intact.
    @Test func everyByteTheReaderUsesIsAuthenticated() throws {
        let sender = try Ed25519SigningKey.generate()
        let friend = try Ed25519SigningKey.generate()
        let reader = try X25519PrivateKey(ed25519: friend)
        let location = try Location(latitude: 1, longitude: 2, timestamp: 3).wire
        let blob = try LocationBlob.seal(location, for: [sender.publicKey, friend.publicKey])
        let senderEntry = 35..<95
        for index in blob.indices {
            for bit in 0..<8 {
                var mutated = blob
                mutated[index] ^= UInt8(1) << UInt8(bit)
                if senderEntry.contains(index) {
                    #expect(try LocationBlob.open(mutated, with: reader) == location, "byte \(index) bit \(bit)")
                } else {
                    #expect(throws: WireError.self, "byte \(index) bit \(bit)") { try LocationBlob.open(mutated, with: reader) }
                }
            }
        }
        // The exact gap Wycheproof's NonCanonicalPublic cases point at.
        var topBit = blob
        topBit[32] ^= 0x80
        #expect(throws: WireError.invalidEphemeralKey) { try LocationBlob.open(topBit, with: reader) }
    }
}
