/// The tables of a CoordsCore data directory. See docs/STORE.md for how to add one.
public enum Tables {
    /// Friends by public key. Stamped: uploads keep what sealing needs per change stamp.
    public static let friends = TableDefinition<Ed25519PublicKey, FriendRecord>("friends", stamped: true)
    /// The last location opened for each friend.
    public static let locations = TableDefinition<Ed25519PublicKey, CachedLocation>("location_cache")
    /// Upload bookkeeping, one row per identity (key ``UploadState/key``).
    public static let uploadState = TableDefinition<String, UploadState>("upload_state", stamped: true)
    /// Settings by name (``SettingKey``); values are strings.
    public static let settings = TableDefinition<String, String>("settings")
    /// Prepared requests waiting to be sent, by increasing id (ids are visible when sealed: they
    /// reveal only how many requests were queued).
    public static let outbox = TableDefinition<UInt64, OutboxItem>("outbox", keys: .visible)
    /// Messages by `friend public key (32) | sequence u64 BE`: a prefix scan is a conversation,
    /// oldest first. Sealed, the friend key is hidden and the sequence kept, so a conversation
    /// still reads in order.
    public static let messages = TableDefinition<[UInt8], MessageRecord>("messages", keys: .hiddenPrefix(32))
    /// Message and envelope ids already processed → their ``messages`` key (empty for receipts):
    /// de-duplication and receipt lookup.
    public static let messageIDs = TableDefinition<String, [UInt8]>("message_ids")
    /// Per-friend messaging settings (disappearing messages).
    public static let conversations = TableDefinition<Ed25519PublicKey, ConversationSettings>("conversations")
    /// How far sharing went with friends who were removed while it was paused or limited
    /// (PROTOCOL.md §9.3): adding them again never widens it.
    public static let shareLimits = TableDefinition<Ed25519PublicKey, ShareLimit>("share_limits")
    /// Friends' keys they rotated away from (PROTOCOL.md §9.1) → the successor and whether the
    /// key was revoked: anything later signed by one is refused.
    public static let retiredKeys = TableDefinition<Ed25519PublicKey, RetiredKey>("retired_keys")
    /// The user's own rotations (row ``RotationState/key``): earlier identities, and the
    /// statement still being delivered to friends.
    public static let rotation = TableDefinition<String, RotationState>("rotation_state")
}

/// The current schema and its migrations.
public enum AppSchema {
    /// Version 1: friends, location_cache, upload_state, settings, outbox.
    /// Version 2: messages, message_ids, conversations (new tables; nothing to convert).
    /// Version 3: share_limits, retired_keys, rotation_state (new tables; friends gain optional
    /// `shareUntil` and `conflictKeys`, trust may be `conflict`).
    /// Version 4: sealed at rest (every value sealed, keys hidden; docs/STORE.md). A version-3
    /// store is copied into a new sealed file by ``CoordsApp/open(directory:options:)``.
    /// Version 5: own_prekeys, friend_prekeys, sessions, base_keys (forward secrecy, PROTOCOL.md
    /// §10; new tables, nothing to convert).
    /// Version 6: groups, group_statements, group_pending, group_chains (PROTOCOL.md §11; new
    /// tables, nothing to convert; messages gain an optional `group`).
    /// Version 7: group_waiting (group messages held until their sender key comes, §11.6; a new
    /// table, nothing to convert).
    public static let version: UInt32 = 7

    /// Every table, in creation order.
    public static var tables: [AnyTableDefinition] {
        [
            Tables.friends.erased, Tables.locations.erased, Tables.uploadState.erased, Tables.settings.erased, Tables.outbox.erased,
            Tables.messages.erased, Tables.messageIDs.erased, Tables.conversations.erased, Tables.shareLimits.erased,
            Tables.retiredKeys.erased, Tables.rotation.erased, Tables.ownSignedPrekeys.erased, Tables.ownOneTimePrekeys.erased,
            Tables.friendPrekeys.erased,
            Tables.sessions.erased, Tables.baseKeys.erased, Tables.groups.erased, Tables.groupStatements.erased, Tables.groupPending.erased,
            Tables.groupChains.erased, Tables.groupWaiting.erased
        ]
    }

    /// The schema ``Database/open(path:options:schema:)`` is given for a data directory.
    public static var current: Schema {
        Schema(
            version: version, tables: tables,
            migrations: [
                Migration(to: 2) { _ in }, Migration(to: 3) { _ in }, Migration(to: 4) { _ in }, Migration(to: 5) { _ in },
                Migration(to: 6) { _ in }, Migration(to: 7) { _ in }
            ])
    }
}

/// The rows of ``Tables/settings``, each with its type: the table stores text, but every read and
/// write goes through a ``Setting`` key, so a flag is a `Bool` and a counter a `UInt64`, and a row
/// that does not decode is an error (``StoreError/decodingFailed(table:type:reason:)``), never a
/// silent default.
public enum SettingKey {
    /// The user's own relay (`https://…`).
    public static let server = Setting<String>("server")
    /// The user's display name (used in their friend link).
    public static let name = Setting<String>("name")
    /// Refuse fetched entries without the relay's signature stamp (§6 strict mode).
    public static let strictMode = Setting<Bool>("strict_mode")
    /// The next outbox id (ids are never reused).
    public static let outboxNextID = Setting<UInt64>("outbox_next_id")
    /// The next message sequence number (orders a conversation).
    public static let messageNextSequence = Setting<UInt64>("message_next_sequence")
    /// The timestamp (Unix s) of the last signed mailbox request (each new one is later).
    public static let mailboxLastSignedTimestamp = Setting<UInt64>("mailbox_last_signed_timestamp")
    /// The id of the signed prekey the relay last confirmed (PROTOCOL.md §10.2).
    public static let prekeysPublishedSignedID = Setting<UInt64>("prekeys_published_signed_id")
    /// The relay's last reported stock of our one-time prekeys.
    public static let prekeysRelayStock = Setting<UInt64>("prekeys_relay_stock")
    /// Whether texts received are confirmed with a delivery receipt (absent: yes).
    public static let deliveryReceipts = Setting<Bool>("delivery_receipts")
    /// The push endpoint registered with our relay (PROTOCOL.md §8.7; absent: none), renewed by
    /// the outbox.
    public static let pushEndpoint = Setting<String>("push_endpoint")
    /// The lifetime asked for with it, in seconds (absent: the relay's default).
    public static let pushTTLSeconds = Setting<UInt64>("push_ttl_seconds")
    /// When the outbox registers the endpoint again (ms since the epoch).
    public static let pushRenewAt = Setting<UInt64>("push_renew_at")
}

/// A typed row name of ``Tables/settings``.
public struct Setting<Value: SettingValue>: Sendable {
    /// The row's key in the table.
    public let name: String
    /// A setting stored in the row `name`.
    public init(_ name: String) { self.name = name }
}

/// A type a ``Setting`` can hold: written as text, read back strictly.
public protocol SettingValue: Sendable {
    /// The stored text.
    var settingText: String { get }
    /// Decodes stored text; nil when it is not exactly what ``settingText`` writes.
    init?(settingText: String)
}

extension String: SettingValue {
    public var settingText: String { self }
    public init?(settingText: String) { self = settingText }
}

extension Bool: SettingValue {
    public var settingText: String { self ? "true" : "false" }
    public init?(settingText: String) {
        switch settingText {
        case "true": self = true
        case "false": self = false
        default: return nil
        }
    }
}

extension UInt64: SettingValue {
    public var settingText: String { String(self) }
    public init?(settingText: String) {
        guard !settingText.isEmpty, settingText.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = UInt64(settingText) else { return nil }
        self = value
    }
}

extension TableHandle where Key == String, Value == String {
    /// The typed value of `setting`, or nil when the row is absent.
    /// - Throws: ``StoreError/decodingFailed(table:type:reason:)`` when the stored text is not a
    ///   `V` (a damaged row is never read as a default); store errors.
    public func get<V>(_ setting: Setting<V>) throws -> V? {
        guard let text = try get(setting.name) else { return nil }
        guard let value = V(settingText: text) else {
            throw StoreError.decodingFailed(
                table: "settings", type: "\(V.self)",
                reason: "row \(setting.name) holds \"\(text.prefix(32))\", not a \(V.self)")
        }
        return value
    }
}

extension TableHandle where Key == String, Value == String, Access == ReadWriteAccess {
    /// Stores `value` as the text of `setting`.
    /// - Throws: store errors.
    public func put<V>(_ setting: Setting<V>, _ value: V) throws {
        try put(setting.name, value.settingText)
    }
}

/// Trust in a friend's key: compared safety numbers make it verified; blocked friends are ignored.
public enum TrustState: String, Sendable, Codable, Equatable {
    /// Not compared yet (every friend starts here).
    case unverified
    /// The user compared safety numbers with them.
    case verified
    /// Ignored: their locations and messages are refused.
    case blocked
    /// Two different rotations of the friend's old key arrived (PROTOCOL.md §9.2): sharing with
    /// them is paused until the user compares safety numbers again and picks a key.
    case conflict
}

/// A friend (value of ``Tables/friends``).
public struct FriendRecord: StoreJSONValue, Equatable {
    public static var storeTypeName: String { "json:FriendRecord/1" }

    /// Display name.
    public var name: String
    /// The friend's relay, exactly as their link gave it (fetches group by this string).
    public var server: String
    /// Whether our uploads include them as a recipient.
    public var shareWith: Bool
    /// Whether we fetch their location.
    public var fetchFrom: Bool
    /// When they were added (ms since the epoch).
    public var addedAt: UInt64
    /// Their X25519 key, converted once at add time (base64url), so sealing never converts again.
    public var x25519PublicKey: String
    /// Trust state (unverified until safety numbers are compared).
    public var trust: TrustState
    /// When sharing with them ends (ms since the epoch; nil: no end). The end is exclusive: at
    /// exactly this time the share is over (PROTOCOL.md §9.3).
    public var shareUntil: UInt64?

    /// Whether uploads at `now` (ms) are sealed for this friend: the sharing rule, defined here
    /// once — ``sharesApartFromTime`` and the share's end not reached (``isRunning(until:at:)``).
    public func isSharing(at now: UInt64) -> Bool {
        sharesApartFromTime && Self.isRunning(until: shareUntil, at: now)
    }

    /// The part of the sharing rule that does not change with time: sharing on, not blocked, not
    /// in a key conflict (§9.2).
    public var sharesApartFromTime: Bool { shareWith && trust != .blocked && trust != .conflict }

    /// The part that does: a share with an end runs until it (exclusive, PROTOCOL.md §9.3); one
    /// without runs on.
    public static func isRunning(until end: UInt64?, at now: UInt64) -> Bool { end.map { now < $0 } ?? true }
    /// In a conflict (§9.2): the candidate keys and their servers, the current one first.
    public var conflict: [RotationCandidate]?
    /// When something they sealed for us first opened (a position of theirs, or a message): they
    /// have added us back. Nil until then (ms since the epoch).
    public var addedBackAt: UInt64?

    /// A friend record; sharing both ways and unverified unless said otherwise.
    public init(
        name: String, server: String, shareWith: Bool = true, fetchFrom: Bool = true, addedAt: UInt64,
        x25519PublicKey: String, trust: TrustState = .unverified, shareUntil: UInt64? = nil
    ) {
        self.shareUntil = shareUntil
        self.name = name
        self.server = server
        self.shareWith = shareWith
        self.fetchFrom = fetchFrom
        self.addedAt = addedAt
        self.x25519PublicKey = x25519PublicKey
        self.trust = trust
    }
}

// Every fetched entry reads its friend's row: a codec of its own, as for UploadState.
extension FriendRecord {
    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        var object = JSONObject()
        object["addedAt"] = .integer(addedAt)
        object["addedBackAt"] = addedBackAt.map { .integer($0) }
        object["conflict"] = conflict.map { .array($0.map { .object(JSONObject([("key", .string($0.key)), ("server", .string($0.server))])) }) }
        object["fetchFrom"] = .bool(fetchFrom)
        object["name"] = .string(name)
        object["server"] = .string(server)
        object["shareUntil"] = shareUntil.map { .integer($0) }
        object["shareWith"] = .bool(shareWith)
        object["trust"] = .string(trust.rawValue)
        object["x25519PublicKey"] = .string(x25519PublicKey)
        return try JSONValue.object(object).serialized().withUnsafeBytes(body)
    }

    /// - Throws: ``StoreCodecError`` when a required field is missing or any field has the wrong type.
    public init(storeBytes: UnsafeRawBufferPointer) throws {
        let row = try StoredJSONReader(storeBytes, typeName: Self.storeTypeName)
        let text = "a string"
        self.init(
            name: try row.required("name", text, \.stringValue), server: try row.required("server", text, \.stringValue),
            shareWith: try row.required("shareWith", "a boolean", \.boolValue), fetchFrom: try row.required("fetchFrom", "a boolean", \.boolValue),
            addedAt: try row.required("addedAt", "an unsigned integer", \.uint64Value),
            x25519PublicKey: try row.required("x25519PublicKey", text, \.stringValue),
            trust: try row.required("trust", "a trust state") { $0.stringValue.flatMap(TrustState.init(rawValue:)) },
            shareUntil: try row.optional("shareUntil", "an unsigned integer", \.uint64Value))
        addedBackAt = try row.optional("addedBackAt", "an unsigned integer", \.uint64Value)
        conflict = try row.optional("conflict", "an array of {key, server} objects") { value in
            try row.array(value) { item in
                guard let candidate = row.nested(item) else { return nil }
                return RotationCandidate(
                    key: try candidate.required("key", text, \.stringValue), server: try candidate.required("server", text, \.stringValue))
            }
        }
    }
}

/// A friend's last opened location (value of ``Tables/locations``).
public struct CachedLocation: StoreJSONValue, Equatable {
    public static var storeTypeName: String { "json:CachedLocation/1" }

    /// The opened location.
    public var location: Location
    /// The relay's `updated` time (Unix seconds).
    public var updated: UInt64?
    /// When we fetched it (ms since the epoch).
    public var fetchedAt: UInt64
    /// Whether the relay proved the uploader.
    public var authenticity: RelayAPI.Authenticity

    /// A cached location as it was fetched.
    public init(location: Location, updated: UInt64?, fetchedAt: UInt64, authenticity: RelayAPI.Authenticity) {
        self.location = location
        self.updated = updated
        self.fetchedAt = fetchedAt
        self.authenticity = authenticity
    }
}

// Every fetched entry reads and writes its cache row: a codec of its own, as for UploadState.
extension CachedLocation {
    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        let type = Self.storeTypeName
        var fix = JSONObject()
        fix["accuracy"] = try .finite(Double(location.accuracy), field: "accuracy", type: type)
        fix["altitude"] = try .finite(location.altitude, field: "altitude", type: type)
        fix["latitude"] = try .finite(location.latitude, field: "latitude", type: type)
        fix["longitude"] = try .finite(location.longitude, field: "longitude", type: type)
        fix["timestamp"] = .integer(location.timestamp)
        var object = JSONObject()
        object["authenticity"] = .string(authenticity.rawValue)
        object["fetchedAt"] = .integer(fetchedAt)
        object["location"] = .object(fix)
        object["updated"] = updated.map { .integer($0) }
        return try JSONValue.object(object).serialized().withUnsafeBytes(body)
    }

    /// - Throws: ``StoreCodecError`` when a required field is missing or any field has the wrong type.
    public init(storeBytes: UnsafeRawBufferPointer) throws {
        let row = try StoredJSONReader(storeBytes, typeName: Self.storeTypeName)
        let fix = try row.required("location", "an object") { row.nested($0) }
        let number = "a finite number"
        self.init(
            location: Location(
                unvalidatedLatitude: try fix.required("latitude", number, \.finiteDouble),
                longitude: try fix.required("longitude", number, \.finiteDouble), altitude: try fix.required("altitude", number, \.finiteDouble),
                accuracy: try fix.required("accuracy", number) { $0.finiteDouble.map(Float.init).flatMap { $0.isFinite ? $0 : nil } },
                timestamp: try fix.required("timestamp", "an unsigned integer", \.uint64Value)),
            updated: try row.optional("updated", "an unsigned integer", \.uint64Value),
            fetchedAt: try row.required("fetchedAt", "an unsigned integer", \.uint64Value),
            authenticity: try row.required("authenticity", "an authenticity") { $0.stringValue.flatMap(RelayAPI.Authenticity.init(rawValue:)) })
    }
}

// ShareLimit, RotationCandidate, RetiredKey and RotationState are rows only the core writes:
// hosts read them, so their memberwise initialisers stay internal.

/// What is remembered of a removed friend's share (value of ``Tables/shareLimits``).
public struct ShareLimit: StoreJSONValue, Equatable {
    public static var storeTypeName: String { "json:ShareLimit/1" }
    /// Sharing was paused.
    public var paused: Bool
    /// Sharing ended (or ends) at this time (ms since the epoch).
    public var until: UInt64?
}

/// One key a friend's old key was rotated to, in a conflict (PROTOCOL.md §9.2).
public struct RotationCandidate: Codable, Sendable, Equatable {
    /// The candidate key (b64u).
    public var key: String
    /// The relay its statement named.
    public var server: String
}

/// A friend's key they rotated away from (value of ``Tables/retiredKeys``).
public struct RetiredKey: StoreJSONValue, Equatable {
    public static var storeTypeName: String { "json:RetiredKey/1" }
    /// The key the friend moved to (b64u).
    public var successor: String
    /// The rotation said the old key is compromised.
    public var revoked: Bool
}

/// The user's own rotations (value of ``Tables/rotation``, row ``key``).
public struct RotationState: StoreJSONValue, Equatable {
    public static var storeTypeName: String { "json:RotationState/1" }
    /// The row key for the local identity.
    public static let key = "self"
    /// Identities this one rotated from (b64u), oldest first.
    public var previous: [String] = []
    /// The last rotation statement (its `"rotation"` JSON text), while friends still need it.
    public var statement: String?
    /// Friends (ids) whose statement has not been delivered yet; the previous seed stays in the
    /// keychain until this is empty.
    public var pending: [String] = []
    /// Earlier statements some friend still needs (oldest first): rotating again before every
    /// friend had the last statement keeps it, so they can follow the whole chain, one link at a
    /// time. Absent in rows written before issue 37.
    public var older: [RotationLink]? = nil
}

/// An earlier rotation statement still owed to some friends (``RotationState/older``). The
/// seed of the key it rotated from stays in the keychain under ``keychainName(for:)`` until
/// ``pending`` is empty.
public struct RotationLink: Codable, Sendable, Equatable {
    /// The key the statement rotated from (b64u).
    public var from: String
    /// The statement's `"rotation"` JSON text.
    public var statement: String
    /// Friends (ids) it has not reached yet.
    public var pending: [String]

    /// Where the seed of `from` is kept while the statement is owed.
    public static func keychainName(for from: String) -> String { "identity.rotated.\(from).ed25519.seed" }
}

/// Upload bookkeeping (value of ``Tables/uploadState``).
public struct UploadState: StoreJSONValue, Equatable {
    public static var storeTypeName: String { "json:UploadState/1" }
    /// The row key for the local identity.
    public static let key = "self"

    /// Fix timestamp (ms) of the last upload the relay acknowledged; newer fixes only.
    public var lastUploadedFix: UInt64?
    /// When that upload was acknowledged (ms since the epoch).
    public var lastUploadAt: UInt64?
    /// Fix timestamps of uploads prepared and not yet acknowledged (the most recent 16).
    public var pendingFixes: [UInt64]
    /// The last signed upload/delete time (Unix seconds): signatures use strictly increasing
    /// times, because a relay refuses a request that is not newer than what it stored.
    public var lastSignedTimestamp: UInt64?
    /// The last fix sealed (its 20-byte wire form, base64url) and its timestamp (ms): sealed
    /// again without a friend whose share ended (``LocationManager/prepareReseal(force:)``).
    public var lastSealedWire: String?
    /// The timestamp (ms) of that fix.
    public var lastSealedFix: UInt64?
    /// The friends (ids) that last blob was sealed for.
    public var lastSealedFor: [String]?

    /// Bookkeeping with nothing uploaded yet.
    public init(lastUploadedFix: UInt64? = nil, lastUploadAt: UInt64? = nil, pendingFixes: [UInt64] = []) {
        self.lastUploadedFix = lastUploadedFix
        self.lastUploadAt = lastUploadAt
        self.pendingFixes = pendingFixes
    }
}

// Every upload reads this row twice and writes it once, so it has its own codec on the core's
// JSON (StoredJSONReader) instead of Foundation's Codable machinery, which cost about 340,000
// instructions an upload, 8 % of preparing one for 8 friends.
extension UploadState {
    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        var object = JSONObject()
        object["lastSealedFix"] = lastSealedFix.map { .integer($0) }
        object["lastSealedFor"] = lastSealedFor.map { .array($0.map { .string($0) }) }
        object["lastSealedWire"] = lastSealedWire.map { .string($0) }
        object["lastSignedTimestamp"] = lastSignedTimestamp.map { .integer($0) }
        object["lastUploadAt"] = lastUploadAt.map { .integer($0) }
        object["lastUploadedFix"] = lastUploadedFix.map { .integer($0) }
        object["pendingFixes"] = .array(pendingFixes.map { .integer($0) })
        return try JSONValue.object(object).serialized().withUnsafeBytes(body)
    }

    /// - Throws: ``StoreCodecError`` for anything but the JSON above (a damaged row is an error,
    ///   never a fresh state): not an object, `pendingFixes` missing, a field of the wrong type.
    public init(storeBytes: UnsafeRawBufferPointer) throws {
        let row = try StoredJSONReader(storeBytes, typeName: Self.storeTypeName)
        let number = "an unsigned integer"
        self.init(
            lastUploadedFix: try row.optional("lastUploadedFix", number, \.uint64Value),
            lastUploadAt: try row.optional("lastUploadAt", number, \.uint64Value),
            pendingFixes: try row.required("pendingFixes", "an array of unsigned integers") { try row.array($0, \.uint64Value) })
        lastSignedTimestamp = try row.optional("lastSignedTimestamp", number, \.uint64Value)
        lastSealedFix = try row.optional("lastSealedFix", number, \.uint64Value)
        lastSealedWire = try row.optional("lastSealedWire", "a string", \.stringValue)
        lastSealedFor = try row.optional("lastSealedFor", "an array of strings") { try row.array($0, \.stringValue) }
    }
}

/// What a queued request does. The outbox's decisions depend on it: which requests carry a
/// signed time the relay checks (and are signed again when it grows stale), which answer means
/// "the relay already has it", and what follows a delivery.
public enum OutboxKind: String, Sendable, Codable, CaseIterable, Equatable {
    /// A location upload (``LocationManager/prepareUpload(_:)``); signed again from its fix.
    case upload
    /// The last fix sealed again after a share ended (``LocationManager/prepareReseal(force:)``).
    case reseal
    /// The signed delete of the user's blob (``LocationManager/prepareDelete()``).
    case delete
    /// A sealed message to a friend's mailbox (§7.2).
    case message
    /// A delivery receipt (§7.2).
    case receipt
    /// A rotation statement for one friend (§9.1).
    case rotation
    /// One member's copy of a group message (§11.6); the reference is the message id, shared by
    /// every member's copy.
    case groupMessage = "group-message"
    /// Any other request a host queued (through the C ABI): delivered as is.
    case request

    /// Whether the request's body carries a signed timestamp the relay checks against its
    /// window (``RelayAPI/signatureWindowSeconds``): such requests are signed again before they
    /// grow stale.
    public var isTimeSigned: Bool { self == .upload || self == .reseal || self == .delete }

    /// Whether it posts a sealed envelope, whose id the relay refuses twice: a 409 means the
    /// relay already has it, which is delivered.
    public var isEnvelope: Bool { self == .message || self == .receipt || self == .rotation || self == .groupMessage }

    /// Reads a stored kind; a name this version does not know (a host's own kind written by
    /// 1.1 or earlier) reads as ``request``, so an old row never makes the outbox unreadable.
    public init(from decoder: any Decoder) throws {
        let name = try decoder.singleValueContainer().decode(String.self)
        self = OutboxKind(rawValue: name) ?? .request
    }
}

/// A prepared request waiting in the outbox (value of ``Tables/outbox``).
public struct OutboxItem: StoreJSONValue, Equatable {
    public static var storeTypeName: String { "json:OutboxItem/1" }

    /// What the request does; the outbox's decisions depend on it.
    public var kind: OutboxKind
    /// The request to send.
    public var request: PreparedRequest
    /// How many times sending failed.
    public var attempts: UInt32
    /// Not before this time (ms since the epoch).
    public var nextAttemptAt: UInt64
    /// When it was queued (ms since the epoch).
    public var createdAt: UInt64
    /// The last failure, for display.
    public var lastError: String?
    /// What the request is about (an upload's fix timestamp, a message id), for the host.
    public var reference: String?
    /// The position of a queued upload, so it can be sealed and signed again when the signed
    /// request has become too old for the relay's 300-second window.
    public var location: Location?
    /// Set when the relay refused the request's signed time: the next ``OutboxManager/due(now:ignoringBackoff:)``
    /// signs it again whatever its age (absent in rows written before 1.2).
    public var needsSignature: Bool?
    /// How many times the relay refused the request's signed time (absent: never). After
    /// ``OutboxManager/signAgainLimit`` such refusals the request is dropped.
    public var timeRefusals: UInt32?

    /// A new entry, due at `nextAttemptAt`; no attempts, no error and no reference unless given.
    public init(
        kind: OutboxKind, request: PreparedRequest, attempts: UInt32 = 0, nextAttemptAt: UInt64, createdAt: UInt64,
        lastError: String? = nil, reference: String? = nil, location: Location? = nil
    ) {
        self.kind = kind
        self.request = request
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.createdAt = createdAt
        self.lastError = lastError
        self.reference = reference
        self.location = location
    }
}

// MARK: Messages

/// Delivery state of a message.
public enum MessageStatus: String, Sendable, Codable, Equatable {
    /// Sealed and queued in the outbox, not yet accepted by the relay.
    case queued
    /// The friend's relay accepted it (202, or 409: it already had it).
    case sent
    /// The friend's app stored it and sent a receipt.
    case delivered
    /// A message we received.
    case received
}

/// A 1:1 message as the store keeps it (value of ``Tables/messages``).
public struct MessageRecord: StoreValue, Equatable, Sendable {
    public static var storeTypeName: String { "json:MessageRecord/1" }

    /// The message id (lowercase UUID; also the envelope id).
    public var id: String
    /// The friend (base64url public key).
    public var peer: String
    /// Whether we wrote it.
    public var outgoing: Bool
    /// `text`, or a kind this build does not know (kept, not dropped).
    public var kind: String
    /// The text (empty for a kind this build does not know).
    public var text: String
    /// When the sender wrote it (ms since the epoch).
    public var sentAt: UInt64
    /// When we stored it (ms).
    public var storedAt: UInt64
    /// Where delivery stands (``MessageStatus``).
    public var status: MessageStatus
    /// Local deletion time (ms) when the conversation has disappearing messages.
    public var disappearsAt: UInt64?
    /// For a group message (PROTOCOL.md §11.6): the group's id (b64u); ``peer`` is its sender
    /// (ourselves for our own). Nil for 1:1 messages.
    public var group: String? = nil
    /// For a received message: whether it should notify the user, decided when it arrived by the
    /// ``NotificationPolicy`` then in force (mute, quiet hours, kind). Nil for our own messages and
    /// for messages stored before the policy existed.
    public var notify: Bool? = nil
    /// For a file message (PROTOCOL.md §12.3) whose `file` member keeps every rule: the
    /// attachment, its key included (the store is sealed, so the key is never on disk in the
    /// clear; it goes with the message when the message disappears). Nil for every other message,
    /// and for a malformed file message (kept as a message of an unknown kind).
    public var file: FileAttachment? = nil
}

extension MessageRecord {
    /// Whether its disappearing timer ran out by `now` (ms).
    public func hasDisappeared(at now: UInt64) -> Bool { disappearsAt.map { $0 <= now } ?? false }
}

/// A friend's messaging settings (value of ``Tables/conversations``).
public struct ConversationSettings: StoreJSONValue, Equatable {
    public static var storeTypeName: String { "json:ConversationSettings/1" }
    /// Local copies of messages are deleted this many seconds after they were stored; nil keeps them.
    public var disappearAfterSeconds: UInt64?
    /// The conversation is muted until this time (Unix ms; `UInt64.max`: until unmuted); nil or
    /// past: not muted (issue 43, ``NotificationPolicy``).
    public var mutedUntil: UInt64?
}

// Every queued request is written once and read at each outbox pass, and a group message queues
// one per member: a binary row of its own (outbox/1, docs/STORE.md), which copies the request body
// as it is (the JSON rows of earlier versions base64-encoded it and escaped it again, which cost a
// group send as much as its signatures). Rows written as JSON before schema 6 are still read.
extension OutboxItem {
    /// The first byte of a binary row (a JSON row starts with `{`).
    static let binaryMarker: UInt8 = 0xB1

    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        let type = Self.storeTypeName
        func tooLong(_ field: String) -> StoreError { StoreError.encodingFailed(type: type, reason: "the \(field) is longer than 4 GiB") }
        var out = ByteWriter(capacity: 64 + request.url.utf8.count + request.body.count + request.headers.count * 48)
        func run(_ bytes: some Collection<UInt8>, _ field: String) throws {
            guard let count = UInt32(exactly: bytes.count) else { throw tooLong(field) }
            out.write(count)
            out.write(bytes)
        }
        out.write(Self.binaryMarker)
        let flags: UInt8 =
            (lastError == nil ? 0 : 1) | (reference == nil ? 0 : 2) | (location == nil ? 0 : 4) | (needsSignature == nil ? 0 : 8)
            | (needsSignature == true ? 16 : 0) | (timeRefusals == nil ? 0 : 32)
        out.write(flags)
        try run(kind.rawValue.utf8, "kind")
        out.write(attempts)
        out.write(nextAttemptAt)
        out.write(createdAt)
        try run(request.method.utf8, "method")
        try run(request.url.utf8, "url")
        guard let headerCount = UInt32(exactly: request.headers.count) else { throw tooLong("header list") }
        out.write(headerCount)
        for header in request.headers {
            try run(header.name.utf8, "header name")
            try run(header.value.utf8, "header value")
        }
        try run(request.body, "body")
        if let lastError { try run(lastError.utf8, "last error") }
        if let reference { try run(reference.utf8, "reference") }
        if let location {
            guard location.latitude.isFinite, location.longitude.isFinite, location.altitude.isFinite, location.accuracy.isFinite else {
                throw StoreError.encodingFailed(type: type, reason: "the location has a number that is not finite")
            }
            out.write(location.latitude.bitPattern)
            out.write(location.longitude.bitPattern)
            out.write(location.altitude.bitPattern)
            out.write(location.accuracy.bitPattern)
            out.write(location.timestamp)
        }
        if let timeRefusals { out.write(timeRefusals) }
        return try out.bytes.withUnsafeBytes(body)
    }

    /// Reads a binary row (outbox/1).
    /// - Throws: ``StoreCodecError`` for a short, long or malformed row.
    init(binaryRow storeBytes: UnsafeRawBufferPointer) throws {
        var reader = ByteReader(storeBytes)
        let type = Self.storeTypeName
        func fail(_ reason: String) -> StoreCodecError { StoreCodecError("invalid \(type) row: \(reason)") }
        func bytes() throws -> UnsafeRawBufferPointer {
            do {
                return try reader.readBuffer(count: Int(try reader.read(UInt32.self)))
            } catch { throw fail("\(error)") }
        }
        func text(_ field: String) throws -> String {
            guard let value = String(validating: try bytes(), as: UTF8.self) else { throw fail("the \(field) is not UTF-8") }
            return value
        }
        func number<T: FixedWidthInteger>(_: T.Type) throws -> T {
            do { return try reader.read(T.self) } catch { throw fail("\(error)") }
        }
        guard try number(UInt8.self) == Self.binaryMarker else { throw fail("not an outbox/1 row") }
        let flags = try number(UInt8.self)
        guard flags & ~63 == 0 else { throw fail("unknown flags \(flags)") }
        // A kind this version does not know (a host's own) reads as `request`, as in JSON rows.
        let kind = OutboxKind(rawValue: try text("kind")) ?? .request
        let attempts = try number(UInt32.self)
        let nextAttemptAt = try number(UInt64.self)
        let createdAt = try number(UInt64.self)
        let method = try text("method")
        let url = try text("url")
        let headerCount = try number(UInt32.self)
        // Each header takes at least 8 bytes: a count beyond what is left is damage, not a reason to allocate.
        guard Int(headerCount) <= reader.remaining / 8 else { throw fail("\(headerCount) headers in \(reader.remaining) bytes") }
        var headers: [PreparedRequest.Header] = []
        headers.reserveCapacity(Int(headerCount))
        for _ in 0..<headerCount { headers.append(PreparedRequest.Header(name: try text("header name"), value: try text("header value"))) }
        let body = Array(try bytes())
        let lastError = flags & 1 != 0 ? try text("last error") : nil
        let reference = flags & 2 != 0 ? try text("reference") : nil
        var location: Location?
        if flags & 4 != 0 {
            let latitude = Double(bitPattern: try number(UInt64.self))
            let longitude = Double(bitPattern: try number(UInt64.self))
            let altitude = Double(bitPattern: try number(UInt64.self))
            let accuracy = Float(bitPattern: try number(UInt32.self))
            let timestamp = try number(UInt64.self)
            guard latitude.isFinite, longitude.isFinite, altitude.isFinite, accuracy.isFinite else { throw fail("a location number is not finite") }
            location = Location(unvalidatedLatitude: latitude, longitude: longitude, altitude: altitude, accuracy: accuracy, timestamp: timestamp)
        }
        let timeRefusals = flags & 32 != 0 ? try number(UInt32.self) : nil
        guard reader.isAtEnd else { throw fail("\(reader.remaining) trailing bytes") }
        self.init(
            kind: kind, request: PreparedRequest(url: url, method: method, headers: headers, body: body), attempts: attempts,
            nextAttemptAt: nextAttemptAt, createdAt: createdAt, lastError: lastError, reference: reference, location: location)
        needsSignature = flags & 8 != 0 ? flags & 16 != 0 : nil
        self.timeRefusals = timeRefusals
    }

    /// Reads a binary row, or a JSON row written before schema 6.
    /// - Throws: ``StoreCodecError`` when a required field is missing or any field has the wrong type.
    public init(storeBytes: UnsafeRawBufferPointer) throws {
        if storeBytes.first == Self.binaryMarker {
            try self.init(binaryRow: storeBytes)
            return
        }
        let row = try StoredJSONReader(storeBytes, typeName: Self.storeTypeName)
        let text = "a string"
        let number = "an unsigned integer"
        let http = try row.required("request", "an object") { row.nested($0) }
        let headers: [PreparedRequest.Header] = try http.required("headers", "an array of {name, value} objects") { value in
            try http.array(value) { item -> PreparedRequest.Header? in
                guard let header = http.nested(item) else { return nil }
                return PreparedRequest.Header(name: try header.required("name", text, \.stringValue), value: try header.required("value", text, \.stringValue))
            }
        }
        let bodyText = try http.required("body", text, \.stringValue)
        guard let bytes = try? Base64.decode(bodyText, variant: .standard, field: "body") else {
            throw StoreCodecError("invalid JSON for \(Self.storeTypeName): the request body is not standard base64")
        }
        let request = PreparedRequest(
            url: try http.required("url", text, \.stringValue), method: try http.required("method", text, \.stringValue), headers: headers,
            body: bytes)
        let location = try row.optional("location", "an object") { row.nested($0) }.map { fix in
            let real = "a finite number"
            return Location(
                unvalidatedLatitude: try fix.required("latitude", real, \.finiteDouble),
                longitude: try fix.required("longitude", real, \.finiteDouble), altitude: try fix.required("altitude", real, \.finiteDouble),
                accuracy: try fix.required("accuracy", real) { $0.finiteDouble.map(Float.init).flatMap { $0.isFinite ? $0 : nil } },
                timestamp: try fix.required("timestamp", number, \.uint64Value))
        }
        self.init(
            // A kind this version does not know (a host's own, written by 1.1 or earlier) reads as `request`.
            kind: OutboxKind(rawValue: try row.required("kind", text, \.stringValue)) ?? .request, request: request,
            attempts: try row.required("attempts", number) { $0.uint64Value.flatMap { UInt32(exactly: $0) } },
            nextAttemptAt: try row.required("nextAttemptAt", number, \.uint64Value),
            createdAt: try row.required("createdAt", number, \.uint64Value), lastError: try row.optional("lastError", text, \.stringValue),
            reference: try row.optional("reference", text, \.stringValue), location: location)
        needsSignature = try row.optional("needsSignature", "a boolean", \.boolValue)
        timeRefusals = try row.optional("timeRefusals", number) { $0.uint64Value.flatMap { UInt32(exactly: $0) } }
    }
}

// Every message is written once and read by every history: its own codec, the JSON Foundation's
// encoder wrote before (sorted keys, absent optionals left out), so older rows read the same.
extension MessageRecord {
    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        var object = JSONObject()
        object["disappearsAt"] = disappearsAt.map { .integer($0) }
        object["file"] = file?.json
        object["group"] = group.map { .string($0) }
        object["id"] = .string(id)
        object["kind"] = .string(kind)
        object["notify"] = notify.map { .bool($0) }
        object["outgoing"] = .bool(outgoing)
        object["peer"] = .string(peer)
        object["sentAt"] = .integer(sentAt)
        object["status"] = .string(status.rawValue)
        object["storedAt"] = .integer(storedAt)
        object["text"] = .string(text)
        return try JSONValue.object(object).serialized().withUnsafeBytes(body)
    }

    /// - Throws: ``StoreCodecError`` when a required field is missing or any field has the wrong type.
    public init(storeBytes: UnsafeRawBufferPointer) throws {
        let row = try StoredJSONReader(storeBytes, typeName: Self.storeTypeName)
        let text = "a string"
        let number = "an unsigned integer"
        self.init(
            id: try row.required("id", text, \.stringValue), peer: try row.required("peer", text, \.stringValue),
            outgoing: try row.required("outgoing", "a boolean", \.boolValue), kind: try row.required("kind", text, \.stringValue),
            text: try row.required("text", text, \.stringValue), sentAt: try row.required("sentAt", number, \.uint64Value),
            storedAt: try row.required("storedAt", number, \.uint64Value),
            status: try row.required("status", "a message status") { $0.stringValue.flatMap(MessageStatus.init(rawValue:)) },
            disappearsAt: try row.optional("disappearsAt", number, \.uint64Value), group: try row.optional("group", text, \.stringValue),
            notify: try row.optional("notify", "a boolean", \.boolValue),
            file: try row.optional("file", "a file attachment") { try? FileAttachment(json: $0) })  // nil: reported as the wrong type
    }
}
