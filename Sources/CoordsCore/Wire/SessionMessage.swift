/// The sealed payload of a version-3 envelope (PROTOCOL.md §10.7), parsed but not opened.
///
/// ```
/// initial  (0x01): 01 ‖ spk id (u32) ‖ has opk (u8) ‖ opk id (u32) ‖ EK_A (32) ‖ header (40) ‖ ciphertext
/// message  (0x02): 02 ‖ header (40) ‖ ciphertext
/// ```
public struct SessionMessage: Sendable, Equatable {
    /// Type byte of a handshake-carrying message.
    public static let initialType: UInt8 = 0x01
    /// Type byte of a message in an established session.
    public static let messageType: UInt8 = 0x02
    /// Bytes before the ciphertext of an initial message.
    public static let initialPrefixByteCount = 82
    /// Bytes before the ciphertext of a session message.
    public static let messagePrefixByteCount = 41
    /// The AEAD tag: the shortest ciphertext.
    public static let minimumCiphertextByteCount = 16

    /// What an initial message adds: the prekeys it used and the initiator's base key (§10.5).
    public struct Handshake: Sendable, Equatable, Hashable {
        /// The responder's signed prekey id.
        public var signedPrekeyID: UInt32
        /// The responder's one-time prekey id, if one was used.
        public var oneTimePrekeyID: UInt32?
        /// The initiator's base key `EK_A`.
        public var baseKey: X25519PublicKey

        /// Wraps the parts.
        public init(signedPrekeyID: UInt32, oneTimePrekeyID: UInt32?, baseKey: X25519PublicKey) {
            self.signedPrekeyID = signedPrekeyID
            self.oneTimePrekeyID = oneTimePrekeyID
            self.baseKey = baseKey
        }
    }

    /// The ratchet header (§10.6): the sender's ratchet key, the previous chain's length, the number.
    public struct Header: Sendable, Equatable {
        /// The sender's current ratchet public key.
        public var ratchetKey: X25519PublicKey
        /// Messages in the sender's previous sending chain (`pn`).
        public var previousChainLength: UInt32
        /// This message's number in its chain (`n`).
        public var number: UInt32
    }

    /// The handshake, for an initial message.
    public var handshake: Handshake?
    /// The ratchet header.
    public var header: Header
    /// Every byte before the ciphertext (authenticated as associated data).
    public var prefix: [UInt8]
    /// Ciphertext ‖ tag.
    public var ciphertext: [UInt8]

    /// Builds the prefix bytes for a header and optional handshake.
    static func prefix(handshake: Handshake?, header: Header) -> [UInt8] {
        var writer = ByteWriter(capacity: initialPrefixByteCount)
        if let handshake {
            writer.write(initialType)
            writer.write(handshake.signedPrekeyID)
            writer.write(UInt8(handshake.oneTimePrekeyID == nil ? 0 : 1))
            writer.write(handshake.oneTimePrekeyID ?? 0)
            writer.write(handshake.baseKey.rawRepresentation)
        } else {
            writer.write(messageType)
        }
        writer.write(header.ratchetKey.rawRepresentation)
        writer.write(header.previousChainLength)
        writer.write(header.number)
        return writer.bytes
    }

    /// Parses a sealed payload (at most ``Envelope/maximumPayloadBytes``).
    /// - Throws: ``WireError/malformedSessionMessage(_:)`` naming what is wrong.
    public init(payload: [UInt8]) throws {
        guard payload.count <= Envelope.maximumPayloadBytes else {
            throw WireError.malformedSessionMessage("\(payload.count) bytes; at most \(Envelope.maximumPayloadBytes)")
        }
        guard let type = payload.first else { throw WireError.malformedSessionMessage("empty payload") }
        let prefixLength: Int
        switch type {
        case Self.initialType: prefixLength = Self.initialPrefixByteCount
        case Self.messageType: prefixLength = Self.messagePrefixByteCount
        default: throw WireError.malformedSessionMessage("unknown type byte 0x\(String(type, radix: 16))")
        }
        guard payload.count >= prefixLength + Self.minimumCiphertextByteCount else {
            throw WireError.malformedSessionMessage("\(payload.count) bytes; a type-\(type) message has at least \(prefixLength + 16)")
        }
        do {
            (handshake, header) = try ByteReader.reading(payload) { reader in
                _ = try reader.read(UInt8.self)
                var handshake: Handshake?
                if type == Self.initialType {
                    let spk = try reader.read(UInt32.self)
                    let hasOPK = try reader.read(UInt8.self)
                    let opk = try reader.read(UInt32.self)
                    guard hasOPK <= 1 else { throw WireError.malformedSessionMessage("has-opk byte is \(hasOPK), not 0 or 1") }
                    guard hasOPK == 1 || opk == 0 else { throw WireError.malformedSessionMessage("an absent one-time prekey must have id 0") }
                    let base = try X25519PublicKey(rawRepresentation: try reader.read(count: 32))
                    handshake = Handshake(signedPrekeyID: spk, oneTimePrekeyID: hasOPK == 1 ? opk : nil, baseKey: base)
                }
                let key = try X25519PublicKey(rawRepresentation: try reader.read(count: 32))
                let header = Header(ratchetKey: key, previousChainLength: try reader.read(UInt32.self), number: try reader.read(UInt32.self))
                return (handshake, header)
            }
        } catch let error as WireError {
            throw error
        } catch {
            throw WireError.malformedSessionMessage("truncated: \(error)")
        }
        prefix = Array(payload[0..<prefixLength])
        ciphertext = Array(payload[prefixLength...])
    }

    /// Assembles a message from its parts.
    init(handshake: Handshake?, header: Header, ciphertext: [UInt8]) {
        self.handshake = handshake
        self.header = header
        self.prefix = Self.prefix(handshake: handshake, header: header)
        self.ciphertext = ciphertext
    }

    /// The payload bytes: prefix ‖ ciphertext.
    public var payload: [UInt8] { prefix + ciphertext }
}

/// Who a session message is between, and the envelope it travels in: everything the AEAD
/// binds besides the prefix (§10.7).
public struct SessionContext: Sendable {
    static let label = Array("CoordsCore/ratchet/v1".utf8)
    /// The sender's identity.
    public var sender: Ed25519PublicKey
    /// The recipient's identity.
    public var recipient: Ed25519PublicKey
    /// The envelope's `<id>|<senderID>|<recipientID>|<createdAt>|<expiresAt>` bytes (``Envelope/associatedData``).
    public var envelopeAssociatedData: [UInt8]

    /// Wraps the parts.
    public init(sender: Ed25519PublicKey, recipient: Ed25519PublicKey, envelopeAssociatedData: [UInt8]) {
        self.sender = sender
        self.recipient = recipient
        self.envelopeAssociatedData = envelopeAssociatedData
    }

    /// `"CoordsCore/ratchet/v1" ‖ IK_sender ‖ IK_recipient ‖ prefix ‖ envelope associated data`.
    func associatedData(prefix: [UInt8]) -> [UInt8] {
        var ad: [UInt8] = []
        ad.reserveCapacity(Self.label.count + 64 + prefix.count + envelopeAssociatedData.count)
        ad += Self.label
        ad += sender.rawRepresentation
        ad += recipient.rawRepresentation
        ad += prefix
        ad += envelopeAssociatedData
        return ad
    }
}
