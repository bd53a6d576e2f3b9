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
                .appendingPathComponent(".build/debug/coords-relay")
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
        let status = try await HTTPProbe.status(
            port: first.port, method: .put, path: "/api/location", headers: [.contentType: "application/json"],
            body: try Self.uploadBody(key))
        #expect(status == .noContent)
        #expect(await first.process.stop(SIGTERM) == 0)
        #expect(first.process.log.contains("coords-relay stopped"), "\(first.process.log)")
        #expect(!first.process.log.contains(id), "logs must not contain full keys")

        let second = try await RelayNode.start(arguments)
        let fetched = try await HTTPProbe.request(
            port: second.port, method: .post, path: "/api/location", headers: [.contentType: "application/json"],
            body: ByteBuffer(bytes: JSONValue.object(["ids": .array([.string(id)])]).serialized()))
        #expect(await second.process.stop(SIGTERM) == 0)
        let entry = fetched.json?.objectValue?[id]?.objectValue
        if kind == .memory {
            #expect(fetched.json?.objectValue?[id] == .null, "memory keeps nothing across a restart")
        } else {
            #expect(entry?["blob"]?.stringValue?.isEmpty == false)
        }
    }

    /// Runs the relay to its exit; the wait status and everything it printed.
    static func refusal(_ arguments: [String], environment: [String] = []) async throws -> (status: Int32, output: String) {
        guard let executable = executable?.path else { throw MissingExecutable() }
        do {
            let output = try await PostgresTestServer.runOffPool("/usr/bin/env", environment + [executable] + arguments)
            return (0, output)
        } catch let error as PostgresTestServerError {
            let text = error.description
            let status = text.range(of: "(status ").flatMap { Int32(text[$0.upperBound...].prefix { $0.isNumber }) } ?? -1
            return (status, text.range(of: "): ").map { String(text[$0.upperBound...]) } ?? text)
        }
    }

    /// Strict startup: an environment value that does not parse is refused like the same bad
    /// flag; a second relay on a data directory in use, or on a port in use, is refused in one
    /// line before anything says "starting".
    @Test func startupRefusalsAreOneClearLine() async throws {
        for (name, value) in [("COORDS_PORT", "abc"), ("COORDS_RATE", "fast"), ("COORDS_RATE", "nan"), ("COORDS_MEMORY", "yes"), ("COORDS_TTL", "-5")] {
            let (status, output) = try await Self.refusal(["--memory"], environment: ["\(name)=\(value)"])
            #expect(status == 64 << 8, "\(name)=\(value): \(output)")
            #expect(output.contains("\(name)=\(value) is not"), "\(output)")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("relay-lock-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try await RelayNode.start(["--data-dir", directory])
        let (status, output) = try await Self.refusal(["--port", "0", "--data-dir", directory])
        #expect(status == 75 << 8, "\(output)")
        #expect(output.contains("another coords-relay is already serving"), "\(output)")
        #expect(!output.contains("starting"), "\(output)")
        let (busy, said) = try await Self.refusal(["--port", String(first.port), "--memory"])
        #expect(busy == 69 << 8, "\(said)")
        #expect(said.contains("127.0.0.1:\(first.port) is already in use"), "\(said)")
        #expect(!said.contains("starting") && said.split(separator: "\n").count == 1, "\(said)")
        #expect(await first.process.stop() == 0)
        // Once the first relay stopped, the directory is free again.
        let second = try await RelayNode.start(["--data-dir", directory])
        #expect(await second.process.stop() == 0)
    }

    @Test func invalidFlagsAreRefusedWithAMessage() async throws {
        guard let executable = Self.executable else { throw MissingExecutable() }
        for arguments in [["--port", "70000"], ["--log-level", "loud"], ["--rate", "-1"], ["--bogus"]] {
            // posix_spawn and waitpid on a dispatch thread: Foundation's Process can wait forever
            // for a child that already exited, and a cooperative thread stuck in it starved the
            // rest of the suite (live sessions and PostgreSQL connections timed out).
            let (status, text) = try await withCheckedThrowingContinuation { (done: CheckedContinuation<(Int32, String), any Error>) in
                DispatchQueue.global().async {
                    done.resume(
                        with: Result {
                            let process = try SpawnedProcess(executable.path, arguments)
                            return (process.waitForExit(), process.log)
                        })
                }
            }
            #expect(status != 0, "\(arguments)")
            #expect(text.lowercased().contains("error"), "\(arguments): \(text)")
        }
    }
}
