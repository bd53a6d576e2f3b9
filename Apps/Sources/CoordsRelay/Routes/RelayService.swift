import CoordsCore
import Logging

/// The relay's request logic, independent of the HTTP framework: parses, checks in the
/// reference server's order with its status codes, applies the CoordsCore extensions
/// (PROTOCOL.md §4 and §6), and talks to the store. The Hummingbird routes only adapt it.
public final class RelayService: Sendable {
    let configuration: RelayConfiguration
    let store: any RelayStore
    let clock: TimeSource
    let logger: Logger
    let metrics: RelayMetrics
    private let addressLimiter: RateLimiter
    private let keyLimiter: RateLimiter
    let messageLimiter: RateLimiter
    /// Envelopes per client address and recipient (``RelayConfiguration/maximumMessagesPerAddressPerRecipient``).
    let recipientAddressLimiter: RateLimiter
    /// Prekey bundle requests per requester, one-time prekeys per requester and target, and
    /// one-time prekeys per target (§10.3).
    let prekeyLimiters: (requests: RateLimiter, pair: RateLimiter, target: RateLimiter)
    /// This node's live subscribers (§8); every accepted write is published to it.
    public let live: LiveHub
    /// Sends push wakes for accepted envelopes (§8.7); nil when push is off.
    public let push: PushDispatcher?
    /// This process's name in live announcements to the other nodes (random, per start).
    let nodeID: String
    /// Request bodies held in memory at once (``RelayConfiguration/maximumBodyBytesInFlight``).
    let bodies: BodyBudget

    /// A service on `store`, reading time from `clock`. The store stays the caller's to close
    /// (``buildApplication(configuration:postgresPassword:logger:)`` closes the one it opened when the server stops).
    public init(configuration: RelayConfiguration, store: any RelayStore, clock: TimeSource = .system, logger: Logger) {
        self.configuration = configuration
        self.store = store
        self.clock = clock
        self.logger = logger
        metrics = RelayMetrics(rates: (configuration.addressRate, configuration.keyRate, configuration.messageRate))
        addressLimiter = RateLimiter(rate: configuration.addressRate, burst: configuration.addressBurst)
        keyLimiter = RateLimiter(rate: configuration.keyRate, burst: configuration.keyBurst)
        messageLimiter = RateLimiter(rate: configuration.messageRate, burst: configuration.messageBurst)
        let perAddress = Double(max(configuration.maximumMessagesPerAddressPerRecipient, 0))
        recipientAddressLimiter = RateLimiter(rate: perAddress / 3600, burst: perAddress)
        let prekeys = configuration.prekeys
        prekeyLimiters = (
            RateLimiter(rate: prekeys.requestsPerHour / 3600, burst: prekeys.requestsPerHour),
            RateLimiter(rate: prekeys.oneTimePerRequesterPerTargetPerHour / 3600, burst: prekeys.oneTimePerRequesterPerTargetPerHour),
            RateLimiter(rate: prekeys.oneTimePerTargetPerHour / 3600, burst: prekeys.oneTimePerTargetPerHour)
        )
        live = LiveHub(limits: configuration.live)
        bodies = BodyBudget(capacity: configuration.maximumBodyBytesInFlight)
        push =
            configuration.push.enabled
            ? PushDispatcher(limits: configuration.push, store: store, clock: clock, logger: logger, metrics: metrics) : nil
        // The node id only tells nodes' announcements apart; without random bytes (never expected) it is empty.
        nodeID = Base64.encode((try? SystemRandomSource().bytes(9)) ?? [])
    }

    var nowSeconds: UInt64 { clock.now() / 1000 }

    /// Runs a handler, turning a ``RelayFailure`` into its JSON reply and counting it.
    func reply(_ body: () async throws -> RelayReply) async -> RelayReply {
        do {
            return try await body()
        } catch let failure as RelayFailure {
            metrics.rejection(failure.code)
            return failure.reply
        } catch is ObjectStoreFull {
            logger.error("object storage full")
            metrics.rejection("storage_full")
            return RelayFailure(507, "storage_full", "the relay's disk is full; nothing of this request was stored", retryAfter: 60).reply
        } catch let error where storeDiskIsFull(error, dataDirectory: configuration.dataDirectory) {
            // The database's disk (or its map) is full: nothing of the request was committed.
            logger.error("store disk full", metadata: ["error": "\(error)"])
            metrics.rejection("storage_full")
            return RelayFailure(507, "storage_full", "the relay's disk is full; nothing of this request was stored", retryAfter: 60).reply
        } catch let unavailable as RelayStoreUnavailable {
            logger.warning("store unavailable", metadata: ["error": "\(unavailable)"])
            metrics.rejection("store_unavailable")
            return RelayFailure(503, "store_unavailable", "the relay's database is unavailable; retry shortly", retryAfter: 5).reply
        } catch {
            logger.error("request failed", metadata: ["error": "\(error)"])
            metrics.rejection("internal")
            return RelayFailure(500, "internal", "the relay could not complete the request; try again later").reply
        }
    }

    /// Per-address limit (all API requests).
    func limit(address: String) throws {
        if let retry = addressLimiter.take("a:" + address, now: clock.now()) {
            throw RelayFailure(429, "rate_limited", "too many requests from this address; retry in \(retry) s", retryAfter: retry)
        }
    }

    /// Per-key limit (signed writes), applied after the signature checked out so nobody can
    /// spend someone else's budget.
    private func limit(key: String) throws {
        if let retry = keyLimiter.take("k:" + key, now: clock.now()) {
            throw RelayFailure(429, "rate_limited", "too many uploads for this key; retry in \(retry) s", retryAfter: retry)
        }
    }

    // MARK: Version

    /// `GET /api/version`.
    public func version() -> RelayReply {
        .json(.object(["name": .string("coords"), "version": .string(configuration.version)]))
    }

    // MARK: Upload

    /// `PUT /api/location` with `{"pubkey","timestamp","blob","signature"}`.
    public func upload(body: [UInt8]) async throws -> RelayReply {
        let fields = try object(body)
        let (key, keyText) = try publicKey(fields)
        guard let blobText = fields["blob"]?.stringValue, let blob = try? Base64.decode(blobText, field: "blob") else {
            throw RelayFailure(400, "invalid_blob", "blob is not base64url without padding")
        }
        guard blob.count <= configuration.maximumBlobBytes else {
            throw RelayFailure(413, "blob_too_large", "blob is \(blob.count) bytes; the limit is \(configuration.maximumBlobBytes)")
        }
        let signature = try signatureBytes(fields)
        let timestamp = try freshTimestamp(fields)
        guard key.isValidSignature(signature, for: RelayAPI.uploadSignedMessage(blob: blob, timestamp: timestamp)) else {
            throw RelayFailure(401, "invalid_signature", "signature does not verify for this pubkey, blob and timestamp")
        }
        try limit(key: keyText)
        let record = RelayRecord(blob: blob, timestamp: timestamp, signature: signature, updated: nowSeconds)
        switch try await store.put(key: try Bytes32(key.rawRepresentation), record: record) {
        case .stored:
            metrics.uploads.increment()
            logger.debug("stored upload", metadata: ["key": "\(keyText.prefix(8))", "bytes": "\(blob.count)"])
            let id = key.base64URL
            live.publish(
                .location(.init(id: id, blob: blob, updated: record.updated, timestamp: timestamp, signature: signature)), key: id)
            store.announce(LiveAnnouncement.location(id: id).payload(from: nodeID))
            return .noContent
        case .stale(let current):
            throw RelayFailure(409, "stale_upload", "an upload signed at \(current) is stored; only newer uploads replace it (replays are refused)")
        }
    }

    // MARK: Fetch

    /// `POST /api/location` with `{"ids": [...]}` (at most 50).
    public func fetch(body: [UInt8]) async throws -> RelayReply {
        let fields = try object(body)
        guard let ids = fields["ids"]?.arrayValue else { throw RelayFailure(400, "invalid_request", "the body must be {\"ids\": [ids]}") }
        guard ids.count <= configuration.maximumFetchIDs else {
            throw RelayFailure(400, "too_many_ids", "at most \(configuration.maximumFetchIDs) ids per request, got \(ids.count)")
        }
        var keys: [(text: String, key: Bytes32?)] = []
        for id in ids {
            guard let text = id.stringValue else { throw RelayFailure(400, "invalid_request", "ids must be strings") }
            // An id that is not a key is answered as unknown (null), like the reference relay.
            let bytes = try? Base64.decode(text, field: "id")
            // Likewise: 32 bytes checked, so Bytes32 cannot fail here.
            keys.append((text, bytes.flatMap { $0.count == 32 ? try? Bytes32($0) : nil }))
        }
        let ttl = configuration.ttlSeconds
        let now = nowSeconds
        let found = try await store.get(keys: keys.compactMap(\.key), updatedSince: now.subtractingSaturating(ttl))
        let response: [(String, JSONValue)] = keys.map { text, key in
            guard let key, let record = found[key] else { return (text, .null) }
            return (
                text,
                .object([
                    "blob": .string(Base64.encode(record.blob)),
                    "updated": .integer(record.updated),
                    "signature": .string(Base64.encode(record.signature)),
                    "timestamp": .integer(record.timestamp)
                ])
            )
        }
        metrics.fetches.increment()
        metrics.fetchedIDs.increment(by: Int64(keys.count))
        return .json(.object(JSONObject(response)))
    }

    // MARK: Delete

    /// `DELETE /api/location` with `{"pubkey","timestamp","signature"}` signed over
    /// `"coords-delete-v1" ‖ timestamp`.
    public func delete(body: [UInt8]) async throws -> RelayReply {
        let fields = try object(body)
        let (key, keyText) = try publicKey(fields)
        let signature = try signatureBytes(fields)
        let timestamp = try freshTimestamp(fields)
        guard key.isValidSignature(signature, for: RelayAPI.deleteSignedMessage(timestamp: timestamp)) else {
            throw RelayFailure(401, "invalid_signature", "signature does not verify for this pubkey and timestamp")
        }
        try limit(key: keyText)
        switch try await store.delete(key: try Bytes32(key.rawRepresentation), timestamp: timestamp, now: nowSeconds) {
        case .deleted:
            metrics.deletes.increment()
            logger.debug("deleted", metadata: ["key": "\(keyText.prefix(8))"])
            let id = key.base64URL
            live.publish(.deleted(id: id, timestamp: timestamp, signature: signature), key: id)
            store.announce(LiveAnnouncement.deleted(id: id, timestamp: timestamp, signature: signature).payload(from: nodeID))
            return .noContent
        case .notFound:
            return .noContent
        case .stale(let current):
            throw RelayFailure(409, "stale_delete", "an upload signed at \(current) is newer than this delete request")
        }
    }

    // MARK: Housekeeping

    /// Forgets expired blobs and old tombstones; returns how many blobs were removed.
    public func sweep() async throws -> Int {
        let now = nowSeconds
        let ttl = configuration.ttlSeconds
        // Tombstones only need to outlive the freshness window: older uploads are refused anyway.
        let tombstoneLife = configuration.clockSkewSeconds.multipliedSaturating(by: 2)
        let removed = try await store.sweep(
            updatedBefore: now.subtractingSaturating(ttl),
            tombstonesBefore: now.subtractingSaturating(tombstoneLife))
        if removed > 0 {
            metrics.expired.increment(by: Int64(removed))
            logger.info("expired blobs swept", metadata: ["count": "\(removed)"])
        }
        addressLimiter.prune(now: clock.now())
        keyLimiter.prune(now: clock.now())
        try await sweepMailbox()
        try await sweepPrekeys()
        try await sweepObjects()
        return removed
    }

    /// The Prometheus exposition, with the store size refreshed.
    public func metricsText() async -> [UInt8] {
        // A store outage keeps the gauges' last values; /readyz and the request metrics report the outage.
        if let count = try? await store.count() { metrics.storeEntries.set(Int64(count)) }
        if let count = try? await store.mailboxCount() { metrics.mailboxEntries.set(Int64(count)) }
        if let count = try? await store.seenSignatureCount() { metrics.seenSignatures.set(Int64(count)) }
        if let count = try? await store.pushCount() { metrics.pushRegistrations.set(Int64(count)) }
        if let totals = try? await store.prekeyTotals() {
            metrics.prekeyOwners.set(Int64(totals.owners))
            metrics.prekeyStock.set(Int64(totals.oneTime))
        }
        if let totals = try? await store.objectTotals() {  // an outage keeps the last values, as above
            metrics.objects.set(Int64(totals.objects))
            metrics.objectBytes.set(Int64(clamping: totals.bytes))
        }
        let live = live.counts
        metrics.liveOpen.set(Int64(live.connections))
        metrics.liveKeys.set(Int64(live.keys))
        return metrics.exposition() + Array(ProcessMetrics.exposition().utf8)
    }

    // MARK: Checks, in the reference order

    private func object(_ body: [UInt8]) throws -> JSONObject {
        guard let object = (try? JSONValue.parse(body))?.objectValue else {
            throw RelayFailure(400, "invalid_json", "the body is not a JSON object")
        }
        return object
    }

    private func publicKey(_ fields: JSONObject) throws -> (Ed25519PublicKey, String) {
        guard let text = fields["pubkey"]?.stringValue, let bytes = try? Base64.decode(text, field: "pubkey") else {
            throw RelayFailure(400, "invalid_pubkey", "pubkey is not base64url without padding")
        }
        guard bytes.count == 32 else { throw RelayFailure(400, "invalid_pubkey", "pubkey must be 32 bytes, got \(bytes.count)") }
        guard let key = try? Ed25519PublicKey(rawRepresentation: bytes) else {
            throw RelayFailure(400, "invalid_pubkey", "pubkey is not a valid Ed25519 point")
        }
        return (key, text)
    }

    private func signatureBytes(_ fields: JSONObject) throws -> [UInt8] {
        guard let text = fields["signature"]?.stringValue, let bytes = try? Base64.decode(text, field: "signature") else {
            throw RelayFailure(400, "invalid_signature_encoding", "signature is not base64url without padding")
        }
        guard bytes.count == 64 else {
            throw RelayFailure(400, "invalid_signature_encoding", "signature must be 64 bytes, got \(bytes.count)")
        }
        return bytes
    }

    private func freshTimestamp(_ fields: JSONObject) throws -> UInt64 {
        guard let timestamp = fields["timestamp"]?.uint64Value else {
            throw RelayFailure(400, "invalid_timestamp", "timestamp must be an unsigned integer (Unix seconds)")
        }
        let now = nowSeconds
        if now > timestamp, !timestamp.isWithin(configuration.clockSkewSeconds, of: now) {
            throw RelayFailure(401, "timestamp_too_old", "timestamp too old")
        }
        if timestamp > now, !timestamp.isWithin(configuration.clockSkewSeconds, of: now) {
            throw RelayFailure(401, "timestamp_in_future", "timestamp is more than \(configuration.clockSkewSeconds) s in the future; check the device clock")
        }
        return timestamp
    }
}
