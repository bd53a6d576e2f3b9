import Foundation
import Testing

@testable import CoordsCore

/// Values sealed at rest and keys hidden (docs/STORE.md, "Sealed at rest").
@Suite struct SealingTests {
    enum Sealed {
        static let people = TableDefinition<String, String>("people")
        static let threads = TableDefinition<[UInt8], String>("threads", keys: .hiddenPrefix(4))
        static let queue = TableDefinition<UInt64, String>("queue", keys: .visible)
        static let other = TableDefinition<String, String>("other")
        static let schema = Schema(version: 1, tables: [people.erased, threads.erased, queue.erased, other.erased])
    }

    final class Keys: ShredKeyStore, @unchecked Sendable {
        let lock = NSLock()
        var keys: [UInt64: SecretBytes] = [:]
        func loadShredKey(_ id: UInt64) throws -> SecretBytes? { lock.withLock { keys[id] } }
        func saveShredKey(_ key: SecretBytes, id: UInt64) throws { lock.withLock { keys[id] = key } }
        func deleteShredKey(_ id: UInt64) throws { _ = lock.withLock { keys.removeValue(forKey: id) } }
    }

    static let dek = SecretBytes(copying: [UInt8](repeating: 0x21, count: 32))

    static func options(dek: SecretBytes = dek, keys: Keys? = nil) throws -> Database.Options {
        var options = Database.Options()
        options.durability = .noSync
        options.sealer = try StoreSealer(dek: dek, shredKeys: keys)
        return options
    }

    static func thread(_ id: UInt32, _ sequence: UInt8) -> [UInt8] {
        withUnsafeBytes(of: id.bigEndian) { Array($0) } + [sequence]
    }

    @Test func everyOperationRoundTripsAndNothingIsInTheFileInTheClear() throws {
        let store = try TemporaryStore(schema: Sealed.schema, options: try Self.options())
        let replaced = try store.db.write { tx in
            let people = try tx.open(Sealed.people)
            try people.put("ada@example.org", "Ada Lovelace, 12 Marylebone")
            try people.put("grace@example.org", "Grace Hopper")
            let replaced = try people.insert("grace@example.org", "Grace B. Hopper")
            let threads = try tx.open(Sealed.threads)
            for sequence in [UInt8(3), 1, 2] { try threads.put(Self.thread(7, sequence), "seven-\(sequence)") }
            try threads.put(Self.thread(9, 1), "nine-1")
            let queue = try tx.open(Sealed.queue)
            for id in UInt64(1)...3 { try queue.put(id, "request-\(id)") }
            return replaced
        }
        #expect(replaced == "Grace Hopper")
        let prefix7 = Array(Self.thread(7, 0).dropLast())
        let observed = try store.db.read { tx -> [String] in
            let people = try tx.open(Sealed.people)
            let threads = try tx.open(Sealed.threads)
            let queue = try tx.open(Sealed.queue)
            var values: [String] = []
            try threads.forEachValue(prefix: [0, 0, 0, 7]) {
                values.append(String(decoding: $0, as: UTF8.self))
                return true
            }
            return [
                try people.get("ada@example.org") ?? "-",
                try people.withValue("grace@example.org") { String(decoding: $0, as: UTF8.self) } ?? "-",
                "\(try people.contains("ada@example.org")) \(try people.contains("nobody")) \(try people.count())",
                try people.entries().map(\.key).sorted().joined(separator: ","),
                // A hidden prefix keeps the rest of the key in order.
                try threads.entries(prefix: prefix7).map(\.value).joined(separator: ","),
                try threads.entries(prefix: prefix7, reverse: true, limit: 1).map(\.value).joined(),
                "\(try threads.entries(prefix: Array(Self.thread(9, 0).dropLast())).map(\.key) == [Self.thread(9, 1)])",
                values.joined(separator: ","),
                // Visible keys keep their order and ranges.
                "\(try queue.last()?.key ?? 0)", try queue.entries(from: 2).map(\.value).joined(separator: ",")
            ]
        }
        #expect(
            observed == [
                "Ada Lovelace, 12 Marylebone", "Grace B. Hopper", "true false 2", "ada@example.org,grace@example.org",
                "seven-1,seven-2,seven-3", "seven-3", "true", "seven-1,seven-2,seven-3", "3", "request-2,request-3"
            ])
        // Scans that need the order of hidden key bytes are refused, never wrong.
        #expect(throws: StoreError.unsupportedScan(table: "people")) { try store.db.read { tx in try tx.open(Sealed.people).entries(from: "a") } }
        #expect(throws: StoreError.unsupportedScan(table: "threads")) { try store.db.read { tx in try tx.open(Sealed.threads).entries(prefix: [0, 0]) } }
        let removed = try store.db.write { tx in
            (try tx.open(Sealed.people).remove("ada@example.org"), try tx.open(Sealed.threads).delete(Self.thread(9, 1)))
        }
        #expect(removed.0 == "Ada Lovelace, 12 Marylebone" && removed.1)
        #expect(try store.db.read { tx in try tx.open(Sealed.people).get("ada@example.org") } == nil)
        store.db.close()
        let file = try Data(contentsOf: store.directory.appendingPathComponent("data.mdb"))
        for secret in ["ada@example.org", "grace@example.org", "Lovelace", "Hopper", "seven-1", "request-2"] {
            #expect(file.range(of: Data(secret.utf8)) == nil, "\(secret) is in the file")
        }
        #expect(file.range(of: Data([0, 0, 0, 7, 1])) == nil, "a hidden key prefix is in the file")
    }

    /// The raw (stored) bytes of `table`'s entries, and a writer for them.
    static func stored(_ db: Database, _ table: String) throws -> [([UInt8], [UInt8])] {
        try db.read { tx in
            var entries: [([UInt8], [UInt8])] = []
            guard let dbi = db.tables[table]?.dbi else { return entries }
            try TableAccess<[UInt8], [UInt8]>(state: tx.state, dbi: dbi, name: table, stamped: false, visibility: .visible, sealed: false)
                .forEachStoredBytes(from: nil, to: nil, prefix: nil, reverse: false) { k, v in
                    entries.append(
                        (Array(UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)), Array(UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))))
                    return true
                }
            return entries
        }
    }

    static func overwrite(_ db: Database, _ table: String, key: [UInt8], value: [UInt8]) throws {
        try db.write { tx in
            guard let dbi = db.tables[table]?.dbi else { return }
            try key.withUnsafeBytes { k in try value.withUnsafeBytes { v in try tx.state.rawPut(dbi: dbi, key: k, value: v) } }
        }
    }

    @Test func damagedMovedTruncatedOrForeignValuesAreRefusedNamingTheTable() throws {
        let store = try TemporaryStore(schema: Sealed.schema, options: try Self.options())
        try store.db.write { tx in
            try tx.open(Sealed.people).put("ada", "Ada")
            try tx.open(Sealed.people).put("bob", "Bob")
            try tx.open(Sealed.other).put("ada", "other Ada")
        }
        let people = try Self.stored(store.db, "people")
        let other = try Self.stored(store.db, "other")
        #expect(people.count == 2 && other.count == 1)
        func readBoth() throws {
            try store.db.read { tx in
                _ = try tx.open(Sealed.people).get("ada")
                _ = try tx.open(Sealed.people).get("bob")
            }
        }
        func refused(_ key: [UInt8], _ value: [UInt8]) throws {
            let original = try #require(people.first { $0.0 == key }?.1)
            try Self.overwrite(store.db, "people", key: key, value: value)
            #expect {
                try readBoth()
            } throws: { error in
                guard case StoreError.sealedValueRejected(let table, _) = error else { return false }
                return table == "people"
            }
            try Self.overwrite(store.db, "people", key: key, value: original)
            try readBoth()
        }
        let (key, value) = people[0]
        // Every bit flip (header, nonce, ciphertext, tag).
        for index in stride(from: 0, to: value.count, by: 3) {
            var flipped = value
            flipped[index] ^= 0x10
            try refused(key, flipped)
        }
        // Truncated at every length, and empty.
        for length in 0..<value.count { try refused(key, Array(value.prefix(length))) }
        // Another key's value, and the same key's value from another table.
        try refused(key, people[1].1)
        try refused(key, other[0].1)
        // Another installation's value (same table and key, another DEK).
        let foreign = try TemporaryStore(schema: Sealed.schema, options: try Self.options(dek: SecretBytes(copying: [UInt8](repeating: 9, count: 32))))
        try foreign.db.write { tx in try tx.open(Sealed.people).put("ada", "Ada") }
        try refused(key, try #require(try Self.stored(foreign.db, "people").first).1)
        // Iteration refuses too; delete removes a damaged value unread.
        try Self.overwrite(store.db, "people", key: key, value: [1, 2, 3])
        #expect(throws: StoreError.self) { try store.db.read { tx in try tx.open(Sealed.people).entries() } }
        let deleted = try store.db.write { tx in try tx.open(Sealed.people).delete("ada") }
        #expect(deleted)
    }

    @Test func shredGroupsAreDestroyedAtTheEndOfTheirMinute() throws {
        let keys = Keys()
        let store = try TemporaryStore(schema: Sealed.schema, options: try Self.options(keys: keys))
        let t0: UInt64 = 1_800_000_000_000  // a minute boundary
        try store.db.write { tx in
            let people = try tx.open(Sealed.people)
            try people.put("soon", "gone soon", expiringAt: t0 + 1)
            try people.put("also", "gone soon too", expiringAt: t0 + 60_000)
            try people.put("later", "gone later", expiringAt: t0 + 120_001)
            try people.put("kept", "kept")
        }
        #expect(try store.db.shredGroups() == [StoreSealer.shredGroup(expiringAt: t0 + 1), StoreSealer.shredGroup(expiringAt: t0 + 120_001)])
        #expect(try store.db.nextShredTime() == t0 + 60_000)
        // The first value's own expiry, then its group's end.
        #expect(try store.db.nextExpiry(after: t0) == t0 + 1)
        #expect(try store.db.nextExpiry(after: t0 + 1) == t0 + 60_000)
        #expect(keys.keys.count == 2)
        let soon = try #require(try Self.stored(store.db, "people").first { $0.1.first == StoreSealer.formatShred })
        // Not due yet: nothing happens.
        #expect(try store.db.destroyShredGroups(endingBy: t0 + 59_999, tables: [Sealed.people.erased]) == 0)
        #expect(try store.db.read { tx in try tx.open(Sealed.people).get("also") } == "gone soon too")
        // Due: leftovers are deleted unread, the key destroyed, the group forgotten.
        #expect(try store.db.destroyShredGroups(endingBy: t0 + 60_000, tables: [Sealed.people.erased]) == 1)
        #expect(keys.keys.count == 1)
        #expect(try store.db.read { tx in try tx.open(Sealed.people).entries().map(\.key).sorted() } == ["kept", "later"])
        #expect(try store.db.nextShredTime() == t0 + 180_000)
        // The sealed bytes a copy of the file keeps no longer open with any key.
        let sealer = try #require(store.db.currentSealer)
        #expect(throws: StoreError.self) {
            try soon.0.withUnsafeBytes { k in try soon.1.withUnsafeBytes { v in try sealer.open(table: "people", storedKey: k, stored: v) { _, _ in () } } }
        }
        // Idempotent after a crash between the steps.
        #expect(try store.db.destroyShredGroups(endingBy: t0 + 60_000, tables: [Sealed.people.erased]) == 0)
    }

    @Test func rekeyKeepsEveryValueAndTheOldKeyOpensNothing() throws {
        let keys = Keys()
        let store = try TemporaryStore(schema: Sealed.schema, options: try Self.options(keys: keys))
        try store.db.write { tx in
            for i in 0..<500 { try tx.open(Sealed.people).put("person-\(i)", String(repeating: "x", count: i)) }
            try tx.open(Sealed.people).put("expiring", "soon", expiringAt: 1_800_000_000_000)
            try tx.open(Sealed.threads).put(Self.thread(1, 1), "one")
            try tx.open(Sealed.queue).put(5, "five")
        }
        let before = try Self.stored(store.db, "people")
        let newKey = SecretBytes(copying: [UInt8](repeating: 0x77, count: 32))
        try store.db.rekey(to: try StoreSealer(dek: newKey, shredKeys: keys))
        let read = try store.db.read { tx -> [String] in
            [
                "\(try tx.open(Sealed.people).count())", try tx.open(Sealed.people).get("person-499") ?? "",
                try tx.open(Sealed.people).get("expiring") ?? "", try tx.open(Sealed.threads).entries(prefix: [0, 0, 0, 1]).map(\.value).joined(),
                try tx.open(Sealed.queue).get(5) ?? ""
            ]
        }
        #expect(read == ["501", String(repeating: "x", count: 499), "soon", "one", "five"])
        #expect(try store.db.shredGroups().count == 1)
        let after = try Self.stored(store.db, "people")
        #expect(Set(after.map(\.0)).isDisjoint(with: before.map(\.0)), "hidden keys change with the key")
        store.db.close()
        #expect(throws: StoreError.wrongStoreKey) { try Database.open(path: store.directory.path, options: try Self.options(), schema: Sealed.schema) }
        let reopened = try Database.open(path: store.directory.path, options: try Self.options(dek: newKey, keys: keys), schema: Sealed.schema)
        #expect(try reopened.read { tx in try tx.open(Sealed.people).get("person-7") } == "xxxxxxx")
        reopened.close()
    }

    /// Nonces are drawn ten at a time from the OS and handed out once each: from several threads,
    /// over many refills, no two sealed values share a nonce, and every value opens.
    @Test func everySealGetsItsOwnNonceAcrossRefillsAndThreads() throws {
        let sealer = try StoreSealer(dek: Self.dek)
        let plaintext: [UInt8] = Array("the same value every time".utf8)
        let key: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 7]
        let nonceRange = 1..<25  // after the format byte (docs/STORE.md)
        let results = LockedBox<[[UInt8]]>([])
        let threads = try (0..<4).map { _ in
            try OSThread.start {
                var mine: [[UInt8]] = []
                for _ in 0..<250 {
                    // A seal that fails leaves nothing, and the count below catches it.
                    if let stored = try? plaintext.withUnsafeBytes({ p in
                        try key.withUnsafeBytes { k in try sealer.seal(table: "queue", storedKey: k, plaintext: p, shred: nil) { Array($0) } }
                    }) {
                        mine.append(stored)
                    }
                }
                results.update { $0 += mine }
            }
        }
        for thread in threads { thread.join() }
        let stored = results.value
        #expect(stored.count == 1000)
        #expect(Set(stored.map { Array($0[nonceRange]) }).count == 1000, "a nonce was handed out twice")
        #expect(!stored.contains { $0[nonceRange].allSatisfy { $0 == 0 } }, "a wiped reserve slot was handed out")
        for value in stored {
            let opened = try value.withUnsafeBytes { v in
                try key.withUnsafeBytes { k in try sealer.open(table: "queue", storedKey: k, stored: v) { p, _ in Array(p) } }
            }
            #expect(opened == plaintext)
        }
    }
}
