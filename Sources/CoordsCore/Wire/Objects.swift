/// Attachments as chunked, encrypted objects (PROTOCOL.md §12): the constants, the object id,
/// the streaming sealer and opener, and the file message.
///
/// Nothing here holds a whole file: a sealer or an opener keeps at most one chunk
/// (``Objects/chunkByteCount`` + 16 bytes) besides what the caller hands it, so memory does not
/// grow with the file.
public enum Objects {
    /// Plaintext bytes in every chunk but the last (`OBJECT_CHUNK`).
    public static let chunkByteCount = 65_536
    /// Bytes a chunk grows by when sealed (`OBJECT_TAG`).
    public static let tagByteCount = 16
    /// Plaintext bytes of one file, at most (`OBJECT_MAX_SIZE`, 100 MiB).
    public static let maximumSize: UInt64 = 104_857_600
    /// Chunks of the largest file (`OBJECT_MAX_CHUNKS`).
    public static let maximumChunks = 1_600
    /// Bytes of the largest object (`OBJECT_MAX_STORED`).
    public static let maximumStored: UInt64 = 104_883_200
    /// Bytes of object in one upload request, at most (`OBJECT_PART_MAX`, 4 MiB).
    public static let maximumPartByteCount = 4_194_304
    /// The longest life a relay grants an object, in seconds (`OBJECT_TTL_MAX`, 7 days).
    public static let maximumLifetimeSeconds: UInt64 = 604_800
    /// Stored bytes per owner key on one relay, by default (`OBJECT_QUOTA`, 256 MiB).
    public static let defaultQuotaBytes: UInt64 = 268_435_456
    /// Objects per owner key on one relay, by default (`OBJECT_COUNT_MAX`).
    public static let defaultMaximumObjects = 64
    /// The domain label at the start of every chunk's associated data.
    static let label = Array("CoordsCore/object/v1".utf8)

    /// The number of chunks of a file of `size` bytes: `max(1, ceil(size / OBJECT_CHUNK))`.
    /// - Throws: ``WireError/objectMismatch(_:)`` when `size` is over ``maximumSize``.
    public static func chunkCount(size: UInt64) throws(WireError) -> Int {
        guard size <= maximumSize else {
            throw .objectMismatch("a file of \(size) bytes is over the limit of \(maximumSize) bytes (100 MiB)")
        }
        // size ≤ 100 MiB, so neither the sum nor the conversion can overflow.
        return max(1, Int((size + UInt64(chunkByteCount) - 1) / UInt64(chunkByteCount)))
    }

    /// The stored (sealed) length of a file of `size` bytes: `size + 16 × chunks`.
    /// - Throws: ``WireError/objectMismatch(_:)`` when `size` is over ``maximumSize``.
    public static func storedSize(size: UInt64) throws(WireError) -> UInt64 {
        size + UInt64(try chunkCount(size: size)) * UInt64(tagByteCount)
    }

    /// The plaintext length of chunk `index` of a file of `size` bytes (the caller checked
    /// `index < chunkCount(size:)` and `size ≤ maximumSize`).
    static func plaintextCount(ofChunk index: Int, size: UInt64) -> Int {
        let start = UInt64(index) * UInt64(chunkByteCount)
        return start >= size ? 0 : Int(min(UInt64(chunkByteCount), size - start))
    }

    /// `nonce_i` of §12.2: `oid ‖ u32(i) ‖ last ‖ 0x00 0x00 0x00`.
    static func nonce(_ object: ObjectID, index: Int, last: Bool) -> [UInt8] {
        var out = object.bytes
        out.reserveCapacity(24)
        out.appendIndexAndFlag(index, last)
        out.append(contentsOf: [0, 0, 0])
        return out
    }

    /// `ad_i` of §12.2: `"CoordsCore/object/v1" ‖ oid ‖ u32(i) ‖ last`.
    static func associatedData(_ object: ObjectID, index: Int, last: Bool) -> [UInt8] {
        var out = label
        out.reserveCapacity(41)
        out.append(contentsOf: object.bytes)
        out.appendIndexAndFlag(index, last)
        return out
    }

    /// Seals chunk `index` of a file of `size` bytes on its own (random access: resuming an
    /// upload, or recomputing a digest), appending `c_i` to `out`.
    /// - Throws: ``WireError/objectMismatch(_:)`` for an index outside the file or a plaintext of
    ///   the wrong length for that chunk; ``CryptoError`` for a key that is not 32 bytes.
    public static func sealChunk(
        _ plaintext: UnsafeRawBufferPointer, index: Int, size: UInt64, key: SecretBytes, object: ObjectID, appendingTo out: inout [UInt8]
    ) throws {
        let chunks = try chunkCount(size: size)
        guard index >= 0, index < chunks else { throw WireError.objectMismatch("chunk \(index) is outside a file of \(chunks) chunks") }
        let expected = plaintextCount(ofChunk: index, size: size)
        guard plaintext.count == expected else {
            throw WireError.objectMismatch("chunk \(index) holds \(expected) bytes, not \(plaintext.count)")
        }
        let last = index == chunks - 1
        try XChaCha20Poly1305.seal(
            plaintext, key: key, nonce: nonce(object, index: index, last: last), associatedData: associatedData(object, index: index, last: last),
            appendingTo: &out)
    }
}

extension [UInt8] {
    /// Appends `u32(index) ‖ (last ? 0x01 : 0x00)` (index < 2³², checked by the callers: at most 1,600 chunks).
    fileprivate mutating func appendIndexAndFlag(_ index: Int, _ last: Bool) {
        let value = UInt32(truncatingIfNeeded: index)
        append(contentsOf: [UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
        )
        append(last ? 1 : 0)
    }
}

/// Cuts a stream of bytes that arrives in pieces of any size into chunks of given lengths,
/// holding at most one incomplete chunk: the sealer's and the opener's buffer.
struct ChunkAssembler: Sendable {
    /// The start of the chunk under way.
    private(set) var bytes: [UInt8] = []

    /// A complete chunk: a part of the caller's input (no copy), or the bytes collected here.
    enum Chunk {
        case borrowed(UnsafeRawBufferPointer)
        case collected([UInt8])

        /// Runs `body` on the chunk's bytes.
        func withBytes(_ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
            switch self {
            case .borrowed(let bytes): try body(bytes)
            case .collected(let bytes): try bytes.withUnsafeBytes(body)
            }
        }
    }

    /// The next complete chunk of `length` bytes from what is held and the front of `input`
    /// (which loses what was taken), or nil once `input` is used up without completing one (its
    /// bytes are then held here). `length` is at least 1 whenever `input` is not empty.
    mutating func take(from input: inout UnsafeRawBufferPointer, length: Int) -> Chunk? {
        guard !input.isEmpty, length > 0 else { return nil }  // a length of 0 would never consume the input
        if bytes.isEmpty, input.count >= length {  // a whole chunk in the input
            defer { input = UnsafeRawBufferPointer(rebasing: input[length...]) }
            return .borrowed(UnsafeRawBufferPointer(rebasing: input[..<length]))
        }
        let count = min(length - bytes.count, input.count)
        bytes.appendBytes(UnsafeRawBufferPointer(rebasing: input[..<count]))
        input = UnsafeRawBufferPointer(rebasing: input[count...])
        guard bytes.count == length else { return nil }
        defer { bytes = [] }
        return .collected(bytes)
    }
}

/// An object's id: 16 random bytes, b64u (22 characters) in JSON and in URLs (PROTOCOL.md §12.2).
public struct ObjectID: Hashable, Sendable, CustomStringConvertible {
    /// The 16 bytes.
    public let bytes: [UInt8]

    /// Wraps 16 bytes.
    /// - Throws: ``WireError/invalidLength(field:expected:actual:)``.
    public init(bytes: [UInt8]) throws(WireError) {
        guard bytes.count == 16 else { throw .invalidLength(field: "object id", expected: 16, actual: bytes.count) }
        self.bytes = bytes
    }

    /// Parses the b64u form (22 characters, strict).
    /// - Throws: ``WireError/invalidBase64(field:)``, ``WireError/invalidLength(field:expected:actual:)``.
    public init(base64URL text: String) throws {
        try self.init(bytes: try Base64.decode(text, variant: .urlSafeNoPadding, field: "object"))
    }

    /// A new random id.
    /// - Throws: ``CryptoError`` when the random source fails.
    public static func random(using random: any RandomSource = SystemRandomSource()) throws -> ObjectID {
        try ObjectID(bytes: try random.bytes(16))
    }

    /// The b64u form.
    public var base64URL: String { Base64.encode(bytes) }
    /// The b64u form.
    public var description: String { base64URL }
}

/// Seals a file into its object as the bytes arrive (PROTOCOL.md §12.2), computing the digest on
/// the way. Feed the file front to back with ``update(_:appendingTo:)``, then call
/// ``finish(appendingTo:)``; every sealed byte is handed out as soon as its chunk is complete, so
/// the sealer holds at most one chunk. A value type: the caller owns the output buffers.
public struct ObjectSealer: Sendable {
    /// The object's id.
    public let object: ObjectID
    /// The file's length in bytes.
    public let size: UInt64
    /// The object's length in bytes (`size + 16 × chunks`).
    public let storedSize: UInt64
    /// The number of chunks.
    public let chunkCount: Int
    private let key: SecretBytes
    private var pending = ChunkAssembler()
    private var next = 0
    private var consumed: UInt64 = 0
    private var digest = SHA256Stream()
    private var done = false

    /// A sealer for a file of `size` bytes under `key` (32 random bytes, fresh for this file).
    /// - Throws: ``WireError/objectMismatch(_:)`` when `size` is over ``Objects/maximumSize``;
    ///   ``CryptoError/invalidKeyLength(what:expected:actual:)``.
    public init(key: SecretBytes, object: ObjectID, size: UInt64) throws {
        try CryptoError.checkKeyLength("file key", expected: XChaCha20Poly1305.keyByteCount, actual: key.count)
        self.key = key
        self.object = object
        self.size = size
        chunkCount = try Objects.chunkCount(size: size)
        storedSize = try Objects.storedSize(size: size)
    }

    /// Adds the next bytes of the file and appends the sealed bytes of every chunk they complete
    /// to `out`.
    /// - Throws: ``WireError/objectMismatch(_:)`` when the bytes run past `size` (nothing of this
    ///   call is sealed then) or the sealer was finished.
    public mutating func update(_ plaintext: UnsafeRawBufferPointer, appendingTo out: inout [UInt8]) throws {
        guard !done else { throw WireError.objectMismatch("the sealer was finished") }
        guard UInt64(plaintext.count) <= size - consumed else {
            throw WireError.objectMismatch("the file is longer than the \(size) bytes it was announced with")
        }
        consumed += UInt64(plaintext.count)
        let start = out.count
        var rest = plaintext
        defer { hash(out, from: start) }  // what was sealed, also when a later chunk failed
        while let chunk = pending.take(from: &rest, length: Objects.plaintextCount(ofChunk: next, size: size)) {
            try chunk.withBytes { try seal($0, into: &out) }
        }
    }

    /// Adds `out[start...]` (sealed just now) to the digest, on the caller's thread.
    private mutating func hash(_ out: [UInt8], from start: Int) {
        out.withUnsafeBytes { all in digest.update(UnsafeRawBufferPointer(rebasing: all[min(start, all.count)...])) }
    }

    /// ``update(_:appendingTo:)`` for an array; returns the sealed bytes (the caller owns them).
    public mutating func update(_ plaintext: [UInt8]) throws -> [UInt8] {
        var out: [UInt8] = []
        try plaintext.withUnsafeBytes { try update($0, appendingTo: &out) }
        return out
    }

    /// Seals what is left (the empty chunk of an empty file) and returns the object's digest
    /// (`SHA256(object)`, 32 bytes) for the file message.
    /// - Throws: ``WireError/objectMismatch(_:)`` when fewer than `size` bytes were given, or the
    ///   sealer was finished already.
    public mutating func finish(appendingTo out: inout [UInt8]) throws -> [UInt8] {
        guard !done else { throw WireError.objectMismatch("the sealer was finished") }
        if next == chunkCount - 1, Objects.plaintextCount(ofChunk: next, size: size) == 0 {
            let start = out.count
            try seal(UnsafeRawBufferPointer(start: nil, count: 0), into: &out)
            out.withUnsafeBytes { digest.update(UnsafeRawBufferPointer(rebasing: $0[start...])) }
        }
        guard next == chunkCount else {
            throw WireError.objectMismatch("the file ended after \(consumed) of its \(size) bytes")
        }
        done = true
        return digest.finish()
    }

    private mutating func seal(_ chunk: UnsafeRawBufferPointer, into out: inout [UInt8]) throws {
        try Objects.sealChunk(chunk, index: next, size: size, key: key, object: object, appendingTo: &out)
        next += 1
    }
}

/// Opens an object as its bytes arrive (PROTOCOL.md §12.2): each chunk is checked with its index,
/// the object id and the last-chunk flag, the length against the file message's `size`, and the
/// whole object against its digest. Plaintext is handed out chunk by chunk; it is **final only
/// once ``finish()`` returned**: a host writes it to a temporary file and removes that file on
/// any error. Holds at most one sealed chunk. After an error every call fails with it.
public struct ObjectOpener: Sendable {
    /// The object's id.
    public let object: ObjectID
    /// The file's length in bytes, from the file message.
    public let size: UInt64
    /// The object's length in bytes.
    public let storedSize: UInt64
    /// The number of chunks.
    public let chunkCount: Int
    private let key: SecretBytes
    private let expectedDigest: [UInt8]
    private var pending = ChunkAssembler()
    private var next = 0
    private var digest = SHA256Stream()
    private var failure: WireError?
    private var done = false

    /// Object bytes taken so far: the chunks opened plus the bytes of the chunk under way (a
    /// download resumed in the same process continues here; after a restart, at a chunk boundary).
    public private(set) var received: UInt64 = 0
    /// The plaintext bytes handed out so far (whole chunks).
    public private(set) var opened: UInt64 = 0

    /// An opener for the object a file message announced.
    /// - Throws: ``WireError/objectMismatch(_:)`` when `size` is over ``Objects/maximumSize`` or the
    ///   digest is not 32 bytes; ``CryptoError/invalidKeyLength(what:expected:actual:)``.
    public init(key: SecretBytes, object: ObjectID, size: UInt64, digest: [UInt8]) throws {
        try CryptoError.checkKeyLength("file key", expected: XChaCha20Poly1305.keyByteCount, actual: key.count)
        guard digest.count == 32 else { throw WireError.objectMismatch("the digest is \(digest.count) bytes, not 32") }
        self.key = key
        self.object = object
        self.size = size
        expectedDigest = digest
        chunkCount = try Objects.chunkCount(size: size)
        storedSize = try Objects.storedSize(size: size)
    }

    /// An opener for `file` (the file message's member).
    /// - Throws: as ``init(key:object:size:digest:)``.
    public init(file: FileAttachment) throws {
        try self.init(key: file.key, object: file.object, size: file.size, digest: file.digest)
    }

    /// Takes the next object bytes and appends the plaintext of every chunk they complete to `out`.
    /// - Throws: ``WireError/badChunk(index:)`` when a chunk does not open (changed, moved,
    ///   from another object, the wrong key); ``WireError/objectMismatch(_:)`` when the bytes run
    ///   past the object's length. Nothing of a chunk that fails is appended.
    public mutating func update(_ sealed: UnsafeRawBufferPointer, appendingTo out: inout [UInt8]) throws {
        if let failure { throw failure }
        guard !done else { throw WireError.objectMismatch("the opener was finished") }
        do {
            guard UInt64(sealed.count) <= storedSize - received else {
                throw WireError.objectMismatch("the object is longer than the \(storedSize) bytes its file message announced")
            }
            received += UInt64(sealed.count)
            // The digest covers the object's bytes in order, whatever the chunks; a failed chunk
            // fails the opener for good, so hashing bytes before their chunk opened changes nothing.
            // Everything runs on the caller's thread (the core starts no threads).
            digest.update(sealed)
            var rest = sealed
            while let chunk = pending.take(from: &rest, length: Objects.plaintextCount(ofChunk: next, size: size) + Objects.tagByteCount) {
                try chunk.withBytes { try open($0, into: &out) }
            }
        } catch let error as WireError {
            failure = error
            throw error
        }
    }

    /// ``update(_:appendingTo:)`` for an array; returns the plaintext (the caller owns it).
    public mutating func update(_ sealed: [UInt8]) throws -> [UInt8] {
        var out: [UInt8] = []
        try sealed.withUnsafeBytes { try update($0, appendingTo: &out) }
        return out
    }

    /// Resumes after a restart: takes the plaintext of the chunks opened before (front to back,
    /// whole chunks) and seals it again to bring the digest up to date (sealing is deterministic,
    /// §12.5). Then the download continues at ``received``.
    /// - Throws: ``WireError/objectMismatch(_:)`` when called after object bytes were taken, or
    ///   for plaintext that does not end on a chunk boundary or runs past the file.
    public mutating func replay(opened plaintext: UnsafeRawBufferPointer) throws {
        if let failure { throw failure }
        guard pending.bytes.isEmpty, !done else { throw WireError.objectMismatch("replay the opened chunks before taking new object bytes") }
        var rest = plaintext
        var sealed: [UInt8] = []
        while !rest.isEmpty {
            guard next < chunkCount else { throw WireError.objectMismatch("the opened bytes run past the \(size)-byte file") }
            let want = Objects.plaintextCount(ofChunk: next, size: size)
            guard rest.count >= want else { throw WireError.objectMismatch("the opened bytes end inside chunk \(next)") }
            sealed.removeAll(keepingCapacity: true)
            try Objects.sealChunk(UnsafeRawBufferPointer(rebasing: rest[..<want]), index: next, size: size, key: key, object: object, appendingTo: &sealed)
            digest.update(sealed)
            rest = UnsafeRawBufferPointer(rebasing: rest[want...])
            next += 1
            received += UInt64(sealed.count)
            opened += UInt64(want)
        }
    }

    /// Checks that the whole object arrived and matches its digest. Only after this returns is
    /// the plaintext handed out final.
    /// - Throws: ``WireError/objectMismatch(_:)`` (the object ended early, or its digest differs:
    ///   the relay served other bytes than the sender uploaded), or the error that failed an
    ///   earlier call.
    public mutating func finish() throws {
        if let failure { throw failure }
        guard !done else { return }
        guard next == chunkCount, pending.bytes.isEmpty else {
            failure = .objectMismatch("the object ended after \(received) of its \(storedSize) bytes")
            throw failure ?? .objectMismatch("")
        }
        guard digest.finish() == expectedDigest else {
            failure = .objectMismatch("the object's SHA-256 is not the one its file message names: the relay served other bytes")
            throw failure ?? .objectMismatch("")
        }
        done = true
    }

    private mutating func open(_ chunk: UnsafeRawBufferPointer, into out: inout [UInt8]) throws {
        let last = next == chunkCount - 1
        do {
            try XChaCha20Poly1305.open(
                chunk, key: key, nonce: Objects.nonce(object, index: next, last: last),
                associatedData: Objects.associatedData(object, index: next, last: last), appendingTo: &out)
        } catch {
            throw WireError.badChunk(index: next)
        }
        next += 1
        opened += UInt64(chunk.count - Objects.tagByteCount)
    }
}

/// The `file` member of a file message (PROTOCOL.md §12.3): where the object is, how long the
/// file is, what it is, and the key that opens it. The key is a secret: it lives in a
/// ``SecretBytes`` and is written only into sealed payloads and sealed store rows.
public struct FileAttachment: Sendable, Equatable {
    /// The object on the sender's relay.
    public var object: ObjectID
    /// The file's length in bytes (0 … ``Objects/maximumSize``).
    public var size: UInt64
    /// The media type (`type/subtype`), a hint only.
    public var type: String
    /// The file's name (0–255 bytes, no path), a hint only.
    public var name: String
    /// `SHA256(object)`, 32 bytes.
    public var digest: [UInt8]
    /// The file key, 32 bytes.
    public var key: SecretBytes
    /// When the relay drops the object (Unix seconds).
    public var expiresAt: UInt64

    /// A file member; checked as a parsed one is.
    /// - Throws: ``WireError/malformedFile(_:)`` naming the rule broken.
    public init(object: ObjectID, size: UInt64, type: String, name: String, digest: [UInt8], key: SecretBytes, expiresAt: UInt64) throws {
        self.object = object
        self.size = size
        self.type = type
        self.name = name
        self.digest = digest
        self.key = key
        self.expiresAt = expiresAt
        try check()
    }

    /// Parses the `file` member of a payload.
    /// - Throws: ``WireError/malformedFile(_:)`` naming the rule broken (any member missing, of the
    ///   wrong type or out of its range).
    public init(json: JSONValue) throws {
        guard let file = json.objectValue else { throw WireError.malformedFile("the file member is not an object") }
        func string(_ name: String) throws -> String {
            guard let value = file[name]?.stringValue else { throw WireError.malformedFile("\"\(name)\" is missing or not a string") }
            return value
        }
        func bytes(_ name: String, _ count: Int) throws -> [UInt8] {
            let decoded: [UInt8]
            do { decoded = try Base64.decode(try string(name), variant: .urlSafeNoPadding, field: name) } catch {
                throw WireError.malformedFile("\"\(name)\" is not strict base64url")
            }
            guard decoded.count == count else { throw WireError.malformedFile("\"\(name)\" is \(decoded.count) bytes, not \(count)") }
            return decoded
        }
        func integer(_ name: String) throws -> UInt64 {
            guard let value = file[name]?.uint64Value else { throw WireError.malformedFile("\"\(name)\" is missing or not a non-negative integer") }
            return value
        }
        try self.init(
            object: try ObjectID(bytes: try bytes("object", 16)), size: try integer("size"), type: try string("type"), name: try string("name"),
            digest: try bytes("sha256", 32), key: SecretBytes(copying: try bytes("key", 32)), expiresAt: try integer("expiresAt"))
    }

    /// The attachment of a `file` payload.
    /// - Throws: ``WireError/malformedFile(_:)`` when the kind is not `file` or its member breaks a rule.
    public init(payload: MessagePayload) throws {
        guard payload.kind == Self.kind, let member = payload.extra["file"] else {
            throw WireError.malformedFile("a file message has kind \"file\" and a \"file\" member")
        }
        try self.init(json: member)
    }

    /// The payload kind of a file message.
    public static let kind = "file"

    /// The `file` member, members in the §12.3 order.
    public var json: JSONValue {
        var object = JSONObject()
        object["object"] = .string(self.object.base64URL)
        object["size"] = .integer(size)
        object["type"] = .string(type)
        object["name"] = .string(name)
        object["sha256"] = .string(Base64.encode(digest))
        object["key"] = .string(key.withUnsafeBytes { Base64.encode($0) })
        object["expiresAt"] = .integer(expiresAt)
        return .object(object)
    }

    /// What a host shows of the attachment, without its key or digest: `{"object", "size",
    /// "type", "name", "expires_at_ms"}` (the C ABI's and the CLI's `file` member of a message).
    public var hostJSON: JSONValue {
        .object([
            "object": .string(object.base64URL), "size": .integer(size), "type": .string(type), "name": .string(name),
            "local_name": .string(localName), "expires_at_ms": .integer(expiresAt.multipliedSaturating(by: 1000))
        ])
    }

    /// The name a host gives the file on disk when the user picks only a folder (PROTOCOL.md
    /// §12.5): the sender's ``name`` with every character that could disguise it replaced by `_`
    /// — C1 controls (U+0080–U+009F), bidirectional controls (U+061C, U+200E, U+200F,
    /// U+202A–U+202E, U+2066–U+2069), invisible separators and marks (U+200B–U+200D, U+2028,
    /// U+2029, U+2060, U+FEFF) — and a leading `.` replaced too (no hidden file); empty, or a name
    /// that would be left with no visible character, gives `coords-file` (the host adds its own
    /// suffix when that exists). At most 255 bytes, like the name it came from.
    public var localName: String {
        var scalars = String.UnicodeScalarView()
        for scalar in name.unicodeScalars {
            scalars.append(Self.disguises(scalar) ? "_" : scalar)
        }
        var result = String(scalars)
        if result.hasPrefix(".") { result = "_" + result.dropFirst() }
        guard !result.isEmpty, result.unicodeScalars.contains(where: { $0 != "_" && $0 != " " }) else { return "coords-file" }
        return result
    }

    /// Whether `scalar` can make a file name read as another (controls, direction overrides,
    /// invisible characters): what ``localName`` replaces.
    public static func disguises(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x061C, 0x200B...0x200F, 0x2028...0x202E, 0x2060...0x2069, 0xFEFF: true
        default: false
        }
    }

    /// A §7.2 payload of kind `file` announcing this attachment, with `caption` as its text.
    public func payload(id: String, caption: String, sentAt: UInt64) -> MessagePayload {
        var extra = JSONObject()
        extra["file"] = json
        return MessagePayload(kind: Self.kind, id: id, text: caption, sentAt: sentAt, extra: extra)
    }

    /// Whether `type` is a media type §12.3 accepts: `type/subtype`, 3–127 bytes, each side one
    /// or more of `A–Z a–z 0–9 ! # $ & ^ _ . + -`.
    public static func isValidType(_ type: String) -> Bool {
        let bytes = Array(type.utf8)
        guard (3...127).contains(bytes.count) else { return false }
        let sides = bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard sides.count == 2 else { return false }
        return sides.allSatisfy { side in !side.isEmpty && side.allSatisfy(isTokenByte) }
    }

    /// Whether `name` is a file name §12.3 accepts: 0–255 bytes, no control character, no `/` or
    /// `\`, not `.` or `..`.
    public static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard bytes.count <= 255, name != ".", name != ".." else { return false }
        return !bytes.contains { $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "\\") }
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: Array("!#$&^_.+-".utf8).contains(byte)
        }
    }

    private func check() throws {
        guard size <= Objects.maximumSize else { throw WireError.malformedFile("\"size\" \(size) is over the limit of \(Objects.maximumSize) bytes") }
        guard Self.isValidType(type) else { throw WireError.malformedFile("\"type\" is not a media type type/subtype") }
        guard Self.isValidName(name) else { throw WireError.malformedFile("\"name\" is not a plain file name of at most 255 bytes") }
        guard digest.count == 32 else { throw WireError.malformedFile("\"sha256\" is \(digest.count) bytes, not 32") }
        guard key.count == 32 else { throw WireError.malformedFile("\"key\" is \(key.count) bytes, not 32") }
    }
}
