import CoordsCore
import Logging

/// Binary encoding of a ``RelayRecord`` in LMDB (type name `relay-record/1`):
/// `version 1 | timestamp u64 | updated u64 | signature (64) | blob`.
extension RelayRecord: StoreValue {
    public static var storeTypeName: String { "relay-record/1" }

    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        var bytes: [UInt8] = [1]
        bytes.reserveCapacity(81 + blob.count)
        for value in [timestamp, updated] {
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        }
        bytes += signature
        bytes += blob
        return try bytes.withUnsafeBytes { try body($0) }
    }

    public init(storeBytes: UnsafeRawBufferPointer) throws {
        guard storeBytes.count >= 81, storeBytes[0] == 1 else { throw StoreCodecError("not a relay-record/1 value") }
        func u64(_ offset: Int) -> UInt64 { (0..<8).reduce(0) { $0 << 8 | UInt64(storeBytes[offset + $1]) } }
        self.init(blob: Array(storeBytes[81...]), timestamp: u64(1), signature: Array(storeBytes[17..<81]), updated: u64(9))
    }
}

/// Binary encoding of a ``Tombstone`` (`tombstone/1`): `timestamp u64 | recordedAt u64`.
extension Tombstone: StoreValue {
    public static var storeTypeName: String { "tombstone/1" }

    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try withUnsafeBytes(of: (timestamp.bigEndian, recordedAt.bigEndian)) { try body($0) }
    }

    public init(storeBytes: UnsafeRawBufferPointer) throws {
        guard storeBytes.count == 16 else { throw StoreCodecError("a tombstone is 16 bytes") }
        func u64(_ offset: Int) -> UInt64 { (0..<8).reduce(0) { $0 << 8 | UInt64(storeBytes[offset + $1]) } }
        self.init(timestamp: u64(0), recordedAt: u64(8))
    }
}

/// The relay's tables.
enum RelayTables {
    static let records = TableDefinition<Bytes32, RelayRecord>("relay_records")
    static let tombstones = TableDefinition<Bytes32, Tombstone>("relay_tombstones")
    static let schema = Schema(version: 1, tables: [records.erased, tombstones.erased])
}

/// A persistent ``RelayStore`` on LMDB (CoordsCore's Store layer).
///
/// Writes are **durable before they are acknowledged** and **group-committed**: callers hand
/// their operation to one committer thread, which takes everything queued, applies it in one
/// write transaction (one fsync), and then resumes every caller with its own result. Under load
/// a commit carries many uploads, so durability costs one fsync per batch, not per upload.
/// Reads are LMDB snapshots and never wait for the committer.
public final class LMDBRelayStore: RelayStore, @unchecked Sendable {
    private enum Operation {
        case put(Bytes32, RelayRecord)
        case delete(Bytes32, timestamp: UInt64, now: UInt64)
        case sweep(updatedBefore: UInt64, tombstonesBefore: UInt64)
    }

    private enum Outcome {
        case put(PutResult)
        case delete(DeleteResult)
        case swept(Int)
    }

    private struct Job: Sendable {
        let operation: Operation
        let continuation: CheckedContinuation<Outcome, any Error>
    }

    /// Most operations one commit takes.
    static let maximumBatch = 512

    private let database: Database
    private let jobs: (sender: Sender<Job>, receiver: Receiver<Job>)
    private let logger: Logger
    /// Closed by the committer thread when it has drained the queue and exited.
    private let committerFinished = Channel.bounded(1, of: Bool.self)

    /// Opens (creating if needed) the store in `directory`.
    /// - Parameter durability: `.durable` (default) fsyncs each commit.
    /// - Throws: ``StoreError``.
    public init(directory: String, durability: Database.Durability = .durable, logger: Logger = Logger(label: "coords.relay.store")) throws {
        var options = Database.Options()
        options.durability = durability
        database = try Database.open(path: directory, options: options, schema: RelayTables.schema)
        jobs = Channel.unbounded(of: Job.self)
        self.logger = logger
        try startThread(name: "relay-commit") { [self] in runCommitter() }
    }

    public func put(key: Bytes32, record: RelayRecord) async throws -> PutResult {
        guard case .put(let result) = try await submit(.put(key, record)) else { throw RelayStoreError(description: "unexpected outcome") }
        return result
    }

    public func delete(key: Bytes32, timestamp: UInt64, now: UInt64) async throws -> DeleteResult {
        guard case .delete(let result) = try await submit(.delete(key, timestamp: timestamp, now: now)) else {
            throw RelayStoreError(description: "unexpected outcome")
        }
        return result
    }

    public func sweep(updatedBefore: UInt64, tombstonesBefore: UInt64) async throws -> Int {
        guard case .swept(let count) = try await submit(.sweep(updatedBefore: updatedBefore, tombstonesBefore: tombstonesBefore)) else {
            throw RelayStoreError(description: "unexpected outcome")
        }
        return count
    }

    public func get(keys: [Bytes32], updatedSince: UInt64) async throws -> [Bytes32: RelayRecord] {
        try database.read { tx in
            let records = try tx.open(RelayTables.records)
            var found: [Bytes32: RelayRecord] = [:]
            for key in keys {
                if let record = try records.get(key), record.updated >= updatedSince { found[key] = record }
            }
            return found
        }
    }

    public func count() async throws -> Int {
        try database.read { tx in try tx.open(RelayTables.records).count() }
    }

    /// Stops accepting writes, lets the committer finish what is queued, and closes LMDB.
    public func close() async {
        jobs.sender.close()
        _ = try? await committerFinished.receiver.receive()  // ends when the committer exits
        database.close()
    }

    private func submit(_ operation: Operation) async throws -> Outcome {
        try await withCheckedThrowingContinuation { continuation in
            do {
                try jobs.sender.send(Job(operation: operation, continuation: continuation))
            } catch {
                continuation.resume(throwing: StoreError.closed)
            }
        }
    }

    /// The committer thread: one write transaction per batch of queued operations.
    private func runCommitter() {
        while let first = try? jobs.receiver.recv() {
            var batch = [first]
            while batch.count < Self.maximumBatch, let next = try? jobs.receiver.tryRecv() { batch.append(next) }
            do {
                let outcomes = try database.write { tx -> [Outcome] in
                    let records = try tx.open(RelayTables.records)
                    let tombstones = try tx.open(RelayTables.tombstones)
                    return try batch.map { job -> Outcome in
                        switch job.operation {
                        case .put(let key, let record):
                            let result = RelayStoreRules.put(timestamp: record.timestamp, existing: try records.get(key),
                                                             tombstone: try tombstones.get(key))
                            if result == .stored {
                                try records.put(key, record)
                                try tombstones.remove(key)
                            }
                            return .put(result)
                        case .delete(let key, let timestamp, let now):
                            let existingTombstone = try tombstones.get(key)
                            let result = RelayStoreRules.delete(timestamp: timestamp, existing: try records.get(key), tombstone: existingTombstone)
                            if case .stale = result { return .delete(result) }
                            try records.remove(key)
                            try tombstones.put(key, Tombstone(timestamp: max(timestamp, existingTombstone?.timestamp ?? 0), recordedAt: now))
                            return .delete(result)
                        case .sweep(let updatedBefore, let tombstonesBefore):
                            var expired: [Bytes32] = []
                            try records.forEach { key, record in
                                if record.updated < updatedBefore { expired.append(key) }
                                return true
                            }
                            for key in expired { try records.remove(key) }
                            var old: [Bytes32] = []
                            try tombstones.forEach { key, tombstone in
                                if tombstone.recordedAt < tombstonesBefore { old.append(key) }
                                return true
                            }
                            for key in old { try tombstones.remove(key) }
                            return .swept(expired.count)
                        }
                    }
                }
                for (job, outcome) in zip(batch, outcomes) { job.continuation.resume(returning: outcome) }
            } catch {
                logger.error("relay store commit failed", metadata: ["error": "\(error)", "batch": "\(batch.count)"])
                for job in batch { job.continuation.resume(throwing: error) }
            }
        }
        committerFinished.sender.close()
    }
}
