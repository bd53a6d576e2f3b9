import CoordsCore
import Foundation
import Testing

@testable import CoordsRelay

/// Issue 37, defect 13: `restore` followed a `.restore-<pid>` link planted in a directory others
/// could write, deleting or overwriting what it pointed to; such directories are refused now, and
/// the staging directory is never followed.
@Suite struct RestoreSafetyTests {
    private func temporaryDirectory(_ name: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("coords-\(name)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return path
    }

    /// A backup directory holding a real (empty) relay store.
    private func backup() throws -> String {
        let source = try temporaryDirectory("source")
        let database = try Database.open(path: source, schema: RelayTables.schema)
        database.close()
        let target = try temporaryDirectory("backup") + "/b"
        _ = try RelayBackup.backup(dataDirectory: source, to: target)
        return target
    }

    @Test func aPlantedStagingLinkIsNeverFollowed() throws {
        let backup = try backup()
        let dataDirectory = try temporaryDirectory("data")
        let victim = try temporaryDirectory("victim")
        try Data("precious".utf8).write(to: URL(fileURLWithPath: victim + "/data.mdb"))
        try FileManager.default.createSymbolicLink(atPath: dataDirectory + "/.restore-\(getpid())", withDestinationPath: victim)

        let summary = try RelayBackup.restore(from: backup, dataDirectory: dataDirectory)
        #expect(summary.blobs == 0)
        #expect(try String(contentsOfFile: victim + "/data.mdb", encoding: .utf8) == "precious")
        #expect(try FileManager.default.contentsOfDirectory(atPath: victim) == ["data.mdb"])
        #expect(!FileManager.default.fileExists(atPath: dataDirectory + "/.restore-\(getpid())"))
        #expect(FileManager.default.fileExists(atPath: dataDirectory + "/data.mdb"))
    }

    @Test func aDirectoryOthersCanWriteIsRefused() throws {
        let backup = try backup()
        let dataDirectory = try temporaryDirectory("shared")
        #expect(chmod(dataDirectory, 0o777) == 0)
        #expect(RelayBackup.privacyProblem(dataDirectory)?.contains("writable by other users") == true)
        #expect(throws: RelayBackup.Failure.self) { try RelayBackup.restore(from: backup, dataDirectory: dataDirectory) }
        #expect(!FileManager.default.fileExists(atPath: dataDirectory + "/data.mdb"))
        #expect(chmod(dataDirectory, 0o750) == 0)
        #expect(RelayBackup.privacyProblem(dataDirectory) == nil)
        #expect(RelayBackup.privacyProblem(dataDirectory + "/missing") != nil)
    }
}
