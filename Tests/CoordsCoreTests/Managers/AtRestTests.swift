import Foundation
import Testing

@testable import CoordsCore

/// Nothing readable at rest (issue 39): a realistic data directory holds none of its sensitive
/// values in any encoding, before and after messages disappear and after a 1.0.0 store migrates.
@Suite struct AtRestTests {
    static let marker = "MARKER-7f3a9 meet at the fountain"
    static let server = "https://relay-secret.test"
    static let aliceName = "Alice Wonderland"
    static let bobName = "Bob Marker"
    static let carolName = "Carol Seaside"
    static let aliceFix = (latitude: 47.376887, longitude: 8.541694)
    static let bobFix = (latitude: -33.868820, longitude: 151.209296)

    /// Alice with two friends (Bob shares with her), a conversation with Bob (one disappearing
    /// message), settings, an outbox entry, and Bob's position in her cache.
    struct Scene {
        let relay = FakeRelay()
        let clock = ManualClock(milliseconds: 1_800_000_000_000)
        let alice: TestApp, bob: TestApp
        let aliceID: String, bobID: String, carolID: String
        let disappearing: String

        init() async throws {
            alice = try TestApp(name: "alice", clock: clock)
            bob = try TestApp(name: "bob", clock: clock)
            aliceID = try await alice.app.wallet.createIdentity(name: AtRestTests.aliceName, server: AtRestTests.server)
            bobID = try await bob.app.wallet.createIdentity(name: AtRestTests.bobName, server: AtRestTests.server)
            let carol = try Identity(signing: Ed25519SigningKey(seed: SecretBytes(copying: [UInt8](repeating: 0xc4, count: 32))))
            carolID = carol.publicKey.base64URL
            _ = try await alice.app.friends.add(id: bobID, server: AtRestTests.server, name: AtRestTests.bobName)
            _ = try await alice.app.friends.add(id: carolID, server: AtRestTests.server, name: AtRestTests.carolName)
            _ = try await bob.app.friends.add(id: aliceID, server: AtRestTests.server, name: AtRestTests.aliceName)
            try await alice.app.wallet.setStrictMode(false)
            // Positions both ways; Alice's next upload stays queued in her outbox.
            try await bob.share(try Location(latitude: bobFix.latitude, longitude: bobFix.longitude, timestamp: clock.milliseconds), via: relay)
            try await alice.share(try Location(latitude: aliceFix.latitude, longitude: aliceFix.longitude, timestamp: clock.milliseconds), via: relay)
            let outcome = try await alice.fetch(via: relay)
            #expect(outcome.updated.map(\.id) == [bobID])
            clock.advance(byMilliseconds: 1_000)
            _ = try await alice.app.location.prepareUpload(
                try Location(latitude: aliceFix.latitude, longitude: aliceFix.longitude, timestamp: clock.milliseconds))
            // A kept message each way, then a disappearing one from Bob.
            let sent = try await alice.app.messages.send(AtRestTests.marker + " (sent)", to: bobID)
            #expect(!sent.message.id.isEmpty)
            let fromBob = try await bob.app.messages.send(AtRestTests.marker + " (kept)", to: aliceID)
            _ = try await alice.app.messages.processFetchResponse(try MessagesManagerTests.Pair.packets([fromBob.request]))
            try await alice.app.messages.setDisappearing(friendID: bobID, after: 90)
            let gone = try await bob.app.messages.send("VANISH-2c81 the door code is 4471", to: aliceID)
            _ = try await alice.app.messages.processFetchResponse(try MessagesManagerTests.Pair.packets([gone.request]))
            disappearing = gone.message.id
        }
    }

    // MARK: The scan

    /// Every encoding of a sensitive value the scan looks for.
    static func encodings(of text: String) -> [(String, [UInt8])] {
        let bytes = Array(text.utf8)
        return encodings(ofBytes: bytes, label: text) + [("\(text) as UTF-16", Array(text.utf16).flatMap { [UInt8($0 & 0xff), UInt8($0 >> 8)] })]
    }

    static func encodings(ofBytes bytes: [UInt8], label: String) -> [(String, [UInt8])] {
        var out: [(String, [UInt8])] = [("\(label) raw", bytes)]
        out.append(("\(label) hex", Array(Hex.encode(bytes).utf8)))
        out.append(("\(label) HEX", Array(Hex.encode(bytes).uppercased().utf8)))
        // Base64 of the value may start at any of three alignments inside a longer encoding:
        // look for the characters that do not depend on the neighbours.
        for variant in [Base64.Variant.standard, .urlSafeNoPadding] {
            let encoded = Base64.encode(bytes, variant: variant).replacingOccurrences(of: "=", with: "")
            out.append(("\(label) base64 \(variant)", Array(encoded.utf8.dropLast(2))))
        }
        return out
    }

    static func encodings(of number: Double, label: String) -> [(String, [UInt8])] {
        var out: [(String, [UInt8])] = [
            ("\(label) decimal", Array("\(number)".utf8)),
            ("\(label) 4 decimals", Array(String(format: "%.4f", number).utf8)),
            ("\(label) double LE", withUnsafeBytes(of: number.bitPattern.littleEndian) { Array($0) }),
            ("\(label) double BE", withUnsafeBytes(of: number.bitPattern.bigEndian) { Array($0) }),
            ("\(label) float LE", withUnsafeBytes(of: Float(number).bitPattern.littleEndian) { Array($0) })
        ]
        // The wire's fixed-point form (degrees × 10⁷, i32 big-endian).
        let fixed = Int32(clamping: Int64((number * 10_000_000).rounded()))
        out.append(("\(label) e7 BE", withUnsafeBytes(of: fixed.bigEndian) { Array($0) }))
        out.append(("\(label) e7 LE", withUnsafeBytes(of: fixed.littleEndian) { Array($0) }))
        return out
    }

    /// Every sensitive value of `scene` in every encoding.
    static func needles(_ scene: Scene, disappeared: Bool = false) throws -> [(String, [UInt8])] {
        var needles: [(String, [UInt8])] = []
        for text in [marker, aliceName, bobName, carolName, server, "relay-secret", scene.aliceID, scene.bobID, scene.carolID] {
            needles += encodings(of: text)
        }
        needles += encodings(of: "VANISH-2c81 the door code is 4471")
        for id in [scene.aliceID, scene.bobID, scene.carolID] {
            needles += encodings(ofBytes: try Ed25519PublicKey(base64URL: id).rawRepresentation, label: "key \(id)")
        }
        for (name, value) in [
            ("alice lat", aliceFix.latitude), ("alice lon", aliceFix.longitude), ("bob lat", bobFix.latitude), ("bob lon", bobFix.longitude)
        ] {
            needles += encodings(of: value, label: name)
        }
        return needles.filter { $0.1.count >= 4 }
    }

    /// The needles found in any file under `directory`, with the file.
    static func hits(in directory: URL, _ needles: [(String, [UInt8])]) throws -> [String] {
        var found: [String] = []
        let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []
        var scanned = 0
        for file in files where (try? file.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true {
            let data = try Data(contentsOf: file)
            scanned += data.count
            for (label, needle) in needles where data.range(of: Data(needle)) != nil {
                found.append("\(label) in \(file.lastPathComponent)")
            }
        }
        #expect(scanned > 0)
        return found
    }

    @Test func aRealisticDataDirectoryHoldsNoSensitiveValueInAnyEncoding() async throws {
        let scene = try await Scene()
        let needles = try Self.needles(scene)
        // The scene is what we think it is (the scan looks for things that are really there).
        #expect(try scene.alice.app.messages.history(with: scene.bobID).map(\.text).contains(Self.marker + " (kept)"))
        #expect(try scene.alice.app.friends.list().map(\.name).sorted() == [Self.bobName, Self.carolName])
        #expect(try scene.alice.app.outbox.pending().count >= 2)
        scene.alice.app.close()
        #expect(try Self.hits(in: scene.alice.directory, needles) == [])

        // The disappearing message expires: hidden from its expiry, swept and shredded at the
        // end of its minute, and a copy of the file taken afterwards does not open it even with
        // the keychain.
        try scene.alice.reopen()
        let app = scene.alice.app
        let disappearsAt = try #require(try app.messages.history(with: scene.bobID).first { $0.id == scene.disappearing }?.disappearsAt)
        #expect(try app.messages.nextExpiry() == disappearsAt)
        scene.clock.advance(byMilliseconds: disappearsAt - scene.clock.milliseconds)
        #expect(try app.messages.history(with: scene.bobID).allSatisfy { $0.id != scene.disappearing }, "history() returned an expired message")
        let groups = try app.context.database.shredGroups()
        #expect(groups.count == 1)
        #expect(try app.context.keychain.load(name: StoreKeyNames.shred(groups[0])) != nil)
        // What a copy of the file keeps of the message after its deletion: its sealed bytes.
        let (storedKey, stored) = try #require(try Self.storedMessage(id: scene.disappearing, in: app))
        #expect(stored.withUnsafeBytes { StoreSealer.shredGroup(ofStored: $0) } == groups[0])
        // Swept at its own expiry; its key goes at the end of that minute.
        #expect(try await app.messages.sweepExpired() == [scene.disappearing])
        let end = StoreSealer.shredTime(of: groups[0])
        #expect(try app.messages.nextExpiry() == end && end - disappearsAt < StoreSealer.shredGroupMilliseconds)
        scene.clock.advance(byMilliseconds: end - scene.clock.milliseconds)
        #expect(try await app.messages.sweepExpired() == [])
        #expect(try app.context.keychain.load(name: StoreKeyNames.shred(groups[0])) == nil, "the expired message's key survived")
        #expect(try app.messages.nextExpiry() == nil)
        #expect(try app.messages.history(with: scene.bobID).count == 2)
        // Even with the DEK and the whole keychain, those bytes no longer open.
        let sealer = try #require(app.context.database.currentSealer)
        #expect(throws: StoreError.self) {
            try stored.withUnsafeBytes { bytes in
                try storedKey.withUnsafeBytes { key in try sealer.open(table: "messages", storedKey: key, stored: bytes) { _, _ in () } }
            }
        }
        scene.alice.app.close()
        #expect(try Self.hits(in: scene.alice.directory, needles) == [])
    }

    /// The stored key and sealed bytes of message `id` (what the file holds for it).
    static func storedMessage(id: String, in app: CoordsApp) throws -> ([UInt8], [UInt8])? {
        try app.context.database.read { tx in
            guard let key = try tx.open(Tables.messageIDs).get(id) else { return nil }
            let access = try tx.state.access(Tables.messages)
            let storedKey = try key.withUnsafeBytes { k in try access.withStoredKey(k) { Array($0) } }
            let stored = try storedKey.withUnsafeBytes { k in try tx.state.rawGet(dbi: access.dbi, key: k, table: "messages").map { Array($0) } }
            return stored.map { (storedKey, $0) }
        }
    }

    // MARK: Migration from 1.0.0

    /// A 1.0.0 data directory with `scene`'s data: the store in the clear at schema 3, and a
    /// keychain without a store key.
    static func legacyDirectory(of scene: Scene) throws -> URL {
        let legacy = try Fixtures.makeTemporaryDirectory("legacy")
        try FileManager.default.copyItem(
            at: scene.alice.directory.appendingPathComponent("keychain.bin"), to: legacy.appendingPathComponent("keychain.bin"))
        let plain = try Database.open(
            path: legacy.appendingPathComponent("store").path,
            schema: Schema(version: 3, tables: AppSchema.tables, migrations: [Migration(to: 2) { _ in }, Migration(to: 3) { _ in }]))
        try SealedStore.copyAll(from: scene.alice.app.context.database, to: plain)
        plain.close()
        let keychain = try FileKeychain(
            path: legacy.appendingPathComponent("keychain.bin").path, unlock: .passphrase(scene.alice.passphrase), parameters: .minimum)
        try keychain.delete(name: StoreKeyNames.dek)
        return legacy
    }

    /// What the app shows: friends, conversations, the cached position.
    static func summary(_ app: CoordsApp, bobID: String) throws -> [String] {
        var lines: [String] = try app.friends.list().map { "\($0.name) \($0.id)" }.sorted()
        lines += try app.messages.history(with: bobID).map { "\($0.text) \($0.status)" }
        let positions: [String] = try app.location.friendLocations().map { "\($0.id) \($0.location?.latitude ?? 0)" }
        lines += positions.sorted()
        let profile = try app.wallet.profile()
        lines += [profile.name, profile.server]
        return lines
    }

    @Test func aStoreWrittenInTheClearByOneZeroZeroIsSealedInANewFile() async throws {
        let scene = try await Scene()
        let needles = try Self.needles(scene)
        let expected = try Self.summary(scene.alice.app, bobID: scene.bobID)
        let legacy = try Self.legacyDirectory(of: scene)
        defer { try? FileManager.default.removeItem(at: legacy) }
        // The scan finds what a plaintext store really holds.
        let before = try Self.hits(in: legacy, needles)
        #expect(before.contains { $0.hasPrefix(Self.marker) } && before.contains { $0.hasPrefix(Self.bobName) })

        let app = try CoordsApp.open(directory: legacy.path, options: TestApp.options(passphrase: scene.alice.passphrase, clock: scene.clock))
        #expect(app.context.database.isSealed)
        #expect(try Self.summary(app, bobID: scene.bobID) == expected)
        #expect(try app.messages.nextExpiry() != nil, "the disappearing message keeps its expiry key")
        app.close()
        #expect(try Self.hits(in: legacy, needles) == [])
        let names = try FileManager.default.contentsOfDirectory(atPath: legacy.path).sorted()
        #expect(names == ["keychain.bin", "store"])
        // A backup still round-trips through the sealed store.
        let reopened = try CoordsApp.open(directory: legacy.path, options: TestApp.options(passphrase: scene.alice.passphrase, clock: scene.clock))
        let backup = try await reopened.wallet.exportBackup(passphrase: "backup words")
        reopened.close()
        let restored = try TestApp(name: "restored", clock: scene.clock)
        _ = try await restored.app.wallet.importBackup(backup, passphrase: "backup words")
        #expect(try restored.app.friends.list().map(\.name).sorted() == [Self.bobName, Self.carolName])
    }

    @Test func anInterruptedMigrationIsFinishedOrRedoneOnTheNextOpen() async throws {
        let scene = try await Scene()
        let expected = try Self.summary(scene.alice.app, bobID: scene.bobID)
        let options = TestApp.options(passphrase: scene.alice.passphrase, clock: scene.clock)
        let fm = FileManager.default
        // Killed while writing store.tmp: the partial copy is dropped and the migration redone.
        let partial = try Self.legacyDirectory(of: scene)
        defer { try? fm.removeItem(at: partial) }
        try fm.createDirectory(at: partial.appendingPathComponent("store.tmp"), withIntermediateDirectories: true)
        try Data("half a store".utf8).write(to: partial.appendingPathComponent("store.tmp/data.mdb"))
        var app = try CoordsApp.open(directory: partial.path, options: options)
        #expect(try Self.summary(app, bobID: scene.bobID) == expected)
        app.close()
        #expect(try fm.contentsOfDirectory(atPath: partial.path).sorted() == ["keychain.bin", "store"])

        // Killed after the sealed copy was complete (store.new), before or after the plaintext
        // store moved aside (store / store.old): the copy is moved in and the plaintext wiped.
        for movedAside in [false, true] {
            let legacy = try Self.legacyDirectory(of: scene)
            defer { try? fm.removeItem(at: legacy) }
            // The sealed copy: migrate a twin directory that shares the keychain file.
            let twin = try Self.legacyDirectory(of: scene)
            defer { try? fm.removeItem(at: twin) }
            try fm.removeItem(at: twin.appendingPathComponent("keychain.bin"))
            try fm.copyItem(at: legacy.appendingPathComponent("keychain.bin"), to: twin.appendingPathComponent("keychain.bin"))
            let twinApp = try CoordsApp.open(directory: twin.path, options: options)
            twinApp.close()
            try fm.removeItem(at: legacy.appendingPathComponent("keychain.bin"))
            try fm.copyItem(at: twin.appendingPathComponent("keychain.bin"), to: legacy.appendingPathComponent("keychain.bin"))
            try fm.moveItem(at: twin.appendingPathComponent("store"), to: legacy.appendingPathComponent("store.new"))
            if movedAside { try fm.moveItem(at: legacy.appendingPathComponent("store"), to: legacy.appendingPathComponent("store.old")) }
            app = try CoordsApp.open(directory: legacy.path, options: options)
            #expect(app.context.database.isSealed)
            #expect(try Self.summary(app, bobID: scene.bobID) == expected)
            app.close()
            #expect(try fm.contentsOfDirectory(atPath: legacy.path).sorted() == ["keychain.bin", "store"])
        }
    }

    // MARK: Keys

    @Test func aMissingOrWrongStoreKeyIsOneClearErrorAndNothingIsOverwritten() async throws {
        let scene = try await Scene()
        scene.alice.app.close()
        let store = scene.alice.directory.appendingPathComponent("store/data.mdb")
        let original = try Data(contentsOf: store)
        let keychain = try FileKeychain(
            path: scene.alice.directory.appendingPathComponent("keychain.bin").path, unlock: .passphrase(scene.alice.passphrase),
            parameters: .minimum)
        let dek = try #require(try keychain.load(name: StoreKeyNames.dek))
        let options = TestApp.options(passphrase: scene.alice.passphrase, clock: scene.clock)

        // Missing: refused, and no new key is left behind.
        try keychain.delete(name: StoreKeyNames.dek)
        #expect(throws: StoreError.storeKeyMissing) { try CoordsApp.open(directory: scene.alice.directory.path, options: options) }
        #expect(try keychain.load(name: StoreKeyNames.dek) == nil)
        // Wrong (another installation's key, or this store in another installation).
        try keychain.save(try StoreSealer.makeKey(), name: StoreKeyNames.dek)
        #expect(throws: StoreError.wrongStoreKey) { try CoordsApp.open(directory: scene.alice.directory.path, options: options) }
        #expect(try Data(contentsOf: store) == original, "a refused open changed the file")
        // The right key opens it again.
        try keychain.save(dek, name: StoreKeyNames.dek)
        try scene.alice.reopen()
        #expect(try scene.alice.app.friends.list().count == 2)
        // Without any sealer the store is refused too.
        scene.alice.app.close()
        #expect(throws: StoreError.storeKeyRequired) {
            try Database.open(path: scene.alice.directory.appendingPathComponent("store").path, schema: AppSchema.current)
        }
    }

    @Test func rekeyReSealsEverythingAndDestroysTheOldKey() async throws {
        let scene = try await Scene()
        let expected = try Self.summary(scene.alice.app, bobID: scene.bobID)
        let app = scene.alice.app
        let old = try #require(try app.context.keychain.load(name: StoreKeyNames.dek))
        let due = try app.messages.nextExpiry()
        try app.rekeyStore()
        let new = try #require(try app.context.keychain.load(name: StoreKeyNames.dek))
        #expect(new != old)
        #expect(try app.context.keychain.load(name: StoreKeyNames.nextDEK) == nil)
        #expect(try Self.summary(app, bobID: scene.bobID) == expected)
        #expect(try app.messages.nextExpiry() == due, "shred groups survive a rekey")
        // Writes go on under the new key, and a reopen uses it.
        _ = try await app.messages.send("after the rekey", to: scene.bobID)
        try scene.alice.reopen()
        #expect(try scene.alice.app.messages.history(with: scene.bobID).last?.text == "after the rekey")
        // The old key opens nothing.
        scene.alice.app.close()
        var options = Database.Options()
        options.sealer = try StoreSealer(dek: old)
        #expect(throws: StoreError.wrongStoreKey) {
            try Database.open(path: scene.alice.directory.appendingPathComponent("store").path, options: options, schema: AppSchema.current)
        }
    }
}
