import CoordsCore
import Synchronization

/// The §7.3 mailbox: sealed envelopes in, recipient-signed reads and acks out.
extension RelayService {
    private var mailboxLimits: MailboxLimits {
        MailboxLimits(
            perRecipient: configuration.maximumMessagesPerRecipient, total: configuration.maximumMessages,
            perRecipientUnauthenticated: configuration.maximumUnauthenticatedMessagesPerRecipient)
    }

    /// `POST /v1/relay/messages` with an envelope → 202 `{"accepted": true, "packetID": id}`.
    ///
    /// Envelopes whose `senderKey` signature checked out are rate-limited by that verified sender
    /// and queue under the recipient's authenticated quota; envelopes without `senderKey` are
    /// rate-limited by `clientAddress` (never by their unchecked `senderID`) and have a separate,
    /// smaller quota, so they can never crowd out a friend's signed message.
    public func postMessage(body: [UInt8], clientAddress: String) async throws -> RelayReply {
        guard let value = try? JSONValue.parse(body) else { throw RelayFailure(400, "invalid_json", "the body is not JSON") }
        let envelope: Envelope
        do {
            envelope = try Envelope(json: value)
        } catch {
            throw RelayFailure(400, "invalid_envelope", (error as? WireError)?.description ?? "\(error)")
        }
        let now = nowSeconds
        guard let created = try? RFC3339.parse(envelope.createdAt), let expires = try? RFC3339.parse(envelope.expiresAt) else {
            throw RelayFailure(400, "invalid_envelope", "createdAt and expiresAt must be RFC 3339 date-times")
        }
        guard expires > created else { throw RelayFailure(400, "invalid_envelope", "expiresAt must be after createdAt") }
        guard expires > now else { throw RelayFailure(400, "expired", "expiresAt has already passed") }
        guard created <= now.addingSaturating(configuration.clockSkewSeconds) else {
            throw RelayFailure(400, "created_in_future", "createdAt is more than \(configuration.clockSkewSeconds) s in the future; check the device clock")
        }
        guard expires - created <= configuration.maximumMessageTTLSeconds else {
            throw RelayFailure(
                400, "ttl_too_long", "the envelope lives \(expires - created) s; this relay keeps messages at most \(configuration.maximumMessageTTLSeconds) s")
        }
        var verifiedSender: PeerID?
        if let keyText = envelope.senderKey {
            guard let bytes = try? Base64.decode(keyText, field: "senderKey"), bytes.count == 32,
                let key = try? Ed25519PublicKey(rawRepresentation: bytes)
            else {
                throw RelayFailure(401, "invalid_signature", "senderKey is not a base64url Ed25519 public key")
            }
            do {
                try envelope.verify(senderKey: key)
            } catch {
                throw RelayFailure(401, "invalid_signature", "the envelope's signature does not verify with senderKey, or senderKey's hash is not senderID")
            }
            verifiedSender = PeerID(key)
        } else if configuration.strictMailbox {
            throw RelayFailure(401, "sender_key_required", "this relay requires senderKey so it can check the signature")
        }
        guard let payload = try? Base64.decode(envelope.sealedPayloadBase64, variant: .standard, field: "sealedPayloadBase64") else {
            throw RelayFailure(400, "invalid_envelope", "sealedPayloadBase64 is not standard base64 with padding")
        }
        guard payload.count <= configuration.maximumMessagePayloadBytes else {
            throw RelayFailure(
                413, "payload_too_large", "the sealed payload is \(payload.count) bytes; the limit is \(configuration.maximumMessagePayloadBytes)")
        }
        guard let signature = try? Base64.decode(envelope.signatureBase64, variant: .standard, field: "signatureBase64"), signature.count == 64 else {
            throw RelayFailure(400, "invalid_envelope", "signatureBase64 must be 64 bytes in standard base64")
        }
        let limiterKey = verifiedSender.map { "m:" + $0.hex } ?? "u:" + clientAddress
        if let retry = messageLimiter.take(limiterKey, now: clock.now()) {
            throw RelayFailure(429, "rate_limited", "too many messages from this sender; retry in \(retry) s", retryAfter: retry)
        }
        let id = envelope.id.lowercased()
        if let retry = recipientAddressLimiter.take("a:\(clientAddress)|\(envelope.recipientID.lowercased())", now: clock.now()) {
            metrics.rejection("address_recipient_limited")
            throw RelayFailure(
                429, "rate_limited", "too many messages from this address to this recipient; retry in \(retry) s", retryAfter: retry)
        }
        let entry = MailboxEntry(
            id: id, recipient: envelope.recipientID.lowercased(), expiresAt: expires, envelope: body,
            authenticated: verifiedSender != nil)
        switch try await store.mailboxPost(entry, limits: mailboxLimits, now: now) {
        case .stored:
            metrics.messagesPosted.increment()
            live.publish(.message(id: id), mailbox: entry.recipient)
            push?.wake(recipient: entry.recipient)
            store.announce(LiveAnnouncement.message(recipient: entry.recipient, id: id).payload(from: nodeID))
            return .json(.object(["accepted": .bool(true), "packetID": .string(id)]), status: 202)
        case .duplicate:
            throw RelayFailure(409, "duplicate", "an envelope with id \(id) is stored or was already delivered")
        case .recipientFull:
            let quota = verifiedSender == nil ? configuration.maximumUnauthenticatedMessagesPerRecipient : configuration.maximumMessagesPerRecipient
            throw RelayFailure(
                429, "recipient_full", "the recipient has \(quota) \(verifiedSender == nil ? "unsigned " : "")messages waiting; retry later",
                retryAfter: 60)
        case .relayFull:
            throw RelayFailure(507, "relay_full", "the relay holds its maximum number of messages; retry later")
        }
    }

    /// `GET /v1/relay/messages?recipientID=…&limit=…` (recipient-signed) → `{"packets": […]}`.
    public func listMessages(pathWithQuery: String, query: [String: String], headers: [String: String]) async throws -> RelayReply {
        guard let recipientText = query["recipientID"], let recipient = try? PeerID(parsing: recipientText) else {
            throw RelayFailure(400, "invalid_recipient", "recipientID must be 64 hex digits")
        }
        var limit = 50
        if let text = query["limit"] {
            guard let n = Int(text), (1...100).contains(n) else { throw RelayFailure(400, "invalid_limit", "limit must be 1…100") }
            limit = n
        }
        try await authenticate(recipient: recipient, method: "GET", pathWithQuery: pathWithQuery, headers: headers)
        let entries = try await store.mailboxList(recipient: recipient.hex, now: nowSeconds, limit: limit)
        // Every envelope was checked JSON when stored; a row damaged since is left out rather than failing the whole list.
        let packets = entries.compactMap { try? JSONValue.parse($0.envelope) }
        metrics.messagesDelivered.increment(by: Int64(packets.count))
        return .json(.object(["packets": .array(packets)]))
    }

    /// `POST /v1/relay/messages/<id>/ack` or `DELETE /v1/relay/messages/<id>` (recipient-signed)
    /// → `{"deleted": bool, "packetID": id}`.
    public func acknowledgeMessage(id rawID: String, method: String, pathWithQuery: String, headers: [String: String]) async throws -> RelayReply {
        guard Envelope.isUUID(rawID) else { throw RelayFailure(400, "invalid_id", "the message id must be a UUID") }
        let id = rawID.lowercased()
        let recipient = try await authenticateCaller(method: method, pathWithQuery: pathWithQuery, headers: headers)
        let tombstoneUntil = nowSeconds.addingSaturating(configuration.maximumMessageTTLSeconds).addingSaturating(configuration.clockSkewSeconds)
        let deleted = try await store.mailboxAck(id: id, recipient: recipient.hex, tombstoneUntil: tombstoneUntil)
        if deleted { metrics.messagesAcknowledged.increment() }
        return .json(.object(["deleted": .bool(deleted), "packetID": .string(id)]))
    }

    /// The mailbox of whoever signed the request (the key in `X-Coords-Key`), after the same
    /// checks as ``authenticate(recipient:method:pathWithQuery:headers:)``.
    func authenticateCaller(method: String, pathWithQuery: String, headers: [String: String]) async throws -> PeerID {
        guard let keyText = headers["x-coords-key"], let bytes = try? Base64.decode(keyText, field: "X-Coords-Key"), bytes.count == 32,
            let key = try? Ed25519PublicKey(rawRepresentation: bytes)
        else {
            throw RelayFailure(401, "unauthenticated", "send X-Coords-Key, X-Coords-Timestamp and X-Coords-Signature (§7.3)")
        }
        let recipient = PeerID(key)
        try await authenticate(recipient: recipient, method: method, pathWithQuery: pathWithQuery, headers: headers)
        return recipient
    }

    /// Checks the three recipient headers: the key hashes to `recipient`, the timestamp is within
    /// the skew, the signature verifies and was never used before.
    private func authenticate(recipient: PeerID, method: String, pathWithQuery: String, headers: [String: String]) async throws {
        guard let keyText = headers["x-coords-key"], let timestampText = headers["x-coords-timestamp"],
            let signatureText = headers["x-coords-signature"]
        else {
            throw RelayFailure(401, "unauthenticated", "send X-Coords-Key, X-Coords-Timestamp and X-Coords-Signature (§7.3)")
        }
        guard let bytes = try? Base64.decode(keyText, field: "X-Coords-Key"), bytes.count == 32,
            let key = try? Ed25519PublicKey(rawRepresentation: bytes), PeerID(key) == recipient
        else {
            throw RelayFailure(401, "wrong_mailbox", "X-Coords-Key is not the key of this recipient")
        }
        guard let timestamp = UInt64(timestampText) else { throw RelayFailure(401, "invalid_timestamp", "X-Coords-Timestamp must be Unix seconds") }
        guard let signature = try? Base64.decode(signatureText, field: "X-Coords-Signature"), signature.count == 64 else {
            throw RelayFailure(401, "invalid_signature", "X-Coords-Signature does not verify for this method, path and timestamp")
        }
        try await acceptMailboxSignature(key: key, timestamp: timestamp, signature: signature, method: method, path: pathWithQuery)
    }

    /// Checks a §7.3 signature (or a §8.2 live proof) by `key` over `method`, `path` and
    /// `timestamp`: the timestamp within the skew, the signature valid and never used before.
    func acceptMailboxSignature(key: Ed25519PublicKey, timestamp: UInt64, signature: [UInt8], method: String, path: String) async throws {
        let now = nowSeconds
        let skew = configuration.clockSkewSeconds
        guard timestamp.isWithin(skew, of: now) else {
            throw RelayFailure(401, "timestamp_out_of_window", "the signed timestamp is more than \(skew) s from the relay's clock")
        }
        guard signature.count == 64, key.isValidSignature(signature, for: MailboxAuth.signedBytes(method: method, path: path, timestamp: timestamp)) else {
            throw RelayFailure(401, "invalid_signature", "the signature does not verify for this method, path and timestamp")
        }
        let r = try Bytes32(Array(signature.prefix(32)))  // 64 bytes checked above
        switch try await store.acceptSignature(
            r, until: timestamp.addingSaturating(skew), now: now,
            capacity: configuration.maximumSeenSignatures)
        {
        case .accepted:
            break
        case .replayed:
            throw RelayFailure(401, "replayed_signature", "this signature was already used; sign each request afresh")
        case .full:
            throw RelayFailure(503, "busy", "the relay is remembering too many request signatures; retry in a minute", retryAfter: 60)
        }
    }

    /// Forgets expired envelopes, old tombstones and old request signatures.
    func sweepMailbox() async throws {
        let now = nowSeconds
        let removed = try await store.mailboxSweep(now: now)
        if removed > 0 {
            metrics.messagesExpired.increment(by: Int64(removed))
            logger.info("expired messages swept", metadata: ["count": "\(removed)"])
        }
        messageLimiter.prune(now: clock.now())
        recipientAddressLimiter.prune(now: clock.now())
        let pushRemoved = try await store.pushSweep(now: now)
        if pushRemoved > 0 { logger.info("expired push registrations swept", metadata: ["count": "\(pushRemoved)"]) }
        push?.prune()
    }
}
