import Testing

@testable import CoordsCore

@Suite struct OutboxTests {
    static let request = PreparedRequest(
        url: "https://relay.test/api/location", method: "PUT",
        headers: [.init(name: "Content-Type", value: "application/json")], body: Array("{}".utf8))

    @Test func backoffDoublesFromOneSecondToOneMinute() {
        #expect((0...9).map { OutboxManager.backoff(attempts: $0) } == [0, 1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000])
        #expect(OutboxManager.backoff(attempts: .max) == 60_000)
    }

    @Test func queuedRequestsSurviveARestartAndRetryWithBackoff() async throws {
        let app = try TestApp(name: "outbox")
        let start = app.clock.milliseconds
        let first = try await app.app.outbox.enqueue(
            kind: .upload, request: Self.request, reference: "42",
            location: try Location(latitude: 1, longitude: 2, timestamp: 42))
        let second = try await app.app.outbox.enqueue(kind: .delete, request: Self.request)
        #expect(second == first + 1)
        #expect(try app.app.outbox.listDue().map(\.id) == [first, second])

        try await app.app.outbox.markFailed(id: first, error: "connection refused")
        var entry = try #require(try app.app.outbox.pending().first { $0.id == first })
        #expect(entry.item.attempts == 1)
        #expect(entry.item.nextAttemptAt >= start + 1000 && entry.item.nextAttemptAt <= start + 1200)  // 1 s + ≤ 20 % jitter
        #expect(entry.item.lastError == "connection refused")
        #expect(try app.app.outbox.listDue().map(\.id) == [second])

        try app.reopen()
        entry = try #require(try app.app.outbox.pending().first { $0.id == first })
        #expect(entry.item.reference == "42" && entry.item.location?.latitude == 1 && entry.item.request == Self.request)
        for _ in 0..<10 { try await app.app.outbox.markFailed(id: first, error: "down") }
        entry = try #require(try app.app.outbox.pending().first { $0.id == first })
        #expect(entry.item.attempts == 11)
        #expect(entry.item.nextAttemptAt >= start + 60_000 && entry.item.nextAttemptAt <= start + 72_000)
        app.clock.advance(byMilliseconds: 72_001)
        #expect(try app.app.outbox.listDue().map(\.id) == [first, second])

        try await app.app.outbox.markDelivered(id: first)
        try await app.app.outbox.markDelivered(id: first)  // reported twice: fine
        try await app.app.outbox.remove(id: second)
        #expect(try app.app.outbox.pending().isEmpty)
        // Ids keep increasing after the queue emptied, also across a restart.
        #expect(try await app.app.outbox.enqueue(kind: .upload, request: Self.request) == second + 1)
        try app.reopen()
        #expect(try await app.app.outbox.enqueue(kind: .upload, request: Self.request) == second + 2)
    }

    @Test func outboxMessagesComeThroughNextUpdate() async throws {
        let app = try TestApp(name: "outbox-updates")
        let id = try await app.app.outbox.enqueue(kind: .upload, request: Self.request)
        #expect(app.app.nextUpdate(timeout: .seconds(1)) == .update(.outbox(.queued(id: id, kind: .upload))))
        try await app.app.outbox.markDelivered(id: id)
        #expect(app.app.nextUpdate(timeout: .seconds(1)) == .update(.outbox(.delivered(id: id, kind: .upload))))
    }

    @Test func requestRecordRoundTrips() throws {
        #expect(try PreparedRequest(json: Self.request.json) == Self.request)
        #expect(throws: WireError.self) { try PreparedRequest(json: .object(["url": .string("x")])) }
        #expect(throws: WireError.self) {
            try PreparedRequest(json: .object(["url": .string("x"), "method": .string("PUT"), "body_base64": .string("!!")]))
        }
    }

    /// Regression: a damaged id counter was read as 1, so ids were handed out again although
    /// they are promised never to repeat. Now it is an error and nothing is queued.
    @Test func aDamagedIdCounterIsAnErrorNotARestartAtOne() async throws {
        let app = try TestApp(name: "outbox-counter")
        let first = try await app.app.outbox.enqueue(kind: .delete, request: Self.request)
        try await app.app.outbox.markDelivered(id: first)
        for damaged in ["", "12x", "-3", " 7", "18446744073709551616", "true"] {
            try app.app.context.database.write { tx in try tx.open(Tables.settings).put(SettingKey.outboxNextID.name, damaged) }
            await #expect(throws: StoreError.self, "\(damaged)") { try await app.app.outbox.enqueue(kind: .delete, request: Self.request) }
        }
        #expect(try app.app.outbox.pending().isEmpty)
        try app.app.context.database.write { tx in try tx.open(Tables.settings).put(SettingKey.outboxNextID, 40) }
        #expect(try await app.app.outbox.enqueue(kind: .delete, request: Self.request) == 40)
        // The last id: refused instead of wrapping around.
        try app.app.context.database.write { tx in try tx.open(Tables.settings).put(SettingKey.outboxNextID, .max) }
        await #expect(throws: StoreError.self) { try await app.app.outbox.enqueue(kind: .delete, request: Self.request) }
    }

    @Test func typedSettingsReadBackStrictly() throws {
        #expect(Bool(settingText: "true") == true && Bool(settingText: "false") == false && Bool(settingText: "TRUE") == nil)
        #expect(UInt64(settingText: "0") == 0 && UInt64(settingText: "+1") == nil && UInt64(settingText: "") == nil)
        #expect(UInt64(settingText: UInt64.max.settingText) == .max)
        let app = try TestApp(name: "settings")
        try app.app.context.database.write { tx in try tx.open(Tables.settings).put(SettingKey.strictMode.name, "yes") }
        #expect(throws: StoreError.self) { try app.app.wallet.isStrictMode() }
    }
}
