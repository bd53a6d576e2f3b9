/// One Double Ratchet session with a friend (PROTOCOL.md §10.6): a value the store keeps and
/// replaces in the transaction that sends or opens a message.
///
/// Secrets (root, chain and skipped message keys, the ratchet private key) live in
/// ``SecretBytes``; the type never prints them. Every mutating call works on a copy and keeps
/// it only when it succeeds, so a forged or replayed message leaves the session unchanged.
public struct RatchetSession: Sendable {
    static let rootSalt = Array("CoordsCore/ratchet/root/v1".utf8)
    static let chainSalt = Array("CoordsCore/ratchet/chain/v1".utf8)
    /// AES key (32) ‖ nonce (12).
    static let messageKeyByteCount = 44

    struct SkippedKey: Sendable {
        var ratchetKey: X25519PublicKey
        var number: UInt32
        var key: SecretBytes
        var storedAt: UInt64
    }

    var rootKey: SecretBytes
    var sendingRatchet: X25519PrivateKey
    var receivingRatchet: X25519PublicKey?
    var sendingChain: SecretBytes?
    var receivingChain: SecretBytes?
    /// `Ns`: messages sent in the current sending chain.
    public private(set) var sentCount: UInt64
    /// `Nr`: messages received in the current receiving chain.
    public private(set) var receivedCount: UInt64
    var previousChainLength: UInt32
    var skipped: [SkippedKey]
    /// The handshake that started the session (its base key identifies it).
    public let handshake: SessionMessage.Handshake
    /// Whether this side started the session (and sends initial messages until confirmed).
    public let isInitiator: Bool
    /// Whether a message from the peer has been opened in this session.
    public private(set) var confirmed: Bool
    /// When the session last sent or opened a message (Unix ms).
    public private(set) var lastUsed: UInt64

    /// Skipped message keys held (at most ``ForwardSecrecy/maximumSkippedKeys``).
    public var skippedKeyCount: Int { skipped.count }

    /// The initiator's session after the handshake (§10.6 "Initialisation", A).
    /// - Parameters:
    ///   - sharedSecret: `SK` from ``X3DH/initiate(identity:bundle:baseKey:)``.
    ///   - remoteSignedPrekey: B's signed prekey (the first `DHr`).
    ///   - handshake: the prekey ids and base key to repeat in initial messages.
    ///   - now: Unix ms.
    ///   - random: draws the first ratchet key (32 bytes).
    /// - Throws: ``CryptoError/weakPublicKey`` for a small-order prekey; errors of `random`.
    public static func initiate(
        sharedSecret: SecretBytes, remoteSignedPrekey: X25519PublicKey, handshake: SessionMessage.Handshake, now: UInt64,
        using random: any RandomSource = SystemRandomSource()
    ) throws -> RatchetSession {
        let ratchet = try X25519PrivateKey.generate(using: random)
        let (root, chain) = try kdfRoot(sharedSecret, try ratchet.sharedSecret(with: remoteSignedPrekey))
        return RatchetSession(
            rootKey: root, sendingRatchet: ratchet, receivingRatchet: remoteSignedPrekey, sendingChain: chain, receivingChain: nil,
            sentCount: 0, receivedCount: 0, previousChainLength: 0, skipped: [], handshake: handshake, isInitiator: true,
            confirmed: false, lastUsed: now)
    }

    /// The responder's session before its first message is opened (§10.6 "Initialisation", B).
    /// - Parameters:
    ///   - sharedSecret: `SK` from ``X3DH/respond(identity:signedPrekey:oneTimePrekey:initiator:baseKey:)``.
    ///   - signedPrekey: the signed prekey the handshake named (the first `DHs`).
    ///   - handshake: the handshake from the initial message.
    ///   - now: Unix ms.
    public static func respond(
        sharedSecret: SecretBytes, signedPrekey: X25519PrivateKey, handshake: SessionMessage.Handshake, now: UInt64
    ) -> RatchetSession {
        RatchetSession(
            rootKey: sharedSecret, sendingRatchet: signedPrekey, receivingRatchet: nil, sendingChain: nil, receivingChain: nil,
            sentCount: 0, receivedCount: 0, previousChainLength: 0, skipped: [], handshake: handshake, isInitiator: false,
            confirmed: false, lastUsed: now)
    }

    // MARK: Sending

    /// Seals `plaintext` as the next message (§10.6 "Sending", §10.7); an unconfirmed
    /// initiator's message carries the handshake.
    /// - Returns: the message (its ``SessionMessage/payload`` is the envelope's sealed payload).
    /// - Throws: ``WireError/sessionBroken`` when the session cannot send (a responder that has
    ///   opened nothing yet, or 2³²−1 messages in one chain: make a new session);
    ///   ``CryptoError`` from the AEAD.
    public mutating func seal(_ plaintext: [UInt8], context: SessionContext, now: UInt64) throws -> SessionMessage {
        guard let chain = sendingChain, sentCount < UInt64(UInt32.max) else { throw WireError.sessionBroken }
        let (next, messageKey) = try Self.kdfChain(chain)
        let header = SessionMessage.Header(
            ratchetKey: sendingRatchet.publicKey, previousChainLength: previousChainLength, number: UInt32(truncatingIfNeeded: sentCount))
        let handshake = isInitiator && !confirmed ? self.handshake : nil
        let prefix = SessionMessage.prefix(handshake: handshake, header: header)
        let ciphertext = try Self.seal(plaintext, messageKey: messageKey, associatedData: context.associatedData(prefix: prefix))
        sendingChain = next
        sentCount += 1
        lastUsed = max(lastUsed, now)
        return SessionMessage(handshake: handshake, header: header, ciphertext: ciphertext)
    }

    // MARK: Receiving

    /// Opens a message in this session (§10.6 "Receiving"); the session changes only if it opens.
    /// - Parameters:
    ///   - message: the parsed payload.
    ///   - context: sender, recipient and envelope.
    ///   - now: Unix ms (stamps skipped keys, prunes old ones).
    ///   - random: draws the next ratchet key on a DH ratchet step (32 bytes).
    /// - Returns: the plaintext.
    /// - Throws: ``WireError/duplicateMessage`` (replay or used key), ``WireError/tooManySkipped(gap:)``,
    ///   ``WireError/envelopeTampered`` (does not authenticate), ``CryptoError/weakPublicKey``.
    public mutating func open(
        _ message: SessionMessage, context: SessionContext, now: UInt64, using random: any RandomSource = SystemRandomSource()
    ) throws -> [UInt8] {
        var next = self
        let plaintext = try next.openInPlace(message, context: context, now: now, random: random)
        next.confirmed = true
        next.lastUsed = max(next.lastUsed, now)
        next.prune(now: now)
        self = next
        return plaintext
    }

    private mutating func openInPlace(_ message: SessionMessage, context: SessionContext, now: UInt64, random: any RandomSource) throws -> [UInt8] {
        let header = message.header
        let associatedData = context.associatedData(prefix: message.prefix)
        if let index = skipped.firstIndex(where: { $0.ratchetKey == header.ratchetKey && $0.number == header.number }) {
            let plaintext = try Self.open(message.ciphertext, messageKey: skipped[index].key, associatedData: associatedData)
            skipped.remove(at: index)
            return plaintext
        }
        if receivingRatchet != header.ratchetKey {
            try skip(until: UInt64(header.previousChainLength), now: now)
            previousChainLength = UInt32(truncatingIfNeeded: sentCount)
            sentCount = 0
            receivedCount = 0
            receivingRatchet = header.ratchetKey
            (rootKey, receivingChain) = try Self.kdfRoot(rootKey, try sendingRatchet.sharedSecret(with: header.ratchetKey))
            sendingRatchet = try X25519PrivateKey.generate(using: random)
            (rootKey, sendingChain) = try Self.kdfRoot(rootKey, try sendingRatchet.sharedSecret(with: header.ratchetKey))
        }
        guard UInt64(header.number) >= receivedCount else { throw WireError.duplicateMessage }
        try skip(until: UInt64(header.number), now: now)
        guard let chain = receivingChain else { throw WireError.duplicateMessage }
        let (nextChain, messageKey) = try Self.kdfChain(chain)
        receivingChain = nextChain
        receivedCount += 1
        return try Self.open(message.ciphertext, messageKey: messageKey, associatedData: associatedData)
    }

    /// Stores the message keys of the current receiving chain up to (not including) `limit`.
    private mutating func skip(until limit: UInt64, now: UInt64) throws {
        guard limit > receivedCount, var chain = receivingChain, let key = receivingRatchet else { return }
        let gap = limit - receivedCount
        guard gap <= UInt64(ForwardSecrecy.maximumSkippedKeys) else { throw WireError.tooManySkipped(gap: gap) }
        while receivedCount < limit {
            let (nextChain, messageKey) = try Self.kdfChain(chain)
            skipped.append(SkippedKey(ratchetKey: key, number: UInt32(truncatingIfNeeded: receivedCount), key: messageKey, storedAt: now))
            chain = nextChain
            receivedCount += 1
        }
        receivingChain = chain
        if skipped.count > ForwardSecrecy.maximumSkippedKeys {
            skipped.removeFirst(skipped.count - ForwardSecrecy.maximumSkippedKeys)
        }
    }

    /// Erases skipped keys stored ``ForwardSecrecy/skippedKeyKeep`` or longer before `now`.
    public mutating func prune(now: UInt64) {
        skipped.removeAll { $0.storedAt.addingSaturating(ForwardSecrecy.skippedKeyKeep) <= now }
    }

    // MARK: KDFs and AEAD

    /// `KDF_RK`: HKDF(rk ‖ dh, salt "CoordsCore/ratchet/root/v1", 64) → (root, chain).
    static func kdfRoot(_ root: SecretBytes, _ agreement: SecretBytes) throws -> (SecretBytes, SecretBytes) {
        let ikm = SecretBytes(count: root.count + agreement.count) { out in
            root.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[0..<root.count]).copyMemory(from: $0) }
            agreement.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[root.count...]).copyMemory(from: $0) }
        }
        let okm = try HKDF.deriveKey(inputKeyMaterial: ikm, salt: rootSalt, outputByteCount: 64)
        return (try okm.slice(0..<32), try okm.slice(32..<64))
    }

    /// `KDF_CK`: HKDF(ck, salt "CoordsCore/ratchet/chain/v1", 76) → (next chain, message key 44).
    static func kdfChain(_ chain: SecretBytes) throws -> (SecretBytes, SecretBytes) {
        let okm = try HKDF.deriveKey(inputKeyMaterial: chain, salt: chainSalt, outputByteCount: 76)
        return (try okm.slice(0..<32), try okm.slice(32..<76))
    }

    static func seal(_ plaintext: [UInt8], messageKey: SecretBytes, associatedData: [UInt8]) throws -> [UInt8] {
        let key = try messageKey.slice(0..<32)
        let nonce = try AES256GCM.Nonce(try messageKey.slice(32..<44).copyBytes())
        return try AES256GCM.seal(plaintext, key: key, nonce: nonce, associatedData: associatedData)
    }

    static func open(_ ciphertext: [UInt8], messageKey: SecretBytes, associatedData: [UInt8]) throws -> [UInt8] {
        let key = try messageKey.slice(0..<32)
        let nonce = try AES256GCM.Nonce(try messageKey.slice(32..<44).copyBytes())
        do {
            return try AES256GCM.open(ciphertext, key: key, nonce: nonce, associatedData: associatedData)
        } catch CryptoError.authenticationFailed {
            throw WireError.envelopeTampered
        }
    }
}

extension RatchetSession: CustomStringConvertible {
    /// Counters only; no key material.
    public var description: String {
        "RatchetSession(initiator: \(isInitiator), confirmed: \(confirmed), sent: \(sentCount), received: \(receivedCount), skipped: \(skipped.count))"
    }
}

// MARK: State at rest

extension RatchetSession {
    /// Version of the stored form.
    static let storedVersion: UInt8 = 1

    /// The session's stored form (private to CoordsCore; the store seals it at rest):
    /// ```
    /// version 1 (u8) ‖ flags (u8: 1 initiator, 2 confirmed, 4 DHr, 8 CKs, 16 CKr) ‖ RK (32) ‖ DHs private (32)
    /// ‖ [DHr (32)] ‖ [CKs (32)] ‖ [CKr (32)] ‖ Ns (u64) ‖ Nr (u64) ‖ PN (u32)
    /// ‖ spk id (u32) ‖ has opk (u8) ‖ opk id (u32) ‖ base key (32) ‖ last used (u64)
    /// ‖ skipped count (u16) ‖ count × (DHr (32) ‖ n (u32) ‖ stored at (u64) ‖ key (44))
    /// ```
    /// - Returns: the bytes, in wiped memory.
    public func serialized() -> SecretBytes {
        var flags: UInt8 = 0
        if isInitiator { flags |= 1 }
        if confirmed { flags |= 2 }
        if receivingRatchet != nil { flags |= 4 }
        if sendingChain != nil { flags |= 8 }
        if receivingChain != nil { flags |= 16 }
        var secrets: [SecretBytes] = [rootKey, sendingRatchet.rawRepresentation]
        if let sendingChain { secrets.append(sendingChain) }
        if let receivingChain { secrets.append(receivingChain) }
        var tail = ByteWriter()
        tail.write(sentCount)
        tail.write(receivedCount)
        tail.write(previousChainLength)
        tail.write(handshake.signedPrekeyID)
        tail.write(UInt8(handshake.oneTimePrekeyID == nil ? 0 : 1))
        tail.write(handshake.oneTimePrekeyID ?? 0)
        tail.write(handshake.baseKey.rawRepresentation)
        tail.write(lastUsed)
        tail.write(UInt16(truncatingIfNeeded: skipped.count))
        let tailBytes = tail.bytes
        let perSkipped = 32 + 4 + 8 + Self.messageKeyByteCount
        let total = 2 + 32 * secrets.count + (receivingRatchet == nil ? 0 : 32) + tailBytes.count + perSkipped * skipped.count
        return SecretBytes(count: total) { out in
            var offset = 0
            func put(_ bytes: UnsafeRawBufferPointer) {
                UnsafeMutableRawBufferPointer(rebasing: out[offset..<offset + bytes.count]).copyMemory(from: bytes)
                offset += bytes.count
            }
            func put(_ bytes: [UInt8]) { bytes.withUnsafeBytes { put($0) } }
            put([Self.storedVersion, flags])
            rootKey.withUnsafeBytes { put($0) }
            sendingRatchet.rawRepresentation.withUnsafeBytes { put($0) }
            if let receivingRatchet { put(receivingRatchet.rawRepresentation) }
            sendingChain?.withUnsafeBytes { put($0) }
            receivingChain?.withUnsafeBytes { put($0) }
            put(tailBytes)
            for key in skipped {
                var writer = ByteWriter(capacity: 44)
                writer.write(key.ratchetKey.rawRepresentation)
                writer.write(key.number)
                writer.write(key.storedAt)
                put(writer.bytes)
                key.key.withUnsafeBytes { put($0) }
            }
        }
    }

    /// Reads a stored session (bytes from disk are untrusted: every length and count is checked).
    /// - Throws: ``WireError/malformedSessionMessage(_:)`` ("stored session: …") for anything malformed.
    public init(serialized stored: SecretBytes) throws {
        func fail(_ why: String) -> WireError { WireError.malformedSessionMessage("stored session: \(why)") }
        self = try stored.withUnsafeBytes { bytes -> RatchetSession in
            var reader = ByteReader(bytes)
            do {
                guard try reader.read(UInt8.self) == Self.storedVersion else { throw fail("unknown version") }
                let flags = try reader.read(UInt8.self)
                guard flags & ~31 == 0 else { throw fail("unknown flags") }
                func secret(_ count: Int) throws -> SecretBytes { SecretBytes(borrowing: try reader.readBuffer(count: count)) }
                let root = try secret(32)
                let ratchet = try X25519PrivateKey(rawRepresentation: try secret(32))
                let receiving = flags & 4 != 0 ? try X25519PublicKey(rawRepresentation: try reader.read(count: 32)) : nil
                let sendingChain = flags & 8 != 0 ? try secret(32) : nil
                let receivingChain = flags & 16 != 0 ? try secret(32) : nil
                let sent = try reader.read(UInt64.self)
                let received = try reader.read(UInt64.self)
                let previous = try reader.read(UInt32.self)
                let spk = try reader.read(UInt32.self)
                let hasOPK = try reader.read(UInt8.self)
                let opk = try reader.read(UInt32.self)
                guard hasOPK <= 1, hasOPK == 1 || opk == 0 else { throw fail("bad one-time prekey flag or id") }
                let base = try X25519PublicKey(rawRepresentation: try reader.read(count: 32))
                let lastUsed = try reader.read(UInt64.self)
                let count = Int(try reader.read(UInt16.self))
                guard count <= ForwardSecrecy.maximumSkippedKeys else { throw fail("\(count) skipped keys; at most 1000") }
                var skipped: [SkippedKey] = []
                skipped.reserveCapacity(count)
                for _ in 0..<count {
                    let key = try X25519PublicKey(rawRepresentation: try reader.read(count: 32))
                    let number = try reader.read(UInt32.self)
                    let storedAt = try reader.read(UInt64.self)
                    skipped.append(SkippedKey(ratchetKey: key, number: number, key: try secret(Self.messageKeyByteCount), storedAt: storedAt))
                }
                guard reader.isAtEnd else { throw fail("trailing bytes") }
                return RatchetSession(
                    rootKey: root, sendingRatchet: ratchet, receivingRatchet: receiving, sendingChain: sendingChain,
                    receivingChain: receivingChain, sentCount: sent, receivedCount: received, previousChainLength: previous,
                    skipped: skipped,
                    handshake: SessionMessage.Handshake(signedPrekeyID: spk, oneTimePrekeyID: hasOPK == 1 ? opk : nil, baseKey: base),
                    isInitiator: flags & 1 != 0, confirmed: flags & 2 != 0, lastUsed: lastUsed)
            } catch let error as WireError {
                throw error
            } catch {
                throw fail("\(error)")
            }
        }
    }
}
