import CoordsCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import CoordsRelay

/// The core's ``ObjectUpload`` and ``ObjectDownload`` against the real relay routes on every
/// store: a file of two parts goes up and comes back byte for byte, an upload started again by a
/// new process continues where the relay's bytes end, and a download resumes with a range.
@Suite struct ObjectTransferTests {
    static let bob = MailboxTests.bob
    static let server = "https://relay.test"

    /// Performs `request` (a URL on ``server``) on the test client.
    static func perform(_ request: PreparedRequest, _ client: some TestClientProtocol) async throws -> TestResponse {
        let path = String(request.url.dropFirst(server.count))
        var headers = HTTPFields()
        for header in request.headers {
            if let name = HTTPField.Name(header.name) { headers[name] = header.value }
        }
        return try await client.execute(
            uri: path, method: HTTPRequest.Method(request.method) ?? .get, headers: headers,
            body: request.body.isEmpty ? nil : ByteBuffer(bytes: request.body))
    }

    /// Runs the upload loop until the relay holds the object (or `stopAfterParts` parts went).
    static func upload(
        _ upload: inout ObjectUpload, file: [UInt8], client: some TestClientProtocol, timestamp: inout UInt64, stopAfterParts: Int = .max
    ) async throws -> Int {
        var parts = 0
        while let need = upload.need, parts < stopAfterParts {
            let plaintext = Array(file[Int(need.offset)..<Int(need.offset) + need.count])
            timestamp += 1
            guard let request = try upload.supply(plaintext, timestamp: timestamp) else { continue }
            #expect(request.body.count <= Objects.maximumPartByteCount)
            let response = try await perform(request, client)
            _ = try upload.handle(status: Int(response.status.code), body: Array(response.body.readableBytesView))
            parts += 1
        }
        return parts
    }

    static func download(_ file: FileAttachment, client: some TestClientProtocol, firstBytes: Int? = nil) async throws -> [UInt8] {
        var download = try ObjectDownload(server: server, file: file)
        var plaintext: [UInt8] = []
        for round in 0..<2 {
            let response = try await perform(try download.request(), client)
            #expect(try download.check(status: Int(response.status.code)) == .body)
            var body = Array(response.body.readableBytesView)
            if round == 0, let firstBytes { body = Array(body.prefix(firstBytes)) }  // the connection broke here
            try body.withUnsafeBytes { try download.take($0, appendingTo: &plaintext) }
            if download.received == download.storedSize { break }
        }
        try download.finish()
        return plaintext
    }

    @Test(arguments: MailboxTests.cases) func aFileGoesUpAndComesBackWhole(setup: TestingSetup, kind: StoreKind) async throws {
        let relay = try await RelayHarness.make(kind)
        // Small parts (3 chunks) keep the debug build's sealing cheap; the 4 MiB parts travel in
        // the multi-node test and the end-to-end tests.
        let file = (0..<(400_000 + 123)).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 7) }
        let key = SecretBytes(copying: (0..<32).map { _ in UInt8.random(in: 0...255) })
        let oid = try ObjectID.random()
        try await relay.test(setup) { client in
            var upload = try ObjectUpload(
                server: Self.server, signer: Self.bob, key: key, object: oid, size: UInt64(file.count), expiresAt: relay.now + 3600, partChunks: 3)
            var timestamp = relay.now
            #expect(try await Self.upload(&upload, file: file, client: client, timestamp: &timestamp) == 3)  // 7 chunks
            let digest = try #require(upload.digest)
            var sealer = try ObjectSealer(key: key, object: oid, size: UInt64(file.count))
            var whole = try sealer.update(file)
            #expect(try sealer.finish(appendingTo: &whole) == digest)
            let attachment = try FileAttachment(
                object: oid, size: UInt64(file.count), type: "application/octet-stream", name: "f.bin", digest: digest, key: key,
                expiresAt: upload.expiresAt)
            #expect(try await Self.download(attachment, client: client) == file)
            // A download cut off mid-chunk continues with a range from the last byte taken.
            #expect(try await Self.download(attachment, client: client, firstBytes: 100_000) == file)
        }
    }

    @Test(arguments: [StoreKind.memory, .lmdb, .postgres]) func anUploadStartedAgainContinuesWhereTheRelayEnds(kind: StoreKind) async throws {
        let relay = try await RelayHarness.make(kind)
        let file = (0..<(600_000)).map { UInt8(truncatingIfNeeded: $0 &* 29) }
        let key = SecretBytes(copying: (0..<32).map { _ in UInt8.random(in: 0...255) })
        let oid = try ObjectID.random()
        try await relay.test(.router) { client in
            let expires = relay.now + 3600
            var first = try ObjectUpload(
                server: Self.server, signer: Self.bob, key: key, object: oid, size: UInt64(file.count), expiresAt: expires, partChunks: 4)
            var timestamp = relay.now
            #expect(try await Self.upload(&first, file: file, client: client, timestamp: &timestamp, stopAfterParts: 1) == 1)
            // The process ends; a new one asks the relay where it is and sends only the rest.
            var again = try ObjectUpload(
                server: Self.server, signer: Self.bob, key: key, object: oid, size: UInt64(file.count), expiresAt: expires, partChunks: 4)
            timestamp += 1
            let probe = try await Self.perform(try again.probe(timestamp: timestamp), client)
            let held = 4 * UInt64(Objects.chunkByteCount + Objects.tagByteCount)
            #expect(try again.handle(status: Int(probe.status.code), body: Array(probe.body.readableBytesView)) == .stored(held))
            #expect(try await Self.upload(&again, file: file, client: client, timestamp: &timestamp) == 2)  // of 3 parts (10 chunks)
            let attachment = try FileAttachment(
                object: oid, size: UInt64(file.count), type: "application/octet-stream", name: "f.bin", digest: try #require(again.digest),
                key: key, expiresAt: expires)
            #expect(try await Self.download(attachment, client: client) == file)
        }
    }

    /// A part whose answer never came is sent again, sealed anew to the same bytes (the digest,
    /// computed once, still matches).
    @Test func aPartWhoseAnswerWasLostIsSealedAgainToTheSameBytes() async throws {
        let relay = try await RelayHarness.make(.memory)
        let file = (0..<(300_000)).map { UInt8(truncatingIfNeeded: $0 &* 3) }
        let key = SecretBytes(copying: (0..<32).map { _ in UInt8.random(in: 0...255) })
        let oid = try ObjectID.random()
        try await relay.test(.router) { client in
            var upload = try ObjectUpload(server: Self.server, signer: Self.bob, key: key, object: oid, size: UInt64(file.count), expiresAt: relay.now + 60)
            var timestamp = relay.now
            let need = try #require(upload.need)
            timestamp += 1
            let request = try #require(try upload.supply(Array(file[0..<need.count]), timestamp: timestamp))
            // The answer never arrives, and the relay forgets everything: the client tries the
            // next state it believes in (here: sends its part again), the relay says 0.
            _ = try await Self.perform(try upload.probe(timestamp: timestamp + 1), client)  // creates it, empty
            timestamp += 1
            #expect(try request.body.count == Int(Objects.storedSize(size: 300_000)))
            #expect(try await Self.upload(&upload, file: file, client: client, timestamp: &timestamp) == 1)
            let attachment = try FileAttachment(
                object: oid, size: 300_000, type: "application/octet-stream", name: "f", digest: try #require(upload.digest), key: key,
                expiresAt: upload.expiresAt)
            #expect(try await Self.download(attachment, client: client) == file)
        }
    }
}
