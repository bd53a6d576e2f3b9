/// Moving an object to and from a relay (PROTOCOL.md §12.4–§12.5) without doing I/O: the core
/// says which plaintext it needs and prepares each request; the host reads its file, performs the
/// requests and hands the answers back. Neither side holds more than one upload part (≤ 4 MiB).
///
/// The upload loop:
///
/// ```swift
/// var upload = try ObjectUpload(server: relay, signer: identity, key: key, object: oid, size: size, expiresAt: expiry)
/// while let need = upload.need {
///     let plaintext = try file.read(at: need.offset, count: need.count)
///     guard let request = try upload.supply(plaintext, timestamp: nextSignedTimestamp()) else { continue }
///     let (status, body) = try perform(request)
///     if case .retry(let seconds) = try upload.handle(status: status, body: body) { sleep(seconds) }
/// }
/// let digest = upload.digest  // for the file message
/// ```
public struct ObjectUpload: Sendable {
    /// Sealed chunks in one upload part, at most: 63 × 65,552 = 4,129,776 bytes ≤ `OBJECT_PART_MAX`.
    /// Parts always end on chunk boundaries, so a relay's `stored` does too.
    public static let chunksPerPart = 63
    /// Bytes of one sealed full chunk.
    static let sealedChunkBytes = UInt64(Objects.chunkByteCount + Objects.tagByteCount)

    /// A range of the file's plaintext the upload needs next.
    public struct Need: Sendable, Equatable {
        /// Where it starts in the file.
        public var offset: UInt64
        /// How many bytes (the whole range; the last part's may be 0 for an empty file).
        public var count: Int
    }

    /// What an answer changed.
    public enum Progress: Sendable, Equatable {
        /// The relay holds `stored` of the object's bytes; the loop continues (or ends, when
        /// ``need`` is nil).
        case stored(UInt64)
        /// The relay could not take the part now (429 rate limit, 5xx, 507): send it again after
        /// the seconds given (the relay's `Retry-After`, else a default); ``need`` asks for it again.
        case retry(after: UInt64)
    }

    /// The object's id.
    public let object: ObjectID
    /// The file's length.
    public let size: UInt64
    /// The object's stored length.
    public let storedSize: UInt64
    /// The Unix second at which the relay drops the object (at most 7 days ahead).
    public let expiresAt: UInt64
    private let server: String
    private let signer: Ed25519SigningKey
    private let key: SecretBytes
    private let chunkCount: Int
    /// Chunks per part (1 … ``chunksPerPart``).
    public let partChunks: Int
    /// Chunks sealed through ``sealer``: their bytes are in the digest.
    private var hashed = 0
    private var sealer: ObjectSealer
    /// The first chunk the relay does not hold (as far as its last answer said).
    private var confirmed = 0
    /// `SHA256(object)`, once every chunk went through the sealer.
    public private(set) var digest: [UInt8]?
    /// Object bytes the relay holds, as its last answer said (0 before any).
    public var stored: UInt64 {
        confirmed >= chunkCount ? storedSize : min(storedSize, UInt64(confirmed) * Self.sealedChunkBytes)
    }

    /// An upload of a file of `size` bytes under `key` (fresh, 32 bytes) as `object` to the relay at
    /// `server`, signed by `signer` (the owner). Starting again after a restart with the same
    /// values continues where the relay's bytes end (begin with ``probe(timestamp:)``).
    /// `partChunks` (1 … 63, default 63) makes parts smaller: less to send again after a lost
    /// connection on a poor link, more requests.
    /// - Throws: ``WireError/objectMismatch(_:)`` for a size over the limit; ``CryptoError`` for
    ///   a key of the wrong length; ``WireError/invalidServerURL(_:)``.
    public init(
        server: String, signer: Ed25519SigningKey, key: SecretBytes, object: ObjectID, size: UInt64, expiresAt: UInt64,
        partChunks: Int = ObjectUpload.chunksPerPart
    ) throws {
        self.partChunks = min(max(partChunks, 1), Self.chunksPerPart)
        _ = try RelayAPI.endpoint(server: server, path: "/")
        sealer = try ObjectSealer(key: key, object: object, size: size)
        self.server = server
        self.signer = signer
        self.key = key
        self.object = object
        self.size = size
        self.expiresAt = expiresAt
        storedSize = sealer.storedSize
        chunkCount = sealer.chunkCount
    }

    /// The plaintext the next ``supply(_:timestamp:)`` takes, or nil when the relay holds the whole
    /// object and the digest is known.
    public var need: Need? {
        let start = min(hashed, confirmed)
        guard start < chunkCount else { return nil }
        // Chunks the digest still lacks come first (after a restart the relay may hold more than
        // this process sealed); they are sealed for the digest and sent only if the relay lacks them.
        let end = min(start + partChunks, chunkCount)
        let from = UInt64(start) * UInt64(Objects.chunkByteCount)
        let to = min(UInt64(end) * UInt64(Objects.chunkByteCount), size)
        return Need(offset: min(from, size), count: Int(to.subtractingSaturating(from)))
    }

    /// Takes the plaintext ``need`` asked for and returns the request that uploads its chunks, or
    /// nil when the relay holds them already (they were sealed for the digest alone).
    /// `timestamp` is the §7.3 signature time: each must be new (the relay accepts a signature once).
    /// - Throws: ``WireError/objectMismatch(_:)`` for plaintext of another length than asked, or
    ///   when nothing is needed.
    public mutating func supply(_ plaintext: [UInt8], timestamp: UInt64) throws -> PreparedRequest? {
        guard let need else { throw WireError.objectMismatch("the upload needs no more plaintext") }
        guard plaintext.count == need.count else {
            throw WireError.objectMismatch("the upload asked for \(need.count) bytes at \(need.offset), got \(plaintext.count)")
        }
        let start = min(hashed, confirmed)
        let end = min(start + partChunks, chunkCount)
        // Bounded sizes only: plaintext.count == need.count ≤ 63 × 65,536 (checked above), and
        // end − start ≤ 63; the chunks' plaintext lengths add up to exactly need.count, so every
        // slice below stays inside `plaintext`.
        var sealed: [UInt8] = []
        sealed.reserveCapacity(plaintext.count + (end - start) * Objects.tagByteCount)
        try plaintext.withUnsafeBytes { bytes in
            var offset = 0
            var index = start
            while index < end, index < hashed {  // in the digest already: sealed again to be sent only
                let count = Objects.plaintextCount(ofChunk: index, size: size)
                try Objects.sealChunk(
                    UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count]), index: index, size: size, key: key, object: object,
                    appendingTo: &sealed)
                offset += count
                index += 1
            }
            guard index < end else { return }
            // index == hashed: the rest of the part goes through the sealer in one piece (its
            // digest then runs on a thread of its own while the host sends the part).
            try sealer.update(UnsafeRawBufferPointer(rebasing: bytes[offset...]), appendingTo: &sealed)
            hashed = end
            // The last chunk: finish seals it if it is empty (an empty file's one chunk).
            if hashed == chunkCount { digest = try sealer.finish(appendingTo: &sealed) }
        }
        guard end > confirmed else { return nil }  // the relay holds these: sealed for the digest only
        // Send from the first chunk the relay lacks.
        let skip = max(confirmed - start, 0)
        let body = skip == 0 ? sealed : Array(sealed[Int(UInt64(skip) * Self.sealedChunkBytes)...])
        return try request(method: "PUT", offset: UInt64(confirmed) * Self.sealedChunkBytes, body: body, timestamp: timestamp)
    }

    /// The `file` member announcing this upload (§12.3), once the relay holds the whole object
    /// and the digest is known.
    /// - Throws: ``WireError/objectMismatch(_:)`` while the upload is unfinished;
    ///   ``WireError/malformedFile(_:)`` for a `type` or `name` breaking a §12.3 rule.
    public func attachment(type: String, name: String) throws -> FileAttachment {
        guard need == nil, let digest else { throw WireError.objectMismatch("the upload has not finished") }
        return try FileAttachment(object: object, size: size, type: type, name: name, digest: digest, key: key, expiresAt: expiresAt)
    }

    /// The empty PUT that asks the relay how much of the object it holds (§12.4): the first
    /// request after a restart. (On an unknown id it creates the object, empty, for this owner.)
    public func probe(timestamp: UInt64) throws -> PreparedRequest {
        try request(method: "PUT", offset: UInt64(confirmed) * Self.sealedChunkBytes, body: [], timestamp: timestamp)
    }

    /// The owner's `DELETE` of the object (a cancelled upload, a deleted message).
    public func delete(timestamp: UInt64) throws -> PreparedRequest {
        try request(method: "DELETE", offset: nil, body: [], timestamp: timestamp)
    }

    private func request(method: String, offset: UInt64?, body: [UInt8], timestamp: UInt64) throws -> PreparedRequest {
        var path = "/v1/relay/objects/" + object.base64URL
        if let offset { path += "?offset=\(offset)&stored=\(storedSize)&expires=\(expiresAt)" }
        let signed = MailboxAuth.headers(signer: signer, method: method, path: path, timestamp: timestamp)
        var headers = ["X-Coords-Key", "X-Coords-Timestamp", "X-Coords-Signature"].map { PreparedRequest.Header(name: $0, value: signed[$0] ?? "") }
        if method == "PUT" { headers.append(.init(name: "Content-Type", value: "application/octet-stream")) }
        return PreparedRequest(url: try RelayAPI.endpoint(server: server, path: path), method: method, headers: headers, body: body)
    }

    /// Takes the relay's answer to the last part or probe.
    /// - Parameters:
    ///   - status: the answer's HTTP status.
    ///   - body: its body (at most ``ClientLimits/smallAnswerBytes`` read).
    ///   - retryAfter: its `Retry-After` header, if any.
    /// - Throws: ``WireError/relayError(status:code:message:)`` when the relay refuses the object
    ///   for good (`not_owner`, `object_mismatch`, `quota`, any other 4xx);
    ///   ``WireError/objectMismatch(_:)`` when it answers what no honest relay would (a stored
    ///   length that is not a chunk boundary or past the object, the state of another object).
    public mutating func handle(status: Int, body: [UInt8], retryAfter: String? = nil) throws -> Progress {
        let fields = (try? JSONValue.parse(body, maximumDepth: 3))?.objectValue  // anything else is judged by the status alone
        let code = fields?["error"]?.stringValue
        switch status {
        case _ where status == 200 || (status == 409 && code == "offset_mismatch"):
            guard let stored = fields?["stored"]?.uint64Value else {
                throw WireError.objectMismatch("the relay's answer (\(status)) does not say how much it stores")
            }
            if status == 200 {
                guard fields?["object"]?.stringValue == object.base64URL, fields?["size"]?.uint64Value == storedSize else {
                    throw WireError.objectMismatch("the relay answered with the state of another object")
                }
            }
            guard stored <= storedSize, stored == storedSize || stored % Self.sealedChunkBytes == 0 else {
                throw WireError.objectMismatch("the relay claims \(stored) bytes, which no upload of this object leaves")
            }
            confirmed = stored == storedSize ? chunkCount : Int(stored / Self.sealedChunkBytes)
            return .stored(stored)
        case 429 where code == "rate_limited", 500...599:
            let seconds = retryAfter.flatMap { UInt64($0) }.map { min($0, TransferPace.maximumWaitSeconds) } ?? 5
            return .retry(after: seconds)
        default:
            throw RelayAPI.error(status: status, body: body)
        }
    }
}

/// Downloads and opens an object (PROTOCOL.md §12.5) without doing I/O: ``request()`` is the GET
/// (with `Range` when resuming), the host streams the answer's body through ``take(_:appendingTo:)`` into a
/// temporary file, and ``finish()`` says whether that file is the sender's file. A hostile relay
/// that serves other, truncated, reordered or extra bytes fails ``take(_:appendingTo:)`` or ``finish()``:
/// the host removes the temporary file then.
public struct ObjectDownload: Sendable {
    private var opener: ObjectOpener
    private let server: String

    /// A download of `file` from the relay at `server` (the sender's relay).
    /// - Throws: as ``ObjectOpener/init(file:)``; ``WireError/invalidServerURL(_:)``.
    public init(server: String, file: FileAttachment) throws {
        _ = try RelayAPI.endpoint(server: server, path: "/")
        opener = try ObjectOpener(file: file)
        self.server = server
    }

    /// Object bytes taken so far (a resumed download's `Range` starts here).
    public var received: UInt64 { opener.received }
    /// Plaintext bytes handed out so far.
    public var opened: UInt64 { opener.opened }
    /// The file's length.
    public var size: UInt64 { opener.size }
    /// The object's stored length: the most bytes a host reads of an answer.
    public var storedSize: UInt64 { opener.storedSize }

    /// `GET <server>/v1/relay/objects/<id>`, with `Range: bytes=<received>-` after the first byte.
    /// The host reads at most `storedSize − received` bytes of the answer, and expects 200 (from
    /// the start) or 206 (from `received`).
    public func request() throws -> PreparedRequest {
        var headers: [PreparedRequest.Header] = []
        if received > 0 { headers.append(.init(name: "Range", value: "bytes=\(received)-")) }
        return PreparedRequest(
            url: try RelayAPI.endpoint(server: server, path: "/v1/relay/objects/" + opener.object.base64URL), method: "GET", headers: headers)
    }

    /// What to do with an answer, judged by its status before its body is read.
    public enum Answer: Sendable, Equatable {
        /// Read the body through ``ObjectDownload/take(_:appendingTo:)``.
        case body
        /// Do not read the body: wait this many seconds (1…60), then send ``ObjectDownload/request()``
        /// again. The relay is rate limiting (429) or in trouble (5xx); the host decides how many
        /// such answers in a row it accepts.
        case retry(after: UInt64)
    }

    /// Checks the answer's status before its body: 200 when nothing was received yet, else 206
    /// (a relay that answers 200 to a range would send the object from its start again); 429 and
    /// 5xx ask for a retry after the relay's `Retry-After` seconds (5 when it gives none or
    /// something else than a number of seconds; at most ``TransferPace/maximumWaitSeconds``).
    /// - Parameters:
    ///   - status: the answer's HTTP status.
    ///   - retryAfter: its `Retry-After` header, if any.
    /// - Returns: ``Answer/body`` or ``Answer/retry(after:)``.
    /// - Throws: ``WireError/objectMismatch(_:)``: 404 "no longer on the relay", or another status.
    public func check(status: Int, retryAfter: String? = nil) throws -> Answer {
        switch status {
        case 200 where received == 0, 206 where received > 0: return .body
        case 404: throw WireError.objectMismatch("the attachment is no longer on the relay (expired or deleted)")
        case 429, 500...599: return .retry(after: Self.retryDelay(retryAfter))
        default: throw WireError.objectMismatch("the relay answered \(status) to the attachment download")
        }
    }

    /// Checks a 200 or 206 answer's `Content-Length` (when it has one) before its body: it must be
    /// exactly what ``request()`` asked for, the stored bytes from ``received`` to the end
    /// (PROTOCOL.md §12.5). Another length is this object's bytes cut or padded, or another
    /// object: refused at once, never resumed.
    /// - Parameter contentLength: the header's value, or nil when the answer has none (chunked).
    /// - Throws: ``WireError/objectMismatch(_:)``.
    public func check(contentLength: String?) throws {
        guard let contentLength else { return }
        let expected = storedSize.subtractingSaturating(received)
        let digits = contentLength.utf8.filter { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }
        guard !digits.isEmpty, digits.count <= 19, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            UInt64(String(decoding: digits, as: UTF8.self)) == expected
        else {
            throw WireError.objectMismatch(
                "the relay announces \(contentLength.prefix(24)) bytes where \(expected) were asked for: not this attachment's bytes")
        }
    }

    /// Seconds to wait for a `Retry-After` header: its delta-seconds clamped to 1 …
    /// ``TransferPace/maximumWaitSeconds``, else 5.
    static func retryDelay(_ header: String?) -> UInt64 {
        let words = header?.split(separator: " ") ?? []
        guard words.count == 1, let seconds = UInt64(words[0]) else { return 5 }
        return min(max(seconds, 1), TransferPace.maximumWaitSeconds)
    }

    /// The next bytes of the answer's body; returns the plaintext they complete (append it to the
    /// temporary file).
    /// - Throws: ``WireError/badChunk(index:)`` or ``WireError/objectMismatch(_:)`` (see
    ///   ``ObjectOpener/update(_:appendingTo:)``).
    public mutating func take(_ sealed: UnsafeRawBufferPointer, appendingTo out: inout [UInt8]) throws {
        try opener.update(sealed, appendingTo: &out)
    }

    /// After a restart: the plaintext already in the temporary file (whole chunks), sealed again
    /// to bring the digest up to date; the next ``request()`` continues after it.
    /// - Throws: as ``ObjectOpener/replay(opened:)``.
    public mutating func replay(opened plaintext: UnsafeRawBufferPointer) throws {
        try opener.replay(opened: plaintext)
    }

    /// Whether the whole object arrived and matches its digest; only then is the file final.
    /// - Throws: as ``ObjectOpener/finish()``.
    public mutating func finish() throws {
        try opener.finish()
    }
}
