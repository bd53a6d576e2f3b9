import Testing

@testable import CoordsCore

/// The sans-IO delivery driver: `due` hands out requests (signed again when stale), `report`
/// takes the relay's answer and the core decides, `nextWake` says when to come back.
@Suite struct OutboxDriverTests {
    /// An app with an identity and a server, and one fix sealed and queued like a host would.
    struct Queued {
        let app: TestApp
        let relay = FakeRelay()
        let fix: Location
        let id: UInt64
        let upload: PreparedUpload

        init(_ name: String) async throws {
            app = try TestApp(name: name)
            _ = try await app.app.wallet.createIdentity(name: "Alice", server: "https://relay.test")
            relay.now = app.clock.milliseconds / 1000
            fix = try Location(latitude: 48.85, longitude: 2.35, timestamp: app.clock.milliseconds)
            upload = try await app.app.location.prepareUpload(fix)
            id = try await app.app.outbox.enqueue(kind: .upload, request: upload.request, reference: String(fix.timestamp), location: fix)
        }
    }

    static func timestamp(_ request: PreparedRequest) -> UInt64? { OutboxManager.signedAt(request) }

    /// Every reconcile message waiting now.
    static func drain(_ app: CoordsApp) -> [AppUpdate] {
        var updates: [AppUpdate] = []
        while case .update(let update) = app.nextUpdate(timeout: .zero) { updates.append(update) }
        return updates
    }

    static func refusal(_ code: String) -> [UInt8] {
        JSONValue.object(["error": .string(code), "message": .string("refused: \(code)")]).serialized()
    }

    @Test func aFreshRequestIsHandedOutAsQueuedAndDeliveryRecordsTheUpload() async throws {
        let q = try await Queued("driver-fresh")
        let due = try await q.app.app.outbox.due()
        #expect(due.map(\.id) == [q.id] && due[0].item.request == q.upload.request)
        let (status, body) = q.relay.handle(due[0].item.request)
        #expect(try await q.app.app.outbox.report(id: q.id, status: status, body: body) == OutboxReport(id: q.id, kind: .upload, decision: .delivered))
        // Recorded in the same transaction: the fix is acknowledged, the entry gone.
        #expect(try q.app.app.location.uploadState().lastUploadedFix == q.fix.timestamp)
        #expect(try q.app.app.outbox.pending().isEmpty && q.app.app.outbox.nextWake() == nil)
        // Reported twice (a host that lost track): nothing changes.
        #expect(try await q.app.app.outbox.report(id: q.id, status: 204).decision == .unknown)
    }

    @Test func aStaleSignatureIsSignedAgainBeforeItIsHandedOut() async throws {
        let q = try await Queued("driver-stale")
        let before = try #require(Self.timestamp(q.upload.request))
        q.app.clock.advance(byMilliseconds: (OutboxManager.signAgainAfterSeconds - 1) * 1000)
        #expect(try await q.app.app.outbox.due()[0].item.request == q.upload.request, "still inside the window")
        q.app.clock.advance(byMilliseconds: 2000)
        let due = try await q.app.app.outbox.due()
        let after = try #require(Self.timestamp(due[0].item.request))
        #expect(after > before && after == q.app.clock.milliseconds / 1000)
        #expect(try q.app.app.outbox.pending()[0].item.request == due[0].item.request, "the fresh request is stored")
        q.relay.now = q.app.clock.milliseconds / 1000
        let (status, body) = q.relay.handle(due[0].item.request)
        #expect(status == 204, "the relay verifies the new signature")
        #expect(try await q.app.app.outbox.report(id: q.id, status: status, body: body).decision == .delivered)
        #expect(try q.app.app.location.uploadState().lastUploadedFix == q.fix.timestamp)
    }

    @Test func anUploadANewerOneReplacedIsDroppedNotSent() async throws {
        let q = try await Queued("driver-replaced")
        q.app.clock.advance(byMilliseconds: 5000)
        let newer = try Location(latitude: 48.86, longitude: 2.36, timestamp: q.app.clock.milliseconds)
        let upload = try await q.app.app.location.prepareUpload(newer)
        let id = try await q.app.app.outbox.enqueue(kind: .upload, request: upload.request, reference: String(newer.timestamp), location: newer)
        #expect(try await q.app.app.outbox.report(id: id, status: 204).decision == .delivered)
        _ = Self.drain(q.app.app)
        q.app.clock.advance(byMilliseconds: 300_000)
        #expect(try await q.app.app.outbox.due().isEmpty, "the older fix is not sealed again")
        #expect(try q.app.app.outbox.pending().isEmpty)
        let updates = Self.drain(q.app.app)
        #expect(updates.contains(.outbox(.dropped(id: q.id, kind: .upload, reason: "a newer upload replaced it"))))
    }

    @Test func theCoreDecidesWhatEachAnswerMeans() async throws {
        let q = try await Queued("driver-decisions")
        let now = q.app.clock.milliseconds
        let outbox = q.app.app.outbox
        // No answer, rate limiting, a relay outage: retried after the backoff, with the reason.
        for (status, body, reason) in [
            (0, Array("connection refused".utf8), "connection refused"), (0, [UInt8](), "no answer from the relay"),
            (429, Self.refusal("rate_limited"), "relay answered 429 (rate_limited): refused: rate_limited"),
            (503, Array("down".utf8), "relay answered 503: down"), (408, [], "relay answered 408: (empty body)")
        ] {
            let report = try await outbox.report(id: q.id, status: status, body: body)
            guard case .retry(let at, let why) = report.decision else {
                Issue.record("\(status) is retried: \(report)")
                continue
            }
            #expect(why == reason)
            let attempts = try #require(try outbox.pending().first).item.attempts
            let delay = OutboxManager.backoff(attempts: attempts)
            #expect(at >= now + delay && at <= now + delay + delay / 5, "backoff with at most 20 % jitter")
            #expect(try outbox.nextWake() == at)
            #expect(try await outbox.due().isEmpty)
            #expect(try await outbox.due(ignoringBackoff: true).count == 1)
        }
        // A refused signed time: signed again at the next due, even though the request is young.
        let report = try await outbox.report(id: q.id, status: 401, body: Self.refusal("timestamp_too_old"))
        guard case .signAgain(let at, _) = report.decision else {
            Issue.record("\(report)")
            return
        }
        q.app.clock.set(milliseconds: at)
        let resigned = try await outbox.due()
        #expect(resigned.count == 1 && resigned[0].item.request != q.upload.request)
        // Any other refusal: dropped with the relay's reason; a stale upload (409) too.
        let dropped = try await outbox.report(id: q.id, status: 409, body: Self.refusal("stale_upload"))
        #expect(dropped.decision == .dropped(reason: "relay answered 409 (stale_upload): refused: stale_upload"))
        #expect(try outbox.pending().isEmpty)
    }

    @Test func aClockFarOffDoesNotSignAgainForever() async throws {
        let q = try await Queued("driver-clock")
        var decisions: [OutboxDecision] = []
        for _ in 0..<(OutboxManager.signAgainLimit + 1) {
            decisions.append(try await q.app.app.outbox.report(id: q.id, status: 401, body: Self.refusal("timestamp_in_future")).decision)
        }
        #expect(decisions.dropLast().allSatisfy { if case .signAgain = $0 { true } else { false } })
        #expect(decisions.last == .dropped(reason: "relay answered 401 (timestamp_in_future): refused: timestamp_in_future"))
    }

    @Test func anEnvelopeTheRelayAlreadyHasIsDelivered() async throws {
        let p = try await MessagesManagerTests.Pair()
        let sent = try await p.alice.app.messages.send("hi", to: p.bobID)
        #expect(try await p.alice.app.outbox.report(id: sent.outboxID, status: 409, body: Self.refusal("duplicate")).decision == .delivered)
        #expect(try p.alice.app.messages.history(with: p.bobID).map(\.status) == [.sent])
        // A message is never signed again (its envelope carries its own signature and lifetime).
        let later = try await p.alice.app.messages.send("later", to: p.bobID)
        p.alice.clock.advance(byMilliseconds: 3_600_000)
        #expect(try await p.alice.app.outbox.due().map(\.item.request) == [later.request])
        // Other refusals of a message drop it: retrying the same envelope cannot help.
        let refused = try await p.alice.app.outbox.report(id: later.outboxID, status: 413, body: Self.refusal("too_large"))
        #expect(refused.decision == .dropped(reason: "relay answered 413 (too_large): refused: too_large"))
    }

    @Test func anUploadQueuedWithoutItsFixCannotBeSignedAgain() async throws {
        let q = try await Queued("driver-nofix")
        try await q.app.app.outbox.remove(id: q.id)
        let id = try await q.app.app.outbox.enqueue(kind: .upload, request: q.upload.request, reference: String(q.fix.timestamp))
        q.app.clock.advance(byMilliseconds: 600_000)
        #expect(try await q.app.app.outbox.due().isEmpty)
        #expect(try q.app.app.outbox.pending().allSatisfy { $0.id != id })
    }

    /// Found by the `outbox-answer` fuzz target: a relay's error code was kept whole, so a hostile
    /// relay's 100 KB "code" became the reason stored and shown. Code and message are cut now.
    @Test func aHostileRelaysReasonStaysShort() async throws {
        let q = try await Queued("driver-hostile-reason")
        let code = String(repeating: "c", count: 100_000)
        let body = JSONValue.object(["error": .string(code), "message": .string(String(repeating: "\u{202E}m", count: 50_000))]).serialized()
        let report = try await q.app.app.outbox.report(id: q.id, status: 400, body: body)
        guard case .dropped(let reason) = report.decision else {
            Issue.record("\(report)")
            return
        }
        #expect(reason.count <= 640 && reason.hasPrefix("relay answered 400 (" + String(repeating: "c", count: 64) + "…)"))
        let invalid = try await q.app.app.outbox.queueUpload(try Location(latitude: 1, longitude: 2, timestamp: q.app.clock.milliseconds + 1))
        let retried = try await q.app.app.outbox.report(id: invalid.id, status: 0, body: [UInt8](repeating: 0xba, count: 10_000))
        guard case .retry(_, let why) = retried.decision else {
            Issue.record("\(retried)")
            return
        }
        #expect(why.count <= 501)
    }

    @Test func aKindThisVersionDoesNotKnowReadsAsARequest() throws {
        let stored =
            #"{"attempts":0,"createdAt":1,"kind":"telemetry","nextAttemptAt":1,"#
            + #""request":{"body":"","headers":[],"method":"GET","url":"https://x.test/"}}"#
        let item = try Array(stored.utf8).withUnsafeBytes { try OutboxItem(storeBytes: $0) }
        #expect(item.kind == .request)
    }

    @Test func signedTimeIncreasesWithinASecondAndStaysNearTheClock() {
        let clock = ManualClock(milliseconds: 1_800_000_000_400)
        let signer = SignedClock(clock: .manual(clock))
        // Two prepares in the same second: strictly increasing, up to the lead ahead of the clock.
        let stamps = (0...SignedTime.maximumLead).map { _ in signer.next() }
        #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $0 < $1 })
        #expect(stamps.first == 1_800_000_000 && stamps.last == 1_800_000_000 + SignedTime.maximumLead)
        #expect(signer.next() == stamps.last, "a burst never runs further ahead than the lead")
        clock.advance(byMilliseconds: 1000)
        #expect(signer.next() == stamps.last.map { $0 + 1 })
    }
}
