/// Requests to and responses from a Coords relay (PROTOCOL.md §4–§6), without any I/O.
public enum RelayAPI {
    /// Path of the location endpoint.
    public static let locationPath = "/api/location"
    /// Path of the version endpoint.
    public static let versionPath = "/api/version"
    /// The most ids one fetch may carry (the relay refuses more with 400).
    public static let maximumFetchBatch = 50
    /// How far (seconds) a signed timestamp may be from the relay's clock, either way: uploads
    /// and deletes (§5, §6), §7.3 mailbox signatures and §8.2 live proofs. Our relay's default
    /// (`RelayConfiguration.clockSkewSeconds`) and the outbox's re-signing both start from it.
    public static let signatureWindowSeconds: UInt64 = 300
    /// Relays refuse larger blobs with 413.
    public static let maximumBlobByteCount = 65_536
    /// Domain separator of delete signatures (§6).
    public static let deleteSignaturePrefix = Array("coords-delete-v1".utf8)

    // MARK: Server URLs

    /// The endpoint URL for `path` on `server`: the server without trailing slashes, then `path`.
    /// - Throws: ``WireError/invalidServerURL(_:)`` unless `server` is `http://` or `https://`
    ///   followed by a host, with no whitespace or control characters.
    public static func endpoint(server: String, path: String) throws -> String {
        guard let url = ServerURL(server) else { throw WireError.invalidServerURL(server) }
        return url.text + path
    }

    // MARK: Upload (PUT) and delete

    /// The bytes an upload signature covers: `blob ‖ timestamp (u64 big-endian)`.
    public static func uploadSignedMessage(blob: [UInt8], timestamp: UInt64) -> [UInt8] {
        var message = blob
        message.reserveCapacity(blob.count + 8)
        appendBigEndian(timestamp, to: &message)
        return message
    }

    /// The bytes a delete signature covers: `"coords-delete-v1" ‖ timestamp (u64 big-endian)`.
    public static func deleteSignedMessage(timestamp: UInt64) -> [UInt8] {
        var message = deleteSignaturePrefix
        appendBigEndian(timestamp, to: &message)
        return message
    }

    /// The PUT body `{"pubkey","timestamp","blob","signature"}`.
    /// - Parameters:
    ///   - blob: a sealed location blob.
    ///   - timestamp: upload time in Unix **seconds** (not the fix time).
    ///   - signer: the identity that uploads.
    public static func uploadBody(blob: [UInt8], timestamp: UInt64, signer: Ed25519SigningKey) -> JSONValue {
        let signature = signer.signature(for: uploadSignedMessage(blob: blob, timestamp: timestamp))
        return .object([
            "pubkey": .string(signer.publicKey.base64URL),
            "timestamp": .integer(timestamp),
            "blob": .string(Base64.encode(blob)),
            "signature": .string(Base64.encode(signature))
        ])
    }

    /// `PUT <server>/api/location` with `Content-Type: application/json`.
    /// - Throws: ``WireError/invalidServerURL(_:)``; ``WireError/invalidLength(field:expected:actual:)``
    ///   when the blob is larger than a relay accepts.
    public static func prepareUpload(blob: [UInt8], timestamp: UInt64, signer: Ed25519SigningKey, server: String) throws -> PreparedRequest {
        guard blob.count <= maximumBlobByteCount else {
            throw WireError.invalidLength(field: "blob (at most)", expected: maximumBlobByteCount, actual: blob.count)
        }
        return PreparedRequest(
            url: try endpoint(server: server, path: locationPath), method: "PUT",
            headers: [.init(name: "Content-Type", value: "application/json")],
            body: uploadBody(blob: blob, timestamp: timestamp, signer: signer).serialized())
    }

    /// `DELETE <server>/api/location` with `{"pubkey","timestamp","signature"}` (§6 extension):
    /// removes the caller's stored blob from a CoordsCore relay.
    /// - Throws: ``WireError/invalidServerURL(_:)``.
    public static func prepareDelete(timestamp: UInt64, signer: Ed25519SigningKey, server: String) throws -> PreparedRequest {
        let signature = signer.signature(for: deleteSignedMessage(timestamp: timestamp))
        let body: JSONValue = .object([
            "pubkey": .string(signer.publicKey.base64URL),
            "timestamp": .integer(timestamp),
            "signature": .string(Base64.encode(signature))
        ])
        return PreparedRequest(
            url: try endpoint(server: server, path: locationPath), method: "DELETE",
            headers: [.init(name: "Content-Type", value: "application/json")], body: body.serialized())
    }

    // MARK: Fetch (POST)

    /// Someone to fetch: an id (base64url public key) and the exact server string it lives on.
    public struct FetchTarget: Sendable, Hashable {
        /// The friend's id (base64url public key).
        public var id: String
        /// Their relay, exactly as their link gave it (targets are grouped by this string).
        public var server: String

        /// A target from its two parts.
        public init(id: String, server: String) {
            self.id = id
            self.server = server
        }
    }

    /// One prepared fetch: the request and what it asks for.
    public struct PreparedFetch: Sendable, Equatable {
        /// The server string the batch was grouped under.
        public var server: String
        /// The ids in the body, in order (at most 50).
        public var ids: [String]
        /// `POST <server>/api/location` with `{"ids":[…]}`.
        public var request: PreparedRequest
    }

    /// Groups targets by their exact server string (in order of first appearance) and splits
    /// each group into batches of at most 50 ids. Duplicate targets are asked for once.
    /// - Throws: ``WireError/invalidServerURL(_:)`` for a server that is not an http(s) URL.
    public static func prepareFetches(_ targets: [FetchTarget]) throws -> [PreparedFetch] {
        var order: [String] = []
        var groups: [String: [String]] = [:]
        var seen = Set<FetchTarget>()
        for target in targets where seen.insert(target).inserted {
            if groups[target.server] == nil { order.append(target.server) }
            groups[target.server, default: []].append(target.id)
        }
        var fetches: [PreparedFetch] = []
        for server in order {
            let url = try endpoint(server: server, path: locationPath)
            let ids = groups[server] ?? []
            var start = 0
            while start < ids.count {
                let batch = Array(ids[start..<min(start + maximumFetchBatch, ids.count)])
                let body: JSONValue = .object(["ids": .array(batch.map { .string($0) })])
                fetches.append(
                    PreparedFetch(
                        server: server, ids: batch,
                        request: PreparedRequest(
                            url: url, method: "POST",
                            headers: [.init(name: "Content-Type", value: "application/json")],
                            body: body.serialized())))
                start += maximumFetchBatch
            }
        }
        return fetches
    }

    /// Whether the relay vouched for who uploaded an entry (§6 "Sender authenticity").
    public enum Authenticity: String, Sendable, Equatable, Codable {
        /// The relay sent the uploader's signature and it verifies for the id.
        case verified
        /// The relay sent no signature (a reference relay): the uploader is not proven.
        case unverified
        /// The relay sent a signature that does not verify: the entry was substituted.
        case tampered
        /// No blob is stored for this id.
        case absent
    }

    /// The outcome for one id of a fetch response.
    public struct FetchEntry: Sendable, Equatable {
        /// The id exactly as the relay keyed it.
        public var id: String
        /// The opened location, when the blob opened (and, in strict mode, was verified).
        public var location: Location?
        /// The relay's `updated` time (Unix seconds), kept even when the blob cannot be opened.
        public var updated: UInt64?
        /// The uploader's signed upload time (Unix seconds), when the relay sent it.
        public var uploadTimestamp: UInt64?
        /// Whether the uploader is proven.
        public var authenticity: Authenticity
        /// Why there is no location although a blob was present (or why the entry was refused).
        public var error: WireError?
        /// The entry for us was sealed to one of our signed prekeys (§10.9), not our identity key.
        public var forwardSecret: Bool = false
    }

    /// Options for ``processFetchResponse(_:reader:options:)``.
    public struct FetchOptions: Sendable, Equatable {
        /// Refuse entries the relay did not sign-stamp (§6 strict mode).
        public var requireSignatures: Bool
        /// Options; by default unsigned entries are accepted and reported as unverified.
        public init(requireSignatures: Bool = false) { self.requireSignatures = requireSignatures }
    }

    /// Processes a `POST /api/location` response body into one result per entry, in the
    /// relay's order. One bad entry never fails the others (unlike the reference client).
    ///
    /// Per entry: `null` → no location and no `updated`; a blob that cannot be opened → no
    /// location, `updated` kept, ``FetchEntry/error`` says why; a signature that does not verify
    /// → ``Authenticity/tampered`` and no location; no signature → ``Authenticity/unverified``
    /// (refused in strict mode).
    /// - Parameters:
    ///   - body: the response body.
    ///   - reader: the reader's X25519 key (its identity's X25519 form).
    ///   - options: strict mode and the clock used for freshness checks.
    /// - Throws: ``WireError/invalidJSON(_:)`` or ``WireError/unexpectedJSON(_:)`` only when the
    ///   body as a whole is not a JSON object.
    public static func processFetchResponse(
        _ body: [UInt8], reader: X25519PrivateKey,
        options: FetchOptions = FetchOptions()
    ) throws -> [FetchEntry] {
        try processFetchResponse(body, readers: [reader], options: options)
    }

    /// ``processFetchResponse(_:reader:options:)`` for a reader with several keys (§10.9): the
    /// identity's X25519 form first, then the signed prekeys still kept, newest first. An entry
    /// opened by any key but the first is ``FetchEntry/forwardSecret``.
    /// - Throws: as ``processFetchResponse(_:reader:options:)``.
    public static func processFetchResponse(
        _ body: [UInt8], readers: [X25519PrivateKey], options: FetchOptions = FetchOptions()
    ) throws -> [FetchEntry] {
        guard let object = try JSONValue.parse(body).objectValue else {
            throw WireError.unexpectedJSON("a fetch response must be an object keyed by id")
        }
        return object.members.map { processEntry(id: $0.key, value: $0.value, readers: readers, options: options) }
    }

    static func processEntry(id: String, value: JSONValue, reader: X25519PrivateKey, options: FetchOptions) -> FetchEntry {
        processEntry(id: id, value: value, readers: [reader], options: options)
    }

    static func processEntry(id: String, value: JSONValue, readers: [X25519PrivateKey], options: FetchOptions) -> FetchEntry {
        var entry = FetchEntry(id: id, location: nil, updated: nil, uploadTimestamp: nil, authenticity: .absent, error: nil)
        if value.isNull { return entry }
        guard let fields = value.objectValue else {
            entry.error = .unexpectedJSON("entry for \(id.prefix(8))… is neither null nor an object")
            return entry
        }
        entry.updated = fields["updated"]?.uint64Value
        guard let blobText = fields["blob"]?.stringValue else {
            entry.error = .unexpectedJSON("entry for \(id.prefix(8))… has no \"blob\" string")
            return entry
        }
        // A bad entry becomes its own rejection; the other entries are still processed.
        guard let blob = try? Base64.decode(blobText, field: "blob") else {
            entry.error = .invalidBase64(field: "blob of \(id.prefix(8))…")
            return entry
        }
        let signatureField = fields["signature"]
        let timestampField = fields["timestamp"]
        if signatureField == nil && timestampField == nil {
            entry.authenticity = .unverified
            if options.requireSignatures {
                entry.error = .unverifiedEntry(id: id)
                return entry
            }
        } else {
            entry.uploadTimestamp = timestampField?.uint64Value
            // A bad entry becomes its own rejection; the other entries are still processed.
            guard let key = try? Ed25519PublicKey(base64URL: id) else {
                entry.authenticity = .tampered
                entry.error = .invalidPublicKeyID(id)
                return entry
            }
            guard let signatureText = signatureField?.stringValue,
                // A bad signature field is a tampered entry (rejected below), not a failed fetch.
                let signature = try? Base64.decode(signatureText, field: "signature"),
                let timestamp = timestampField?.uint64Value,
                key.isValidSignature(signature, for: uploadSignedMessage(blob: blob, timestamp: timestamp))
            else {
                entry.authenticity = .tampered
                entry.error = .tamperedEntry(id: id)
                return entry
            }
            entry.authenticity = .verified
        }
        do {
            let opened = try LocationBlob.open(blob, withAnyOf: readers)
            entry.location = opened.location.location
            entry.forwardSecret = opened.keyIndex > 0
        } catch let error as WireError {
            entry.error = error
        } catch {
            entry.error = .unexpectedJSON("blob of \(id.prefix(8))… could not be opened: \(error)")
        }
        return entry
    }

    // MARK: Errors and version

    /// Turns a relay's error response into ``WireError/relayError(status:code:message:)``.
    /// Accepts our JSON bodies (`{"error": "<code>", "message": "<text>"}`) and the reference
    /// relay's plain text. The message is cut to 500 characters and stripped of control
    /// characters; the code is cut to 64 characters (shown escaped by whoever prints it).
    public static func error(status: Int, body: [UInt8]) -> WireError {
        // A body that is not our JSON error is the reference relay's plain text, read below.
        if let object = try? JSONValue.parse(body).objectValue,
            let code = object["error"]?.stringValue
        {
            let message = object["message"]?.stringValue ?? code
            // A code is a short identifier: a hostile relay's is cut to 64 characters. Its characters
            // are kept as sent (hosts escape them when they show them, as the CLI does).
            let shortCode = code.count > 64 ? String(code.prefix(64)) + "…" : code
            return .relayError(status: status, code: shortCode, message: sanitize(message))
        }
        let text = String(decoding: body, as: UTF8.self)
        return .relayError(status: status, code: nil, message: sanitize(text.isEmpty ? "(empty body)" : text))
    }

    /// A relay's `GET /api/version` answer, from ``parseVersion(_:)``.
    public struct ServerVersion: Sendable, Equatable {
        /// The server's name as it reports it.
        public var name: String
        /// Its version string (e.g. `2026.1.6`).
        public var version: String

        /// The lowest version the reference Android app accepts.
        public static let minimumCompatible = "2026.1.6"

        /// Whether the reference apps would accept this server: name `coords` and a dotted
        /// numeric version ≥ 2026.1.6.
        public var isCompatible: Bool {
            guard name == "coords", let mine = Self.components(version), let floor = Self.components(Self.minimumCompatible) else { return false }
            return mine.lexicographicallyPrecedes(floor) == false
        }

        static func components(_ text: String) -> [Int]? {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false).map { Int($0) }
            guard !parts.isEmpty, parts.allSatisfy({ $0 != nil }) else { return nil }
            var numbers = parts.compactMap { $0 }
            while numbers.count < 3 { numbers.append(0) }
            return numbers
        }
    }

    /// `GET <server>/api/version`.
    public static func prepareVersionCheck(server: String) throws -> PreparedRequest {
        PreparedRequest(url: try endpoint(server: server, path: versionPath), method: "GET")
    }

    /// Parses `{"name","version"}`.
    /// - Throws: ``WireError/invalidJSON(_:)``, ``WireError/unexpectedJSON(_:)``.
    public static func parseVersion(_ body: [UInt8]) throws -> ServerVersion {
        guard let object = try JSONValue.parse(body).objectValue,
            let name = object["name"]?.stringValue, let version = object["version"]?.stringValue
        else {
            throw WireError.unexpectedJSON("a version answer is {\"name\": string, \"version\": string}")
        }
        return ServerVersion(name: name, version: version)
    }

    // MARK: Helpers

    static func appendBigEndian(_ value: UInt64, to bytes: inout [UInt8]) { bytes.appendBigEndian(value) }

    static func sanitize(_ text: String) -> String {
        let cleaned = String(String.UnicodeScalarView(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7f }))
        return cleaned.count > 500 ? String(cleaned.prefix(500)) + "…" : cleaned
    }
}
