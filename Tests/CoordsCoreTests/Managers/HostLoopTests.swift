import Foundation
import Testing

@testable import CoordsCore

/// The one wake (``CoordsApp/nextWake(now:)``, ``CoordsApp/due(now:)``,
/// ``CoordsApp/report(id:status:body:)``): a host that only runs the loop gets every
/// consequence the core owes — above all the reseal when a share ends, however it ends.
@Suite struct HostLoopTests {
    /// One host: performs what is due through `relay` and reports every answer, until nothing
    /// is due now. Returns the answers.
    @discardableResult
    static func runLoop(_ app: TestApp, via relay: FakeRelay) async throws -> [(HostRequest, HostAnswer)] {
        var answers: [(HostRequest, HostAnswer)] = []
        for _ in 0..<10 {
            let requests = try await app.app.due()
            if requests.isEmpty { return answers }
            for request in requests {
                let (status, body) = relay.handle(request.request)
                answers.append((request, try await app.app.report(id: request.id, status: status, body: body)))
            }
        }
        Issue.record("the loop never ran out of requests")
        return answers
    }

    /// Pause, remove, block and a share's end: after each, a host that only runs its loop sends
    /// the reseal, and the friend whose share ended can no longer open the newest blob, while
    /// a friend still shared with can.
    @Test(arguments: ["pause", "remove", "block", "expire"])
    func everyEndOfAShareIsResealedByTheLoopAlone(_ how: String) async throws {
        let t = try await Trio()
        try await t.befriend(t.alice, t.bob)
        try await t.befriend(t.alice, t.carol)
        let bobID = try t.bob.app.wallet.id()
        let now = t.alice.clock.milliseconds
        if how == "expire" { _ = try await t.alice.app.friends.share(id: bobID, until: now + 5_000) }
        _ = try await t.alice.app.outbox.queueUpload(try fix(47.3769, 8.5417, at: now))
        try await Self.runLoop(t.alice, via: t.relay)
        #expect(try t.alice.app.outbox.pending().isEmpty)
        #expect(try await t.bob.fetch(via: t.relay).updated.first?.location?.latitude == 47.3769)

        switch how {
        case "pause": _ = try await t.alice.app.friends.pause(id: bobID)
        case "remove": try await t.alice.app.friends.remove(id: bobID)
        case "block": _ = try await t.alice.app.friends.setTrust(id: bobID, .blocked)
        default:
            #expect(try t.alice.app.nextWake().map { $0 <= now + 5_000 } == true)  // the loop wakes for the end
            t.alice.clock.advance(byMilliseconds: 5_000)
        }
        let answers = try await Self.runLoop(t.alice, via: t.relay)
        let reseals = answers.filter { $0.0.outboxKind == .reseal }
        #expect(reseals.count == 1, "\(how)")
        #expect(reseals.first?.1 == .outbox(OutboxReport(id: reseals.first?.0.outboxID ?? 0, kind: .reseal, decision: .delivered)))
        let bobSees = try await t.bob.fetch(via: t.relay)
        #expect(bobSees.updated.isEmpty && bobSees.rejected.map(\.error) == [.notARecipient], "\(how)")
        let carolSees = try await t.carol.fetch(via: t.relay)
        #expect(carolSees.rejected.isEmpty, "\(how)")  // Carol still opens the newest blob
        #expect(try await Self.runLoop(t.alice, via: t.relay).allSatisfy { $0.0.outboxKind == nil })  // owed once
    }

    /// Adding a friend after a fix was shared: the loop reseals the last fix for them at once.
    @Test func anAddedFriendGetsTheLastFixThroughTheLoop() async throws {
        let t = try await Trio()
        try await t.befriend(t.alice, t.bob)
        let now = t.alice.clock.milliseconds
        _ = try await t.alice.app.outbox.queueUpload(try fix(1, 2, at: now))
        try await Self.runLoop(t.alice, via: t.relay)
        try await t.befriend(t.alice, t.carol)
        let answers = try await Self.runLoop(t.alice, via: t.relay)
        #expect(answers.filter { $0.0.outboxKind == .reseal }.count == 1)
        #expect(try await t.carol.fetch(via: t.relay).updated.first?.location?.latitude == 1)
    }

    /// A reseal owed and a newer upload queued before the host ran: the upload alone goes (it
    /// already leaves the friend out), and the owed reseal leaves the outbox unsent.
    @Test func aNewerUploadMakesAnOwedResealUnnecessary() async throws {
        let t = try await Trio()
        try await t.befriend(t.alice, t.bob)
        let bobID = try t.bob.app.wallet.id()
        let now = t.alice.clock.milliseconds
        _ = try await t.alice.app.outbox.queueUpload(try fix(1, 2, at: now))
        try await Self.runLoop(t.alice, via: t.relay)
        _ = try await t.alice.app.friends.pause(id: bobID)
        _ = try await t.alice.app.outbox.queueUpload(try fix(3, 4, at: now + 1))
        let answers = try await Self.runLoop(t.alice, via: t.relay)
        #expect(answers.compactMap(\.0.outboxKind) == [.upload])
        #expect(try t.alice.app.outbox.pending().isEmpty)
        #expect(try await t.bob.fetch(via: t.relay).rejected.map(\.error) == [.notARecipient])
    }

    /// The loop's schedule: a fetch and a mailbox read at once after opening, then not again
    /// before the interval; a failed read backs off; nothing is handed out twice while in
    /// flight; an unknown ticket changes nothing; no identity, no requests.
    @Test func theLoopHandsOutEachRequestOnceAndWakesOnTime() async throws {
        let t = try await Trio()
        try await t.befriend(t.alice, t.bob)
        let alice = t.alice.app
        let now = t.alice.clock.milliseconds
        let first = try await alice.due()
        #expect(Set(first.map(\.purpose)).isSuperset(of: [.fetch, .mailbox, .prekeys]))
        #expect(try await alice.due().isEmpty)  // all in flight
        // Nothing is due while all is in flight: the host is not told to wake at once (no spinning).
        #expect(try alice.nextWake() == now + HostLoop.inFlightLimit)
        for request in first {
            let (status, body) = t.relay.handle(request.request)
            let answer = try await alice.report(id: request.id, status: status, body: body)
            switch request.purpose {
            case .fetch:
                var nothingNew = FetchOutcome()
                nothingNew.unchanged = [try t.bob.app.wallet.id()]
                #expect(answer == .locations(nothingNew))
            case .prekeys: #expect(answer == .prekeys(stock: nil))  // refused for good: looked at again in 10 minutes
            case .mailbox:
                guard case .failed(let at, _) = answer else {
                    Issue.record("the fake relay refuses \(request.purpose): \(answer)")
                    continue
                }
                #expect(at == now + 1_000)  // the backoff's first step
            default: break
            }
        }
        #expect(try await alice.report(id: first[0].id, status: 200) == .unknown)  // reported already
        #expect(try alice.nextWake() == now + 1_000)
        t.alice.clock.advance(byMilliseconds: 1_000)
        #expect(try await alice.due().map(\.purpose) == [.mailbox])  // the fetch waits for its interval
        t.alice.clock.advance(byMilliseconds: 59_000)
        #expect(try await alice.due().map(\.purpose).contains(.fetch))

        // A request never reported is handed out again after two minutes.
        t.alice.clock.advance(byMilliseconds: HostLoop.inFlightLimit)
        #expect(try await alice.due().map(\.purpose).contains(.fetch))

        // Right after opening, everything periodic is due: the wake is now, never 0.
        let reopened = try TestApp(name: "reopened")
        _ = try await reopened.app.wallet.createIdentity(name: "R", server: "https://relay.test")
        #expect(try reopened.app.nextWake() == reopened.clock.milliseconds)

        let stranger = try TestApp(name: "stranger")
        #expect(try await stranger.app.due().isEmpty)
        #expect(try stranger.app.nextWake() == nil)
    }

    /// A hostile or broken answer never makes the loop spin or throw: garbage to every request is
    /// a failure with a backoff (or a refusal), and the next wake is in the future.
    @Test func garbageAnswersBackOffInsteadOfSpinning() async throws {
        let t = try await Trio()
        try await t.befriend(t.alice, t.bob)
        let alice = t.alice.app
        let now = t.alice.clock.milliseconds
        _ = try await alice.outbox.queueUpload(try fix(1, 2, at: now))
        let garbage: [[UInt8]] = [Array("{\"packets\":7}".utf8), Array(repeating: 0xFF, count: 4096), [], Array("null".utf8)]
        for (index, request) in try await alice.due().enumerated() {
            let answer = try await alice.report(id: request.id, status: 200, body: garbage[index % garbage.count])
            switch answer {
            case .failed(let at, _): #expect(at > now, "\(request.purpose)")
            case .outbox, .prekeys, .bundle, .locations, .acknowledged: break
            case .messages, .unknown: Issue.record("\(request.purpose): \(answer)")
            }
        }
        #expect(try alice.nextWake().map { $0 > now } == true)
        #expect(try await alice.due().isEmpty)  // nothing handed out again at once
    }

    /// Without a fetch interval nothing is fetched until the host says so (a push, a live notice).
    @Test func withoutAnIntervalFetchNowDecides() async throws {
        let t = try await Trio()
        try await t.befriend(t.alice, t.bob)
        let alice = t.alice.app
        alice.fetchInterval = nil
        for request in try await alice.due() {
            let (status, body) = t.relay.handle(request.request)
            try await alice.report(id: request.id, status: status, body: body)
        }
        t.alice.clock.advance(byMilliseconds: 3_600_000)
        #expect(try await !alice.due().contains { $0.purpose == .fetch })
        alice.fetchNow()
        #expect(try await alice.due().contains { $0.purpose == .fetch })
    }

    /// While a relay's live connection is confirmed, the friends watched there and the mailbox
    /// are not fetched periodically and the next wake leaves them out (an idle host sleeps);
    /// a friend not watched (added since, or on another relay) is still fetched; a connection
    /// the host stops or loses, and fetchNow, bring the periodic fetch back at once.
    @Test func whatALiveConnectionWatchesIsNotFetchedPeriodically() async throws {
        let t = try await Trio()
        try await t.befriend(t.alice, t.bob)
        let alice = t.alice.app
        try await Self.runLoop(t.alice, via: t.relay)
        let connection = try #require(try alice.live.connections().first { $0.mailbox })
        #expect(connection.ids == [try t.bob.app.wallet.id()])
        _ = try alice.live.opened(server: connection.server)
        // Opened but not yet confirmed: still fetched.
        t.alice.clock.advance(byMilliseconds: 60_000)
        let unconfirmed = try await alice.due()
        #expect(unconfirmed.contains { $0.purpose == .fetch })
        for request in unconfirmed { _ = try await alice.report(id: request.id, status: 0) }
        let confirmed = try await alice.live.process(server: connection.server, frame: Array(LiveFrame.subscribed(ids: 1, mailbox: true).text.utf8))
        #expect(confirmed == .subscribed(ids: 1, mailbox: true))
        for _ in 0..<3 {
            t.alice.clock.advance(byMilliseconds: 61_000)
            let due = try await alice.due()
            #expect(!due.contains { $0.purpose == .fetch || $0.purpose == .mailbox }, "\(due.map(\.purpose))")
            for request in due {
                let (status, body) = t.relay.handle(request.request)
                _ = try await alice.report(id: request.id, status: status, body: body)
            }
        }
        let now = t.alice.clock.milliseconds
        #expect(try alice.nextWake().map { $0 > now + 60_000 } == true)  // no periodic wake

        // A friend on a relay without a connection is fetched, the watched one is not.
        let carol = try Ed25519SigningKey.generate().publicKey.base64URL
        _ = try await alice.friends.add(id: carol, server: "https://other.test", name: "Carol")
        #expect(try alice.nextWake().map { $0 <= now + 60_000 } == true)
        t.alice.clock.advance(byMilliseconds: 61_000)
        let fetches = try await alice.due().filter { $0.purpose == .fetch }
        #expect(fetches.map(\.request.url) == ["https://other.test/api/location"])
        for request in fetches { _ = try await alice.report(id: request.id, status: 0) }

        // fetchNow fetches everything, watched or not.
        alice.fetchNow()
        let asked = try await alice.due()
        #expect(Set(asked.filter { $0.purpose == .fetch }.map(\.request.url)) == ["https://relay.test/api/location", "https://other.test/api/location"])
        #expect(asked.contains { $0.purpose == .mailbox })
        for request in asked { _ = try await alice.report(id: request.id, status: 0) }

        // The host stops the connection: the periodic fetch of Bob and the mailbox come back.
        alice.live.stopped(server: connection.server)
        t.alice.clock.advance(byMilliseconds: 61_000)
        let after = try await alice.due()
        #expect(after.contains { $0.purpose == .fetch && $0.request.url == "https://relay.test/api/location" })
        #expect(after.contains { $0.purpose == .mailbox })
        for request in after { _ = try await alice.report(id: request.id, status: 0) }

        // A connection lost (closed) does the same.
        _ = try alice.live.opened(server: connection.server)
        _ = try await alice.live.process(server: connection.server, frame: Array(LiveFrame.subscribed(ids: 1, mailbox: false).text.utf8))
        t.alice.clock.advance(byMilliseconds: 120_000)
        let watched = try await alice.due()
        #expect(!watched.contains { $0.purpose == .fetch && $0.request.url == "https://relay.test/api/location" })
        #expect(watched.contains { $0.purpose == .mailbox })  // the relay did not confirm the mailbox
        for request in watched { _ = try await alice.report(id: request.id, status: 0) }
        _ = alice.live.closed(server: connection.server, code: 1006, upgradeStatus: nil)
        let lost = t.alice.clock.milliseconds
        #expect(try alice.nextWake().map { $0 <= lost + 60_000 } == true)
        t.alice.clock.advance(byMilliseconds: 61_000)
        #expect(try await alice.due().contains { $0.purpose == .fetch && $0.request.url == "https://relay.test/api/location" })
    }
}
