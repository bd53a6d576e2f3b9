import CoordsCore
import Foundation
import HummingbirdTesting
import NIOCore
import Testing

/// The `coords-relay` executable itself: flags, startup, SIGTERM, restart on the same data.
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

    /// A running relay process and the port it bound.
    final class RunningRelay: @unchecked Sendable {
        let process = Process()
        private let output = Pipe()
        private let lock = NSLock()
        private var text = ""
        private(set) var port = 0

        init(arguments: [String]) throws {
            guard let executable = RelayProcessTests.executable else { throw MissingExecutable() }
            process.executableURL = executable
            process.arguments = arguments
            process.standardOutput = output
            process.standardError = output
            output.fileHandleForReading.readabilityHandler = { [weak self] handle in
                let data = handle.availableData
                guard let self, !data.isEmpty else { return }
                self.lock.lock()
                self.text += String(decoding: data, as: UTF8.self)
                self.lock.unlock()
            }
            try process.run()
            let deadline = Date().addingTimeInterval(20)
            while port == 0, Date() < deadline, process.isRunning {
                lock.lock()
                if let range = text.range(of: "listening on 127.0.0.1:") {
                    port = Int(text[range.upperBound...].prefix { $0.isNumber }) ?? 0
                }
                lock.unlock()
                Thread.sleep(forTimeInterval: 0.02)
            }
        }

        var log: String { lock.lock(); defer { lock.unlock() }; return text }

        /// Sends SIGTERM and waits for the exit status.
        func stop() -> Int32 {
            process.terminate()
            process.waitUntilExit()
            output.fileHandleForReading.readabilityHandler = nil
            return process.terminationStatus
        }
    }

    static func uploadBody(_ key: Ed25519SigningKey) throws -> ByteBuffer {
        let now = UInt64(Date().timeIntervalSince1970)
        let blob = try LocationBlob.seal(try Location(latitude: 1, longitude: 2, timestamp: now * 1000).wire, for: [key.publicKey])
        return ByteBuffer(bytes: RelayAPI.uploadBody(blob: blob, timestamp: now, signer: key).serialized())
    }

    @Test func sigtermStopsCleanlyAndARestartKeepsTheData() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("relay-proc-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = try Ed25519SigningKey.generate()
        let id = key.publicKey.base64URL

        let first = try RunningRelay(arguments: ["--port", "0", "--data-dir", directory])
        #expect(first.port > 0, "no port in: \(first.log)")
        let status = try await TestClient.withClient(host: "127.0.0.1", port: first.port) { client in
            try await client.put("/api/location", headers: [.contentType: "application/json"], body: try Self.uploadBody(key)).status
        }
        #expect(status == .noContent)
        #expect(first.stop() == 0)
        #expect(first.log.contains("coords-relay stopped"))
        #expect(!first.log.contains(id), "logs must not contain full keys")

        let second = try RunningRelay(arguments: ["--port", "0", "--data-dir", directory])
        let body = try await TestClient.withClient(host: "127.0.0.1", port: second.port) { client in
            try await client.post("/api/location", headers: [.contentType: "application/json"],
                                  body: ByteBuffer(bytes: JSONValue.object(["ids": .array([.string(id)])]).serialized())).body
        }
        #expect(second.stop() == 0)
        let entry = try JSONValue.parse(Array(body?.readableBytesView ?? ByteBuffer().readableBytesView)).objectValue?[id]?.objectValue
        #expect(entry?["blob"]?.stringValue?.isEmpty == false)
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
