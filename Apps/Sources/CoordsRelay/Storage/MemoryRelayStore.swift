import CoordsCore

/// An in-memory ``RelayStore`` (tests, and throwaway relays). Everything is lost on exit.
public actor MemoryRelayStore: RelayStore {
    private var records: [Bytes32: RelayRecord] = [:]
    private var tombstones: [Bytes32: Tombstone] = [:]

    /// An empty store.
    public init() {}

    public func put(key: Bytes32, record: RelayRecord) -> PutResult {
        let result = RelayStoreRules.put(timestamp: record.timestamp, existing: records[key], tombstone: tombstones[key])
        if result == .stored {
            records[key] = record
            tombstones[key] = nil
        }
        return result
    }

    public func get(keys: [Bytes32], updatedSince: UInt64) -> [Bytes32: RelayRecord] {
        var found: [Bytes32: RelayRecord] = [:]
        for key in keys {
            if let record = records[key], record.updated >= updatedSince { found[key] = record }
        }
        return found
    }

    public func delete(key: Bytes32, timestamp: UInt64, now: UInt64) -> DeleteResult {
        let result = RelayStoreRules.delete(timestamp: timestamp, existing: records[key], tombstone: tombstones[key])
        if case .stale = result { return result }
        records[key] = nil
        tombstones[key] = Tombstone(timestamp: max(timestamp, tombstones[key]?.timestamp ?? 0), recordedAt: now)
        return result
    }

    public func sweep(updatedBefore: UInt64, tombstonesBefore: UInt64) -> Int {
        let expired = records.filter { $0.value.updated < updatedBefore }.map(\.key)
        for key in expired { records[key] = nil }
        tombstones = tombstones.filter { $0.value.recordedAt >= tombstonesBefore }
        return expired.count
    }

    public func count() -> Int { records.count }

    // MARK: Mailbox

    private var queues: [String: [MailboxEntry]] = [:]  // by recipient, oldest first
    private var recipientOf: [String: String] = [:]  // id → recipient
    private var messageTombstones: [String: UInt64] = [:]  // id → kept until

    public func mailboxPost(_ entry: MailboxEntry, limits: MailboxLimits, now: UInt64) -> MailboxPostResult {
        if recipientOf[entry.id] != nil || messageTombstones[entry.id] != nil { return .duplicate }
        if recipientOf.count >= limits.total { return .relayFull }
        let waiting = (queues[entry.recipient] ?? []).count { $0.expiresAt > now && $0.authenticated == entry.authenticated }
        if waiting >= limits.quota(for: entry) { return .recipientFull }
        queues[entry.recipient, default: []].append(entry)
        recipientOf[entry.id] = entry.recipient
        return .stored
    }

    public func mailboxList(recipient: String, now: UInt64, limit: Int) -> [MailboxEntry] {
        Array((queues[recipient] ?? []).lazy.filter { $0.expiresAt > now }.prefix(limit))
    }

    public func mailboxAck(id: String, recipient: String, tombstoneUntil: UInt64) -> Bool {
        if let owner = recipientOf[id] {
            guard owner == recipient else { return false }
            queues[owner]?.removeAll { $0.id == id }
            if queues[owner]?.isEmpty == true { queues[owner] = nil }
            recipientOf[id] = nil
            messageTombstones[id] = tombstoneUntil
            return true
        }
        messageTombstones[id] = max(tombstoneUntil, messageTombstones[id] ?? 0)
        return false
    }

    public func mailboxSweep(now: UInt64) -> Int {
        var removed = 0
        for (recipient, queue) in queues {
            let kept = queue.filter { $0.expiresAt > now }
            removed += queue.count - kept.count
            for entry in queue where entry.expiresAt <= now { recipientOf[entry.id] = nil }
            queues[recipient] = kept.isEmpty ? nil : kept
        }
        messageTombstones = messageTombstones.filter { $0.value >= now }
        seen.prune(now: now)
        return removed
    }

    public func mailboxCount() -> Int { recipientOf.count }

    private let seen = SeenSignatures()

    public func acceptSignature(_ r: Bytes32, until: UInt64, now: UInt64, capacity: Int) -> SignatureAcceptance {
        seen.insert(r, until: until, now: now, capacity: capacity)
    }

    public func seenSignatureCount() -> Int { seen.count }

    public func close() {}

    // MARK: Push endpoints

    private var pushEndpoints: [String: PushRegistration] = [:]

    public func pushRegister(recipient: String, _ registration: PushRegistration, capacity: Int) -> Bool {
        if pushEndpoints[recipient] == nil, pushEndpoints.count >= capacity { return false }
        pushEndpoints[recipient] = registration
        return true
    }

    public func pushRegistration(recipient: String, now: UInt64) -> PushRegistration? {
        pushEndpoints[recipient].flatMap { $0.expiresAt > now ? $0 : nil }
    }

    public func pushRemove(recipient: String, endpoint: String?) -> Bool {
        guard let current = pushEndpoints[recipient], endpoint == nil || current.endpoint == endpoint else { return false }
        pushEndpoints[recipient] = nil
        return true
    }

    public func pushSweep(now: UInt64) -> Int {
        let before = pushEndpoints.count
        pushEndpoints = pushEndpoints.filter { $0.value.expiresAt > now }
        return before - pushEndpoints.count
    }

    public func pushCount() -> Int { pushEndpoints.count }

    // MARK: Prekeys

    private var signedPrekeys: [Bytes32: SignedPrekey] = [:]
    private var oneTimePrekeys: [Bytes32: [UInt32: OneTimePrekey]] = [:]

    public func prekeyPut(owner: Bytes32, signed: SignedPrekey, oneTime: [OneTimePrekey], stockLimit: Int) -> PrekeyPutResult {
        let stock = oneTimePrekeys[owner] ?? [:]
        let decision = PrekeyStoreRules.decide(
            existing: signedPrekeys[owner], storedOneTime: { stock[$0] }, stock: stock.count, signed: signed, oneTime: oneTime,
            stockLimit: stockLimit)
        guard case .stored = decision.result else { return decision.result }
        if decision.writeSigned { signedPrekeys[owner] = signed }
        for prekey in decision.add { oneTimePrekeys[owner, default: [:]][prekey.id] = prekey }
        return decision.result
    }

    public func prekeyBundle(owner: Bytes32, takeOneTime: Bool, now: UInt64) -> (signed: SignedPrekey, oneTime: OneTimePrekey?)? {
        guard let signed = signedPrekeys[owner], signed.expires > now else { return nil }
        guard takeOneTime, let id = oneTimePrekeys[owner]?.keys.min() else { return (signed, nil) }
        let taken = oneTimePrekeys[owner]?.removeValue(forKey: id)
        if oneTimePrekeys[owner]?.isEmpty == true { oneTimePrekeys[owner] = nil }
        return (signed, taken)
    }

    public func prekeyStock(owner: Bytes32) -> PrekeyStock {
        PrekeyStock(signed: signedPrekeys[owner], oneTime: oneTimePrekeys[owner]?.count ?? 0)
    }

    public func prekeySweep(now: UInt64) -> Int {
        let expired = signedPrekeys.filter { $0.value.expires <= now }.map(\.key)
        for owner in expired {
            signedPrekeys[owner] = nil
            oneTimePrekeys[owner] = nil
        }
        return expired.count
    }

    public func prekeyTotals() -> (owners: Int, oneTime: Int) {
        (signedPrekeys.count, oneTimePrekeys.values.reduce(0) { $0 + $1.count })
    }

    // MARK: Objects

    private var objects: [ObjectID: (record: StoredObject, bytes: [UInt8])] = [:]

    public func objectPut(_ part: ObjectPart, limits: ObjectLimits, now: UInt64) -> ObjectPutResult {
        let decision = ObjectStoreRules.decide(
            existing: objects[part.object]?.record, part: part, usage: { usage(of: part.owner, now: now) }, limits: limits, now: now)
        guard case .stored(let record) = decision.result else { return decision.result }
        if decision.create { objects[part.object] = (record, []) }
        if decision.append { objects[part.object]?.bytes.append(contentsOf: part.bytes) }
        objects[part.object]?.record = record
        return decision.result
    }

    private func usage(of owner: Bytes32, now: UInt64) -> ObjectUsage {
        var usage = ObjectUsage(ownerBytes: 0, ownerObjects: 0, totalBytes: 0)
        for (record, _) in objects.values where record.expiresAt > now {
            usage.totalBytes = usage.totalBytes.addingSaturating(record.stored)
            if record.owner == owner {
                usage.ownerBytes = usage.ownerBytes.addingSaturating(record.size)
                usage.ownerObjects += 1
            }
        }
        return usage
    }

    public func objectInfo(_ object: ObjectID, now: UInt64) -> StoredObject? {
        objects[object].flatMap { $0.record.expiresAt > now ? $0.record : nil }
    }

    public func objectRead(_ object: ObjectID, offset: UInt64, count: Int) -> [UInt8] {
        guard let bytes = objects[object]?.bytes, offset < UInt64(bytes.count), count > 0 else { return [] }
        let start = Int(offset)  // below bytes.count
        return Array(bytes[start..<start + min(count, bytes.count - start)])
    }

    public func objectDelete(_ object: ObjectID, owner: Bytes32, now: UInt64) -> ObjectDeleteResult {
        guard let record = objects[object]?.record, record.expiresAt > now else { return .none }
        guard record.owner == owner else { return .notOwner }
        objects[object] = nil
        return .deleted
    }

    public func objectSweep(now: UInt64) -> Int {
        let expired = objects.filter { $0.value.record.expiresAt <= now }.map(\.key)
        for object in expired { objects[object] = nil }
        return expired.count
    }

    public func objectTotals() -> (objects: Int, bytes: UInt64) {
        (objects.count, objects.values.reduce(0) { $0.addingSaturating($1.record.size) })
    }
}
