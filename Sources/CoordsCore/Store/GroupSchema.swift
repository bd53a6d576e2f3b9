/// The records of groups (PROTOCOL.md §11): each group's effective state, the membership
/// statements kept to check the next ones, statements waiting for their predecessor, and sender
/// chains. Sealed at rest like every value; group keys are hidden, and a chain's key hides the
/// member too.
extension Tables {
    /// Groups by id (16 bytes). Stamped: uploads recompute their recipients when it changes.
    public static let groups = TableDefinition<[UInt8], GroupRecord>("groups", stamped: true)
    /// Kept statements by `group id (16) | hash (32)` → the statement's bytes (verified when it
    /// was accepted; the sealed store authenticates them since).
    public static let groupStatements = TableDefinition<[UInt8], [UInt8]>("group_statements", keys: .hiddenPrefix(16))
    /// Statements waiting for their predecessor, by `group id (16) | hash (32)`.
    public static let groupPending = TableDefinition<[UInt8], [UInt8]>("group_pending", keys: .hiddenPrefix(16))
    /// Sender chains by `group id (16) | member key (32) | chain id u32` (our own among them).
    public static let groupChains = TableDefinition<[UInt8], SenderChainRecord>("group_chains", keys: .hiddenPrefix(48))
    /// Group messages waiting for their sender key (PROTOCOL.md §11.6), by `sender key (32) |
    /// envelope id (UTF-8)`; the value is `arrived (u64, Unix ms) | arrival sequence (u64) | the
    /// envelope's JSON`.
    public static let groupWaiting = TableDefinition<[UInt8], [UInt8]>("group_waiting", keys: .hidden)
}

/// Where the user stands in a group.
public enum GroupStatus: String, Sendable, Codable, Equatable {
    /// A member: messages and shares flow.
    case member
    /// The user left.
    case left
    /// An admin removed the user.
    case removed
}

/// One member as a group record keeps it.
public struct GroupMemberRecord: Sendable, Codable, Equatable {
    /// The member's identity key (b64u).
    public var key: String
    /// Whether the member is an admin (in every head statement, during a conflict).
    public var admin: Bool
}

/// A group as the user's store keeps it (value of ``Tables/groups``): its effective state
/// (PROTOCOL.md §11.4, "The head"), the user's standing and settings.
public struct GroupRecord: StoreJSONValue, Equatable {
    public static var storeTypeName: String { "json:GroupRecord/1" }

    /// The effective name.
    public var name: String
    /// The effective members (during a conflict: those in every head statement).
    public var members: [GroupMemberRecord]
    /// Whether the user is a member, left or was removed.
    public var status: GroupStatus
    /// Hashes (hex) of the head statements: one, or several in a conflict, lowest first.
    public var heads: [String]
    /// The head's epoch.
    public var epoch: UInt32
    /// The highest epoch ever kept for this group (a removed member is re-added only above it).
    public var highestEpoch: UInt32
    /// Whether the user shares positions with the group's members (§11.7).
    public var sharing: Bool
    /// When the user joined (or created) it (ms).
    public var joinedAt: UInt64
    /// When its state last changed (ms).
    public var changedAt: UInt64
    /// The id of the user's current sender chain, if one was made.
    public var ownChain: UInt32?
    /// The group's conversation is muted until this time (Unix ms; `UInt64.max`: until unmuted);
    /// nil or past: not muted (``NotificationPolicy``).
    public var mutedUntil: UInt64? = nil

    /// Whether the head is a fork (§11.4).
    public var inConflict: Bool { heads.count > 1 }

    /// Whether `key` (b64u) is an effective member.
    public func isMember(_ key: String) -> Bool { members.contains { $0.key == key } }

    /// Whether `key` (b64u) is an effective admin.
    public func isAdmin(_ key: String) -> Bool { members.contains { $0.key == key && $0.admin } }
}

/// A sender chain (value of ``Tables/groupChains``, PROTOCOL.md §11.5):
/// `version 1 (u8) | flags u8 (1 own, 2 a message was opened) | created u64 | chain key (32)
/// | next u32 | signing (32: own → seed, received → public key) | skipped count u16
/// | count × (n u32 | stored at u64 | message key (44))`.
public struct SenderChainRecord: StoreValue, Sendable {
    public static var storeTypeName: String { "sender-chain/1" }

    /// A skipped message key.
    public struct Skipped: Sendable {
        /// Its iteration.
        public var iteration: UInt32
        /// When it was stored (ms).
        public var storedAt: UInt64
        /// The 44-byte message key.
        public var key: SecretBytes
    }

    /// Whether this is the user's own chain (the signing seed is kept).
    public var isOwn: Bool
    /// Whether a message of the chain was opened (an earlier copy of it may no longer replace it).
    public var opened: Bool
    /// When it was made or received (ms).
    public var created: UInt64
    /// The chain key at ``next``.
    public var chainKey: SecretBytes
    /// The next iteration.
    public var next: UInt32
    /// Own chain: the signing seed; received: the signing public key.
    public var signing: SecretBytes
    /// Skipped keys (received chains only), oldest first.
    public var skipped: [Skipped]

    /// A chain from its parts.
    public init(isOwn: Bool, created: UInt64, chainKey: SecretBytes, next: UInt32, signing: SecretBytes, opened: Bool = false, skipped: [Skipped] = []) {
        self.isOwn = isOwn
        self.created = created
        self.chainKey = chainKey
        self.next = next
        self.signing = signing
        self.opened = opened
        self.skipped = skipped
    }

    /// The public signing key (own chains: derived from the seed).
    /// - Throws: ``CryptoError`` for a damaged key.
    public func signingPublicKey() throws -> Ed25519PublicKey {
        isOwn ? try Ed25519SigningKey(seed: signing).publicKey : try Ed25519PublicKey(rawRepresentation: signing.copyBytes())
    }

    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        var head = ByteWriter(capacity: 10)
        head.write(UInt8(1))
        head.write(UInt8((isOwn ? 1 : 0) | (opened ? 2 : 0)))
        head.write(created)
        var middle = ByteWriter(capacity: 4)
        middle.write(next)
        var count = ByteWriter(capacity: 2)
        count.write(UInt16(truncatingIfNeeded: skipped.count))  // ≤ Groups.maximumSkippedKeys
        let headBytes = head.bytes
        let middleBytes = middle.bytes
        let countBytes = count.bytes
        let total = headBytes.count + 32 + middleBytes.count + 32 + countBytes.count + skipped.count * 56
        let bytes = SecretBytes(count: total) { out in
            var offset = 0
            func put(_ source: UnsafeRawBufferPointer) {
                UnsafeMutableRawBufferPointer(rebasing: out[offset..<offset + source.count]).copyMemory(from: source)
                offset += source.count
            }
            headBytes.withUnsafeBytes { put($0) }
            chainKey.withUnsafeBytes { put($0) }
            middleBytes.withUnsafeBytes { put($0) }
            signing.withUnsafeBytes { put($0) }
            countBytes.withUnsafeBytes { put($0) }
            for entry in skipped {
                var writer = ByteWriter(capacity: 12)
                writer.write(entry.iteration)
                writer.write(entry.storedAt)
                writer.bytes.withUnsafeBytes { put($0) }
                entry.key.withUnsafeBytes { put($0) }
            }
        }
        return try bytes.withUnsafeBytes { try body($0) }
    }

    public init(storeBytes: UnsafeRawBufferPointer) throws {
        var reader = ByteReader(storeBytes)
        guard try reader.read(UInt8.self) == 1 else { throw StoreCodecError("not a sender-chain/1 value") }
        let flags = try reader.read(UInt8.self)
        guard flags & ~3 == 0 else { throw StoreCodecError("unknown sender-chain flags") }
        isOwn = flags & 1 != 0
        opened = flags & 2 != 0
        created = try reader.read(UInt64.self)
        chainKey = SecretBytes(borrowing: try reader.readBuffer(count: 32))
        next = try reader.read(UInt32.self)
        signing = SecretBytes(borrowing: try reader.readBuffer(count: 32))
        let count = Int(try reader.read(UInt16.self))
        guard count <= Groups.maximumSkippedKeys else { throw StoreCodecError("\(count) skipped keys; at most \(Groups.maximumSkippedKeys)") }
        var skipped: [Skipped] = []
        skipped.reserveCapacity(count)
        for _ in 0..<count {
            let iteration = try reader.read(UInt32.self)
            let storedAt = try reader.read(UInt64.self)
            skipped.append(Skipped(iteration: iteration, storedAt: storedAt, key: SecretBytes(borrowing: try reader.readBuffer(count: 44))))
        }
        self.skipped = skipped
        guard reader.isAtEnd else { throw StoreCodecError("trailing bytes in a sender-chain/1 value") }
    }
}

// A group's record is read by every send and every fetch that carries its messages: a codec of
// its own on the core's JSON (the text Codable would write: sorted keys, absent optionals left out).
extension GroupRecord {
    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        var object = JSONObject()
        object["changedAt"] = .integer(changedAt)
        object["epoch"] = .integer(UInt64(epoch))
        object["heads"] = .array(heads.map { .string($0) })
        object["highestEpoch"] = .integer(UInt64(highestEpoch))
        object["joinedAt"] = .integer(joinedAt)
        object["members"] = .array(members.map { .object(JSONObject([("admin", .bool($0.admin)), ("key", .string($0.key))])) })
        object["mutedUntil"] = mutedUntil.map { .integer($0) }
        object["name"] = .string(name)
        object["ownChain"] = ownChain.map { .integer(UInt64($0)) }
        object["sharing"] = .bool(sharing)
        object["status"] = .string(status.rawValue)
        return try JSONValue.object(object).serialized().withUnsafeBytes(body)
    }

    /// - Throws: ``StoreCodecError`` when a required field is missing or any field has the wrong type.
    public init(storeBytes: UnsafeRawBufferPointer) throws {
        let row = try StoredJSONReader(storeBytes, typeName: Self.storeTypeName)
        let number = "an unsigned integer"
        func epoch(_ value: JSONValue) -> UInt32? { value.uint64Value.flatMap { UInt32(exactly: $0) } }
        let members: [GroupMemberRecord] = try row.required("members", "an array of {admin, key} objects") { value in
            try row.array(value) { item -> GroupMemberRecord? in
                guard let member = row.nested(item) else { return nil }
                return GroupMemberRecord(
                    key: try member.required("key", "a string", \.stringValue), admin: try member.required("admin", "a boolean", \.boolValue))
            }
        }
        self.init(
            name: try row.required("name", "a string", \.stringValue), members: members,
            status: try row.required("status", "a group status") { $0.stringValue.flatMap(GroupStatus.init(rawValue:)) },
            heads: try row.required("heads", "an array of strings") { try row.array($0, \.stringValue) },
            epoch: try row.required("epoch", number, epoch), highestEpoch: try row.required("highestEpoch", number, epoch),
            sharing: try row.required("sharing", "a boolean", \.boolValue), joinedAt: try row.required("joinedAt", number, \.uint64Value),
            changedAt: try row.required("changedAt", number, \.uint64Value), ownChain: try row.optional("ownChain", number, epoch),
            mutedUntil: try row.optional("mutedUntil", number, \.uint64Value))
    }
}
