/// Files sent as messages (PROTOCOL.md §12): the core seals, announces and opens them; the host
/// moves the bytes (it reads and writes its files and performs the requests, as for every
/// other request), never holding more than one upload part or one download read in memory.
///
/// Sending: ``MessagesManager/prepareFileUpload(size:partChunks:)`` → the ``ObjectUpload`` loop
/// (each part signed with ``MessagesManager/nextSignatureTimestamp()``) →
/// ``MessagesManager/sendFile(_:type:name:caption:to:)`` once the relay holds the whole object.
/// Receiving: a fetch stores the file message with its ``MessageRecord/file``;
/// ``MessagesManager/prepareDownload(messageID:)`` gives the ``ObjectDownload`` that streams and
/// checks it into the host's temporary file.
extension MessagesManager {
    /// How long an uploaded object lives on the relay: 6 days, a day under the longest a relay
    /// grants (`OBJECT_TTL_MAX`, 7 days), so a relay whose clock runs ahead of ours still takes it.
    public static let attachmentLifetimeSeconds: UInt64 = 518_400

    /// A new upload of a file of `size` bytes to our own relay, under a fresh key and object id,
    /// expiring ``attachmentLifetimeSeconds`` from now. Keep the returned value until
    /// ``sendFile(_:type:name:caption:to:)``: its key exists nowhere else.
    /// - Parameters:
    ///   - size: the file's length in bytes (at most ``Objects/maximumSize``).
    ///   - partChunks: chunks per upload part (1 … 63; smaller parts cost more requests and less
    ///     to send again after a lost connection).
    /// - Throws: ``WireError/objectMismatch(_:)`` for a size over ``Objects/maximumSize``,
    ///   ``WalletManagerError/noIdentity``, ``WalletManagerError/noServer``,
    ///   ``WireError/invalidServerURL(_:)``, crypto errors.
    public nonisolated func prepareFileUpload(size: UInt64, partChunks: Int = ObjectUpload.chunksPerPart) throws -> ObjectUpload {
        let identity = try context.identity.get()
        let server = try ownServer()
        let key = try SecretBytes(randomCount: 32, using: context.random)
        return try ObjectUpload(
            server: server, signer: identity.signing, key: key, object: try ObjectID.random(using: context.random), size: size,
            expiresAt: context.clock.now() / 1000 + Self.attachmentLifetimeSeconds, partChunks: partChunks)
    }

    /// The timestamp for the next signed request a host builds itself, e.g. each
    /// ``ObjectUpload/supply(_:timestamp:)`` (the same counter as every mailbox signature: each is
    /// new, so the relay never refuses one as a replay).
    /// - Throws: store errors.
    public nonisolated func nextSignatureTimestamp() throws -> UInt64 {
        try nextSignedTimestamp()
    }

    /// Announces a finished upload to a friend: seals a `file` message carrying the attachment
    /// (§12.3) with `caption` as its text, stores it (status `queued`, ``MessageRecord/file`` set)
    /// and queues the POST, as ``send(_:to:)`` does for a text.
    /// - Parameters:
    ///   - upload: the finished upload (``ObjectUpload/need`` is nil).
    ///   - type: the media type, `type/subtype` (a hint for the reader).
    ///   - name: the file's name without a path (0–255 bytes, no control characters, `/` or `\`).
    ///   - caption: the message's text (may be empty).
    ///   - friendID: the friend (base64url public key).
    /// - Throws: ``WireError/objectMismatch(_:)`` when the upload has not finished,
    ///   ``WireError/malformedFile(_:)`` for a bad type or name,
    ///   ``MessagesManagerError/messageTooLong(bytes:maximum:)`` for a long caption, and as
    ///   ``send(_:to:)``.
    public func sendFile(_ upload: ObjectUpload, type: String, name: String, caption: String, to friendID: String) async throws -> SentMessage {
        guard caption.utf8.count <= Self.maximumTextBytes else {
            throw MessagesManagerError.messageTooLong(bytes: caption.utf8.count, maximum: Self.maximumTextBytes)
        }
        let attachment = try upload.attachment(type: type, name: name)
        let id = try Envelope.newUUID(using: context.random)
        return try await queue(attachment.payload(id: id, caption: caption, sentAt: context.clock.now()), to: friendID)
    }

    /// The stored 1:1 message `id` (a lowercase UUID), or nil when there is none or its
    /// disappearing timer ran out.
    /// - Throws: store errors.
    public nonisolated func message(id: String) throws -> MessageRecord? {
        let now = context.clock.now()
        return try context.database.read { tx in
            guard let key = try tx.open(Tables.messageIDs).get(id.lowercased()), !key.isEmpty,
                let record = try tx.open(Tables.messages).get(key), !record.hasDisappeared(at: now)
            else { return nil }
            return record
        }
    }

    /// The download of message `messageID`'s attachment from the relay that holds it (the
    /// sender's: the friend's server for a received file, ours for one we sent). Stream the
    /// answer through ``ObjectDownload/take(_:appendingTo:)`` into a temporary file and make it
    /// final only after ``ObjectDownload/finish()``; after a lost connection, send its next
    /// ``ObjectDownload/request()`` (it resumes with `Range`).
    /// - Throws: ``MessagesManagerError/unknownMessage(_:)``,
    ///   ``MessagesManagerError/noAttachment(_:)`` (not a file message, malformed, or past its
    ///   `expiresAt`), ``FriendsManagerError/notFound(id:)`` (the sender is no longer a friend),
    ///   ``WalletManagerError/noServer``, ``WireError/invalidServerURL(_:)``.
    public nonisolated func prepareDownload(messageID: String) throws -> ObjectDownload {
        guard let record = try message(id: messageID) else { throw MessagesManagerError.unknownMessage(messageID) }
        guard let file = record.file else {
            throw MessagesManagerError.noAttachment(
                record.kind == FileAttachment.kind ? "the message's file member is malformed" : "the message is not a file message")
        }
        guard file.expiresAt > context.clock.now() / 1000 else {
            throw MessagesManagerError.noAttachment("the relay dropped the file at its expiry")
        }
        let server: String
        if record.outgoing {
            server = try ownServer()
        } else {
            let key = try Ed25519PublicKey(base64URL: record.peer)
            guard let friend = try context.database.read({ tx in try tx.open(Tables.friends).get(key) }) else {
                throw FriendsManagerError.notFound(id: record.peer)
            }
            server = friend.server
        }
        return try ObjectDownload(server: server, file: file)
    }

    /// Our relay's URL from the settings.
    nonisolated func ownServer() throws -> String {
        guard let server = try context.database.read({ tx in try tx.open(Tables.settings).get(SettingKey.server) }), !server.isEmpty else {
            throw WalletManagerError.noServer
        }
        return server
    }
}
