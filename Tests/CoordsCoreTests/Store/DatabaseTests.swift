import Foundation
import Synchronization
import Testing

@testable import CoordsCore

@Suite struct DatabaseTests {
    /// A prefix of 0xff bytes has no successor key: a reverse walk starts at the last key.
    @Test func reversePrefixOfFFBytes() throws {
        let store = try TemporaryStore(schema: TestTables.schema)
        let top = try Bytes32([UInt8](repeating: 0xff, count: 32))
        try store.db.write { tx in
            let blobs = try tx.open(TestTables.blobs)
            try blobs.put(try Bytes32([UInt8](repeating: 0x01, count: 32)), [1])
            try blobs.put(top, [2])
        }
        #expect(try store.db.read { tx in try tx.open(TestTables.blobs).entries(prefix: top, reverse: true).map(\.value) } == [[2]])
    }

    /// `append` writes keys in order without a search; a key that is not past the last one (lower,
    /// or already there) is stored the ordinary way, never refused.
    @Test func appendStoresInOrderAndFallsBackForAnyOtherKey() throws {
        let store = try TemporaryStore(schema: TestTables.schema)
        try store.db.write { tx in
            let numbers = try tx.open(TestTables.numbers)
            for key in Int64(1)...300 { try numbers.append(key, "n\(key)") }
            try numbers.append(-5, "lower")
            try numbers.append(7, "again")
        }
        try store.db.read { tx in
            let numbers = try tx.open(TestTables.numbers)
            #expect(try numbers.count() == 301)
            #expect(try numbers.get(-5) == "lower" && numbers.get(7) == "again" && numbers.get(300) == "n300")
            #expect(try numbers.entries().map(\.key) == [-5] + Array(Int64(1)...300))
        }
    }

    @Test func tableOperations() throws {
        let store = try TemporaryStore(schema: TestTables.schema)
        let db = store.db
        try db.write { tx in
            let names = try tx.open(TestTables.names)
            #expect(try names.insert("alice", 1) == nil)
            #expect(try names.insert("alice", 2) == 1)
            try names.put("bob", 3)
            try names.put("carol", 4)
            try names.put("carlos", 5)
            #expect(try names.remove("bob") == 3)
            #expect(try names.remove("bob") == nil)
        }
        try db.read { tx throws in
            let names = try tx.open(TestTables.names)
            #expect(try names.get("alice") == 2)
            #expect(try names.get("bob") == nil)
            #expect(try names.contains("carol"))
            #expect(try !names.contains("dave"))
            #expect(try names.count() == 3)
            #expect(try names.first()?.key == "alice")
            #expect(try names.last()?.key == "carol")
            #expect(try names.entries(prefix: "car").map(\.key) == ["carlos", "carol"])
            #expect(try names.entries(prefix: "car", reverse: true).map(\.key) == ["carol", "carlos"])
            #expect(try names.entries(prefix: "z").isEmpty)
            // The borrowing walk lends the stored bytes (UInt64 big-endian) in the same order, and stops when told.
            var lent: [[UInt8]] = []
            try names.forEachValue(prefix: "car", reverse: true) { bytes in
                lent.append(Array(bytes))
                return true
            }
            #expect(try lent == names.entries(prefix: "car", reverse: true).map { value in try value.value.withStoreBytes { Array($0) } })
            // An empty prefix is every entry (LMDB refuses to position at an empty key).
            #expect(try names.entries(prefix: "").map(\.key) == ["alice", "carlos", "carol"])
            #expect(try names.entries(prefix: "", reverse: true).map(\.key) == ["carol", "carlos", "alice"])
            var visits = 0
            try names.forEachValue(prefix: "") { _ in
                visits += 1
                return false
            }
            #expect(visits == 1)
            try names.forEachValue(prefix: "z") { _ in
                Issue.record("no value starts with z")
                return true
            }
            #expect(try names.entries(from: "b", to: "carol").map(\.key) == ["carlos"])
            #expect(try names.entries(reverse: true).map(\.key) == ["carol", "carlos", "alice"])
            #expect(try names.entries(from: "alice", to: "carol", reverse: true).map(\.key) == ["carlos", "alice"])
            #expect(try names.entries(limit: 2).count == 2)
            #expect(try names.entries(limit: 0).isEmpty)
            var visited: [String] = []
            try names.forEach { key, _ in
                visited.append(key)
                return visited.count < 2
            }
            #expect(visited == ["alice", "carlos"])
            // The borrowing read lends the stored bytes (u64: 8 bytes, order-preserving encoding).
            #expect(try names.withValue("alice") { Array($0) } == [0, 0, 0, 0, 0, 0, 0, 2])
            #expect(try names.withValue("alice") { try UInt64(storeBytes: $0) } == 2)
            #expect(try names.withValue("bob") { $0.count } == nil)
            struct Stop: Error {}
            #expect(throws: Stop.self) { try names.withValue("alice") { _ in throw Stop() } }
        }
        try db.write { tx in try tx.open(TestTables.names).removeAll() }
        #expect(try db.read { tx in try tx.open(TestTables.names).count() } == 0)
    }

    @Test func stampedTablesAdvanceTheirStampOncePerChangingTransaction() throws {
        let stamped = TableDefinition<String, UInt64>("stamped", stamped: true)
        let schema = Schema(version: 1, tables: [stamped.erased, TestTables.names.erased])
        let store = try TemporaryStore(schema: schema)
        let db = store.db
        func stamp() throws -> UInt64 { try db.read { tx in try tx.changeStamp(of: stamped) } }
        #expect(try stamp() == 0)
        try db.write { tx in
            let table = try tx.open(stamped)
            try table.put("a", 1)
            try table.put("b", 2)
            #expect(try table.insert("c", 3) == nil)
        }
        #expect(try stamp() == 1)  // one transaction, one step
        try db.write { tx in try tx.open(TestTables.names).put("x", 1) }  // another table: no step
        try db.read { tx in _ = try tx.open(stamped).get("a") }
        #expect(try stamp() == 1)
        #expect(try db.write { tx in try tx.open(stamped).delete("missing") } == false)
        #expect(try stamp() == 1)  // nothing changed
        #expect(try db.write { tx in try tx.open(stamped).remove("missing") } == nil)
        #expect(try stamp() == 1)
        try db.write { tx in _ = try tx.open(stamped).remove("a") }
        #expect(try stamp() == 2)
        try db.write { tx in _ = try tx.open(stamped).delete("b") }
        #expect(try stamp() == 3)
        try db.write { tx in try tx.open(stamped).removeAll() }
        #expect(try stamp() == 4)
        struct Abort: Error {}
        #expect(throws: Abort.self) {
            try db.write { tx in
                try tx.open(stamped).put("d", 4)
                throw Abort()
            }
        }
        #expect(try stamp() == 4)  // an aborted change takes its step back
        // Unstamped tables have no counter of their own.
        #expect(try db.read { tx in try tx.changeStamp(of: TestTables.names) } == 0)
        // The counter lives in the file: another opening sees it.
        db.close()
        let again = try Database.open(path: store.directory.path, schema: schema)
        defer { again.close() }
        #expect(try again.read { tx in try tx.changeStamp(of: stamped) } == 4)
    }

    @Test func backupIsAConsistentPrivateCopyWhileWritesGoOn() throws {
        let store = try TemporaryStore(schema: TestTables.schema)
        try store.db.write { tx in
            let names = try tx.open(TestTables.names)
            for i in 0..<2_000 { try names.put("name-\(i)", UInt64(i)) }
        }
        // A writer keeps adding while the copy is made: the copy holds one snapshot, whole.
        let db = store.db
        let writer = Thread {
            for i in 2_000..<2_400 { try? db.write { tx in try tx.open(TestTables.names).put("name-\(i)", UInt64(i)) } }
        }
        writer.start()
        let target = try Fixtures.makeTemporaryDirectory("backup")
        defer { try? FileManager.default.removeItem(at: target) }
        try store.db.backup(toFile: target.path + "/data.mdb")
        let mode = try FileManager.default.attributesOfItem(atPath: target.path + "/data.mdb")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let copy = try Database.open(path: target.path, schema: TestTables.schema)
        defer { copy.close() }
        let entries = try copy.read { tx in try tx.open(TestTables.names).entries() }
        #expect(entries.count >= 2_000 && entries.count <= 2_400)
        // Whatever the snapshot caught is a prefix of the writer's sequence: no gaps, no torn pages.
        #expect(Set(entries.map(\.value)) == Set((0..<UInt64(entries.count)).map { $0 }))
        // It never overwrites: a second backup to the same file is refused and leaves it intact.
        #expect(throws: StoreError.self) { try store.db.backup(toFile: target.path + "/data.mdb") }
        #expect(try copy.read { tx in try tx.open(TestTables.names).count() } == entries.count)
        store.db.close()
        #expect(throws: StoreError.closed) { try store.db.backup(toFile: target.path + "/other.mdb") }
    }

    /// A value whose decoding fails when its single byte is 0xFF (a stand-in for a damaged row).
    struct Fragile: StoreValue, Equatable {
        static var storeTypeName: String { "test-fragile/1" }
        let byte: UInt8
        init(_ byte: UInt8) { self.byte = byte }
        func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R { try [byte].withUnsafeBytes(body) }
        init(storeBytes: UnsafeRawBufferPointer) throws {
            guard storeBytes.count == 1, storeBytes[0] != 0xFF else { throw StoreCodecError("damaged") }
            byte = storeBytes[0]
        }
    }

    /// Regression: `insert` and `remove` decoded the old value with `try?`, so a damaged value
    /// vanished without an error. Now the decoding error comes through and the value stays;
    /// `delete` removes it unread.
    @Test func insertAndRemovePassDecodingErrorsOnAndDeleteClearsDamage() throws {
        let fragile = TableDefinition<String, Fragile>("fragile")
        let store = try TemporaryStore(schema: Schema(version: 1, tables: [fragile.erased]))
        try store.db.write { tx in
            let table = try tx.open(fragile)
            #expect(try table.insert("a", Fragile(1)) == nil)
            #expect(try table.insert("a", Fragile(2)) == Fragile(1))
            try table.put("bad", Fragile(0xFF))
        }
        #expect(throws: StoreError.self) { try store.db.write { tx in try tx.open(fragile).insert("bad", Fragile(3)) } }
        #expect(throws: StoreError.self) { try store.db.write { tx in try tx.open(fragile).remove("bad") } }
        #expect(try store.db.read { tx in try tx.open(fragile).contains("bad") })  // nothing changed
        try store.db.write { tx in
            let table = try tx.open(fragile)
            #expect(try table.delete("bad") && !(try table.delete("bad")) && !(try table.contains("bad")))
            #expect(try table.remove("a") == Fragile(2) && (try table.remove("a")) == nil)
        }
    }

    @Test func integerKeysIterateInNumericOrderIncludingNegatives() throws {
        let store = try TemporaryStore(schema: TestTables.schema)
        var values: [Int64] = [.min, .max, 0, -1, 1, -300, 300, -65_536, 65_536, 42, -42]
        for _ in 0..<200 { values.append(Int64.random(in: -1_000_000...1_000_000)) }
        let unique = Array(Set(values))
        try store.db.write { tx in
            let numbers = try tx.open(TestTables.numbers)
            for v in unique.shuffled() { try numbers.put(v, "\(v)") }
        }
        let keys = try store.db.read { tx in try tx.open(TestTables.numbers).entries().map(\.key) }
        #expect(keys == unique.sorted())
        let window = try store.db.read { tx in try tx.open(TestTables.numbers).entries(from: -300, to: 301).map(\.key) }
        #expect(window == unique.sorted().filter { $0 >= -300 && $0 < 301 })
        let values2 = try store.db.read { tx in try tx.open(TestTables.numbers).entries(limit: 3).map(\.value) }
        #expect(values2 == unique.sorted().prefix(3).map { "\($0)" })
    }

    @Test func abortOnThrowLeavesNoTrace() throws {
        struct Oops: Error {}
        let store = try TemporaryStore(schema: TestTables.schema)
        try store.db.write { tx in try tx.open(TestTables.names).put("kept", 1) }
        #expect(throws: Oops.self) {
            try store.db.write { tx in
                let names = try tx.open(TestTables.names)
                try names.put("ghost", 2)
                try names.put("kept", 99)
                try names.removeAll()
                throw Oops()
            }
        }
        try store.db.read { tx in
            let names = try tx.open(TestTables.names)
            #expect(try names.get("ghost") == nil)
            #expect(try names.get("kept") == 1)
            #expect(try names.count() == 1)
        }
    }

    @Test func typeMismatchIsATypedError() throws {
        let directory = try Fixtures.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Database.open(path: directory.path, schema: TestTables.schema).close()
        let renamed = TableDefinition<String, String>("names")  // was String -> UInt64
        let other = Schema(version: 1, tables: [renamed.erased])
        #expect(throws: StoreError.tableTypeMismatch(table: "names", stored: "string -> u64", requested: "string -> string")) {
            try Database.open(path: directory.path, schema: other)
        }
        // The failed open released the path: the right schema opens again.
        let db = try Database.open(path: directory.path, schema: TestTables.schema)
        #expect(throws: StoreError.self) { try db.read { tx in _ = try tx.open(renamed) } }
        #expect(throws: StoreError.unknownTable("undeclared")) {
            try db.read { tx in _ = try tx.open(TableDefinition<String, String>("undeclared")) }
        }
        db.close()
    }

    @Test func secondOpenOfTheSamePathIsRefusedUntilClosed() throws {
        let store = try TemporaryStore(schema: TestTables.schema)
        #expect(throws: StoreError.alreadyOpen(path: store.db.path)) {
            try Database.open(path: store.directory.path, schema: TestTables.schema)
        }
        #expect(throws: StoreError.alreadyOpen(path: store.db.path)) {
            try Database.open(path: store.directory.path + "/", schema: TestTables.schema)
        }
    }

    @Test func closedDatabaseThrowsAndCloseIsIdempotent() throws {
        let directory = try Fixtures.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let db = try Database.open(path: directory.path, schema: TestTables.schema)
        try db.write { tx in try tx.open(TestTables.names).put("x", 1) }
        db.close()
        db.close()
        #expect(db.isClosed)
        #expect(throws: StoreError.closed) { try db.read { _ in } }
        #expect(throws: StoreError.closed) { try db.write { _ in } }
        #expect(throws: StoreError.closed) { try db.mapUsage() }
        #expect(throws: StoreError.closed) { try db.schemaVersion() }
        let again = try Database.open(path: directory.path, schema: TestTables.schema)
        #expect(try again.read { tx in try tx.open(TestTables.names).get("x") } == 1)
        again.close()
    }

    @Test func filesAreOwnerOnly() throws {
        let store = try TemporaryStore(schema: TestTables.schema)
        for file in ["data.mdb", "lock.mdb"] {
            let attributes = try FileManager.default.attributesOfItem(atPath: store.directory.appendingPathComponent(file).path)
            let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
            #expect(mode & 0o077 == 0, "\(file) mode \(String(mode, radix: 8))")
        }
    }

    @Test func tablesUsedAfterTheirTransactionThrow() throws {
        let store = try TemporaryStore(schema: TestTables.schema)
        var leaked: TransactionState?
        try store.db.write { tx in leaked = tx.state }
        let state = try #require(leaked)
        let access = TableAccess<String, UInt64>(state: state, dbi: 0, name: "names", stamped: true, visibility: .hidden, sealed: false)
        #expect(throws: StoreError.transactionClosed) { try access.get("x") }
        #expect(throws: StoreError.transactionClosed) { try access.put("x", 1) }
        #expect(throws: StoreError.transactionClosed) { try access.count() }
        let table = Table<String, UInt64>(access: access)
        #expect(throws: StoreError.transactionClosed) { try table.withValue("x") { $0.count } }
        #expect(throws: StoreError.transactionClosed) { try table.get("x") }
    }

    @Test func nestedWriteIsAnErrorNotADeadlock() throws {
        let store = try TemporaryStore(schema: TestTables.schema)
        #expect(throws: StoreError.nestedWrite) {
            try store.db.write { _ in try store.db.write { _ in } }
        }
        // A read inside a write is fine and sees the last committed state.
        try store.db.write { tx in
            try tx.open(TestTables.names).put("pending", 1)
            #expect(try store.db.read { r in try r.open(TestTables.names).get("pending") } == nil)
        }
    }

    @Test func keySizesAreChecked() throws {
        let store = try TemporaryStore(schema: TestTables.schema)
        #expect(throws: StoreError.self) { try store.db.write { tx in try tx.open(TestTables.names).put("", 1) } }
        #expect(throws: StoreError.self) {
            try store.db.write { tx in try tx.open(TestTables.names).put(String(repeating: "k", count: 512), 1) }
        }
        #expect(throws: StoreError.self) { try store.db.read { tx in try tx.open(TestTables.names).withValue("") { $0.count } } }
        try store.db.write { tx in try tx.open(TestTables.names).put(String(repeating: "k", count: 511), 1) }
    }

    @Test func mapGrowsWhenFullAndStopsAtTheMaximum() throws {
        var options = Database.Options()
        options.mapSize = 1 << 20
        options.maximumMapSize = 1 << 23
        options.durability = .noSync
        let store = try TemporaryStore(schema: TestTables.schema, options: options)
        let chunk = [UInt8](repeating: 7, count: 64 * 1024)
        for i in 0..<40 {  // 2.5 MiB in total: needs at least two doublings
            try store.db.write { tx in try tx.open(TestTables.blobs).put(try Bytes32([UInt8](repeating: UInt8(i), count: 32)), chunk) }
        }
        #expect(try store.db.mapUsage().mapSize > 1 << 20)
        #expect(try store.db.read { tx in try tx.open(TestTables.blobs).count() } == 40)
        var failure: StoreError?
        do {
            for i in 0..<200 {
                var key = [UInt8](repeating: 0xee, count: 32)
                key[0] = UInt8(i)
                try store.db.write { tx in try tx.open(TestTables.blobs).put(try Bytes32(key), chunk) }
            }
        } catch let error as StoreError {
            failure = error
        }
        #expect(failure == .mapFull(mapSize: 1 << 23, maximumMapSize: 1 << 23))
        // The store is intact after the failed write.
        #expect(try store.db.read { tx in try tx.open(TestTables.blobs).count() } >= 40)
    }

    @Test func concurrentReadersSeeConsistentSnapshotsWhileOneThreadWrites() throws {
        let store = try TemporaryStore(
            schema: TestTables.schema,
            options: {
                var o = Database.Options()
                o.durability = .noSync
                return o
            }())
        let db = store.db
        let done = Atomic<Bool>(false)
        let violations = Atomic<Int>(0)
        let reads = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 5) { worker in
            if worker == 0 {
                for n in 1...400 {
                    try? db.write { tx in
                        let names = try tx.open(TestTables.names)
                        try names.put("a", UInt64(n))
                        try names.put("b", UInt64(n))
                        try names.put("sum", UInt64(2 * n))
                    }
                }
                done.store(true, ordering: .releasing)
            } else {
                var last: UInt64 = 0
                while !done.load(ordering: .acquiring) || reads.load(ordering: .relaxed) < 50 {
                    let snapshot = try? db.read { tx in
                        let names = try tx.open(TestTables.names)
                        return (try names.get("a") ?? 0, try names.get("b") ?? 0, try names.get("sum") ?? 0)
                    }
                    guard let (a, b, sum) = snapshot else {
                        violations.add(1, ordering: .relaxed)
                        continue
                    }
                    if a != b || sum != a + b || a < last { violations.add(1, ordering: .relaxed) }
                    last = a
                    reads.add(1, ordering: .relaxed)
                }
            }
        }
        #expect(violations.load(ordering: .relaxed) == 0)
        #expect(reads.load(ordering: .relaxed) >= 50)
        #expect(try db.read { tx in try tx.open(TestTables.names).get("a") } == 400)
    }
}

@Suite struct MigrationTests {
    static let v1Table = TableDefinition<String, String>("people")
    static let v2Table = TableDefinition<String, UInt64>("people")
    static let log = TableDefinition<String, UInt64>("migration_log")

    static func schemaV2() -> Schema {
        Schema(
            version: 2, tables: [v2Table.erased, log.erased],
            migrations: [
                Migration(to: 2) { tx in
                    // Convert ages stored as text into integers, and count runs.
                    let old = try tx.open(v1Table).entries()
                    let people = try tx.open(TableDefinition<String, [UInt8]>("people"))
                    try people.removeAll()
                    try tx.redefine(v2Table)
                    let converted = try tx.open(TableDefinition<String, UInt64>("people"))
                    for (name, age) in old { try converted.put(name, UInt64(age) ?? 0) }
                    let log = try tx.open(log)
                    try log.put("runs", (try log.get("runs") ?? 0) + 1)
                }
            ])
    }

    @Test func migrationsRunOnceInOrderAndAtomically() throws {
        let directory = try Fixtures.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let v1 = try Database.open(path: directory.path, schema: Schema(version: 1, tables: [Self.v1Table.erased]))
        try v1.write { tx in
            let people = try tx.open(Self.v1Table)
            try people.put("ada", "36")
            try people.put("alan", "41")
        }
        v1.close()
        for _ in 0..<3 {
            let db = try Database.open(path: directory.path, schema: Self.schemaV2())
            #expect(try db.schemaVersion() == 2)
            try db.read { tx throws in
                #expect(try tx.open(Self.v2Table).get("ada") == 36)
                #expect(try tx.open(Self.v2Table).get("alan") == 41)
                #expect(try tx.open(Self.log).get("runs") == 1)
            }
            db.close()
        }
        // A build that only knows v1 refuses the newer file instead of misreading it.
        #expect(throws: StoreError.schemaTooNew(stored: 2, supported: 1)) {
            try Database.open(path: directory.path, schema: Schema(version: 1, tables: [Self.v1Table.erased]))
        }
    }

    @Test func failingMigrationChangesNothing() throws {
        struct Broken: Error {}
        let directory = try Fixtures.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let v1 = try Database.open(path: directory.path, schema: Schema(version: 1, tables: [Self.v1Table.erased]))
        try v1.write { tx in try tx.open(Self.v1Table).put("ada", "36") }
        v1.close()
        let broken = Schema(
            version: 2, tables: [Self.v1Table.erased],
            migrations: [
                Migration(to: 2) { tx in
                    try tx.open(Self.v1Table).put("ada", "changed")
                    throw Broken()
                }
            ])
        #expect(throws: StoreError.self) { try Database.open(path: directory.path, schema: broken) }
        let db = try Database.open(path: directory.path, schema: Schema(version: 1, tables: [Self.v1Table.erased]))
        #expect(try db.schemaVersion() == 1)
        #expect(try db.read { tx in try tx.open(Self.v1Table).get("ada") } == "36")
        db.close()
    }

    @Test func newStoreStartsAtTheCurrentVersionWithoutRunningMigrations() throws {
        let store = try TemporaryStore(schema: Self.schemaV2())
        #expect(try store.db.schemaVersion() == 2)
        #expect(try store.db.read { tx in try tx.open(Self.log).get("runs") } == nil)
    }

    @Test func undecodableValuesAreTypedErrors() throws {
        let directory = try Fixtures.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let raw = TableDefinition<String, [UInt8]>("people")
        let v1 = try Database.open(path: directory.path, schema: Schema(version: 1, tables: [raw.erased]))
        try v1.write { tx in try tx.open(raw).put("ada", [0xff, 0xfe]) }
        v1.close()
        // A careless migration retypes the table without converting the values.
        let careless = Schema(version: 2, tables: [Self.v1Table.erased], migrations: [Migration(to: 2) { tx in try tx.redefine(Self.v1Table) }])
        let db = try Database.open(path: directory.path, schema: careless)
        #expect(throws: StoreError.decodingFailed(table: "people", type: "string", reason: "string is not valid UTF-8")) {
            try db.read { tx in try tx.open(Self.v1Table).get("ada") }
        }
        db.close()
    }

    @Test func appSchemaOpensAndReopens() throws {
        let directory = try Fixtures.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = try Ed25519SigningKey.generate().publicKey
        let friend = FriendRecord(name: "Zoë", server: "https://coord.is", addedAt: 1, x25519PublicKey: "x")
        do {
            let db = try Database.open(path: directory.path, schema: AppSchema.current)
            try db.write { tx in
                try tx.open(Tables.friends).put(key, friend)
                try tx.open(Tables.settings).put(SettingKey.server, "https://coord.is")
                try tx.open(Tables.uploadState).put(UploadState.key, UploadState(lastUploadedFix: 7))
            }
            db.close()
        }
        let db = try Database.open(path: directory.path, schema: AppSchema.current)
        try db.read { tx throws in
            #expect(try tx.open(Tables.friends).get(key) == friend)
            #expect(try tx.open(Tables.settings).get(SettingKey.server) == "https://coord.is")
            #expect(try tx.open(Tables.uploadState).get(UploadState.key)?.lastUploadedFix == 7)
        }
        db.close()
    }
}
