import Foundation
import Testing

@_spi(Testing) @testable import CoordsCore

/// Issue 40: errors that were silently ignored, each now a decision with a test.
@Suite struct SwallowedErrorTests {
    /// Regression: `setProfile(name: nil, server: …)` read the current profile with `try?`, so a
    /// store read error wrote an empty name back. Now the error reaches the caller and nothing changes.
    @Test func aProfileReadErrorIsThrownNotWrittenBackAsAnEmptyName() async throws {
        let directory = try Fixtures.makeTemporaryDirectory("profile-read-error")
        defer { try? FileManager.default.removeItem(at: directory) }
        let injector = StoreFaultInjector(operations: [.beginRead])
        var options = TestApp.options(passphrase: "p", clock: ManualClock(milliseconds: 1_800_000_000_000))
        options.store.faultInjector = injector
        let app = try CoordsApp.open(directory: directory.path, options: options)
        defer { app.close() }
        _ = try await app.wallet.createIdentity(name: "Alice", server: "https://relay.test")
        injector.failCall(1, with: EIO)
        await #expect(throws: StoreError.self) { try await app.wallet.setProfile(name: nil, server: "https://other.test") }
        #expect(try app.wallet.profile() == Profile(name: "Alice", server: "https://relay.test"))
        try await app.wallet.setProfile(name: nil, server: "https://other.test")
        #expect(try app.wallet.profile() == Profile(name: "Alice", server: "https://other.test"))
    }

    /// Regression: resolving a conflict skipped (`try?`) a candidate whose stored key did not
    /// parse, leaving it unretired. Now the damage is an error and the conflict stays as it was.
    @Test func aDamagedConflictCandidateFailsTheResolutionInsteadOfStayingUsable() async throws {
        let app = try TestApp(name: "conflict-damage")
        _ = try await app.app.wallet.createIdentity(name: "Bob", server: "https://relay.test")
        let alice = try Ed25519SigningKey.generate().publicKey.base64URL
        let owner = try Ed25519SigningKey.generate().publicKey.base64URL
        _ = try await app.app.friends.add(id: alice, server: "https://relay.test", name: "Alice")
        let key = try Ed25519PublicKey(base64URL: alice)
        try app.app.context.database.write { tx in
            let friends = try tx.open(Tables.friends)
            var record = try #require(try friends.get(key))
            record.trust = .conflict
            record.conflict = [
                RotationCandidate(key: owner, server: "https://relay.test"), RotationCandidate(key: "not-a-key", server: "https://evil.test")
            ]
            try friends.put(key, record)
        }
        await #expect(throws: StoreError.self) { try await app.app.friends.resolveConflict(id: alice, keep: owner) }
        #expect(try app.app.friends.friend(id: alice)?.trust == .conflict, "nothing changed")
        #expect(try app.app.context.database.read { tx in try tx.open(Tables.retiredKeys).entries().count } == 0)
    }
}
