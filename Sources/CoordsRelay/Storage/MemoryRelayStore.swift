import CoordsCore

/// An in-memory ``RelayStore`` (tests, and throwaway relays). Everything is lost on exit.
public actor MemoryRelayStore: RelayStore {
    private var records: [Bytes32: RelayRecord] = [:]
    private var tombstones: [Bytes32: Tombstone] = [:]

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

    public func close() {}
}
