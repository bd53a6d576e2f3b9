import Foundation
import Testing

@testable import CoordsCore

/// Issue 37, defect 14: a `data.mdb` cut short used to crash the process that opened it (SIGBUS
/// when LMDB read a page past the end of the file); it is refused before LMDB maps it.
@Suite struct DataFileCheckTests {
    /// Fills a store with enough rows for many pages, closes it, and returns its directory.
    private func filledStore() throws -> URL {
        let directory = try Fixtures.makeTemporaryDirectory("datafile")
        let db = try Database.open(path: directory.path, schema: TestTables.schema)
        for batch in 0..<20 {
            try db.write { tx in
                let blobs = try tx.open(TestTables.blobs)
                for i in 0..<100 {
                    var key = [UInt8](repeating: 0, count: 32)
                    key[0] = UInt8(batch)
                    key[1] = UInt8(i)
                    try blobs.put(try Bytes32(key), [UInt8](repeating: UInt8(i), count: 300))
                }
            }
        }
        db.close()
        return directory
    }

    private func truncate(_ directory: URL, to size: Int) throws {
        let handle = try FileHandle(forWritingTo: directory.appendingPathComponent("data.mdb"))
        try handle.truncate(atOffset: UInt64(size))
        try handle.close()
    }

    private func size(_ directory: URL) throws -> Int {
        try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent("data.mdb").path)[.size] as? Int ?? 0
    }

    @Test func anIntactFileOpensAndReadsBack() throws {
        let directory = try filledStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(DataFileCheck.problem(directory: directory.path) == nil)
        let db = try Database.open(path: directory.path, schema: TestTables.schema)
        defer { db.close() }
        #expect(try db.read { tx in try tx.open(TestTables.blobs).count() } == 2000)
    }

    @Test(arguments: [2, 3, 5, 10])
    func aFileCutShortIsRefusedNotMapped(divisor: Int) throws {
        let directory = try filledStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        let full = try size(directory)
        #expect(full > 100 * 4096)
        try truncate(directory, to: full / divisor)
        #expect(DataFileCheck.problem(directory: directory.path) == .pageNotFound)
        #expect(throws: StoreError.corrupted(.pageNotFound)) { try Database.open(path: directory.path, schema: TestTables.schema) }
    }

    @Test func aFileShorterThanItsMetaPagesOrNotLMDBIsRefused() throws {
        let directory = try filledStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        try truncate(directory, to: 5000)
        #expect(DataFileCheck.problem(directory: directory.path) == .pageNotFound)
        try truncate(directory, to: 100)
        #expect(DataFileCheck.problem(directory: directory.path) == .invalid)
        try Data(repeating: 0x41, count: 65_536).write(to: directory.appendingPathComponent("data.mdb"))
        #expect(DataFileCheck.problem(directory: directory.path) == .invalid)
        #expect(throws: StoreError.corrupted(.invalid)) { try Database.open(path: directory.path, schema: TestTables.schema) }
    }

    /// Issue 59, defect 9: a FIFO (or a directory) in place of `data.mdb` is refused at once; the
    /// open used to wait forever for a writer.
    @Test func aFIFOOrDirectoryInPlaceOfTheFileIsRefusedAtOnce() throws {
        let directory = try Fixtures.makeTemporaryDirectory("datafile-fifo")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("data.mdb").path
        #expect(mkfifo(file, 0o600) == 0)
        let started = ContinuousClock.now
        #expect(DataFileCheck.problem(directory: directory.path) == .invalid)
        #expect(throws: StoreError.corrupted(.invalid)) { try Database.open(path: directory.path, schema: TestTables.schema) }
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(unlink(file) == 0 && mkdir(file, 0o700) == 0)
        #expect(DataFileCheck.problem(directory: directory.path) == .invalid)
    }
}
