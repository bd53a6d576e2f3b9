/// Group messages that arrive before their sender key (PROTOCOL.md §11.6, "Waiting for a sender
/// key"). They are held on this device — sealed at rest like every value — and acknowledged on the
/// relay at once, so a message waiting for a key never sits at the head of the mailbox and never
/// stops the rest of it from being read. What is held is bounded per sender
/// (``Groups/waitingPerSender``), in all (``Groups/waitingTotal``) and in time
/// (``Groups/waitingKeep``); whatever is dropped is reported.
extension GroupsManager {
    /// One held message.
    struct Waiting {
        /// Its key in ``Tables/groupWaiting``.
        var key: [UInt8]
        /// The sender (the first 32 bytes of the key).
        var sender: Ed25519PublicKey
        /// The envelope id.
        var id: String
        /// When it arrived (Unix ms).
        var arrived: UInt64
        /// Its place in arrival order (increasing; several arrive in one millisecond).
        var sequence: UInt64
        /// Arrival order: time, then sequence.
        var order: (UInt64, UInt64) { (arrived, sequence) }
        /// The envelope's JSON.
        var json: [UInt8]
    }

    /// A dropped message: its envelope id and why.
    struct DroppedWaiting: Equatable {
        var id: String
        var reason: String

        /// How the mailbox answer reports it (``GroupsManagerError/waitingDropped(_:)``).
        var rejection: MessageRejection {
            MessageRejection(id: id, code: GroupsManagerError.waitingDropped("").code, reason: GroupsManagerError.waitingDropped(reason).description)
        }
    }

    /// Every held message (at most ``Groups/waitingTotal``). A value that does not decode (never
    /// written by this code) is dropped and reported like an expired one.
    static func waiting(_ tx: borrowing WriteTransaction) throws -> (held: [Waiting], unreadable: [[UInt8]]) {
        var held: [Waiting] = []
        var unreadable: [[UInt8]] = []
        for (key, value) in try tx.open(Tables.groupWaiting).entries() {
            // A key that is no Ed25519 key was never written here: reported as unreadable below.
            guard key.count > 32, value.count > 16, let sender = try? Ed25519PublicKey(rawRepresentation: Array(key[0..<32])) else {  // see above
                unreadable.append(key)
                continue
            }
            let arrived = value[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let sequence = value[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            held.append(
                Waiting(
                    key: key, sender: sender, id: String(decoding: key[32...], as: UTF8.self), arrived: arrived, sequence: sequence,
                    json: Array(value[16...])))
        }
        return (held, unreadable)
    }

    /// Holds `envelope` from `sender` until its sender key comes (an envelope held already keeps
    /// its arrival time). Returns what the bounds dropped to make room: the sender's oldest beyond
    /// ``Groups/waitingPerSender``, then, beyond ``Groups/waitingTotal``, the oldest of whoever
    /// holds the most.
    /// - Throws: store errors.
    static func holdWaiting(_ tx: borrowing WriteTransaction, _ envelope: Envelope, sender: Ed25519PublicKey, now: UInt64) throws -> [DroppedWaiting] {
        let table = try tx.open(Tables.groupWaiting)
        let id = envelope.id.lowercased()
        let key = sender.rawRepresentation + Array(id.utf8)
        if try table.contains(key) { return [] }
        var held = try waiting(tx).held
        var value = ByteWriter(capacity: 16)
        value.write(now)
        value.write((held.map(\.sequence).max() ?? 0).addingSaturating(1))
        try table.put(key, value.bytes + envelope.json.serialized())
        held = try waiting(tx).held
        var dropped: [DroppedWaiting] = []
        func drop(_ entry: Waiting, _ reason: String) throws {
            _ = try table.delete(entry.key)
            held.removeAll { $0.key == entry.key }
            dropped.append(DroppedWaiting(id: entry.id, reason: reason))
        }
        func oldest(of sender: Ed25519PublicKey) -> Waiting? {
            held.filter { $0.sender == sender }.min { $0.order < $1.order }
        }
        while held.count(where: { $0.sender == sender }) > Groups.waitingPerSender, let entry = oldest(of: sender) {
            try drop(entry, "\(sender.base64URL.prefix(8))… has \(Groups.waitingPerSender) messages waiting for keys already")
        }
        while held.count > Groups.waitingTotal {
            let counts = Dictionary(grouping: held, by: \.sender).mapValues(\.count)
            guard let most = counts.max(by: { ($0.value, $1.key.base64URL) < ($1.value, $0.key.base64URL) })?.key, let entry = oldest(of: most) else { break }
            try drop(entry, "\(Groups.waitingTotal) messages wait for keys already; \(most.base64URL.prefix(8))… holds the most")
        }
        return dropped
    }

    /// Drops held messages that arrived ``Groups/waitingKeep`` or longer before `now`, and any
    /// held value that does not decode.
    /// - Throws: store errors.
    static func expireWaiting(_ tx: borrowing WriteTransaction, now: UInt64) throws -> [DroppedWaiting] {
        let table = try tx.open(Tables.groupWaiting)
        let (held, unreadable) = try waiting(tx)
        var dropped: [DroppedWaiting] = []
        for key in unreadable {
            _ = try table.delete(key)
            dropped.append(DroppedWaiting(id: String(decoding: key.dropFirst(32), as: UTF8.self), reason: "a held message did not decode"))
        }
        for entry in held where entry.arrived.addingSaturating(Groups.waitingKeep) <= now {
            _ = try table.delete(entry.key)
            dropped.append(DroppedWaiting(id: entry.id, reason: "its sender key did not come within \(Groups.waitingKeep / 3_600_000) h"))
        }
        return dropped
    }

    /// Tries every held message again (a sender key or a statement came): each that opens is
    /// stored as a message and released; one that still has no chain stays; one refused for any
    /// other reason is released and reported.
    /// - Throws: store errors.
    static func retryWaiting(
        _ tx: borrowing WriteTransaction, identity: Identity, now: UInt64, policy: NotificationPolicy, cache: inout FetchCache
    ) throws -> (opened: [MessageRecord], refused: [MessageRejection]) {
        let table = try tx.open(Tables.groupWaiting)
        var opened: [MessageRecord] = []
        var refused: [MessageRejection] = []
        for entry in try waiting(tx).held.sorted(by: { $0.order < $1.order }) {
            do {
                let envelope = try Envelope(json: try JSONValue.parse(entry.json))
                opened.append(try openGroupMessage(tx, envelope, sender: entry.sender, identity: identity, now: now, policy: policy, cache: &cache))
            } catch GroupsManagerError.unknownChain, GroupsManagerError.notAMember {
                continue  // still waiting
            } catch {
                let failure = error as? any CoordsCoreError
                refused.append(MessageRejection(id: entry.id, code: failure?.code ?? 364, reason: failure?.description ?? "\(error)"))
            }
            _ = try table.delete(entry.key)
        }
        return (opened, refused)
    }
}
