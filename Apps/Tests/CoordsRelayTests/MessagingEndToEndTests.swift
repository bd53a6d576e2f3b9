import AsyncHTTPClient
import CoordsCore
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import CoordsRelay

/// Three apps and a live relay on loopback (LMDB store), talking real HTTP: messages both ways,
/// acks, receipts, replays, tampering, expiry, someone else's mailbox, and the outbox delivering
/// after the relay comes back.
@Suite(.serialized) struct MessagingEndToEndTests {
    static let http: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(30))
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    struct Reply {
        let status: Int
        let body: [UInt8]
        var json: JSONValue? { try? JSONValue.parse(body) }
    }

    static func send(_ request: PreparedRequest) async throws -> Reply {
        var http = HTTPClientRequest(url: request.url)
        http.method = .init(rawValue: request.method)
        for header in request.headers { http.headers.add(name: header.name, value: header.value) }
        if !request.body.isEmpty { http.body = .bytes(ByteBuffer(bytes: request.body)) }
        let response = try await Self.http.execute(http, timeout: .seconds(30))
        return Reply(status: Int(response.status.code), body: Array(try await response.body.collect(upTo: 1 << 22).readableBytesView))
    }

    static func openApp(_ directory: String, clock: ManualClock) throws -> CoordsApp {
        var options = CoordsApp.Options(keychain: .file(.passphrase("pw")))
        options.keychainParameters = .minimum
        options.clock = .manual(clock)
        options.store.durability = .noSync
        return try CoordsApp.open(directory: directory, options: options)
    }

    /// Fetches `app`'s mailbox, processes it, sends the acks and receipts; returns the outcome.
    static func sync(_ app: CoordsApp) async throws -> MessagesOutcome {
        let reply = try await send(try app.messages.prepareFetch())
        #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
        let outcome = try await app.messages.processFetchResponse(reply.body)
        for ack in outcome.acks { #expect(try await send(ack).status == 200) }
        for receipt in outcome.receipts {
            let reply = try await send(receipt.item.request)
            #expect(try await app.outbox.report(id: receipt.id, status: reply.status, body: reply.body).decision == .delivered)
        }
        return outcome
    }

    @Test func twoFriendsExchangeMessagesThroughALiveRelay() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-messages-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let clock = ManualClock(milliseconds: UInt64(Date().timeIntervalSince1970) * 1000)
        var configuration = RelayHarness.defaultConfiguration()
        configuration.messageRate = 0
        let alice = try Self.openApp(root + "/alice", clock: clock)
        let bob = try Self.openApp(root + "/bob", clock: clock)
        let carol = try Self.openApp(root + "/carol", clock: clock)
        defer {
            alice.close()
            bob.close()
            carol.close()
        }

        let first = RelayHarness(configuration: configuration, store: try LMDBRelayStore(directory: root + "/relay", durability: .noSync), clock: clock)
        let port = try await first.app.test(.live) { client -> Int in
            let port = try #require(client.port)
            let server = "http://127.0.0.1:\(port)"
            let aliceID = try await alice.wallet.createIdentity(name: "Alice", server: server)
            let bobID = try await bob.wallet.createIdentity(name: "Bob", server: server)
            _ = try await carol.wallet.createIdentity(name: "Carol", server: server)
            _ = try await alice.friends.add(id: bobID, server: server, name: "Bob")
            _ = try await bob.friends.add(id: aliceID, server: server, name: "Alice")
            _ = try await carol.friends.add(id: bobID, server: server, name: "Bob")

            // Alice → Bob; the relay takes it once.
            let sent = try await alice.messages.send("on my way 🚲", to: bobID)
            #expect(sent.message.status == .queued)
            #expect(try await Self.send(sent.request).status == 202)
            try await alice.messages.markSent(id: sent.message.id)
            #expect(try alice.outbox.pending().isEmpty, "the outbox entry is gone once sent")
            #expect(try await Self.send(sent.request).status == 409, "a replayed envelope is refused")

            // Bob reads it, acks it (removed from the relay), and sends a receipt.
            let received = try await Self.sync(bob)
            #expect(received.received.map(\.text) == ["on my way 🚲"])
            #expect(received.acks.count == 1 && received.receipts.count == 1)
            #expect(try await Self.sync(bob).received.isEmpty, "acknowledged envelopes are gone")
            #expect(try bob.messages.history(with: aliceID).map(\.text) == ["on my way 🚲"])

            // Alice gets the receipt: her message is delivered. Bob answers; Alice reads it.
            let receipt = try await Self.sync(alice)
            #expect(receipt.delivered == [sent.message.id])
            #expect(try alice.messages.history(with: bobID).first?.status == .delivered)
            let reply = try await bob.messages.send("see you", to: aliceID)
            #expect(try await Self.send(reply.request).status == 202)
            #expect(try await Self.sync(alice).received.map(\.text) == ["see you"])
            #expect(try alice.messages.conversations().first?.messageCount == 2)

            // A tampered envelope (posted without senderKey, so the relay cannot check it) is
            // refused by the reader, and acknowledged so it does not come back.
            let bobKey = try Ed25519PublicKey(base64URL: bobID)
            let forger = try Ed25519SigningKey.generate()
            var forged = try Envelope.seal(
                MessagePayload(kind: "text", id: "x", text: "pay me", sentAt: 1).json, id: try Envelope.newUUID(),
                from: forger, to: bobKey, createdAt: clock.milliseconds / 1000,
                expiresAt: clock.milliseconds / 1000 + 600, includeSenderKey: false)
            forged.senderID = PeerID(try Ed25519PublicKey(base64URL: aliceID)).hex  // claims to be Alice
            let post = PreparedRequest(
                url: server + "/v1/relay/messages", method: "POST",
                headers: [.init(name: "Content-Type", value: "application/json")], body: forged.json.serialized())
            #expect(try await Self.send(post).status == 202)
            let refused = try await Self.sync(bob)
            #expect(refused.received.isEmpty)
            #expect(refused.rejected.map(\.code) == [WireError.envelopeSignatureInvalid.code])

            // An envelope that expires before Bob fetches is never delivered.
            let shortLived = try await alice.messages.send("too late", to: bobID)
            #expect(try await Self.send(shortLived.request).status == 202)
            try await alice.messages.markSent(id: shortLived.message.id)
            clock.advance(byMilliseconds: (MessagesManager.envelopeLifetimeSeconds + 1) * 1000)
            #expect(try await Self.sync(bob).received.isEmpty)

            // Carol cannot read Bob's mailbox: she can only sign as herself.
            var snoop = try carol.messages.prepareFetch()
            let carolPeer = PeerID(try carol.wallet.publicKey()).hex
            snoop.url = snoop.url.replacingOccurrences(of: carolPeer, with: PeerID(bobKey).hex)
            let refusedSnoop = try await Self.send(snoop)
            #expect(refusedSnoop.status == 401)
            #expect(refusedSnoop.json?.objectValue?["error"]?.stringValue == "wrong_mailbox")
            return port
        }
        await first.store.close()

        // The relay is down: Alice's message stays in the outbox.
        let bobID = try bob.wallet.id()
        let late = try await alice.messages.send("are you there?", to: bobID)
        await #expect(throws: (any Error).self) { _ = try await Self.send(late.request) }
        let failed = try await alice.outbox.report(id: late.outboxID, status: 0, body: Array("connection refused".utf8))
        guard case .retry(_, let reason) = failed.decision else {
            Issue.record("no answer is retried: \(failed)")
            return
        }
        #expect(reason == "connection refused")
        #expect(try await alice.outbox.due().isEmpty, "backing off")

        // It comes back (same address, same store: the test framework's live mode always picks a
        // new port, so run the application directly); the outbox delivers and Bob reads it.
        configuration.port = port
        let second = RelayHarness(configuration: configuration, store: try LMDBRelayStore(directory: root + "/relay", durability: .noSync), clock: clock)
        let stopped = Locked<String?>(nil)
        let running = Task {
            do { try await second.app.inner.runService(gracefulShutdownSignals: []) } catch { stopped.withLock { $0 = "\(error)" } }
            stopped.withLock { $0 = $0 ?? "stopped" }
        }
        // Wait until it answers: up to a minute, since CI runs the relay suites side by side on
        // two cores; a relay that fails to start ends the wait at once with its error.
        var up = false
        let deadline = ContinuousClock.now + .seconds(60)
        while !up, stopped.withLock({ $0 }) == nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            up = (try? await Self.send(PreparedRequest(url: "http://127.0.0.1:\(port)/healthz", method: "GET")))?.status == 200
        }
        try #require(up, "the relay restarted on port \(port): \(stopped.withLock { $0 } ?? "no answer within 60 s")")
        clock.advance(byMilliseconds: 2000)
        for entry in try await alice.outbox.due() {
            let reply = try await Self.send(entry.item.request)
            #expect(try await alice.outbox.report(id: entry.id, status: reply.status, body: reply.body).decision == .delivered)
            // The relay already has it (a lost answer, sent again): delivered, not an error.
            #expect(try await Self.send(entry.item.request).status == 409)
        }
        #expect(try alice.outbox.pending().isEmpty)
        #expect(try alice.messages.history(with: bobID).last?.status == .sent, "marked sent in the delivery's transaction")
        #expect(try await Self.sync(bob).received.map(\.text) == ["are you there?"])
        running.cancel()
        _ = await running.value
        await second.store.close()
    }
}
