import CoordsCore
import HTTPTypes
import Hummingbird
import NIOCore

/// §12.4 attachment objects: the owner's signed upload parts and delete, and downloads for
/// anyone who knows the id (streamed, with `Range: bytes=N-` for a resumed download).
func objectRoutes(service: RelayService) -> RouteCollection<RelayRequestContext> {
    let routes = RouteCollection(context: RelayRequestContext.self)
    routes.put("v1/relay/objects/:id") { request, context in
        let id = context.parameters.get("id") ?? ""
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName] = field.value }
        let target = request.head.path ?? request.uri.description
        // The id, the query and the signed headers are checked before a byte of the body is read.
        return await handle(
            request, context, service, limit: service.configuration.objects.maximumPartBytes,
            mediaType: "application/octet-stream", tooLargeCode: "object_too_large",
            check: { [headers] in try await service.checkObjectPut(id: id, pathWithQuery: target, headers: headers) }
        ) { checked, part in
            try await service.storeObjectPart(checked, part: part)
        }
    }
    routes.get("v1/relay/objects/:id") { request, context in
        let id = context.parameters.get("id") ?? ""
        var range: ObjectRange?
        let reply = await service.reply {
            try service.limit(address: clientAddress(request, context, service))
            let found = try await service.objectDownload(id: id, range: request.headers[.range])
            range = found
            return RelayReply(status: found.status, headers: found.headers, body: [])
        }
        guard let range else { return response(reply) }
        var headers = HTTPFields()
        for (name, value) in reply.headers {
            if let field = HTTPField.Name(name) { headers[field] = value }
        }
        let body = ResponseBody(contentLength: Int(clamping: range.count)) { writer in
            try await service.streamObject(range) { bytes in try await writer.write(ByteBuffer(bytes: bytes)) }
            try await writer.finish(nil)
        }
        return Response(status: .init(code: reply.status), headers: headers, body: body)
    }
    routes.delete("v1/relay/objects/:id") { request, context in
        let id = context.parameters.get("id") ?? ""
        return await signed(request, context, service) { path, headers in try await service.deleteObject(id: id, pathWithQuery: path, headers: headers) }
    }
    return routes
}

/// The bytes of one download: the object, where the answer starts, and how many bytes it carries.
public struct ObjectRange: Sendable, Equatable {
    /// The object.
    public var object: ObjectID
    /// The first byte sent.
    public var from: UInt64
    /// Bytes sent (`size − from`).
    public var count: UInt64
    /// The object's whole size.
    public var size: UInt64
    /// 200 for the whole object, 206 for a range.
    public var status: Int { partial ? 206 : 200 }
    /// Whether a `Range` header was honoured.
    public var partial: Bool

    /// The answer's headers.
    var headers: [(String, String)] {
        var headers = [("Content-Type", "application/octet-stream"), ("Accept-Ranges", "bytes")]
        if partial { headers.append(("Content-Range", "bytes \(from)-\(size.subtractingSaturating(1))/\(size)")) }
        return headers
    }
}

/// A checked `PUT /v1/relay/objects/{id}` target: the query of §12.4.
public struct ObjectPutQuery: Sendable, Equatable {
    /// `offset=`.
    public var offset: UInt64
    /// `stored=` (the object's whole stored length).
    public var size: UInt64
    /// `expires=` (Unix seconds).
    public var expiresAt: UInt64

    /// A query from its values.
    public init(offset: UInt64, size: UInt64, expiresAt: UInt64) {
        self.offset = offset
        self.size = size
        self.expiresAt = expiresAt
    }

    /// Parses the query of `target` (`…?offset=<o>&stored=<S>&expires=<e>`, in this order, decimal,
    /// no leading zeros, nothing else).
    /// - Throws: ``RelayFailure`` 400 `invalid_query`.
    public init(target: String) throws {
        guard let mark = target.firstIndex(of: "?") else {
            throw RelayFailure(400, "invalid_query", "send ?offset=<o>&stored=<S>&expires=<e>")
        }
        let pairs = target[target.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: false)
        let names = ["offset", "stored", "expires"]
        guard pairs.count == names.count else { throw RelayFailure(400, "invalid_query", "send exactly offset, stored and expires, in this order") }
        var values: [UInt64] = []
        for (pair, name) in zip(pairs, names) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == name, let value = Self.decimal(parts[1]) else {
                throw RelayFailure(400, "invalid_query", "\(name) must be a decimal number without leading zeros, in the order offset, stored, expires")
            }
            values.append(value)
        }
        offset = values[0]
        size = values[1]
        expiresAt = values[2]
    }

    /// A decimal without sign or leading zeros, at most 19 digits (so it fits a u64).
    static func decimal(_ text: Substring) -> UInt64? {
        let digits = text.utf8
        guard !digits.isEmpty, digits.count <= 19, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        guard digits.count == 1 || digits.first != 0x30 else { return nil }
        return UInt64(text)
    }
}

extension RelayService {
    /// `PUT /v1/relay/objects/{id}` (owner-signed, §12.4): checks the id, the query and the part,
    /// then lets the store decide.
    /// - Throws: ``RelayFailure`` 400 `invalid_object_id`/`invalid_query`/`invalid_expiry`/`past_end`,
    ///   401 (headers), 403 `not_owner`, 404 `objects_disabled`, 409 `object_mismatch`/`offset_mismatch`,
    ///   413 `object_too_large`, 429 `quota`, 507 `relay_full`/`storage_full`.
    public func putObject(id: String, pathWithQuery: String, headers: [String: String], part: [UInt8]) async throws -> RelayReply {
        try await storeObjectPart(try await checkObjectPut(id: id, pathWithQuery: pathWithQuery, headers: headers), part: part)
    }

    /// What an object PUT's target and headers say, checked before its body is read.
    public struct CheckedObjectPut: Sendable {
        /// The object.
        var object: ObjectID
        /// The query.
        var query: ObjectPutQuery
        /// The signer's peer id.
        var owner: PeerID
        /// The relay's clock when the headers were checked (Unix seconds).
        var now: UInt64
    }

    /// The checks of an object PUT that need no body, in §12.4's order: the id, the query, the
    /// signed headers (so an unauthenticated body is never read), the stored length and the expiry.
    /// - Throws: ``RelayFailure`` 400 `invalid_object_id`/`invalid_query`/`invalid_expiry`, 401,
    ///   404 `objects_disabled`, 413 `object_too_large`.
    public func checkObjectPut(id: String, pathWithQuery: String, headers: [String: String]) async throws -> CheckedObjectPut {
        let limits = configuration.objects
        guard limits.enabled else { throw RelayFailure(404, "objects_disabled", "this relay does not store objects") }
        guard let object = try? ObjectID(base64URL: id) else {  // any malformed id is the one 400 below
            throw RelayFailure(400, "invalid_object_id", "an object id is 16 bytes in base64url without padding")
        }
        let query = try ObjectPutQuery(target: pathWithQuery)
        guard query.size >= UInt64(Objects.tagByteCount) else {
            throw RelayFailure(400, "invalid_query", "stored must be at least \(Objects.tagByteCount) bytes (one sealed chunk)")
        }
        let owner = try await authenticateCaller(method: "PUT", pathWithQuery: pathWithQuery, headers: headers)
        guard query.size <= limits.maximumStoredBytes else {
            throw RelayFailure(413, "object_too_large", "an object is at most \(limits.maximumStoredBytes) bytes stored")
        }
        let now = nowSeconds
        guard query.expiresAt > now, query.expiresAt <= now.addingSaturating(limits.maximumLifetimeSeconds) else {
            throw RelayFailure(
                400, "invalid_expiry", "expires must be after now and at most \(limits.maximumLifetimeSeconds) s from now (Unix seconds)")
        }
        return CheckedObjectPut(object: object, query: query, owner: owner, now: now)
    }

    /// Stores the body of a checked object PUT: the part's size, its end, then the store's rules.
    /// - Throws: ``RelayFailure`` 400 `past_end`, 403 `not_owner`, 409 `object_mismatch`/`offset_mismatch`,
    ///   413 `object_too_large`, 429 `quota`, 507 `relay_full`/`storage_full`.
    public func storeObjectPart(_ checked: CheckedObjectPut, part: [UInt8]) async throws -> RelayReply {
        let limits = configuration.objects
        let (object, query, owner, now) = (checked.object, checked.query, checked.owner, checked.now)
        guard part.count <= limits.maximumPartBytes else {
            throw RelayFailure(413, "object_too_large", "a part is at most \(limits.maximumPartBytes) bytes")
        }
        guard query.offset <= query.size, UInt64(part.count) <= query.size - query.offset else {
            throw RelayFailure(400, "past_end", "the part ends past the object's stored length \(query.size)")
        }
        let ownerBytes = try Bytes32(Hex.decode(owner.hex) ?? [])
        let result: ObjectPutResult
        do {
            result = try await store.objectPut(
                ObjectPart(object: object, owner: ownerBytes, offset: query.offset, size: query.size, expiresAt: query.expiresAt, bytes: part),
                limits: limits, now: now)
        } catch is ObjectStoreFull {
            throw RelayFailure(507, "storage_full", "the relay's disk is full; nothing of this part was stored", retryAfter: 60)
        }
        switch result {
        case .stored(let record):
            if !part.isEmpty {
                metrics.objectParts.increment()
                metrics.objectBytesIn.increment(by: Int64(part.count))
            }
            return .json(Self.objectState(object, record))
        case .notOwner:
            throw RelayFailure(403, "not_owner", "another key created this object")
        case .mismatch:
            throw RelayFailure(409, "object_mismatch", "the object exists with another stored length or expiry")
        case .offsetMismatch(let stored):
            var failure = RelayFailure(409, "offset_mismatch", "the stored bytes end at \(stored); continue from there")
            failure.extra = ["stored": .integer(stored)]
            throw failure
        case .quota:
            throw RelayFailure(
                429, "quota",
                "a key may hold \(limits.maximumObjectsPerOwner) objects and \(limits.quotaBytes) bytes; delete one or wait for one to expire",
                retryAfter: 3600)
        case .relayFull:
            throw RelayFailure(507, "relay_full", "the relay holds all the objects it can; try later", retryAfter: 3600)
        }
    }

    /// The answer of a stored part: `{"object","stored","size","complete","expiresAt"}`.
    static func objectState(_ object: ObjectID, _ record: StoredObject) -> JSONValue {
        .object([
            "object": .string(object.base64URL), "stored": .integer(record.stored), "size": .integer(record.size),
            "complete": .bool(record.complete), "expiresAt": .integer(record.expiresAt)
        ])
    }

    /// What `GET /v1/relay/objects/{id}` sends: the whole object, or from the `Range` header's
    /// first byte (`bytes=<from>-`; any other form is ignored).
    /// - Throws: ``RelayFailure`` 400 `invalid_object_id`, 404 `no_object` (unknown, expired or
    ///   incomplete), 416 `range_not_satisfiable`.
    public func objectDownload(id: String, range: String?) async throws -> ObjectRange {
        guard configuration.objects.enabled else { throw RelayFailure(404, "objects_disabled", "this relay does not store objects") }
        guard let object = try? ObjectID(base64URL: id) else {  // any malformed id is the one 400 below
            throw RelayFailure(400, "invalid_object_id", "an object id is 16 bytes in base64url without padding")
        }
        guard let record = try await store.objectInfo(object, now: nowSeconds), record.complete else {
            throw RelayFailure(404, "no_object", "this relay holds no complete object with that id")
        }
        guard let from = Self.rangeStart(range) else { return ObjectRange(object: object, from: 0, count: record.size, size: record.size, partial: false) }
        guard from < record.size else {
            var failure = RelayFailure(416, "range_not_satisfiable", "the object is \(record.size) bytes")
            failure.extraHeaders = ["Content-Range": "bytes */\(record.size)"]
            throw failure
        }
        return ObjectRange(object: object, from: from, count: record.size - from, size: record.size, partial: true)
    }

    /// The first byte of `bytes=<from>-` (`from` canonical decimal), or nil for no header or any other form.
    static func rangeStart(_ header: String?) -> UInt64? {
        guard let header, header.hasPrefix("bytes="), header.hasSuffix("-") else { return nil }
        return ObjectPutQuery.decimal(header.dropFirst(6).dropLast())
    }

    /// Hands the bytes of `range` to `write` in pieces of at most 1 MiB, read from the store as
    /// they are sent (memory does not grow with the object).
    /// - Throws: what `write` throws; ``RelayStoreError`` when the object's bytes went missing (the
    ///   connection then ends short of its `Content-Length`, which the client sees as a truncation).
    func streamObject(_ range: ObjectRange, write: (ArraySlice<UInt8>) async throws -> Void) async throws {
        var offset = range.from
        let end = range.from.addingSaturating(range.count)
        metrics.objectDownloads.increment()
        while offset < end {
            let want = Int(min(end - offset, 1_048_576))
            let bytes = try await store.objectRead(range.object, offset: offset, count: want)
            guard !bytes.isEmpty else { throw RelayStoreError(description: "object \(range.object) ended at \(offset) of \(end)") }
            try await write(bytes[...])
            offset += UInt64(bytes.count)
            metrics.objectBytesOut.increment(by: Int64(bytes.count))
        }
    }

    /// `DELETE /v1/relay/objects/{id}` (owner-signed): `{"deleted": bool, "object": id}`.
    /// - Throws: ``RelayFailure`` 400 `invalid_object_id`, 401, 403 `not_owner`.
    public func deleteObject(id: String, pathWithQuery: String, headers: [String: String]) async throws -> RelayReply {
        guard configuration.objects.enabled else { throw RelayFailure(404, "objects_disabled", "this relay does not store objects") }
        guard let object = try? ObjectID(base64URL: id) else {  // any malformed id is the one 400 below
            throw RelayFailure(400, "invalid_object_id", "an object id is 16 bytes in base64url without padding")
        }
        let owner = try await authenticateCaller(method: "DELETE", pathWithQuery: pathWithQuery, headers: headers)
        switch try await store.objectDelete(object, owner: try Bytes32(Hex.decode(owner.hex) ?? []), now: nowSeconds) {
        case .deleted:
            return .json(.object(["deleted": .bool(true), "object": .string(object.base64URL)]))
        case .none:
            return .json(.object(["deleted": .bool(false), "object": .string(object.base64URL)]))
        case .notOwner:
            throw RelayFailure(403, "not_owner", "another key created this object")
        }
    }

    /// Forgets expired objects, complete or not.
    func sweepObjects() async throws {
        let removed = try await store.objectSweep(now: nowSeconds)
        if removed > 0 {
            metrics.objectsExpired.increment(by: Int64(removed))
            logger.info("expired objects swept", metadata: ["count": "\(removed)"])
        }
    }
}
