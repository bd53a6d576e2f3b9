import CoordsCore
import Foundation
import HummingbirdTesting
import NIOCore
import Testing

/// The `coords-relay` executable itself: flags, startup, SIGTERM, restart on the same data, on
/// every store.
struct MissingExecutable: Error, CustomStringConvertible {
    var description: String { "coords-relay is not built next to the tests (swift build)" }
}

@Suite(.serialized) struct RelayProcessTests {
    static var executable: URL? {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("coords-relay"),
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent(".build/debug/coords-relay"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    static func uploadBody(_ key: Ed25519SigningKey) throws -> ByteBuffer {
        let now = UInt64(Date().timeIntervalSince1970)
        let blob = try LocationBlob.seal(try Location(latitude: 1, longitude: 2, timestamp: now * 1000).wire, for: [key.publicKey])
        return ByteBuffer(bytes: RelayAPI.uploadBody(blob: blob, timestamp: now, signer: key).serialized())
    }

    /// The process on each store: SIGTERM stops it cleanly (exit 0), and a restart on the same
    /// data (LMDB directory, PostgreSQL database) serves what was acknowledged before.
    @Test(arguments: StoreKind.allCases)
    func sigtermStopsCleanlyAndARestartKeepsTheData(_ kind: StoreKind) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("relay-proc-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let arguments: [String]
        switch kind {
        case .memory: arguments = ["--memory"]
        case .lmdb: arguments = ["--data-dir", directory]
        case .postgres:
            let server = try await PostgresTestServer.shared()
            arguments = ["--postgres", server.url(database: try await server.freshDatabase().database)]
        }
        let key = try Ed25519SigningKey.generate()
        let id = key.publicKey.base64URL

        let first = try await RelayNode.start(arguments)
        let status = try await HTTPProbe.status(port: first.port, method: .put, path: "/api/location", headers: [.contentType: "application/json"],
                                                body: try Self.uploadBody(key))
        #expect(status == .noContent)
        #expect(await first.process.stop(SIGTERM) == 0)
        #expect(first.process.log.contains("coords-relay stopped"), "\(first.process.log)")
        #expect(!first.process.log.contains(id), "logs must not contain full keys")

        let second = try await RelayNode.start(arguments)
        let fetched = try await HTTPProbe.request(port: second.port, method: .post, path: "/api/location", headers: [.contentType: "application/json"],
                                                  body: ByteBuffer(bytes: JSONValue.object(["ids": .array([.string(id)])]).serialized()))
        #expect(await second.process.stop(SIGTERM) == 0)
        let entry = fetched.json?.objectValue?[id]?.objectValue
        if kind == .memory {
            #expect(fetched.json?.objectValue?[id] == .null, "memory keeps nothing across a restart")
        } else {
            #expect(entry?["blob"]?.stringValue?.isEmpty == false)
        }
    }

    @Test func invalidFlagsAreRefusedWithAMessage() throws {
        for arguments in [["--port", "70000"], ["--log-level", "loud"], ["--rate", "-1"], ["--bogus"]] {
            let process = Process()
            guard let executable = Self.executable else { throw MissingExecutable() }
            process.executableURL = executable
            process.arguments = arguments
            let output = Pipe()
            process.standardError = output
            process.standardOutput = output
            try process.run()
            process.waitUntilExit()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(process.terminationStatus != 0, "\(arguments)")
            #expect(text.lowercased().contains("error"), "\(arguments): \(text)")
        }
    }
}
