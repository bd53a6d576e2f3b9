import Testing

@testable import CoordsCore

/// ``ObjectUpload`` and ``ObjectDownload`` without a relay: the requests they prepare, and what
/// they do with answers a hostile relay might give (stored lengths no upload leaves, the state of
/// another object, a 200 to a range, refusals) — a clear error, nothing advanced.
@Suite struct ObjectTransferUnitTests {
    static let signer: Ed25519SigningKey = {
        guard let key = try? Ed25519SigningKey(seed: [UInt8](repeating: 3, count: 32)) else { fatalError("libsodium did not start") }
        return key
    }()
    static let key = SecretBytes(copying: [UInt8](repeating: 7, count: 32))
    static let sealed = UInt64(Objects.chunkByteCount + Objects.tagByteCount)

    static func upload(size: UInt64 = 300_000, partChunks: Int = 2) throws -> ObjectUpload {
        try ObjectUpload(
            server: "https://relay.example/", signer: signer, key: key, object: try ObjectID(bytes: [UInt8](repeating: 1, count: 16)),
            size: size, expiresAt: 2_000_000_000, partChunks: partChunks)
    }

    static func state(_ upload: ObjectUpload, stored: UInt64, object: String? = nil, size: UInt64? = nil) -> [UInt8] {
        JSONValue.object([
            "object": .string(object ?? upload.object.base64URL), "stored": .integer(stored), "size": .integer(size ?? upload.storedSize),
            "complete": .bool(stored == upload.storedSize), "expiresAt": .integer(upload.expiresAt)
        ]).serialized()
    }

    @Test func partsAreSignedAndEndOnChunkBoundaries() throws {
        var upload = try Self.upload()
        #expect(upload.need == .init(offset: 0, count: 131_072))
        let request = try #require(try upload.supply([UInt8](repeating: 0, count: 131_072), timestamp: 100))
        #expect(request.method == "PUT" && request.body.count == Int(2 * Self.sealed))
        #expect(request.url == "https://relay.example/v1/relay/objects/\(upload.object.base64URL)?offset=0&stored=\(upload.storedSize)&expires=2000000000")
        #expect(request.header("Content-Type") == "application/octet-stream" && request.header("X-Coords-Timestamp") == "100")
        let path = "/v1/relay/objects/\(upload.object.base64URL)?offset=0&stored=\(upload.storedSize)&expires=2000000000"
        #expect(
            request.header("X-Coords-Signature") == MailboxAuth.headers(signer: Self.signer, method: "PUT", path: path, timestamp: 100)["X-Coords-Signature"])
        #expect(request.body.count <= Objects.maximumPartByteCount)
        #expect(try upload.handle(status: 200, body: Self.state(upload, stored: 2 * Self.sealed)) == .stored(2 * Self.sealed))
        #expect(upload.need == .init(offset: 131_072, count: 131_072))
        // A full-size part fits OBJECT_PART_MAX.
        var big = try Self.upload(size: 10_000_000, partChunks: 99)
        #expect(big.partChunks == 63)
        let part = try #require(try big.supply([UInt8](repeating: 0, count: 63 * 65_536), timestamp: 1))
        #expect(part.body.count == 4_129_776 && part.body.count <= Objects.maximumPartByteCount)
    }

    @Test func hostileAnswersAreRefusedAndChangeNothing() throws {
        var upload = try Self.upload()
        _ = try upload.supply([UInt8](repeating: 0, count: 131_072), timestamp: 1)
        let before = upload.need
        for (status, body) in [
            (200, Self.state(upload, stored: 1_000)),  // not a chunk boundary
            (200, Self.state(upload, stored: upload.storedSize + Self.sealed)),  // past the object
            (200, Self.state(upload, stored: Self.sealed, object: "AAAAAAAAAAAAAAAAAAAAAA")),  // another object
            (200, Self.state(upload, stored: Self.sealed, size: 999)),
            (200, Array("not json".utf8)), (200, Array(#"{"stored":-1}"#.utf8)),
            (409, Array(#"{"error":"offset_mismatch","message":"x"}"#.utf8))
        ] {
            #expect(throws: WireError.self, "\(status) \(String(decoding: body, as: UTF8.self))") {
                _ = try upload.handle(status: status, body: body)
            }
            #expect(upload.need == before)
        }
        for (status, code) in [(403, "not_owner"), (409, "object_mismatch"), (429, "quota"), (413, "object_too_large")] {
            let body = JSONValue.object(["error": .string(code), "message": .string("\u{1b}[2Jno")]).serialized()
            do {
                _ = try upload.handle(status: status, body: body)
                Issue.record("\(status) \(code) was accepted")
            } catch WireError.relayError(let got, let gotCode, let message) {
                #expect(got == status && gotCode == code && !message.contains("\u{1b}"))
            }
        }
        // Transient refusals ask for the same part again, after the relay's Retry-After (capped).
        #expect(try upload.handle(status: 503, body: [], retryAfter: "7") == .retry(after: 7))
        #expect(
            try upload.handle(status: 429, body: Array(#"{"error":"rate_limited","message":"x"}"#.utf8), retryAfter: "999999")
                == .retry(after: TransferPace.maximumWaitSeconds))
        #expect(upload.need == before)
    }

    /// A relay that says it holds more than this process sent (a restart) moves the upload on;
    /// the chunks it holds are sealed for the digest only, and the digest is the whole object's.
    @Test func aRestartSealsHeldChunksForTheDigestOnly() throws {
        let file = (0..<300_000).map { UInt8(truncatingIfNeeded: $0) }
        var upload = try Self.upload()
        #expect(
            try upload.handle(status: 409, body: Array(#"{"error":"offset_mismatch","message":"x","stored":\#(4 * Self.sealed)}"#.utf8))
                == .stored(4 * Self.sealed))
        var requests = 0
        while let need = upload.need {
            if try upload.supply(Array(file[Int(need.offset)..<Int(need.offset) + need.count]), timestamp: 5) != nil {
                requests += 1
                _ = try upload.handle(status: 200, body: Self.state(upload, stored: upload.storedSize))
            }
        }
        #expect(requests == 1)  // chunk 4 (the last) alone
        var sealer = try ObjectSealer(key: Self.key, object: upload.object, size: 300_000)
        var whole = try sealer.update(file)
        #expect(upload.digest == (try sealer.finish(appendingTo: &whole)))
        #expect(throws: WireError.self) { _ = try upload.supply([], timestamp: 6) }
    }

    @Test func anEmptyFileIsOnePartOfOneChunk() throws {
        var upload = try Self.upload(size: 0)
        #expect(upload.need == .init(offset: 0, count: 0))
        let request = try #require(try upload.supply([], timestamp: 1))
        #expect(request.body.count == 16 && upload.digest?.count == 32)
        #expect(throws: WireError.self) { _ = try upload.supply([1], timestamp: 2) }
    }

    @Test func aDownloadAsksForTheRestAndRefusesAWholeAnswerToARange() throws {
        let file = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 5) }
        var sealer = try ObjectSealer(key: Self.key, object: try ObjectID(bytes: [UInt8](repeating: 1, count: 16)), size: 200_000)
        var object = try sealer.update(file)
        let digest = try sealer.finish(appendingTo: &object)
        let attachment = try FileAttachment(
            object: sealer.object, size: 200_000, type: "image/jpeg", name: "a.jpg", digest: digest, key: Self.key, expiresAt: 2_000_000_000)
        var download = try ObjectDownload(server: "https://relay.example", file: attachment)
        #expect(try download.request().header("Range") == nil)
        #expect(try download.check(status: 200) == .body)
        #expect(throws: WireError.self) { try download.check(status: 206) }
        var out: [UInt8] = []
        try object.withUnsafeBytes { try download.take(UnsafeRawBufferPointer(rebasing: $0[..<70_000]), appendingTo: &out) }
        #expect(try download.request().header("Range") == "bytes=70000-")
        #expect(throws: WireError.self) { try download.check(status: 200) }  // the whole object again: refused
        #expect(throws: WireError.self) { try download.check(status: 404) }
        #expect(throws: WireError.self) { try download.check(status: 403) }
        #expect(try download.check(status: 206) == .body)
        try object.withUnsafeBytes { try download.take(UnsafeRawBufferPointer(rebasing: $0[70_000...]), appendingTo: &out) }
        try download.finish()
        #expect(out == file)
    }

    @Test func aBusyRelayIsRetriedAfterItsRetryAfterWithinBounds() throws {
        let attachment = try FileAttachment(
            object: try ObjectID(bytes: [UInt8](repeating: 2, count: 16)), size: 10, type: "text/plain", name: "", digest: [UInt8](repeating: 0, count: 32),
            key: Self.key, expiresAt: 2_000_000_000)
        let download = try ObjectDownload(server: "https://relay.example", file: attachment)
        #expect(try download.check(status: 429, retryAfter: "12") == .retry(after: 12))
        #expect(try download.check(status: 503) == .retry(after: 5))
        #expect(try download.check(status: 500, retryAfter: "0") == .retry(after: 1))  // never "now": 0 is "read the body" at the C ABI
        #expect(try download.check(status: 502, retryAfter: "99999999999999999999") == .retry(after: 5))  // not a UInt64
        #expect(try download.check(status: 503, retryAfter: "86400") == .retry(after: TransferPace.maximumWaitSeconds))
        #expect(try download.check(status: 429, retryAfter: "Wed, 21 Oct 2026 07:28:00 GMT") == .retry(after: 5))
        #expect(try download.check(status: 429, retryAfter: " 7 ") == .retry(after: 7))
        #expect(try download.check(status: 429, retryAfter: "-3") == .retry(after: 5))
        #expect(throws: WireError.self) { try download.check(status: 413) }
        #expect(throws: WireError.self) { try download.check(status: 301) }
    }
}
