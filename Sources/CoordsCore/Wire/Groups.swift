/// The constants of PROTOCOL.md §11.1, in one place.
public enum Groups {
    /// Members of one group, the author included (`GROUP_MAX_MEMBERS`).
    public static let maximumMembers = 256
    /// Groups one client keeps, left and removed ones included until deleted (`GROUP_MAX_GROUPS`).
    public static let maximumGroups = 64
    /// Groups one friend may put the user in while they are an admin of each
    /// (`GROUP_MAX_PER_INVITER`): one friend cannot take every place of ``maximumGroups``.
    public static let maximumGroupsPerInviter = 16
    /// Bytes of UTF-8 in a group name (`GROUP_NAME_MAX`).
    public static let maximumNameBytes = 64
    /// Bytes of UTF-8 text in one group message (`GROUP_TEXT_MAX`).
    public static let maximumTextBytes = 65_536
    /// Statements one `group-statement` payload carries at most (`STATEMENTS_CARRIED`).
    public static let statementsCarried = 4
    /// Epochs of statements a member keeps (`STATEMENTS_KEPT`).
    public static let epochsKept: UInt32 = 16
    /// Statements a member keeps for one epoch (`FORKS_MAX`).
    public static let maximumForks = 4
    /// Statements waiting for their predecessor, per group (`PENDING_MAX`).
    public static let maximumPending = 32
    /// Skipped message keys kept per sender chain, and the largest gap accepted (`CHAIN_MAX_SKIP`).
    public static let maximumSkippedKeys = 1000
    /// A skipped message key is erased this long after it was stored (`CHAIN_SKIP_KEEP`, ms).
    public static let skippedKeyKeep: UInt64 = 7 * 86_400_000
    /// Sender chains kept per member and group (`CHAINS_KEPT`).
    public static let chainsKept = 3
    /// Group messages held for one sender while their sender key has not come (`WAIT_PER_SENDER`):
    /// beyond it the sender's oldest held message is dropped and reported.
    public static let waitingPerSender = 16
    /// Group messages held in all (`WAIT_TOTAL`): beyond it the oldest message of the sender
    /// holding the most is dropped and reported.
    public static let waitingTotal = 256
    /// A held group message is dropped and reported this long after it arrived (`WAIT_KEEP`, ms).
    public static let waitingKeep: UInt64 = 86_400_000
}

/// A group's id (§11.2): 16 random bytes, b64u in JSON.
public struct GroupID: Hashable, Sendable, CustomStringConvertible {
    /// The 16 bytes.
    public let bytes: [UInt8]

    /// Wraps 16 bytes.
    /// - Throws: ``WireError/invalidLength(field:expected:actual:)``.
    public init(bytes: [UInt8]) throws {
        guard bytes.count == 16 else { throw WireError.invalidLength(field: "group id", expected: 16, actual: bytes.count) }
        self.bytes = bytes
    }

    /// Parses the b64u form (22 characters).
    /// - Throws: ``WireError/invalidBase64(field:)``, ``WireError/invalidLength(field:expected:actual:)``.
    public init(base64URL text: String) throws {
        try self.init(bytes: try Base64.decode(text, variant: .urlSafeNoPadding, field: "group"))
    }

    /// A new random id.
    /// - Throws: ``CryptoError`` when the random source fails.
    public static func random(using random: any RandomSource = SystemRandomSource()) throws -> GroupID {
        try GroupID(bytes: try random.bytes(16))
    }

    /// The b64u form.
    public var base64URL: String { Base64.encode(bytes) }
    /// The b64u form.
    public var description: String { base64URL }
}

/// A member of a group: an identity key and whether it is an admin (§11.2).
public struct GroupMember: Hashable, Sendable {
    /// The member's Ed25519 identity key.
    public var key: Ed25519PublicKey
    /// Whether the member may change the group.
    public var isAdmin: Bool

    /// A member.
    public init(key: Ed25519PublicKey, isAdmin: Bool) {
        self.key = key
        self.isAdmin = isAdmin
    }
}

/// A group's state at one epoch (§11.2): a name and 1–256 members sorted by key, at least one
/// of them an admin. Made only through ``init(name:members:)``, which checks every rule.
public struct GroupState: Equatable, Sendable {
    /// 1–64 bytes of UTF-8 without control characters.
    public let name: String
    /// Sorted by key bytes, no key twice.
    public let members: [GroupMember]

    /// Checks and sorts a state.
    /// - Throws: ``WireError/malformedGroupStatement(_:)`` naming the rule broken.
    public init(name: String, members: [GroupMember]) throws {
        try Self.checkName(name)
        guard !members.isEmpty else { throw WireError.malformedGroupStatement("a group has at least one member") }
        guard members.count <= Groups.maximumMembers else {
            throw WireError.malformedGroupStatement("\(members.count) members; at most \(Groups.maximumMembers)")
        }
        let sorted = members.sorted { $0.key.rawRepresentation.lexicographicallyPrecedes($1.key.rawRepresentation) }
        for index in sorted.indices.dropFirst() where sorted[index - 1].key == sorted[index].key {
            throw WireError.malformedGroupStatement("a member is listed twice")
        }
        guard sorted.contains(where: \.isAdmin) else { throw WireError.malformedGroupStatement("a group has at least one admin") }
        self.name = name
        self.members = sorted
    }

    /// Checks a group name (§11.2).
    /// - Throws: ``WireError/malformedGroupStatement(_:)``.
    public static func checkName(_ name: String) throws {
        let count = name.utf8.count
        guard count >= 1, count <= Groups.maximumNameBytes else {
            throw WireError.malformedGroupStatement("a group name has 1–\(Groups.maximumNameBytes) bytes of UTF-8, got \(count)")
        }
        guard !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw WireError.malformedGroupStatement("a group name has no control characters")
        }
    }

    /// Whether `key` is a member.
    public func contains(_ key: Ed25519PublicKey) -> Bool { members.contains { $0.key == key } }

    /// Whether `key` is an admin.
    public func isAdmin(_ key: Ed25519PublicKey) -> Bool { members.contains { $0.key == key && $0.isAdmin } }

    /// The members' keys.
    public var keys: [Ed25519PublicKey] { members.map(\.key) }

    /// The state without `key` (a leave): nil when `key` is not a member or is the last one.
    public func removing(_ key: Ed25519PublicKey) -> GroupState? {
        guard contains(key) else { return nil }
        return try? GroupState(name: name, members: members.filter { $0.key != key })  // nil: no member or no admin left
    }
}

/// A signed change of a group's membership (§11.3): the whole new state, its epoch, its
/// predecessor's hash and its author. Made by ``make(group:epoch:previous:author:at:state:)`` or
/// parsed (and its signature verified) by ``init(bytes:)``.
public struct GroupStatement: Equatable, Sendable {
    static let prefix = Array("coords-group-v1".utf8)
    /// The group.
    public let group: GroupID
    /// 0 for the statement that creates the group, its predecessor's + 1 otherwise.
    public let epoch: UInt32
    /// The predecessor's ``hash`` (32 zero bytes at epoch 0).
    public let previous: [UInt8]
    /// Who signed it.
    public let author: Ed25519PublicKey
    /// When it was made (Unix ms, as the author's clock said).
    public let at: UInt64
    /// The state it makes.
    public let state: GroupState
    /// Body followed by the author's signature: the bytes on the wire.
    public let bytes: [UInt8]

    /// SHA-256 of ``bytes``: how later statements and members name this one.
    public var hash: [UInt8] { SHA256.hash(bytes) }

    /// The body `"coords-group-v1" ‖ id ‖ epoch ‖ previous ‖ author ‖ at ‖ name ‖ members`.
    static func body(group: GroupID, epoch: UInt32, previous: [UInt8], author: Ed25519PublicKey, at: UInt64, state: GroupState) -> [UInt8] {
        let name = Array(state.name.utf8)
        var writer = ByteWriter(capacity: prefix.count + 16 + 4 + 32 + 32 + 8 + 1 + name.count + 2 + 33 * state.members.count)
        writer.write(prefix)
        writer.write(group.bytes)
        writer.write(epoch)
        writer.write(previous)
        writer.write(author.rawRepresentation)
        writer.write(at)
        writer.write(UInt8(truncatingIfNeeded: name.count))  // ≤ 64: GroupState checked it
        writer.write(name)
        writer.write(UInt16(truncatingIfNeeded: state.members.count))  // ≤ 256
        for member in state.members {
            writer.write(member.key.rawRepresentation)
            writer.write(UInt8(member.isAdmin ? 1 : 0))
        }
        return writer.bytes
    }

    /// Signs a statement.
    /// - Parameters:
    ///   - group: the group.
    ///   - epoch: 0 to create, else the predecessor's epoch + 1.
    ///   - previous: the predecessor's hash (32 zero bytes at epoch 0).
    ///   - author: signs it.
    ///   - at: Unix ms.
    ///   - state: the new state.
    /// - Throws: ``WireError/malformedGroupStatement(_:)`` when epoch and previous disagree.
    public static func make(
        group: GroupID, epoch: UInt32, previous: [UInt8], author: Ed25519SigningKey, at: UInt64, state: GroupState
    ) throws -> GroupStatement {
        try checkChain(epoch: epoch, previous: previous)
        let body = body(group: group, epoch: epoch, previous: previous, author: author.publicKey, at: at, state: state)
        return GroupStatement(
            group: group, epoch: epoch, previous: previous, author: author.publicKey, at: at, state: state,
            bytes: body + author.signature(for: body))
    }

    private init(group: GroupID, epoch: UInt32, previous: [UInt8], author: Ed25519PublicKey, at: UInt64, state: GroupState, bytes: [UInt8]) {
        self.group = group
        self.epoch = epoch
        self.previous = previous
        self.author = author
        self.at = at
        self.state = state
        self.bytes = bytes
    }

    static func checkChain(epoch: UInt32, previous: [UInt8]) throws {
        guard previous.count == 32 else { throw WireError.malformedGroupStatement("previous is 32 bytes") }
        let zero = previous.allSatisfy { $0 == 0 }
        guard epoch != UInt32.max else { throw WireError.malformedGroupStatement("epoch 2^32-1 has no successor") }
        guard (epoch == 0) == zero else {
            throw WireError.malformedGroupStatement(epoch == 0 ? "epoch 0 names a predecessor" : "epoch \(epoch) names no predecessor")
        }
    }

    /// Parses a statement from the wire and verifies its author's signature.
    /// - Throws: ``WireError/malformedGroupStatement(_:)`` (layout, lengths, flags, chain, state),
    ///   ``WireError/groupSignatureInvalid``.
    public init(bytes: [UInt8]) throws {
        try self.init(bytes: bytes, verifying: true)
    }

    private init(bytes: [UInt8], verifying: Bool) throws {
        func fail(_ why: String) -> WireError { WireError.malformedGroupStatement(why) }
        guard bytes.count <= 512 + Groups.maximumMembers * 33 else { throw fail("\(bytes.count) bytes is longer than any statement") }
        let parsed = try bytes.withUnsafeBytes { raw -> (GroupStatement, Int) in
            var reader = ByteReader(raw)
            do {
                guard try reader.read(count: Self.prefix.count) == Self.prefix else { throw fail("not a coords-group-v1 statement") }
                let group = try GroupID(bytes: try reader.read(count: 16))
                let epoch = try reader.read(UInt32.self)
                let previous = try reader.read(count: 32)
                try Self.checkChain(epoch: epoch, previous: previous)
                guard let author = try? Ed25519PublicKey(rawRepresentation: try reader.read(count: 32)) else {
                    throw fail("the author is not an Ed25519 key")
                }
                let at = try reader.read(UInt64.self)
                let nameLength = Int(try reader.read(UInt8.self))
                guard let name = String(validating: try reader.read(count: nameLength), as: UTF8.self) else { throw fail("the name is not UTF-8") }
                let count = Int(try reader.read(UInt16.self))
                guard count <= Groups.maximumMembers else { throw fail("\(count) members; at most \(Groups.maximumMembers)") }
                var members: [GroupMember] = []
                members.reserveCapacity(count)
                var last: [UInt8]?
                for _ in 0..<count {
                    let raw = try reader.read(count: 32)
                    if let last, !last.lexicographicallyPrecedes(raw) { throw fail("members are not sorted by key without repeats") }
                    last = raw
                    guard let key = try? Ed25519PublicKey(rawRepresentation: raw) else { throw fail("a member is not an Ed25519 key") }
                    let flags = try reader.read(UInt8.self)
                    guard flags <= 1 else { throw fail("member flags are 0 or 1") }
                    members.append(GroupMember(key: key, isAdmin: flags == 1))
                }
                let bodyLength = raw.count - reader.remaining
                let signature = try reader.read(count: 64)
                guard reader.isAtEnd else { throw fail("trailing bytes") }
                let state = try GroupState(name: name, members: members)
                let statement = GroupStatement(group: group, epoch: epoch, previous: previous, author: author, at: at, state: state, bytes: bytes)
                guard !verifying || author.isValidSignature(signature, for: Array(bytes[0..<bodyLength])) else {
                    throw WireError.groupSignatureInvalid
                }
                return (statement, bodyLength)
            } catch let error as WireError {
                throw error
            } catch {
                throw fail("truncated (\(error))")
            }
        }
        self = parsed.0
    }

    /// Reads a statement the store kept: it was verified when accepted and the sealed store
    /// authenticates it since, so the signature is not checked again.
    /// - Throws: ``WireError/malformedGroupStatement(_:)`` for damaged bytes.
    init(storedBytes bytes: [UInt8]) throws {
        try self.init(bytes: bytes, verifying: false)
    }

    /// Why a statement may not follow its predecessor (§11.4 rule 4).
    public enum Refusal: Error, Equatable, Sendable {
        /// The author is not a member of the predecessor's state.
        case notAMember
        /// The author is a member but not an admin, and the change is not its own leave.
        case notAnAdmin
    }

    /// Checks §11.4 rule 4: whether this statement's author may turn `before` into its state.
    /// - Throws: ``Refusal``.
    public func checkAuthority(over before: GroupState) throws(Refusal) {
        guard before.contains(author) else { throw .notAMember }
        if before.isAdmin(author) { return }
        guard let left = before.removing(author), left == state else { throw .notAnAdmin }
    }

    /// The change from `before` (nil: created) to this statement's state, in words.
    public func change(from before: GroupState?) -> GroupChange {
        guard let before else { return GroupChange(added: state.keys, removed: [], renamed: false, adminsChanged: false) }
        let old = Set(before.keys)
        let new = Set(state.keys)
        let admins = Set(state.members.filter(\.isAdmin).map(\.key))
        let oldAdmins = Set(before.members.filter(\.isAdmin).map(\.key))
        return GroupChange(
            added: state.keys.filter { !old.contains($0) }, removed: before.keys.filter { !new.contains($0) },
            renamed: before.name != state.name, adminsChanged: admins.intersection(old) != oldAdmins.intersection(new))
    }
}

/// What a statement changed (§11.3: the difference of two states).
public struct GroupChange: Equatable, Sendable {
    /// Keys that became members.
    public var added: [Ed25519PublicKey]
    /// Keys that are no longer members.
    public var removed: [Ed25519PublicKey]
    /// Whether the name changed.
    public var renamed: Bool
    /// Whether a remaining member's admin flag changed.
    public var adminsChanged: Bool
}

/// The sender-key chain KDF (§11.5).
public enum SenderChain {
    static let salt = Array("CoordsCore/group/chain/v1".utf8)

    /// `KDF_GK(ck)` → (next chain key, 44-byte message key: AES key ‖ nonce).
    /// - Throws: ``CryptoError``.
    public static func step(_ chainKey: SecretBytes) throws -> (next: SecretBytes, messageKey: SecretBytes) {
        let okm = try HKDF.deriveKey(inputKeyMaterial: chainKey, salt: salt, outputByteCount: 76)
        return (try okm.slice(0..<32), try okm.slice(32..<76))
    }
}

/// A group message as sealed once by its sender (§11.6) and carried in every member's
/// version-4 envelope.
public struct GroupMessage: Equatable, Sendable {
    static let label = Array("CoordsCore/group/v1".utf8)
    static let magic: [UInt8] = [0x47, 0x01]
    /// The smallest group message: header (30), tag (16), signature (64).
    public static let minimumByteCount = 2 + 16 + 12 + 16 + 64
    /// The group.
    public let group: GroupID
    /// The sender's chain id.
    public let chain: UInt32
    /// The message's iteration in the chain.
    public let iteration: UInt32
    /// The sender's head epoch when it sent.
    public let epoch: UInt32
    /// AES-256-GCM of the payload, tag appended.
    public let ciphertext: [UInt8]
    /// Ed25519 by the chain's signing key over `core ‖ ciphertext`.
    public let signature: [UInt8]

    /// The bytes on the wire.
    public var bytes: [UInt8] {
        var writer = ByteWriter(capacity: 30 + ciphertext.count + 64)
        writer.write(Self.magic)
        writer.write(group.bytes)
        writer.write(chain)
        writer.write(iteration)
        writer.write(epoch)
        writer.write(ciphertext)
        writer.write(signature)
        return writer.bytes
    }

    /// `core` (§11.6): the AEAD's associated data and the start of what the chain key signs.
    static func core(sender: Ed25519PublicKey, group: GroupID, chain: UInt32, iteration: UInt32, epoch: UInt32) -> [UInt8] {
        var writer = ByteWriter(capacity: label.count + 32 + 16 + 12)
        writer.write(label)
        writer.write(sender.rawRepresentation)
        writer.write(group.bytes)
        writer.write(chain)
        writer.write(iteration)
        writer.write(epoch)
        return writer.bytes
    }

    /// Seals and signs a payload.
    /// - Parameters:
    ///   - plaintext: the §7.2 JSON payload.
    ///   - sender: the sender's identity key.
    ///   - group: the group.
    ///   - chain: the sender's chain id.
    ///   - iteration: the message key's iteration.
    ///   - epoch: the sender's head epoch.
    ///   - messageKey: 44 bytes from ``SenderChain/step(_:)``.
    ///   - signingKey: the chain's signing key.
    /// - Throws: ``CryptoError``, ``WireError/malformedGroupMessage(_:)`` (too large).
    public static func seal(
        _ plaintext: [UInt8], sender: Ed25519PublicKey, group: GroupID, chain: UInt32, iteration: UInt32, epoch: UInt32,
        messageKey: SecretBytes, signingKey: Ed25519SigningKey
    ) throws -> GroupMessage {
        try sealUnsigned(plaintext, sender: sender, group: group, chain: chain, iteration: iteration, epoch: epoch, messageKey: messageKey)
            .signed(by: signingKey)
    }

    /// ``seal(_:sender:group:chain:iteration:epoch:messageKey:signingKey:)`` without the chain
    /// signature, which ``Unsigned/signed(by:)`` adds: a send makes it on another thread while it
    /// stores the message.
    /// - Throws: as `seal`.
    static func sealUnsigned(
        _ plaintext: [UInt8], sender: Ed25519PublicKey, group: GroupID, chain: UInt32, iteration: UInt32, epoch: UInt32, messageKey: SecretBytes
    ) throws -> Unsigned {
        guard plaintext.count <= Envelope.maximumPayloadBytes - minimumByteCount else {
            throw WireError.malformedGroupMessage("the payload is \(plaintext.count) bytes; at most \(Envelope.maximumPayloadBytes - minimumByteCount)")
        }
        let core = core(sender: sender, group: group, chain: chain, iteration: iteration, epoch: epoch)
        let ciphertext = try RatchetSession.seal(plaintext, messageKey: messageKey, associatedData: core)
        return Unsigned(group: group, chain: chain, iteration: iteration, epoch: epoch, ciphertext: ciphertext, signedBytes: core + ciphertext)
    }

    /// A sealed group message whose chain signature is still to be made.
    struct Unsigned: Sendable {
        let group: GroupID
        let chain: UInt32
        let iteration: UInt32
        let epoch: UInt32
        let ciphertext: [UInt8]
        /// `core ‖ ciphertext`: what the chain key signs.
        let signedBytes: [UInt8]

        /// The message, signed by the chain's signing key.
        func signed(by signingKey: Ed25519SigningKey) -> GroupMessage {
            GroupMessage(
                group: group, chain: chain, iteration: iteration, epoch: epoch, ciphertext: ciphertext, signature: signingKey.signature(for: signedBytes))
        }
    }

    /// Parses the wire form (no keys needed).
    /// - Throws: ``WireError/malformedGroupMessage(_:)``.
    public init(bytes: [UInt8]) throws {
        guard bytes.count >= Self.minimumByteCount, bytes.count <= Envelope.maximumPayloadBytes else {
            throw WireError.malformedGroupMessage("\(bytes.count) bytes; a group message has \(Self.minimumByteCount)–\(Envelope.maximumPayloadBytes)")
        }
        guard bytes[0] == Self.magic[0], bytes[1] == Self.magic[1] else { throw WireError.malformedGroupMessage("not a version-1 group message") }
        group = try GroupID(bytes: Array(bytes[2..<18]))
        chain = try ByteReader.bigEndian(UInt32.self, in: bytes, at: 18)
        iteration = try ByteReader.bigEndian(UInt32.self, in: bytes, at: 22)
        epoch = try ByteReader.bigEndian(UInt32.self, in: bytes, at: 26)
        ciphertext = Array(bytes[30..<(bytes.count - 64)])
        signature = Array(bytes[(bytes.count - 64)...])
    }

    private init(group: GroupID, chain: UInt32, iteration: UInt32, epoch: UInt32, ciphertext: [UInt8], signature: [UInt8]) {
        self.group = group
        self.chain = chain
        self.iteration = iteration
        self.epoch = epoch
        self.ciphertext = ciphertext
        self.signature = signature
    }

    /// Checks the chain signature (§11.6 step 3).
    /// - Throws: ``WireError/groupSignatureInvalid``.
    public func verify(sender: Ed25519PublicKey, signingKey: Ed25519PublicKey) throws {
        try verify(sender: sender, signingKey: signingKey, memo: SignatureMemo())
    }

    /// ``verify(sender:signingKey:)``, answered from `memo` when it found this very signature valid ahead.
    /// - Throws: ``WireError/groupSignatureInvalid``.
    public func verify(sender: Ed25519PublicKey, signingKey: Ed25519PublicKey, memo: SignatureMemo) throws {
        guard memo.isValid(signature, by: signingKey, for: signedBytes(sender: sender)) else { throw WireError.groupSignatureInvalid }
    }

    /// The bytes the chain signature covers: the header bound to `sender`, then the ciphertext.
    public func signedBytes(sender: Ed25519PublicKey) -> [UInt8] {
        Self.core(sender: sender, group: group, chain: chain, iteration: iteration, epoch: epoch) + ciphertext
    }

    /// The check of the chain signature by `signingKey` (the sender chain's key), for a ``SignatureMemo``.
    public func signatureCheck(sender: Ed25519PublicKey, signingKey: Ed25519PublicKey) -> SignatureMemo.Check {
        SignatureMemo.Check(key: signingKey, signature: signature, message: signedBytes(sender: sender))
    }

    /// Opens the payload with its message key (after ``verify(sender:signingKey:)``).
    /// - Throws: ``WireError/envelopeTampered`` when it does not authenticate.
    public func open(sender: Ed25519PublicKey, messageKey: SecretBytes) throws -> [UInt8] {
        let core = Self.core(sender: sender, group: group, chain: chain, iteration: iteration, epoch: epoch)
        return try RatchetSession.open(ciphertext, messageKey: messageKey, associatedData: core)
    }
}
