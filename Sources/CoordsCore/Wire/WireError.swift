/// Errors of the wire layer (locations, blobs, relay bodies, links). Codes 300–399, stable.
public enum WireError: CoordsCoreError, Equatable {
    // 300–309: locations
    /// A coordinate was NaN or infinite, or outside ±90° / ±180°.
    case invalidLocation(String)
    /// A wire location was not exactly 20 bytes.
    case invalidWireLocationLength(Int)

    // 310–329: location blobs
    /// The blob is shorter than the smallest possible blob (123 bytes).
    case blobTooShort(actual: Int, minimum: Int)
    /// The first byte is not 0x03.
    case unsupportedBlobVersion(UInt8)
    /// The entry count in the header needs more bytes than the blob has.
    case blobTruncated(entryCount: Int, required: Int, actual: Int)
    /// No entry authenticated under our key: the blob was not sealed for us.
    case notARecipient
    /// The ephemeral public key in the blob is of small order.
    case invalidEphemeralKey
    /// The location ciphertext did not authenticate under the DEK (tampered or corrupted).
    case blobDataTampered
    /// The location plaintext authenticated but was not 20 bytes.
    case invalidLocationPlaintext(length: Int)
    /// Sealing for more recipients than a relay accepts (1050 entries, 1049 friends plus self).
    case tooManyRecipients(count: Int, maximum: Int)
    /// Sealing needs at least the sender as recipient.
    case noRecipients
    /// The recipient at this position has a key that cannot be used (invalid or small-order point).
    case invalidRecipientKey(index: Int)

    // 330–339: encodings
    /// Base64 text was not canonical for its variant (padding, alphabet, trailing bits, whitespace).
    case invalidBase64(field: String)
    /// A decoded value had the wrong number of bytes.
    case invalidLength(field: String, expected: Int, actual: Int)
    /// JSON text was malformed, too deep, or had duplicate keys.
    case invalidJSON(String)
    /// JSON was well formed but did not have the expected shape.
    case unexpectedJSON(String)

    // 340–349: relay requests and responses
    /// A server string is not an absolute http(s) URL with a host.
    case invalidServerURL(String)
    /// An id is not base64url of a valid 32-byte Ed25519 key.
    case invalidPublicKeyID(String)
    /// The fetched entry's signature does not verify for the id it was filed under.
    case tamperedEntry(id: String)
    /// Strict mode: the relay did not sign-stamp this entry, so its uploader is unknown.
    case unverifiedEntry(id: String)
    /// The fetched location is older than the one cached (a rollback), so it was ignored.
    case rollback(id: String, cachedTimestamp: UInt64, fetchedTimestamp: UInt64)
    /// The relay answered with an error status.
    case relayError(status: Int, code: String?, message: String)
    /// A fix timestamp is not newer than the last successful upload.
    case staleLocation(timestamp: UInt64, lastUploaded: UInt64)

    // 350–359: friend links and push gateway tokens
    /// The friend link is malformed; the text names the part that is wrong.
    case invalidFriendLink(String)
    /// A push gateway token (PROTOCOL.md §8.8) that does not open with the gateway's keys, or whose
    /// contents break a rule; or a device token that cannot be sealed into one.
    case invalidPushToken(String)
    /// A sealed message envelope (§7) is malformed: the reason names the field.
    case invalidEnvelope(String)
    /// The envelope's signature does not verify with the sender's key.
    case envelopeSignatureInvalid
    /// The envelope is addressed to someone else.
    case envelopeNotForMe
    /// The envelope's `expiresAt` has passed (Unix seconds).
    case envelopeExpired(expiresAt: UInt64)
    /// The payload does not open: it or the header was changed, or it was moved from another envelope.
    case envelopeTampered
    /// A rotation statement (§9.1) is malformed, names the wrong key, or a signature does not verify.
    case invalidRotation(String)
    /// Something arrived signed by a key its owner rotated away from (§9.1) or revoked (§9.2).
    case retiredKey(id: String)

    // 380–399: prekeys and sessions (§10)
    /// A prekey bundle (§10.2) is malformed, someone else's, badly signed, a rollback or a conflict.
    case invalidPrekeyBundle(String)
    /// The bundle's signed prekey has expired (Unix ms): nobody seals to it any more.
    case prekeyBundleExpired(expires: UInt64)
    /// A version-3 sealed payload (§10.7) is malformed: the reason names the part.
    case malformedSessionMessage(String)
    /// A handshake names a signed or one-time prekey this identity no longer keeps (§10.5).
    case unknownPrekey(String)
    /// A handshake reuses a base key whose session is gone: a replay (§10.5).
    case replayedHandshake
    /// A session message whose key was already used or erased: a replay or a duplicate (§10.6).
    case duplicateMessage
    /// A session message skips more message keys than are kept (§10.6, 1,000).
    case tooManySkipped(gap: UInt64)
    /// No kept session opens this message (our state for it was lost); a reset follows (§10.8).
    case sessionBroken
    /// A relay answered "no prekeys" for a friend who announced forward secrecy: a downgrade
    /// attempt, refused — the last bundle and the sessions stay in use (§10.4).
    case downgradeRefused
    /// No session and no valid prekey bundle for a friend who announced forward secrecy (§10.4).
    case prekeysUnavailable
    /// A group membership statement that breaks §11.2–§11.3 (layout, lengths, chain, state).
    case malformedGroupStatement(String)
    /// A group statement or group message whose signature does not verify (§11.3, §11.6).
    case groupSignatureInvalid
    /// A group message that is not the §11.6 layout.
    case malformedGroupMessage(String)

    // 396–399: attachments (§12)
    /// A file message's `file` member (§12.3) breaks a rule: the reason names it.
    case malformedFile(String)
    /// A chunk of an object does not open (§12.2): changed, moved to another index, taken from
    /// another object, or the wrong key. The index is the chunk's.
    case badChunk(index: Int)
    /// An object is not the one its file message announced (§12.2): longer, shorter, or another
    /// digest; or a sealer or opener was used out of order.
    case objectMismatch(String)

    /// The stable numeric code of this error.
    public var code: Int32 {
        switch self {
        case .invalidLocation: 300
        case .invalidWireLocationLength: 301
        case .blobTooShort: 310
        case .unsupportedBlobVersion: 311
        case .blobTruncated: 312
        case .notARecipient: 313
        case .invalidEphemeralKey: 314
        case .blobDataTampered: 315
        case .invalidLocationPlaintext: 316
        case .tooManyRecipients: 317
        case .noRecipients: 318
        case .invalidRecipientKey: 319
        case .invalidBase64: 330
        case .invalidLength: 331
        case .invalidJSON: 332
        case .unexpectedJSON: 333
        case .invalidServerURL: 340
        case .invalidPublicKeyID: 341
        case .tamperedEntry: 342
        case .unverifiedEntry: 343
        case .rollback: 344
        case .relayError: 345
        case .staleLocation: 346
        case .invalidFriendLink: 350
        case .invalidPushToken: 351
        case .invalidEnvelope: 360
        case .envelopeSignatureInvalid: 361
        case .envelopeNotForMe: 362
        case .envelopeExpired: 363
        case .envelopeTampered: 364
        case .invalidRotation: 370
        case .retiredKey: 371
        case .invalidPrekeyBundle: 380
        case .prekeyBundleExpired: 381
        case .malformedSessionMessage: 385
        case .unknownPrekey: 386
        case .replayedHandshake: 387
        case .duplicateMessage: 388
        case .tooManySkipped: 389
        case .sessionBroken: 390
        case .downgradeRefused: 391
        case .prekeysUnavailable: 392
        case .malformedGroupStatement: 393
        case .groupSignatureInvalid: 394
        case .malformedGroupMessage: 395
        case .malformedFile: 396
        case .badChunk: 397
        case .objectMismatch: 398
        }
    }

    /// A sentence saying what was wrong and, where possible, what to do.
    public var description: String {
        switch self {
        case .invalidLocation(let why): "invalid location: \(why)"
        case .invalidWireLocationLength(let n): "a wire location is exactly 20 bytes, got \(n)"
        case .blobTooShort(let actual, let minimum): "location blob is \(actual) bytes, shorter than the minimum of \(minimum)"
        case .unsupportedBlobVersion(let v): "location blob version 0x\(String(v, radix: 16)) is not supported (expected 0x03)"
        case .blobTruncated(let e, let required, let actual):
            "location blob declares \(e) entries, which need at least \(required) bytes, but it has \(actual)"
        case .notARecipient: "this location blob was not sealed for this identity (no entry opens with its key)"
        case .invalidEphemeralKey: "location blob carries an invalid (small-order) ephemeral key"
        case .blobDataTampered: "location blob data does not authenticate: it was modified or corrupted"
        case .invalidLocationPlaintext(let n): "location blob decrypted to \(n) bytes instead of 20"
        case .tooManyRecipients(let count, let maximum):
            "cannot seal for \(count) recipients: relays refuse blobs over 65,536 bytes, which allows at most \(maximum) (\(maximum - 1) friends plus yourself); share with fewer friends"
        case .noRecipients: "a location blob needs at least one recipient (the sender itself comes first)"
        case .invalidRecipientKey(let index): "recipient \(index) has an unusable key (not a valid, full-order curve point)"
        case .invalidBase64(let field): "\(field) is not canonical base64 for its variant (check padding, alphabet and whitespace)"
        case .invalidLength(let field, let expected, let actual): "\(field) must be \(expected) bytes, got \(actual)"
        case .invalidJSON(let why): "invalid JSON: \(why)"
        case .unexpectedJSON(let why): "unexpected JSON: \(why)"
        case .invalidServerURL(let s): "server \"\(s.prefix(200))\" is not an absolute http:// or https:// URL with a host"
        case .invalidPublicKeyID(let s): "\"\(s.prefix(64))\" is not a Coords id (base64url of a 32-byte Ed25519 public key)"
        case .tamperedEntry(let id): "the relay's entry for \(id.prefix(8))… carries a signature that does not verify: it was substituted or modified"
        case .unverifiedEntry(let id): "the relay's entry for \(id.prefix(8))… is not signed (reference relay); strict mode refuses it"
        case .rollback(let id, let cached, let fetched):
            "ignored the location of \(id.prefix(8))… from \(fetched) ms: it is older than the cached one from \(cached) ms (rollback)"
        case .relayError(let status, let code, let message):
            "relay answered \(status)\(code.map { " (\($0))" } ?? ""): \(message)"
        case .staleLocation(let timestamp, let last):
            "location fix from \(timestamp) ms is not newer than the last uploaded fix (\(last) ms); take a new fix"
        case .invalidFriendLink(let why): "invalid friend link: \(why)"
        case .invalidPushToken(let why): "invalid push gateway token: \(why)"
        case .invalidEnvelope(let why): "invalid message envelope: \(why)"
        case .envelopeSignatureInvalid: "the message envelope's signature does not verify with the sender's key (forged or altered)"
        case .envelopeNotForMe: "this message envelope is addressed to someone else"
        case .invalidRotation(let why): "invalid rotation statement: \(why)"
        case .retiredKey(let id): "signed by \(id.prefix(8))…, a key its owner rotated away from or revoked: refused"
        case .envelopeExpired(let at): "this message expired at \(RFC3339.format(at)) and is not shown"
        case .envelopeTampered: "the message does not open: its payload or header was altered"
        case .invalidPrekeyBundle(let why): "refused prekey bundle: \(why)"
        case .prekeyBundleExpired(let at):
            "the friend's signed prekey expired at \(at / 1000) (Unix s); fetch their bundle again"
        case .malformedSessionMessage(let why): "malformed forward-secret message: \(why)"
        case .unknownPrekey(let why): "the handshake names \(why) this identity no longer keeps (used already, erased, or a replay)"
        case .replayedHandshake: "this handshake was accepted before and its session is gone: a replay, refused"
        case .duplicateMessage: "this message was opened before or its key was erased: a replay or duplicate, refused"
        case .tooManySkipped(let gap): "the message skips \(gap) messages; at most 1000 are kept, so it is refused"
        case .sessionBroken: "no session opens this message (the state was lost, e.g. after a restore); a session reset is sent"
        case .downgradeRefused:
            "the relay says this friend has no prekeys, but they announced forward secrecy: refused as a downgrade; their last bundle stays in use"
        case .prekeysUnavailable:
            "no forward-secret session with this friend and no valid prekey bundle on their relay: the message was not sent and not kept (it is never sent the old way); send it again once their relay offers their prekeys"
        case .malformedGroupStatement(let why): "refused group membership statement: \(why)"
        case .groupSignatureInvalid: "a group statement or group message does not verify with its signer's key (forged or altered)"
        case .malformedGroupMessage(let why): "malformed group message: \(why)"
        case .malformedFile(let why): "refused file message: \(why)"
        case .badChunk(let index): "chunk \(index) of the attachment does not open: it was changed, moved or taken from another file"
        case .objectMismatch(let why): "the attachment is not the one announced: \(why)"
        }
    }
}
