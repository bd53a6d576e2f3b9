import Testing

@testable import CoordsCore

/// The copies the managers keep of stamped tables (``StampedCache``, ``UploadStateCache``): a copy
/// serves only the stamp it was read at, and an older reading never replaces a newer copy.
@Suite struct StampedCacheTests {
    struct Unexpected: Error {}

    @Test func aCopyServesOnlyItsStamp() throws {
        let cache = StampedCache<Int>()
        #expect(cache.value(at: 1) { 10 } == 10)
        #expect(try cache.value(at: 1) { throw Unexpected() } == 10)  // kept: not read again
        #expect(cache.value(at: 2) { 20 } == 20)  // the table moved: read again
        #expect(cache.value(at: 1) { 11 } == 11)  // an older snapshot reads its own value…
        #expect(try cache.value(at: 2) { throw Unexpected() } == 20)  // …without replacing the newer copy
    }

    @Test func theUploadStateCopyFollowsEveryWriteOfTheRow() async throws {
        let app = try TestApp(name: "stamped")
        _ = try await app.app.wallet.createIdentity(name: "A", server: "https://relay.test")
        let cache = app.app.context.uploadStates
        let first = try app.app.context.database.read { tx in try cache.read(tx) }
        #expect(first == UploadState())
        // A write that does not go through the cache (a delete signs a time) is seen at once.
        _ = try await app.app.location.prepareDelete()
        let afterDelete = try app.app.context.database.read { tx in try cache.read(tx) }
        #expect(afterDelete.lastSignedTimestamp != nil)
        #expect(afterDelete == (try app.app.context.database.read { tx in try tx.open(Tables.uploadState).get(UploadState.key) }))
        // A queued upload recorded through the cache is what the store holds.
        _ = try await app.app.outbox.queueUpload(try fix(47.1, 8.5, at: app.clock.milliseconds))
        let stored = try app.app.context.database.read { tx in try tx.open(Tables.uploadState).get(UploadState.key) }
        #expect(try app.app.context.database.read { tx in try cache.read(tx) } == stored)
        #expect(stored?.pendingFixes == [app.clock.milliseconds])
    }
}
