import Foundation
import Testing

@testable import CoordsCore

/// Expiring and paused shares (PROTOCOL.md §9.3): the end is exact on the injected clock, an
/// ended share is resealed without the friend at once, and nothing widens a share by accident.
@Suite struct SharingTests {
    /// Sends a prepared reseal through `relay` and marks it like any upload.
    static func send(_ upload: PreparedUpload, from app: TestApp, via relay: FakeRelay) async throws {
        let (status, body) = relay.handle(upload.request)
        guard (200..<300).contains(status) else { throw RelayAPI.error(status: status, body: body) }
        try await app.app.location.markUploadSucceeded(fixTimestamp: upload.fixTimestamp)
    }

    @Test func aShareEndsAtExactlyItsTimeOnTheInjectedClock() async throws {
        let t = try await Trio()
        try await t.befriend(t.alice, t.bob)
        let bobID = try t.bob.app.wallet.id()
        let start = t.alice.clock.milliseconds
        let end = start + 2 * 3_600_000
        let friend = try await t.alice.app.friends.share(id: bobID, until: end)
        #expect(friend.sharing == .until && friend.shareUntil == end)
        #expect(try t.alice.app.location.nextShareExpiry() == end)

        t.alice.clock.set(milliseconds: end - 1)
        #expect(try t.alice.app.friends.shareRecipients().count == 1)
        #expect(try t.alice.app.friends.friend(id: bobID)?.sharing == .until)
        #expect(try await t.alice.app.location.prepareUpload(try fix(1, 1, at: end - 1)).recipientCount == 2)

        t.alice.clock.set(milliseconds: end)  // the end is exclusive
        #expect(try t.alice.app.friends.shareRecipients().isEmpty)
        #expect(try t.alice.app.friends.friend(id: bobID)?.sharing == .expired)
        #expect(try t.alice.app.location.nextShareExpiry() == nil)
        #expect(try await t.alice.app.location.prepareUpload(try fix(1, 1, at: end)).recipientCount == 1)
    }

    /// An upload keeps the friends it seals for between calls and reads them again when the
    /// friends table's change stamp moves: every kind of change must count at once.
    @Test func theFriendsAnUploadSealsForFollowEveryChange() async throws {
        let t = try await Trio()
        let alice = t.alice.app
        var at = t.alice.clock.milliseconds - 1_000
        func recipients() async throws -> Int {
            at += 1
            return try await alice.location.prepareUpload(try fix(1, 1, at: at)).recipientCount
        }
        #expect(try await recipients() == 1)
        try await t.befriend(t.alice, t.bob)
        #expect(try await recipients() == 2)
        try await t.befriend(t.alice, t.carol)
        #expect(try await recipients() == 3)
        let bobID = try t.bob.app.wallet.id()
        let carolID = try t.carol.app.wallet.id()
        _ = try await alice.friends.setTrust(id: bobID, .blocked)
        #expect(try await recipients() == 2)
        _ = try await alice.friends.setTrust(id: bobID, .verified)
        #expect(try await recipients() == 3)
        _ = try await alice.friends.update(id: carolID, shareWith: false)
        #expect(try await recipients() == 2)
        _ = try await alice.friends.share(id: carolID, until: nil)
        _ = try await alice.friends.pause(id: bobID)
        #expect(try await recipients() == 2)
        try await alice.friends.remove(id: carolID)
        #expect(try await recipients() == 1)
        _ = try await alice.friends.share(id: bobID, until: t.alice.clock.milliseconds + 10)
        #expect(try await recipients() == 2)
        t.alice.clock.advance(byMilliseconds: 10)  // the share's end needs no change to count
        #expect(try await recipients() == 1)
    }

    @Test func anEndedShareIsResealedWithoutThatFriendAndTheyCannotOpenIt() async throws {
        let t = try await Trio()
        try await t.befriend(t.alice, t.bob)
        try await t.befriend(t.alice, t.carol)
        let bobID = try t.bob.app.wallet.id()
        let start = t.alice.clock.milliseconds
        #expect(try await t.alice.app.location.prepareReseal() == nil)  // nothing sealed yet
        _ = try await t.alice.app.friends.share(id: bobID, until: start + 1_000)
        try await t.alice.share(try fix(47.3769, 8.5417, at: start), via: t.relay)
        #expect(try await t.bob.fetch(via: t.relay).updated.first?.location?.latitude == 47.3769)
        #expect(try await t.alice.app.location.prepareReseal() == nil)  // nobody lost their share yet

        t.alice.clock.advance(byMilliseconds: 1_000)
        let reseal = try #require(try await t.alice.app.location.prepareReseal())
        #expect(reseal.fixTimestamp == start && reseal.recipientCount == 2)  // the same fix, for Alice and Carol
        try await Self.send(reseal, from: t.alice, via: t.relay)
        let bobSees = try await t.bob.fetch(via: t.relay)
        #expect(bobSees.updated.isEmpty && bobSees.rejected.map(\.error) == [.notARecipient])
        #expect(try await t.carol.fetch(via: t.relay).updated.first?.location?.latitude == 47.3769)  // Carol still opens it
        #expect(try await t.alice.app.location.prepareReseal() == nil)  // done once

        // Pausing Carol: resealed for Alice alone; resuming shares again from the next upload.
        let carolID = try t.carol.app.wallet.id()
        #expect(try await t.alice.app.friends.pause(id: carolID).sharing == .paused)
        let paused = try #require(try await t.alice.app.location.prepareReseal())
        #expect(paused.recipientCount == 1)
        try await Self.send(paused, from: t.alice, via: t.relay)
        #expect(try await t.carol.fetch(via: t.relay).rejected.map(\.error) == [.notARecipient])
        #expect(try await t.alice.app.friends.share(id: carolID, until: nil).sharing == .on)
        #expect(try await t.alice.app.location.prepareReseal() == nil)  // widening needs no reseal
        t.alice.clock.advance(byMilliseconds: 1_000)
        try await t.alice.share(try fix(47.4, 8.6, at: t.alice.clock.milliseconds), via: t.relay)
        #expect(try await t.carol.fetch(via: t.relay).updated.first?.location?.latitude == 47.4)
    }

    @Test func removingAndAddingAgainOrRestoringABackupNeverWidensAShare() async throws {
        let t = try await Trio()
        try await t.befriend(t.alice, t.bob)
        try await t.befriend(t.alice, t.carol)
        let bobID = try t.bob.app.wallet.id()
        let carolID = try t.carol.app.wallet.id()
        let start = t.alice.clock.milliseconds
        let backup = try await t.alice.app.wallet.exportBackup(passphrase: "backup words")  // both shared, no end

        _ = try await t.alice.app.friends.share(id: bobID, until: start + 500)
        _ = try await t.alice.app.friends.pause(id: carolID)
        t.alice.clock.advance(byMilliseconds: 1_000)
        // Removed and added again: Bob's share stays expired, Carol's paused.
        try await t.alice.app.friends.remove(id: bobID)
        try await t.alice.app.friends.remove(id: carolID)
        let bob = try await t.alice.app.friends.add(link: try t.bob.app.wallet.friendLink())
        let carol = try await t.alice.app.friends.add(link: try t.carol.app.wallet.friendLink())
        #expect(bob.sharing == .expired && bob.shareUntil == start + 500)
        #expect(carol.sharing == .paused)
        #expect(try t.alice.app.friends.shareRecipients().isEmpty)

        // The older backup says both were shared with no end: restoring it keeps the narrower state.
        _ = try await t.alice.app.wallet.importBackup(backup, passphrase: "backup words")
        #expect(try t.alice.app.friends.friend(id: bobID)?.sharing == .expired)
        #expect(try t.alice.app.friends.friend(id: carolID)?.sharing == .paused)

        // A backup carries the end time to another device.
        let later = try await t.alice.app.wallet.exportBackup(passphrase: "backup words")
        let restored = try TestApp(name: "alice2", clock: t.alice.clock)
        _ = try await restored.app.wallet.importBackup(later, passphrase: "backup words")
        #expect(try restored.app.friends.friend(id: bobID)?.shareUntil == start + 500)
        #expect(try restored.app.friends.friend(id: bobID)?.sharing == .expired)
        #expect(try restored.app.friends.friend(id: carolID)?.sharing == .paused)
    }
}
