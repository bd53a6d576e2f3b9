import Foundation
import Testing

@testable import CoordsCore

/// `KnownAnswers/objects-v1.json`: PROTOCOL.md §12 known answers computed by
/// scripts/make-object-vectors.py, a second implementation written from §12 alone.
struct ObjectVectors: Decodable, Sendable {
    struct File: Decodable, Sendable {
        let size: UInt64, chunks: Int, stored: UInt64, tags: [String], sha256: String, objectHex: String?
    }
    struct Other: Decodable, Sendable { let object: String, size: UInt64, chunkHex: String }
    struct Refused: Decodable, Sendable { let rule: String, payload: AnyJSON }
    /// A JSON value kept as text, for the message vectors (parsed by our own parser).
    struct AnyJSON: Decodable, Sendable {
        let value: JSONValue
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            value = try Self.decode(container)
        }
        static func decode(_ container: any SingleValueDecodingContainer) throws -> JSONValue {
            if container.decodeNil() { return .null }
            if let bool = try? container.decode(Bool.self) { return .bool(bool) }
            if let integer = try? container.decode(Int64.self) { return .integer(integer) }
            if let double = try? container.decode(Double.self) { return .double(double) }
            if let string = try? container.decode(String.self) { return .string(string) }
            if let array = try? container.decode([AnyJSON].self) { return .array(array.map(\.value)) }
            let object = try container.decode([String: AnyJSON].self)
            var out = JSONObject()
            for key in object.keys.sorted() { out[key] = object[key]?.value }
            return .object(out)
        }
    }

    let key: String, object: String, files: [File], otherObject: Other, validMessages: [AnyJSON], refusedMessages: [Refused]

    static func load() throws -> ObjectVectors {
        let url = Fixtures.repositoryRoot.appendingPathComponent("Tests/CoordsCoreTests/KnownAnswers/objects-v1.json")
        return try JSONDecoder().decode(ObjectVectors.self, from: Data(contentsOf: url))
    }

    func fileKey() throws -> SecretBytes { SecretBytes(copying: try Base64.decode(key)) }
    func objectID() throws -> ObjectID { try ObjectID(base64URL: object) }

    /// Byte j of a vector file is j mod 251.
    static func fileBytes(_ size: UInt64) -> [UInt8] { (0..<Int(size)).map { UInt8($0 % 251) } }
}

/// Seals `plaintext` feeding it in pieces of the given sizes (cycled), returning the object and digest.
func sealObject(_ plaintext: [UInt8], key: SecretBytes, object: ObjectID, pieces: [Int] = [Objects.chunkByteCount]) throws -> (object: [UInt8], digest: [UInt8])
{
    var sealer = try ObjectSealer(key: key, object: object, size: UInt64(plaintext.count))
    var out: [UInt8] = []
    var offset = 0
    var turn = 0
    while offset < plaintext.count {
        let take = min(pieces[turn % pieces.count], plaintext.count - offset)
        try plaintext[offset..<(offset + take)].withUnsafeBytes { try sealer.update($0, appendingTo: &out) }
        offset += take
        turn += 1
    }
    let digest = try sealer.finish(appendingTo: &out)
    #expect(UInt64(out.count) == sealer.storedSize)
    return (out, digest)
}

/// Opens `object` feeding it in pieces; throws what the opener throws.
func openObject(_ object: [UInt8], file: FileAttachment, pieces: [Int] = [Objects.chunkByteCount + 16]) throws -> [UInt8] {
    var opener = try ObjectOpener(file: file)
    var out: [UInt8] = []
    var offset = 0
    var turn = 0
    while offset < object.count {
        let take = min(pieces[turn % pieces.count], object.count - offset)
        try object[offset..<(offset + take)].withUnsafeBytes { try opener.update($0, appendingTo: &out) }
        offset += take
        turn += 1
    }
    try opener.finish()
    return out
}

@Suite struct ObjectVectorTests {
    let vectors: ObjectVectors
    init() throws { vectors = try ObjectVectors.load() }

    @Test func everyFileSealsToTheIndependentBytesInAnyPieces() throws {
        let key = try vectors.fileKey()
        let object = try vectors.objectID()
        #expect(object.base64URL == vectors.object)
        for file in vectors.files {
            let plaintext = ObjectVectors.fileBytes(file.size)
            #expect(try Objects.chunkCount(size: file.size) == file.chunks)
            #expect(try Objects.storedSize(size: file.size) == file.stored)
            for pieces in [[Objects.chunkByteCount], [1, 7, 65_535], [100_000], [3_000_000]] {
                let (sealed, digest) = try sealObject(plaintext, key: key, object: object, pieces: pieces)
                #expect(UInt64(sealed.count) == file.stored, "size \(file.size)")
                #expect(Base64.encode(digest) == file.sha256, "size \(file.size)")
                #expect(Base64.encode(SHA256.hash(sealed)) == file.sha256)
                var tags: [String] = []
                var offset = 0
                for index in 0..<file.chunks {
                    let length = Objects.plaintextCount(ofChunk: index, size: file.size) + 16
                    tags.append(Base64.encode(Array(sealed[(offset + length - 16)..<(offset + length)])))
                    offset += length
                }
                #expect(tags == file.tags, "size \(file.size) pieces \(pieces)")
                if let hex = file.objectHex { #expect(Hex.encode(sealed) == hex) }
                let attachment = try FileAttachment(
                    object: object, size: file.size, type: "application/octet-stream", name: "v", digest: digest, key: key, expiresAt: 1)
                #expect(try openObject(sealed, file: attachment, pieces: pieces.map { $0 + 3 }) == plaintext)
            }
        }
    }

    @Test func eachChunkSealsOnItsOwnToTheSameBytes() throws {
        let key = try vectors.fileKey()
        let object = try vectors.objectID()
        let file = try #require(vectors.files.first { $0.size == 200_000 })
        let plaintext = ObjectVectors.fileBytes(file.size)
        var sealed: [UInt8] = []
        for index in 0..<file.chunks {
            let start = index * Objects.chunkByteCount
            let end = min(plaintext.count, start + Objects.chunkByteCount)
            try plaintext[start..<end].withUnsafeBytes {
                try Objects.sealChunk($0, index: index, size: file.size, key: key, object: object, appendingTo: &sealed)
            }
        }
        #expect(Base64.encode(SHA256.hash(sealed)) == file.sha256)
        let other = try ObjectID(base64URL: vectors.otherObject.object)
        #expect(Hex.encode(try sealObject([0], key: key, object: other).object) == vectors.otherObject.chunkHex)
    }

    @Test func fileMessagesParseAsTheVectorsSay() throws {
        for valid in vectors.validMessages {
            let payload = try MessagePayload(json: valid.value.serialized())
            let file = try FileAttachment(payload: payload)
            let member = try #require(valid.value.objectValue?["file"])
            #expect(try FileAttachment(json: file.json) == file)
            #expect(try JSONValue.parse(file.json.serialized()).objectValue?.keys.sorted() == member.objectValue?.keys.sorted())
            #expect(file.payload(id: payload.id, caption: payload.text, sentAt: payload.sentAt).kind == "file")
        }
        #expect(vectors.refusedMessages.count >= 20)
        for refused in vectors.refusedMessages {
            let member = try #require(refused.payload.value.objectValue?["file"])
            #expect(throws: WireError.self, "\(refused.rule)") { try FileAttachment(json: member) }
            do {
                _ = try FileAttachment(json: member)
            } catch let error as WireError {
                guard case .malformedFile = error else {
                    Issue.record("\(refused.rule): \(error)")
                    continue
                }
            }
        }
    }
}

@Suite struct ObjectAttackTests {
    static let key = SecretBytes(copying: [UInt8](repeating: 7, count: 32))
    static var object: ObjectID { get throws { try ObjectID(bytes: [UInt8](repeating: 9, count: 16)) } }

    /// A file of three chunks (the last one short), sealed, with its attachment.
    static func threeChunks() throws -> (plaintext: [UInt8], sealed: [UInt8], file: FileAttachment) {
        let plaintext = (0..<(2 * Objects.chunkByteCount + 1_000)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let (sealed, digest) = try sealObject(plaintext, key: key, object: try object)
        let file = try FileAttachment(
            object: try object, size: UInt64(plaintext.count), type: "image/jpeg", name: "p.jpg", digest: digest, key: key, expiresAt: 1)
        return (plaintext, sealed, file)
    }

    static let whole = Objects.chunkByteCount + 16

    static func expectError(_ expected: WireError, _ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            try body()
            Issue.record("expected \(expected)", sourceLocation: sourceLocation)
        } catch let error as WireError {
            switch (expected, error) {
            case (.badChunk(let a), .badChunk(let b)): #expect(a == b, sourceLocation: sourceLocation)
            case (.objectMismatch, .objectMismatch): break
            default: Issue.record("expected \(expected), got \(error)", sourceLocation: sourceLocation)
            }
        } catch {
            Issue.record("expected \(expected), got \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func truncationAnywhereIsRefused() throws {
        let (_, sealed, file) = try Self.threeChunks()
        for cut in [0, 1, Self.whole - 1, Self.whole, 2 * Self.whole, sealed.count - 1] {
            Self.expectError(.objectMismatch("")) { _ = try openObject(Array(sealed[..<cut]), file: file) }
        }
        // A reader told the object has two chunks: chunk 1 is not marked last.
        var shorter = file
        shorter.size = UInt64(2 * Objects.chunkByteCount)
        Self.expectError(.badChunk(index: 1)) { _ = try openObject(Array(sealed[..<(2 * Self.whole)]), file: shorter) }
    }

    @Test func reorderedSplicedFlippedOrExtendedObjectsAreRefused() throws {
        let (plaintext, sealed, file) = try Self.threeChunks()
        var swapped = sealed
        swapped.replaceSubrange(0..<Self.whole, with: sealed[Self.whole..<(2 * Self.whole)])
        swapped.replaceSubrange(Self.whole..<(2 * Self.whole), with: sealed[0..<Self.whole])
        Self.expectError(.badChunk(index: 0)) { _ = try openObject(swapped, file: file) }
        // Chunk 1 of another object under the same key, spliced in.
        let otherID = try ObjectID(bytes: [UInt8](repeating: 10, count: 16))
        let other = try sealObject(plaintext, key: Self.key, object: otherID).object
        var spliced = sealed
        spliced.replaceSubrange(Self.whole..<(2 * Self.whole), with: other[Self.whole..<(2 * Self.whole)])
        Self.expectError(.badChunk(index: 1)) { _ = try openObject(spliced, file: file) }
        for (index, position) in [(0, 5), (1, Self.whole + 100), (2, sealed.count - 1)] {
            var flipped = sealed
            flipped[position] ^= 0x01
            Self.expectError(.badChunk(index: index)) { _ = try openObject(flipped, file: file) }
        }
        Self.expectError(.objectMismatch("")) { _ = try openObject(sealed + [0], file: file) }
        var wrongKey = file
        wrongKey.key = SecretBytes(copying: [UInt8](repeating: 8, count: 32))
        Self.expectError(.badChunk(index: 0)) { _ = try openObject(sealed, file: wrongKey) }
        var wrongDigest = file
        wrongDigest.digest[0] ^= 1
        Self.expectError(.objectMismatch("")) { _ = try openObject(sealed, file: wrongDigest) }
    }

    @Test func aFailedOpenerStaysFailedAndHandsOutNothingOfTheBadChunk() throws {
        let (_, sealed, file) = try Self.threeChunks()
        var flipped = sealed
        flipped[Self.whole + 1] ^= 0x80
        var opener = try ObjectOpener(file: file)
        var out: [UInt8] = []
        Self.expectError(.badChunk(index: 1)) { try flipped.withUnsafeBytes { try opener.update($0, appendingTo: &out) } }
        #expect(out.count == Objects.chunkByteCount)  // chunk 0 only; final only after finish()
        Self.expectError(.badChunk(index: 1)) { _ = try opener.update([1]) }
        Self.expectError(.badChunk(index: 1)) { try opener.finish() }
    }

    @Test func aDownloadResumesAfterARestartFromWhatWasOpened() throws {
        let (plaintext, sealed, file) = try Self.threeChunks()
        var first = try ObjectOpener(file: file)
        var saved: [UInt8] = []
        try sealed[..<(Self.whole + 500)].withUnsafeBytes { try first.update($0, appendingTo: &saved) }
        #expect(saved.count == Objects.chunkByteCount && first.received == UInt64(Self.whole + 500))
        // The process dies; the chunk under way is lost, the opened chunk was saved.
        var resumed = try ObjectOpener(file: file)
        try saved.withUnsafeBytes { try resumed.replay(opened: $0) }
        #expect(resumed.received == UInt64(Self.whole) && resumed.opened == UInt64(Objects.chunkByteCount))
        var rest: [UInt8] = []
        try sealed[Int(resumed.received)...].withUnsafeBytes { try resumed.update($0, appendingTo: &rest) }
        try resumed.finish()
        #expect(saved + rest == plaintext)
        // Replayed bytes that are not whole chunks, or come after object bytes, are refused.
        var partial = try ObjectOpener(file: file)
        Self.expectError(.objectMismatch("")) { try Array(saved.prefix(10)).withUnsafeBytes { try partial.replay(opened: $0) } }
        var late = try ObjectOpener(file: file)
        _ = try late.update(Array(sealed.prefix(3)))
        Self.expectError(.objectMismatch("")) { try saved.withUnsafeBytes { try late.replay(opened: $0) } }
        // Replaying other plaintext gives another digest: the download fails at the end.
        var lying = try ObjectOpener(file: file)
        try [UInt8](repeating: 0, count: Objects.chunkByteCount).withUnsafeBytes { try lying.replay(opened: $0) }
        _ = try lying.update(Array(sealed[Self.whole...]))
        Self.expectError(.objectMismatch("")) { try lying.finish() }
    }

    @Test func theSealerRefusesAFileOfAnotherLength() throws {
        var long = try ObjectSealer(key: Self.key, object: try Self.object, size: 10)
        Self.expectError(.objectMismatch("")) { _ = try long.update([UInt8](repeating: 1, count: 11)) }
        _ = try long.update([UInt8](repeating: 1, count: 10))
        Self.expectError(.objectMismatch("")) { _ = try long.update([1]) }
        var short = try ObjectSealer(key: Self.key, object: try Self.object, size: 10)
        _ = try short.update([UInt8](repeating: 1, count: 9))
        var out: [UInt8] = []
        Self.expectError(.objectMismatch("")) { _ = try short.finish(appendingTo: &out) }
        Self.expectError(.objectMismatch("")) { _ = try ObjectSealer(key: Self.key, object: try Self.object, size: Objects.maximumSize + 1) }
        #expect(throws: CryptoError.self) { _ = try ObjectSealer(key: SecretBytes(copying: [1]), object: try Self.object, size: 1) }
        #expect(try Objects.storedSize(size: Objects.maximumSize) == Objects.maximumStored)
        #expect(try Objects.chunkCount(size: Objects.maximumSize) == Objects.maximumChunks)
        #expect(XChaCha20Poly1305.sizesMatchLibsodium)
    }

    @Test func randomFilesRoundTripInRandomPieces() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<12 {
            let size = Int.random(in: 0...(3 * Objects.chunkByteCount + 17), using: &generator)
            let plaintext = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let key = try SecretBytes(randomCount: 32)
            let object = try ObjectID.random()
            let pieces = (0..<3).map { _ in Int.random(in: 1...(2 * Objects.chunkByteCount), using: &generator) }
            let (sealed, digest) = try sealObject(plaintext, key: key, object: object, pieces: pieces)
            let file = try FileAttachment(object: object, size: UInt64(size), type: "audio/mp4", name: "", digest: digest, key: key, expiresAt: 1)
            #expect(try openObject(sealed, file: file, pieces: pieces.reversed()) == plaintext)
            var stream = SHA256Stream()
            for piece in stride(from: 0, to: sealed.count, by: 4_099) { stream.update(Array(sealed[piece..<min(sealed.count, piece + 4_099)])) }
            #expect(stream.finish() == digest)
        }
    }

    /// Large pieces (hundreds of KiB at once) give the same plaintext and digest as small
    /// pieces, starting mid-chunk or not, and a changed byte or a wrong digest is still refused.
    @Test func largePiecesOpenTheSame() throws {
        var generator = SystemRandomNumberGenerator()
        let size = 20 * Objects.chunkByteCount + 1_234
        let plaintext = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let key = try SecretBytes(randomCount: 32)
        let object = try ObjectID.random()
        let (sealed, digest) = try sealObject(plaintext, key: key, object: object)
        let file = try FileAttachment(object: object, size: UInt64(size), type: "video/mp4", name: "", digest: digest, key: key, expiresAt: 1)
        let big = 262_144
        for pieces in [[size], [big * 2 + 3], [1, big, 9]] {
            let again = try sealObject(plaintext, key: key, object: object, pieces: pieces)
            #expect(again.object == sealed && again.digest == digest, "\(pieces)")
        }
        for pieces in [[sealed.count], [big], [1_000, big + 5_000], [big * 2 + 1, 7]] {
            #expect(try openObject(sealed, file: file, pieces: pieces) == plaintext, "\(pieces)")
        }
        var flipped = sealed
        flipped[big + 100] ^= 1  // in chunk 4, inside the first large piece
        #expect(throws: WireError.badChunk(index: 4)) { _ = try openObject(flipped, file: file, pieces: [big * 2]) }
        var wrong = file
        wrong.digest[0] ^= 1
        #expect(throws: WireError.self) { _ = try openObject(sealed, file: wrong, pieces: [big * 3]) }
        #expect(throws: WireError.self) { _ = try openObject(sealed, file: wrong, pieces: [500]) }
    }

    /// A piece over 8 MiB (a whole object at once) opens in one call.
    @Test func aPieceOverEightMebibytesOpens() throws {
        let size = 130 * Objects.chunkByteCount - 3
        let plaintext = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ ($0 >> 16)) }
        let key = try SecretBytes(randomCount: 32)
        let object = try ObjectID.random()
        let (sealed, digest) = try sealObject(plaintext, key: key, object: object)
        #expect(sealed.count > 8_388_608)
        let file = try FileAttachment(object: object, size: UInt64(size), type: "video/mp4", name: "", digest: digest, key: key, expiresAt: 1)
        #expect(try openObject(sealed, file: file, pieces: [sealed.count]) == plaintext)
        #expect(try openObject(sealed, file: file, pieces: [300_000, sealed.count]) == plaintext)
    }

    @Test func typesAndNamesFollowTheRules() {
        for good in ["image/jpeg", "a/b", "application/vnd.api+json", "Audio/MP4", "x/" + String(repeating: "y", count: 125)] {
            #expect(FileAttachment.isValidType(good), "\(good)")
        }
        for bad in ["", "ab", "image", "image/", "/jpeg", "a/b/c", "text/plain; charset=utf-8", "im age/x", "x/" + String(repeating: "y", count: 126), "ü/x"] {
            #expect(!FileAttachment.isValidType(bad), "\(bad)")
        }
        for good in ["", "a", "photo 1.jpg", "été.m4a", String(repeating: "x", count: 255), "..."] { #expect(FileAttachment.isValidName(good), "\(good)") }
        for bad in [".", "..", "a/b", "a\\b", "a\u{0}b", "a\nb", "a\u{7F}b", String(repeating: "x", count: 256)] {
            #expect(!FileAttachment.isValidName(bad), "\(bad)")
        }
    }

    /// Issue 59, defect 7: a name that reads as another on screen is never written as such.
    @Test func theLocalNameDisarmsWhatCouldDisguiseAName() throws {
        func local(_ name: String) throws -> String {
            try FileAttachment(
                object: try ObjectID.random(), size: 1, type: "a/b", name: name, digest: [UInt8](repeating: 0, count: 32),
                key: SecretBytes(copying: [UInt8](repeating: 1, count: 32)), expiresAt: 1
            ).localName
        }
        #expect(try local("invoice\u{202E}gpj.exe") == "invoice_gpj.exe")
        #expect(try local("a\u{85}b\u{9F}c") == "a_b_c")  // C1 controls
        for invisible in ["\u{061C}", "\u{200B}", "\u{200E}", "\u{200F}", "\u{2028}", "\u{202A}", "\u{2066}", "\u{2069}", "\u{FEFF}", "\u{2060}"] {
            #expect(try local("x" + invisible + "y") == "x_y", "\(invisible.unicodeScalars.first.map { String($0.value, radix: 16) } ?? "")")
        }
        #expect(try local(".bashrc") == "_bashrc")
        #expect(try local("été 1.m4a") == "été 1.m4a")
        #expect(try local("") == "coords-file" && (try local("\u{202E}")) == "coords-file")
        let long = String(repeating: "x", count: 255)
        #expect(try local(long) == long)
    }
}
