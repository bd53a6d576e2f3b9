import CoordsCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import HummingbirdWSClient
import Logging
import NIOCore
import NIOWebSocket
import Synchronization
import Testing

@testable import CoordsRelay

/// The live channel (PROTOCOL.md §8) over real loopback sockets: a WebSocket client against the
/// relay's `.live` server.
@Suite(.timeLimit(.minutes(3))) struct LiveChannelTests {
    /// What one live session saw: the text frames received and the relay's close frame.
    struct Seen: Sendable {
        var frames: [LiveFrame] = []
        var close: WebSocketCloseFrame?
        var closeCode: Int? { close.map { Int(UInt16(webSocketErrorCode: $0.closeCode)) } }
    }

    /// Connects to the relay's live endpoint on `port`, sends `frames`, runs `action` once the
    /// first `subscribed` answer arrived, and collects frames until `done` says so (then closes
    /// normally) or the relay closes. Fails with ``SessionTimedOut`` after `timeout` (60 s by
    /// default: the whole relay suite runs in parallel on 2 cores, where a session that takes
    /// 1 s alone can take more than 10).
    static func session(
        port: Int, send frames: [String] = [], binary: Bool = false, actAfter: Int = 1, action: @escaping @Sendable () async throws -> Void = {},
        then later: [String] = [], until done: @escaping @Sendable ([LiveFrame]) -> Bool = { _ in false }, timeout: Duration = .seconds(60),
        onFrame react: @escaping @Sendable (LiveFrame) async throws -> Void = { _ in }
    ) async throws -> Seen {
        let seen = Locked(Seen())
        let logger = Logger(label: "test.live-client")
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                let close = try await WebSocketClient.connect(url: "ws://127.0.0.1:\(port)\(LiveFrame.path)", logger: logger) { inbound, outbound, _ in
                    if binary { try await outbound.write(.binary(ByteBuffer(bytes: [1, 2, 3]))) }
                    for frame in frames { try await outbound.write(.text(frame)) }
                    var answers = 0
                    for try await message in inbound.messages(maxSize: 1 << 16) {
                        guard case .text(let text) = message else { continue }
                        let frame = try LiveFrame(parsing: Array(text.utf8))
                        let all = seen.withLock { seen in
                            seen.frames.append(frame)
                            return seen.frames
                        }
                        if case .subscribed = frame {
                            answers += 1
                            if answers == actAfter {
                                try await action()
                                for frame in later { try await outbound.write(.text(frame)) }
                            }
                        }
                        try await react(frame)
                        if done(all) { return }
                    }
                }
                seen.withLock { $0.close = close }
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw SessionTimedOut(timeout: timeout, seen: seen.withLock { $0 })
            }
            try await group.next()
            group.cancelAll()
        }
        return seen.withLock { $0 }
    }

    static func subscribe(_ ids: [String], mailbox: LiveFrame.MailboxProof? = nil) -> String {
        LiveFrame.subscribe(ids: ids, mailbox: mailbox).text
    }

    static func configuration(_ change: (inout LiveLimits) -> Void = { _ in }) -> RelayConfiguration {
        var configuration = RelayHarness.defaultConfiguration()
        change(&configuration.live)
        return configuration
    }

    // MARK: Notices

    @Test func anUploadReachesItsSubscriberWhoOpensAndVerifiesIt() async throws {
        let relay = RelayHarness(configuration: Self.configuration())
        let alice = try Ed25519SigningKey.generate()
        let bob = try Ed25519SigningKey.generate()
        let id = alice.publicKey.base64URL
        let location = try Location(latitude: 47.3769, longitude: 8.5417, timestamp: relay.clock.milliseconds)
        let blob = try LocationBlob.seal(location.wire, for: [alice.publicKey, bob.publicKey])
        try await relay.test(.live) { client in
            let port = try #require(client.port)
            let seen = try await Self.session(
                port: port, send: [Self.subscribe([id])],
                action: {
                    let put = try await client.location(.put, try relay.uploadBody(alice, blob: blob))
                    #expect(put.status == .noContent)
                    let delete = try await client.location(.delete, try relay.deleteBody(alice, timestamp: relay.now + 1))
                    #expect(delete.status == .noContent)
                },
                until: { $0.count == 3 })
            #expect(seen.frames.first == .subscribed(ids: 1, mailbox: false))
            guard seen.frames.count == 3, case .location(let notice) = seen.frames[1],
                case .deleted(let deletedID, let timestamp, let signature) = seen.frames[2]
            else {
                Issue.record("expected subscribed, location, deleted; got \(seen.frames)")
                return
            }
            // The notice is a fetch entry: Bob verifies the uploader and opens the blob with the fetch code.
            let answer = JSONValue.object(JSONObject([(notice.id, notice.fetchEntry)])).serialized()
            let entries = try RelayAPI.processFetchResponse(answer, reader: try X25519PrivateKey(ed25519: bob), options: .init(requireSignatures: true))
            #expect(entries.first?.authenticity == .verified && entries.first?.location?.timestamp == location.timestamp)
            #expect(notice.updated == relay.now)
            #expect(deletedID == id && alice.publicKey.isValidSignature(signature, for: RelayAPI.deleteSignedMessage(timestamp: timestamp)))
        }
    }

    @Test func unsubscribedKeysAndOtherKeysSendNothing() async throws {
        let relay = RelayHarness(configuration: Self.configuration())
        let alice = try Ed25519SigningKey.generate()
        let carol = try Ed25519SigningKey.generate()
        try await relay.test(.live) { client in
            let port = try #require(client.port)
            // Subscribe, unsubscribe, then both upload; a last subscribe's answer is the barrier:
            // a notice, had one been sent, would stand before it.
            let seen = try await Self.session(
                port: port, send: [Self.subscribe([alice.publicKey.base64URL]), LiveFrame.unsubscribe(ids: [alice.publicKey.base64URL]).text],
                actAfter: 2,
                action: {
                    for key in [alice, carol] {
                        let put = try await client.location(.put, try relay.uploadBody(key))
                        #expect(put.status == .noContent)
                    }
                },
                then: [Self.subscribe([])], until: { $0.count >= 3 })
            #expect(seen.frames == [.subscribed(ids: 1, mailbox: false), .subscribed(ids: 0, mailbox: false), .subscribed(ids: 0, mailbox: false)])
        }
    }

    // MARK: Mailbox

    @Test func aMailboxIsWatchedOnlyWithItsKeysFreshSignature() async throws {
        let relay = RelayHarness(configuration: Self.configuration())
        let bob = MailboxTests.bob
        try await relay.test(.live) { client in
            let port = try #require(client.port)
            let proof = LiveFrame.MailboxProof(signer: bob, timestamp: relay.now)
            let envelope = try MailboxTests.envelope(now: relay.now)
            let seen = try await Self.session(
                port: port, send: [Self.subscribe([], mailbox: proof)],
                action: {
                    let posted = try await client.post(envelope)
                    #expect(posted.status == .accepted)
                },
                until: { $0.count == 2 })
            #expect(seen.frames == [.subscribed(ids: 0, mailbox: true), .message(id: envelope.id)])

            // The same proof again is a replay; Carol's signature on Bob's key is a forgery; a
            // proof from ten minutes ago is stale; a §7.3 list signature is not a live proof.
            let forged = LiveFrame.MailboxProof(
                key: bob.publicKey, timestamp: relay.now,
                signature: MailboxTests.carol.signature(for: MailboxAuth.signedBytes(method: "GET", path: LiveFrame.path, timestamp: relay.now)))
            let stale = LiveFrame.MailboxProof(signer: bob, timestamp: relay.now - 600)
            let list = LiveFrame.MailboxProof(
                key: bob.publicKey, timestamp: relay.now + 1,
                signature: bob.signature(for: MailboxAuth.signedBytes(method: "GET", path: "/v1/relay/messages", timestamp: relay.now + 1)))
            for refused in [proof, forged, stale, list] {
                let refusal = try await Self.session(port: port, send: [Self.subscribe([], mailbox: refused)])
                #expect(refusal.closeCode == 4401 && refusal.frames.isEmpty, "\(refusal)")
            }
        }
    }

    // MARK: Limits

    @Test func refusalsCloseWithTheirCodes() async throws {
        // The default idle check (60 s) stays out of the way: with a 1 s check, a loaded machine
        // (the whole relay suite in parallel on 2 cores) closed some sessions as idle (4408)
        // before their first frame was read. The idle close has its own test below.
        let relay = RelayHarness(configuration: Self.configuration { $0.maximumIDsPerConnection = 3 })
        let ids = try (0..<4).map { _ in try Ed25519SigningKey.generate().publicKey.base64URL }
        try await relay.test(.live) { client in
            let port = try #require(client.port)
            let tooMany = try await Self.session(port: port, send: [Self.subscribe(ids)])
            #expect(tooMany.closeCode == 4413)
            let inTwoFrames = try await Self.session(port: port, send: [Self.subscribe(Array(ids.prefix(2))), Self.subscribe(Array(ids.suffix(2)))])
            #expect(inTwoFrames.frames == [.subscribed(ids: 2, mailbox: false)] && inTwoFrames.closeCode == 4413)
            let fiftyOne = "{\"type\":\"subscribe\",\"ids\":[" + Array(repeating: "\"\(ids[0])\"", count: 51).joined(separator: ",") + "]}"
            #expect(try await Self.session(port: port, send: [fiftyOne]).closeCode == 4413)
            for malformed in [
                "not json", #"{"type":"location","id":"x"}"#, #"{"type":"subscribe","ids":["short"]}"#, "{\"type\":\"subscribed\",\"ids\":1,\"mailbox\":false}"
            ] {
                #expect(try await Self.session(port: port, send: [malformed]).closeCode == 4400, "\(malformed)")
            }
            #expect(try await Self.session(port: port, binary: true).closeCode == 4400)
            let oversized = #"{"type":"subscribe","ids":[],"pad":""# + String(repeating: "x", count: LiveFrame.maximumFrameBytes) + "\"}"
            #expect(try await Self.session(port: port, send: [oversized]).closeCode == 1009)
        }
    }

    /// A connection found watching nothing at an idle check is closed with 4408, also one that
    /// subscribed to nothing. (Whether the check comes before or after the empty subscription is
    /// read depends on the machine's load; either way the connection watches nothing.)
    @Test func aConnectionWatchingNothingIsClosedAtTheIdleCheck() async throws {
        let relay = RelayHarness(configuration: Self.configuration { $0.idleTimeoutSeconds = 1 })
        let id = try Ed25519SigningKey.generate().publicKey.base64URL
        try await relay.test(.live) { client in
            let port = try #require(client.port)
            let idle = try await Self.session(port: port, send: [Self.subscribe([])])
            #expect(idle.frames.count <= 1 && idle.frames.allSatisfy { $0 == .subscribed(ids: 0, mailbox: false) } && idle.closeCode == 4408, "\(idle)")
            let silent = try await Self.session(port: port)
            #expect(silent.frames.isEmpty && silent.closeCode == 4408, "\(silent)")
            // Watching something: the checks pass it by; the client ends the session itself.
            let watching = try await Self.session(
                port: port, send: [Self.subscribe([id])], action: { try await Task.sleep(for: .milliseconds(2_500)) }, until: { !$0.isEmpty })
            #expect(watching.frames == [.subscribed(ids: 1, mailbox: false)] && watching.closeCode != 4408, "\(watching)")
        }
    }

    @Test func liveConnectionsPerAddressAreCapped() async throws {
        let relay = RelayHarness(configuration: Self.configuration { $0.maximumConnectionsPerAddress = 1 })
        let id = try Ed25519SigningKey.generate().publicKey.base64URL
        try await relay.test(.live) { client in
            let port = try #require(client.port)
            // The first stays open (its client waits once subscribed) while the second connects
            // from the test's own task, not from inside the first's handler.
            let release = Locked(false)
            async let firstSession = Self.session(
                port: port, send: [Self.subscribe([id])],
                action: { while !release.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) } },
                until: { _ in true })
            while relay.service.live.counts.connections < 1 { try await Task.sleep(for: .milliseconds(10)) }
            let refused = try await Self.session(port: port, send: [Self.subscribe([id])], timeout: .seconds(30))
            release.withLock { $0 = true }
            let first = try await firstSession
            #expect(first.frames == [.subscribed(ids: 1, mailbox: false)])
            #expect(refused.closeCode == 4429 && refused.frames.isEmpty, "\(refused)")
            // Once the first has gone, a new one is admitted.
            while relay.service.live.counts.connections > 0 { try await Task.sleep(for: .milliseconds(10)) }
            let third = try await Self.session(port: port, send: [Self.subscribe([id])], until: { !$0.isEmpty })
            #expect(third.frames == [.subscribed(ids: 1, mailbox: false)])
        }
    }

    /// Issue 37, defect 11: a notice that would exceed the frame limit goes out as `changed`.
    @Test func aBlobTooLargeForANoticeIsAnnouncedAsChanged() async throws {
        let relay = RelayHarness(configuration: Self.configuration())
        let alice = try Ed25519SigningKey.generate()
        let id = alice.publicKey.base64URL
        try await relay.test(.live) { client in
            let port = try #require(client.port)
            let seen = try await Self.session(
                port: port, send: [Self.subscribe([id])],
                action: {
                    let big = try await client.location(.put, try relay.uploadBody(alice, blob: [UInt8](repeating: 7, count: 20_000)))
                    #expect(big.status == .noContent)
                    relay.clock.advance(byMilliseconds: 1000)
                    let small = try await client.location(.put, try relay.uploadBody(alice, blob: [UInt8](repeating: 7, count: 100)))
                    #expect(small.status == .noContent)
                },
                until: { $0.count == 3 })
            #expect(seen.frames.count == 3 && seen.frames[1] == .changed(id: id))
            guard seen.frames.count == 3, case .location(let notice) = seen.frames[2] else {
                Issue.record("expected subscribed, changed, location; got \(seen.frames)")
                return
            }
            #expect(notice.blob.count == 100)
        }
    }

    /// Issue 37, defect 3: a subscriber that stops reading (its socket full) is dropped once a
    /// write has waited longer than the write timeout; before, it stayed connected for ever.
    @Test func aSubscriberThatStopsReadingIsDropped() async throws {
        let relay = RelayHarness(configuration: Self.configuration { $0.writeTimeoutSeconds = 2 })
        let alice = try Ed25519SigningKey.generate()
        let id = alice.publicKey.base64URL
        try await relay.test(.live) { client in
            let port = try #require(client.port)
            let socket = try RawSocket(port: port, receiveBuffer: 4096)
            defer { socket.close() }
            try socket.send(
                "GET \(LiveFrame.path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
            #expect(try await socket.readHead().hasPrefix("HTTP/1.1 101"))
            try socket.send(bytes: RawSocket.maskedTextFrame(Self.subscribe([id])))
            // Notices of about 15 KB until the relay's socket buffer and the subscriber's queue are full.
            for _ in 0..<600 {
                relay.clock.advance(byMilliseconds: 1000)
                _ = try await client.location(.put, try relay.uploadBody(alice, blob: [UInt8](repeating: 1, count: 11_000)))
            }
            // Still not reading: the relay must let the connection go within the write timeout
            // (and a second of its watchdog), not hold it while its close waits behind the backlog.
            let deadline = ContinuousClock.now + .seconds(20)
            while relay.service.live.counts.connections > 0 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(200)) }
            let ended = relay.service.live.counts.connections == 0
            // What the client finds when it reads again: the end of the connection.
            _ = try await socket.readUntilClosed(timeout: 30)
            #expect(socket.closedByPeer)
            #expect(ended, "the relay kept a subscriber that stopped reading")
        }
    }

    @Test func aPlainGetIs426AndARelayWithoutTheChannelAnswers404() async throws {
        let relay = RelayHarness(configuration: Self.configuration())
        try await relay.test(.live) { client in
            let plain = try await client.execute(uri: LiveFrame.path, method: .get)
            #expect(plain.status == .upgradeRequired && plain.errorCode == "upgrade_required")
        }
        let off = RelayHarness(configuration: Self.configuration { $0.enabled = false })
        try await off.test(.live) { client in
            #expect(try await client.execute(uri: LiveFrame.path, method: .get).status == .notFound)
            let port = try #require(client.port)
            // A WebSocket client is refused at the upgrade with the 404 a reference relay gives.
            await #expect(throws: (any Error).self) { try await Self.session(port: port, send: [Self.subscribe([])]) }
        }
    }
}

/// A live session neither finished nor was closed by the relay within its time limit.
struct SessionTimedOut: Error, CustomStringConvertible {
    let timeout: Duration
    let seen: LiveChannelTests.Seen
    var description: String { "the live session did not end within \(timeout); it saw \(seen.frames.count) frame(s): \(seen.frames)" }
}

/// A value behind a lock, shareable between tasks.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<R: Sendable>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}
