import Foundation
import Testing

@testable import CoordsCore

/// The live channel's frames (§8.2–§8.3) and the client's sans-IO session (§8.5).
@Suite(.timeLimit(TestTimeLimit.minutes)) struct LiveSessionTests {
    typealias Pair = MessagesManagerTests.Pair

    /// The `location` notice a relay would push for Alice's upload `request` (a PUT body).
    static func notice(for request: PreparedRequest, updated: UInt64 = 1_800_000_000) throws -> [UInt8] {
        let body = try #require(try JSONValue.parse(request.body).objectValue)
        let notice = LiveFrame.LocationNotice(
            id: try #require(body["pubkey"]?.stringValue), blob: try Base64.decode(try #require(body["blob"]?.stringValue)),
            updated: updated, timestamp: try #require(body["timestamp"]?.uint64Value),
            signature: try Base64.decode(try #require(body["signature"]?.stringValue)))
        return Array(LiveFrame.location(notice).text.utf8)
    }

    // MARK: Frames

    @Test func framesRoundTripThroughTheirJSON() throws {
        let signer = try Ed25519SigningKey.generate()
        let id = signer.publicKey.base64URL
        let frames: [LiveFrame] = [
            .subscribe(ids: [id], mailbox: LiveFrame.MailboxProof(signer: signer, timestamp: 1_800_000_000)),
            .subscribe(ids: [], mailbox: nil), .unsubscribe(ids: [id]), .subscribed(ids: 3, mailbox: true),
            .location(.init(id: id, blob: [1, 2, 3], updated: 5, timestamp: 4, signature: Array(repeating: 7, count: 64))),
            .deleted(id: id, timestamp: 9, signature: Array(repeating: 1, count: 64)), .message(id: "0f7c1b52-8a3e-4d6f-9b0a-1c2d3e4f5a6b")
        ]
        for frame in frames {
            #expect(try LiveFrame(parsing: Array(frame.text.utf8)) == frame)
        }
        #expect(LiveFrame.subscribed(ids: 2, mailbox: false).text == #"{"type":"subscribed","ids":2,"mailbox":false}"#)
        // The same id twice is counted once.
        #expect(try LiveFrame(parsing: Array(#"{"type":"subscribe","ids":["\#(id)","\#(id)"]}"#.utf8)) == .subscribe(ids: [id], mailbox: nil))
    }

    @Test func hostileFramesAreRefusedWithAnError() throws {
        let id = try Ed25519SigningKey.generate().publicKey.base64URL
        let tooMany = (0..<51).map { _ in "\"\(id)\"" }.joined(separator: ",")
        let hostile = [
            "", "[]", "null", "{}", #"{"type":"dance"}"#, #"{"type":"subscribe"}"#, #"{"type":"subscribe","ids":"x"}"#,
            #"{"type":"subscribe","ids":[1]}"#, #"{"type":"subscribe","ids":["short"]}"#, #"{"type":"subscribe","ids":[\#(tooMany)]}"#,
            #"{"type":"subscribe","ids":[],"mailbox":{"key":"\#(id)","timestamp":-1,"signature":"AA"}}"#,
            #"{"type":"subscribe","ids":[],"mailbox":{"key":"\#(id)","timestamp":1,"signature":"AA"}}"#,
            #"{"type":"subscribe","ids":[],"mailbox":7}"#, #"{"type":"subscribed","ids":-1,"mailbox":true}"#,
            #"{"type":"location","id":"\#(id)","blob":"!!","updated":1,"timestamp":1,"signature":"AA"}"#,
            #"{"type":"location","id":"\#(id)","blob":"AA","updated":18446744073709551616,"timestamp":1,"signature":"AA"}"#,
            #"{"type":"message"}"#, String(repeating: "[", count: 100),
            #"{"type":"message","id":"\#(String(repeating: "x", count: LiveFrame.maximumFrameBytes))"}"#
        ]
        for text in hostile {
            #expect(throws: WireError.self, "\(text.prefix(60))") { try LiveFrame(parsing: Array(text.utf8)) }
        }
    }

    @Test func aMailboxProofVerifiesOnlyForItsKeyAndPath() throws {
        let alice = try Ed25519SigningKey.generate()
        let proof = LiveFrame.MailboxProof(signer: alice, timestamp: 1_800_000_000)
        #expect(proof.isValidSignature && proof.recipientID == PeerID(alice.publicKey).hex)
        var other = proof
        other.key = try Ed25519SigningKey.generate().publicKey
        #expect(!other.isValidSignature)
        var later = proof
        later.timestamp += 1
        #expect(!later.isValidSignature)
        // A §7.3 list signature is not a live proof (the path differs).
        let listSignature = alice.signature(for: MailboxAuth.signedBytes(method: "GET", path: "/v1/relay/messages", timestamp: 1_800_000_000))
        #expect(!LiveFrame.MailboxProof(key: alice.publicKey, timestamp: 1_800_000_000, signature: listSignature).isValidSignature)
    }

    // MARK: Session

    @Test func connectionsGroupFriendsByRelayWithTheMailboxOnTheOwnRelay() async throws {
        let p = try await Pair()
        let carol = try Ed25519SigningKey.generate().publicKey.base64URL
        _ = try await p.bob.app.friends.add(id: carol, server: "http://other.test:8080/", name: "Carol")
        let connections = try p.bob.app.live.connections()
        #expect(connections.map(\.server) == ["https://relay.test", "http://other.test:8080/"])
        #expect(connections.map(\.url) == ["wss://relay.test/v1/relay/live", "ws://other.test:8080/v1/relay/live"])
        #expect(connections.map(\.ids) == [[p.aliceID], [carol]])
        #expect(connections.map(\.mailbox) == [true, false])

        let opened = try p.bob.app.live.opened(server: "https://relay.test")
        #expect(opened.frames.count == 1 && opened.catchUp.map(\.ids) == [[p.aliceID]] && opened.mailboxFetch != nil)
        guard case .subscribe(let ids, let proof?) = try LiveFrame(parsing: Array(opened.frames[0].utf8)) else {
            Issue.record("the first frame on the own relay carries the mailbox proof")
            return
        }
        #expect(ids == [p.aliceID] && proof.isValidSignature && proof.key.base64URL == p.bobID)
        // Every opening signs a fresh proof (the relay accepts each signature once).
        let again = try p.bob.app.live.opened(server: "https://relay.test")
        #expect(again.frames != opened.frames)
        let other = try p.bob.app.live.opened(server: "http://other.test:8080/")
        #expect(other.frames == [LiveFrame.subscribe(ids: [carol], mailbox: nil).text] && other.mailboxFetch == nil)
    }

    @Test func manyFriendsAreSubscribedInFramesOfFifty() async throws {
        let p = try await Pair()
        for index in 0..<120 {
            _ = try await p.bob.app.friends.add(id: try Ed25519SigningKey.generate().publicKey.base64URL, server: "https://relay.test", name: "F\(index)")
        }
        let opened = try p.bob.app.live.opened(server: "https://relay.test")
        let counts = try opened.frames.map { text -> Int in
            guard case .subscribe(let ids, _) = try LiveFrame(parsing: Array(text.utf8)) else { return -1 }
            return ids.count
        }
        #expect(counts == [50, 50, 21] && opened.catchUp.count == 3)
    }

    @Test func aNoticeIsProcessedLikeAFetchEntry() async throws {
        let p = try await Pair()
        _ = try p.bob.app.live.opened(server: "https://relay.test")
        let fix = try Location(latitude: 47.3769, longitude: 8.5417, accuracy: 10, timestamp: 1_800_000_000_000)
        let upload = try await p.alice.app.location.prepareUpload(fix)
        let frame = try Self.notice(for: upload.request)
        guard case .locations(let outcome) = try await p.bob.app.live.process(server: "https://relay.test", frame: frame) else {
            Issue.record("a location notice yields locations")
            return
        }
        #expect(outcome.updated.map(\.id) == [p.aliceID] && outcome.updated.first?.location?.timestamp == fix.timestamp)
        // The location manager sent its reconcile message, as for a fetch.
        var updates: [LocationManagerReconcileMessage] = []
        while let update = try? p.bob.app.location.updates.tryRecv() { updates.append(update) }
        #expect(updates.contains { if case .locationsUpdated = $0 { true } else { false } })

        // The same notice again changes nothing; an older one is refused as a rollback.
        guard case .locations(let replay) = try await p.bob.app.live.process(server: "https://relay.test", frame: frame) else { return }
        #expect(replay.unchanged == [p.aliceID] && replay.updated.isEmpty)
        p.clock.advance(byMilliseconds: 1000)
        let newer = try await p.alice.app.location.prepareUpload(try Location(latitude: 47.4, longitude: 8.6, timestamp: 1_800_000_001_000))
        _ = try await p.bob.app.live.process(server: "https://relay.test", frame: try Self.notice(for: newer.request))
        guard case .locations(let rollback) = try await p.bob.app.live.process(server: "https://relay.test", frame: frame) else { return }
        #expect(rollback.rejected.map(\.error.code) == [WireError.rollback(id: "", cachedTimestamp: 0, fetchedTimestamp: 0).code])
    }

    @Test func aForgedNoticeIsRefusedLikeAForgedFetchEntry() async throws {
        let p = try await Pair()
        _ = try p.bob.app.live.opened(server: "https://relay.test")
        let upload = try await p.alice.app.location.prepareUpload(try Location(latitude: 1, longitude: 2, timestamp: 1_800_000_000_000))
        // Mallory re-signs Alice's blob under her own key but files it under Alice's id.
        var frame = try LiveFrame(parsing: try Self.notice(for: upload.request))
        guard case .location(var notice) = frame else { return }
        let mallory = try Ed25519SigningKey.generate()
        notice.signature = mallory.signature(for: RelayAPI.uploadSignedMessage(blob: notice.blob, timestamp: notice.timestamp))
        frame = .location(notice)
        guard case .locations(let outcome) = try await p.bob.app.live.process(server: "https://relay.test", frame: Array(frame.text.utf8)) else {
            return
        }
        #expect(outcome.updated.isEmpty && outcome.rejected.map(\.error) == [.tamperedEntry(id: p.aliceID)])
        #expect(try p.bob.app.location.friendLocations().first?.location == nil)
    }

    @Test func noticesForKeysNotSubscribedHereAreIgnored() async throws {
        let p = try await Pair()
        let upload = try await p.alice.app.location.prepareUpload(try Location(latitude: 1, longitude: 2, timestamp: 1_800_000_000_000))
        // Not opened yet: nothing is subscribed on this relay.
        #expect(try await p.bob.app.live.process(server: "https://relay.test", frame: try Self.notice(for: upload.request)) == .ignored(id: p.aliceID))
        _ = try p.bob.app.live.opened(server: "https://relay.test")
        #expect(try await p.bob.app.live.process(server: "https://elsewhere.test", frame: try Self.notice(for: upload.request)) == .ignored(id: p.aliceID))
        #expect(try await p.bob.app.live.process(server: "https://elsewhere.test", frame: Array(LiveFrame.message(id: "x").text.utf8)) == .ignored(id: "x"))
        guard
            case .messageWaiting(let id, let fetch) = try await p.bob.app.live.process(
                server: "https://relay.test", frame: Array(LiveFrame.message(id: "m1").text.utf8))
        else {
            Issue.record("a message notice on the own relay asks for a mailbox fetch")
            return
        }
        #expect(id == "m1" && fetch.url.hasPrefix("https://relay.test/v1/relay/messages?recipientID="))
    }

    /// Issue 37: a relay flooding `message` notices gets one signed mailbox fetch per burst.
    @Test func messageNoticesCoalesceIntoOneFetchPerBurst() async throws {
        let p = try await Pair()
        let live = p.bob.app.live
        _ = try live.opened(server: "https://relay.test")
        func notice(_ id: String) async throws -> LiveSession.Event {
            try await live.process(server: "https://relay.test", frame: Array(LiveFrame.message(id: id).text.utf8))
        }
        guard case .messageWaiting = try await notice("m1") else {
            Issue.record("the first notice asks for a fetch")
            return
        }
        // While that fetch runs, 1,000 more notices ask for nothing but one more fetch.
        for i in 0..<1000 { #expect(try await notice("n\(i)") == .ignored(id: "n\(i)")) }
        let again = try #require(try live.mailboxFetched(server: "https://relay.test"))
        #expect(again.url.hasPrefix("https://relay.test/v1/relay/messages?recipientID="))
        #expect(try live.mailboxFetched(server: "https://relay.test") == nil)  // the burst is done
        guard case .messageWaiting = try await notice("m2") else {
            Issue.record("a notice after the burst starts a new one")
            return
        }
        // A fetch never reported finished holds notices back for at most a minute.
        #expect(try await notice("m3") == .ignored(id: "m3"))
        p.clock.advance(byMilliseconds: LiveSession.mailboxFetchTimeout)
        guard case .messageWaiting = try await notice("m4") else {
            Issue.record("a fetch not reported within the timeout no longer holds notices back")
            return
        }
        // A reconnect forgets the burst.
        _ = live.closed(server: "https://relay.test", code: 1006, upgradeStatus: nil)
        #expect(try live.mailboxFetched(server: "https://relay.test") == nil)
    }

    @Test func deletesAreVerifiedAgainstTheID() async throws {
        let p = try await Pair()
        _ = try p.bob.app.live.opened(server: "https://relay.test")
        let aliceKey = try p.alice.app.context.identity.get().signing
        let signature = aliceKey.signature(for: RelayAPI.deleteSignedMessage(timestamp: 1_800_000_100))
        let good = LiveFrame.deleted(id: p.aliceID, timestamp: 1_800_000_100, signature: signature)
        #expect(try await p.bob.app.live.process(server: "https://relay.test", frame: Array(good.text.utf8)) == .deleted(id: p.aliceID))
        let forged = LiveFrame.deleted(id: p.aliceID, timestamp: 1_800_000_101, signature: signature)
        #expect(
            try await p.bob.app.live.process(server: "https://relay.test", frame: Array(forged.text.utf8))
                == .rejected(FetchRejection(id: p.aliceID, error: .tamperedEntry(id: p.aliceID))))
    }

    @Test func reconnectBacksOffWithJitterAndA404MeansPolling() async throws {
        let p = try await Pair()
        let live = p.bob.app.live
        var ceilings: [UInt64] = []
        for _ in 0..<9 {
            guard case .reconnect(let delay) = live.closed(server: "https://relay.test", code: 1006, upgradeStatus: nil) else {
                Issue.record("an abnormal close reconnects")
                return
            }
            ceilings.append(delay)
        }
        let expected: [UInt64] = [1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000]
        for (delay, ceiling) in zip(ceilings, expected) {
            #expect(delay >= ceiling / 2 && delay <= ceiling, "\(delay) within [\(ceiling / 2), \(ceiling)]")
        }
        // A subscribed answer resets the backoff.
        _ = try await live.process(server: "https://relay.test", frame: Array(LiveFrame.subscribed(ids: 1, mailbox: true).text.utf8))
        guard case .reconnect(let first) = live.closed(server: "https://relay.test", code: 1001, upgradeStatus: nil) else { return }
        #expect(first <= 1000)
        // Even a normal close from the relay is followed by a reconnect (the host stops on its own).
        guard case .reconnect = live.closed(server: "https://relay.test", code: 1000, upgradeStatus: nil) else {
            Issue.record("a close the relay sent is followed by a reconnect")
            return
        }
        // A reference relay (404) is polled and left out of the connections.
        #expect(live.closed(server: "https://relay.test", code: nil, upgradeStatus: 404) == .poll)
        #expect(try live.connections().isEmpty)
    }
}
