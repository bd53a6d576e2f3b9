import Dispatch
import Foundation
import Testing

@_spi(Testing) @testable import CoordsCore

/// Walks an injected LMDB failure over every call of a write path (issue 17): after each failure
/// the database must still read, write, grow and close, and keep everything it acknowledged.
@Suite struct FaultInjectionTests {
    static let mapFull: Int32 = -30792  // MDB_MAP_FULL
    static let codes: [Int32] = [ENOSPC, EIO, mapFull]

    /// 30 transactions of 4 × 12 KiB records and one removal each, into a 1 MiB map: the map has
    /// to grow on the way. Returns the keys whose transaction committed (acknowledged).
    static func writePath(_ db: Database) -> [Int64: String] {
        var acknowledged: [Int64: String] = [:]
        for round in 0..<30 {
            let keys = (0..<4).map { Int64(round * 4 + $0) }
            let value = String(repeating: Character(UnicodeScalar(UInt8(65 + round % 26))), count: 12 * 1024)
            do {
                try db.write { tx in
                    let numbers = try tx.open(TestTables.numbers)
                    for key in keys { try numbers.put(key, value) }
                    if round > 0 { _ = try numbers.remove(Int64(round * 4 - 4)) }
                }
                for key in keys { acknowledged[key] = value }
                if round > 0 { acknowledged[Int64(round * 4 - 4)] = nil }
            } catch {
                continue  // like a relay: report the failed request, go on with the next
            }
        }
        return acknowledged
    }

    static func options(_ injector: StoreFaultInjector?, sealed: Bool = false) -> Database.Options {
        var options = Database.Options()
        if sealed { options.sealer = try? StoreSealer(dek: SecretBytes(copying: [UInt8](repeating: 0x6b, count: 32))) }
        options.mapSize = 1 << 20
        options.durability = .noSync
        options.faultInjector = injector
        return options
    }

    /// Closes `db` on another thread; false if it did not return within 10 s (a lock leak).
    static func closesPromptly(_ db: Database) -> Bool {
        let done = DispatchSemaphore(value: 0)
        let box = UncheckedBox(db)
        DispatchQueue.global().async {
            box.value.close()
            done.signal()
        }
        return done.wait(timeout: .now() + 10) == .success
    }

    /// Unsealed, and sealed at rest (every value sealed, keys hidden).
    @Test(arguments: [false, true]) func everyFailurePointLeavesAWorkingDatabase(sealed: Bool) throws {
        // Count the calls of one clean run.
        let probe = StoreFaultInjector()
        let clean = try Fixtures.makeTemporaryDirectory("fault")
        defer { try? FileManager.default.removeItem(at: clean) }
        let cleanDB = try Database.open(path: clean.path, options: Self.options(probe, sealed: sealed), schema: TestTables.schema)
        let expected = Self.writePath(cleanDB)
        #expect(expected.count == 91)  // 120 written, 29 removed
        #expect(Self.closesPromptly(cleanDB))
        let total = probe.calls
        #expect(total > 150)

        var failedOperations: Set<StoreFaultInjector.Operation> = []
        for n in 1...total {
            let code = Self.codes[n % Self.codes.count]
            let injector = StoreFaultInjector()
            injector.failCall(n, with: code)
            let directory = try Fixtures.makeTemporaryDirectory("fault")
            defer { try? FileManager.default.removeItem(at: directory) }
            let db: Database
            do {
                db = try Database.open(path: directory.path, options: Self.options(injector, sealed: sealed), schema: TestTables.schema)
            } catch {
                // A failed open leaves nothing half-open: the same directory opens cleanly.
                failedOperations.formUnion(injector.injected.map(\.operation))
                let again = try Database.open(path: directory.path, options: Self.options(nil, sealed: sealed), schema: TestTables.schema)
                #expect(Self.closesPromptly(again))
                continue
            }
            let acknowledged = Self.writePath(db)
            failedOperations.formUnion(injector.injected.map(\.operation))
            #expect(injector.injected.count == 1, "call \(n) was not failed")
            // Nothing acknowledged is lost, and nothing more than that is there.
            let stored = try db.read { tx in
                Dictionary(uniqueKeysWithValues: try tx.open(TestTables.numbers).entries().map { ($0.key, $0.value) })
            }
            #expect(stored == acknowledged, "after failing call \(n) with \(code)")
            // It still writes and grows (4 MiB more than the map had), and closes.
            let before = try db.mapUsage().mapSize
            let big = String(repeating: "z", count: 64 * 1024)
            try db.write { tx in
                let numbers = try tx.open(TestTables.numbers)
                for key in Int64(1000)..<Int64(1064) { try numbers.put(key, big) }
            }
            #expect(try db.mapUsage().mapSize > before || before >= 8 << 20)
            #expect(try db.read { tx in try tx.open(TestTables.numbers).get(1063) } == big)
            #expect(Self.closesPromptly(db), "close() hung after failing call \(n)")
        }
        // The walk reached every kind of call on the path.
        #expect(failedOperations.isSuperset(of: [.open, .beginWrite, .put, .delete, .commit, .resize]))
        if sealed { #expect(cleanDB.isSealed) }
    }

    @Test func aFailedCommitNoLongerLeaksTheResizeLock() throws {
        // The exact defect: a commit failing with something other than MAP_FULL unlocked the
        // resize lock twice; close() and every later map growth then waited forever.
        let injector = StoreFaultInjector(operations: [.commit])
        let directory = try Fixtures.makeTemporaryDirectory("fault")
        defer { try? FileManager.default.removeItem(at: directory) }
        let db = try Database.open(path: directory.path, options: Self.options(injector), schema: TestTables.schema)
        injector.failCall(1, with: ENOSPC)
        #expect(throws: StoreError.self) { try db.write { tx in try tx.open(TestTables.numbers).put(1, "lost") } }
        // Growth needs the exclusive lock: it must still be obtainable.
        let big = String(repeating: "g", count: 256 * 1024)
        try db.write { tx in for key in Int64(0)..<8 { try tx.open(TestTables.numbers).put(key, big) } }
        #expect(try db.read { tx in try tx.open(TestTables.numbers).count() } == 8)
        #expect(Self.closesPromptly(db))
    }
}

/// Moves a non-Sendable reference into a closure that runs once on another thread.
final class UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
