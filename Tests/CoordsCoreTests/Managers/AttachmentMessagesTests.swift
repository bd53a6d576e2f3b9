import Foundation
import Testing

@testable import CoordsCore

/// File messages (PROTOCOL.md §12.3, §12.5) through MessagesManager, with the relay's side played
/// by the test: the upload's parts are kept as a relay would keep them and served back.
@Suite struct AttachmentMessagesTests {
    typealias Pair = MessagesManagerTests.Pair

    /// Runs `upload` against a relay that stores every part; returns the object's bytes.
    static func upload(_ upload: inout ObjectUpload, file: [UInt8], app: CoordsApp) throws -> [UInt8] {
        var stored: [UInt8] = []
        while let need = upload.need {
            let plaintext = Array(file[Int(need.offset)..<(Int(need.offset) + need.count)])
            guard let request = try upload.supply(plaintext, timestamp: try app.messages.nextSignatureTimestamp()) else { continue }
            #expect(request.method == "PUT" && request.url.hasPrefix("https://relay.test/v1/relay/objects/\(upload.object.base64URL)?offset="))
            stored += request.body
            let answer = JSONValue.object([
                "object": .string(upload.object.base64URL), "stored": .integer(UInt64(stored.count)), "size": .integer(upload.storedSize),
                "complete": .bool(UInt64(stored.count) == upload.storedSize), "expiresAt": .integer(upload.expiresAt)
            ])
            _ = try upload.handle(status: 200, body: answer.serialized())
        }
        return stored
    }

    static func file(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 / 251) } }

    @Test func aFileIsUploadedAnnouncedReceivedAndDownloaded() async throws {
        let p = try await Pair()
        let bytes = Self.file(200_000)
        var upload = try p.alice.app.messages.prepareFileUpload(size: UInt64(bytes.count), partChunks: 1)
        #expect(upload.expiresAt == p.clock.milliseconds / 1000 + MessagesManager.attachmentLifetimeSeconds)
        // Announcing before the relay holds the whole file is refused.
        await #expect(throws: WireError.self) {
            try await p.alice.app.messages.sendFile(upload, type: "image/png", name: "map.png", caption: "", to: p.bobID)
        }
        let object = try Self.upload(&upload, file: bytes, app: p.alice.app)
        await #expect(throws: WireError.malformedFile("\"name\" is not a plain file name of at most 255 bytes")) {
            try await p.alice.app.messages.sendFile(upload, type: "image/png", name: "../map.png", caption: "", to: p.bobID)
        }
        let sent = try await p.alice.app.messages.sendFile(upload, type: "image/png", name: "map.png", caption: "here", to: p.bobID)
        let announced = try #require(sent.message.file)
        #expect(sent.message.kind == "file" && sent.message.text == "here" && announced.size == 200_000 && announced.name == "map.png")
        #expect(announced.digest == SHA256.hash(object))

        let outcome = try await p.bob.app.messages.processFetchResponse(try Pair.packets([sent.request]))
        let received = try #require(outcome.received.first)
        #expect(received.file == announced && received.notify == true)
        #expect(outcome.receipts.count == 1, "a file message gets a delivery receipt like a text")
        // The attachment (with its key) survives a restart: the sealed store keeps it.
        try p.bob.reopen()
        #expect(try p.bob.app.messages.message(id: received.id)?.file == announced)

        // Bob downloads from Alice's relay (the server of his friend record) and gets the file back.
        var download = try p.bob.app.messages.prepareDownload(messageID: received.id.uppercased())
        #expect(try download.request().url == "https://relay.test/v1/relay/objects/\(announced.object.base64URL)")
        var plaintext: [UInt8] = []
        for start in stride(from: 0, to: object.count, by: 50_000) {  // pieces that cut chunks anywhere
            try object[start..<min(start + 50_000, object.count)].withUnsafeBytes { try download.take($0, appendingTo: &plaintext) }
        }
        try download.finish()
        #expect(plaintext == bytes)
        // Alice can download her own file, from her own relay.
        #expect(try p.alice.app.messages.prepareDownload(messageID: sent.message.id).storedSize == upload.storedSize)

        // After its expiry the relay has dropped it: nothing to download.
        p.clock.advance(byMilliseconds: MessagesManager.attachmentLifetimeSeconds * 1000)
        #expect(throws: MessagesManagerError.noAttachment("the relay dropped the file at its expiry")) {
            try p.bob.app.messages.prepareDownload(messageID: received.id)
        }
    }

    @Test func malformedUnknownAndTextMessagesHaveNoAttachment() async throws {
        let p = try await Pair()
        let alice = try Ed25519SigningKey(seed: try #require(try p.alice.app.context.keychain.load(name: IdentityHolder.keychainName)))
        let now = p.clock.milliseconds / 1000
        var extra = JSONObject()
        extra["file"] = .object(["object": .string("short"), "size": .integer(UInt64(1))])
        let malformed = try Envelope.seal(
            MessagePayload(kind: "file", id: "f1", text: "broken", sentAt: 1, extra: extra).json, id: try Envelope.newUUID(),
            from: alice, to: try Ed25519PublicKey(base64URL: p.bobID), createdAt: now, expiresAt: now + 600)
        let text = try await p.alice.app.messages.send("plain", to: p.bobID)
        let outcome = try await p.bob.app.messages.processFetchResponse(
            JSONValue.object(["packets": .array([malformed.json, try JSONValue.parse(text.request.body)])]).serialized())
        #expect(outcome.received.map(\.kind) == ["file", "text"])
        let broken = outcome.received[0]
        #expect(broken.file == nil && broken.notify == false && broken.text == "broken")
        #expect(outcome.receipts.count == 1, "no receipt for a malformed file message")
        #expect(throws: MessagesManagerError.noAttachment("the message's file member is malformed")) {
            try p.bob.app.messages.prepareDownload(messageID: broken.id)
        }
        #expect(throws: MessagesManagerError.noAttachment("the message is not a file message")) {
            try p.bob.app.messages.prepareDownload(messageID: outcome.received[1].id)
        }
        let unknown = "00000000-0000-4000-8000-000000000000"
        #expect(throws: MessagesManagerError.unknownMessage(unknown)) { try p.bob.app.messages.prepareDownload(messageID: unknown) }
        #expect(MessagesManagerError.unknownMessage("").code == 636 && MessagesManagerError.noAttachment("").code == 637)
        #expect(throws: WireError.self) { try p.alice.app.messages.prepareFileUpload(size: Objects.maximumSize + 1) }
    }

    @Test func aDisappearingFileMessageTakesItsKeyWithIt() async throws {
        let p = try await Pair()
        try await p.bob.app.messages.setDisappearing(friendID: p.aliceID, after: 60)
        let bytes = Self.file(1_000)
        var upload = try p.alice.app.messages.prepareFileUpload(size: UInt64(bytes.count))
        _ = try Self.upload(&upload, file: bytes, app: p.alice.app)
        let sent = try await p.alice.app.messages.sendFile(upload, type: "text/plain", name: "note.txt", caption: "", to: p.bobID)
        let outcome = try await p.bob.app.messages.processFetchResponse(try Pair.packets([sent.request]))
        let id = try #require(outcome.received.first?.id)
        #expect(try p.bob.app.messages.message(id: id)?.file != nil)
        p.clock.advance(byMilliseconds: 60_000)
        #expect(try p.bob.app.messages.message(id: id) == nil, "hidden from its expiry on")
        #expect(try await p.bob.app.messages.sweepExpired() == [id])
        #expect(throws: MessagesManagerError.unknownMessage(id)) { try p.bob.app.messages.prepareDownload(messageID: id) }
        // No copy of the store holds the key any more: the row is gone and its shred key destroyed.
        p.clock.advance(byMilliseconds: 120_000)
        try await p.bob.app.messages.sweepExpired()
        let row = try p.bob.app.context.database.read { tx in try tx.open(Tables.messages).entries().count }
        #expect(row == 0)
    }
}
