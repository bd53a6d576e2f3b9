import Foundation
import Testing

@testable import CoordsCore
@testable import StoreCrashChild

/// A child process commits numbered transactions and is killed with SIGKILL at random moments;
/// the reopened store must hold exactly a prefix of the commits (never a torn one) that
/// includes every acknowledged commit.
@Suite(.serialized) struct CrashSafetyTests {
    // The child's schema and record layout, from the child itself (Tests/StoreCrashChild/main.swift).
    static let records = CrashSchema.records
    static let head = CrashSchema.head
    static let schema = CrashSchema.schema
    static let perTransaction = CrashSchema.perTransaction
    static func value(for key: UInt64) -> [UInt8] { CrashSchema.value(for: key) }

    static func matches(_ value: [UInt8], key: UInt64) -> Bool {
        let expected = Self.value(for: key)
        return value.count == expected.count
            && value.withUnsafeBytes { a in
                expected.withUnsafeBytes { b in a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 }
            }
    }

    static var childExecutable: URL? {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("StoreCrashChild"),
            Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("StoreCrashChild"),
            Fixtures.repositoryRoot.appendingPathComponent(".build/debug/StoreCrashChild")
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    /// Runs the child until it has acknowledged something (or briefly), kills it, returns the acks.
    /// - Parameters:
    ///   - killAfter: kills the child this long after it started (if it is still running).
    ///   - killAtAck: kills it as soon as it printed this many acks, whatever the machine's speed
    ///     (`killAfter` is then only the time limit).
    func runAndKill(
        directory: URL, mode: String, killAfter: TimeInterval, killAtAck: Int? = nil, extra: [String] = []
    ) throws -> (acks: [UInt64], stderr: String) {
        let executable = try #require(Self.childExecutable, "build the StoreCrashChild product first (swift build)")
        let process = Process()
        process.executableURL = executable
        process.arguments = [directory.path, mode] + extra
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let collected = LockedBox<Data>(Data())
        let started = LockedBox<Int32>(0)
        let reader = Thread {
            var data = Data()
            var killed = false
            while true {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { break }  // the child's end closed: it exited or was killed
                data.append(chunk)
                if let killAtAck, !killed, Self.acks(in: data).count >= killAtAck {
                    kill(started.value, SIGKILL)
                    killed = true
                }
            }
            collected.set(data)
        }
        try process.run()
        started.set(process.processIdentifier)
        reader.start()
        let deadline = Date().addingTimeInterval(killAfter)
        while killAtAck != nil, !collected.isSet, Date() < deadline { Thread.sleep(forTimeInterval: 0.002) }
        if killAtAck == nil { Thread.sleep(forTimeInterval: killAfter) }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        while !collected.isSet { Thread.sleep(forTimeInterval: 0.005) }
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (Self.acks(in: collected.value), errors)
    }

    /// The numbers of the child's "ack N" lines.
    static func acks(in output: Data) -> [UInt64] {
        String(decoding: output, as: UTF8.self).split(separator: "\n").compactMap { line -> UInt64? in
            line.hasPrefix("ack ") ? UInt64(line.dropFirst(4)) : nil
        }
    }

    @Test func killedWriterLeavesExactlyAPrefixOfItsCommits() throws {
        let directory = try Fixtures.makeTemporaryDirectory("crash")
        defer { try? FileManager.default.removeItem(at: directory) }
        var committed: UInt64 = 0  // transactions 0..<committed are in the store
        var totalAcks = 0
        for round in 0..<24 {
            let killAfter = 0.05 + Double.random(in: 0...0.15)
            let (acks, errors) = try runAndKill(directory: directory, mode: round % 3 == 2 ? "nosync" : "durable", killAfter: killAfter)
            #expect(errors.isEmpty, "child failed: \(errors)")
            totalAcks += acks.count
            let db = try Database.open(path: directory.path, schema: Self.schema)
            try checkPrefix(db, round: round, acks: acks, committed: &committed)
        }
        #expect(totalAcks > 24, "the child should have committed during most rounds")
    }

    /// The same walk on a store sealed at rest: every value sealed, keys hidden.
    @Test func killedWriterOfASealedStoreLeavesExactlyAPrefixOfItsCommits() throws {
        let directory = try Fixtures.makeTemporaryDirectory("crash-sealed")
        defer { try? FileManager.default.removeItem(at: directory) }
        var committed: UInt64 = 0
        var totalAcks = 0
        for round in 0..<16 {
            let (acks, errors) = try runAndKill(directory: directory, mode: "sealed", killAfter: 0.05 + Double.random(in: 0...0.15))
            #expect(errors.isEmpty, "child failed: \(errors)")
            totalAcks += acks.count
            let db = try Database.open(path: directory.path, options: try CrashSchema.sealedOptions(), schema: Self.schema)
            try checkPrefix(db, round: round, acks: acks, committed: &committed)
        }
        #expect(totalAcks > 16, "the child should have committed during most rounds")
        // Nothing of the records is in the file in the clear.
        let data = try Data(contentsOf: directory.appendingPathComponent("data.mdb"))
        #expect(data.range(of: Data(CrashSchema.pattern.prefix(64))) == nil, "a record's bytes are in the sealed file")
    }

    /// A process rekeying its app's store is killed at random moments: the app opens every time
    /// (with the old key or the new one, never neither) and reads every friend.
    @Test func killedRekeyAlwaysLeavesAStoreThatOpens() async throws {
        let directory = try Fixtures.makeTemporaryDirectory("crash-rekey")
        defer { try? FileManager.default.removeItem(at: directory) }
        let options = CoordsApp.Options(keychain: .file(.key(SecretBytes(copying: CrashSchema.hostKey))))
        do {
            let app = try CoordsApp.open(directory: directory.path, options: options)
            _ = try await app.wallet.createIdentity(name: "Crash", server: "https://relay.example")
            for i in 0..<CrashSchema.friendCount {
                let friend = try Identity(signing: Ed25519SigningKey(seed: SecretBytes(copying: [UInt8](repeating: UInt8(i + 1), count: 32))))
                _ = try await app.friends.add(id: friend.publicKey.base64URL, server: "https://relay.example", name: "Friend \(i)")
            }
            app.close()
        }
        var totalAcks = 0
        for round in 0..<16 {
            let (acks, errors) = try runAndKill(directory: directory, mode: "rekey", killAfter: 0.1 + Double.random(in: 0...0.3))
            #expect(errors.isEmpty, "child failed: \(errors)")
            totalAcks += acks.count
            let app = try CoordsApp.open(directory: directory.path, options: options)
            let names = try app.friends.list().map(\.name)
            #expect(names.count == CrashSchema.friendCount, "round \(round): \(names.count) friends")
            app.close()
        }
        #expect(totalAcks > 16, "the child should have rekeyed during most rounds")
    }

    /// A process opening forward-secret session messages (PROTOCOL.md §10.10) is killed at random
    /// moments: a message is either stored with its session advanced, or neither — never opened and
    /// lost (a burnt key), never stored twice (a reused key). In the end every message is there once.
    @Test func killedWhileOpeningSessionMessagesNeverBurnsOrReusesAKey() async throws {
        let clock = ManualClock(milliseconds: UInt64(Date().timeIntervalSince1970 * 1000))
        let alice = try TestApp(name: "crash-alice", passphrase: CrashSchema.sessionPassphrase, clock: clock)
        let bob = try TestApp(name: "crash-bob", passphrase: CrashSchema.sessionPassphrase, clock: clock)
        defer {
            try? FileManager.default.removeItem(at: alice.directory)
            try? FileManager.default.removeItem(at: bob.directory)
        }
        let aliceID = try await alice.app.wallet.createIdentity(name: "Alice", server: "https://relay.test")
        let bobID = try await bob.app.wallet.createIdentity(name: "Bob", server: "https://relay.test")
        _ = try await alice.app.friends.add(id: bobID, server: "https://relay.test", name: "Bob")
        _ = try await bob.app.friends.add(id: aliceID, server: "https://relay.test", name: "Alice")
        // Bob publishes; Alice accepts his bundle (the relay's answer made from his upload).
        let upload = try #require(try bob.app.sessions.preparePrekeyUpload())
        let body = try #require(try JSONValue.parse(upload.body).objectValue)
        let bundle = JSONValue.object([
            "key": .string(bobID), "signedPrekey": try #require(body["signedPrekey"]),
            "oneTimePrekey": body["oneTimePrekeys"]?.arrayValue?.first ?? .null
        ])
        #expect(try alice.app.sessions.processBundle(for: bobID, status: 200, body: bundle.serialized()) == .accepted(oneTime: true))
        // 120 messages, delivered in pairs swapped (2, 1, 4, 3, …), so skipped keys are stored too.
        var answers: [JSONValue] = []
        let texts = (0..<120).map { "message \($0)" }
        for text in texts {
            let sent = try await alice.app.messages.send(text, to: bobID)
            answers.append(.object(["packets": .array([try JSONValue.parse(sent.request.body)])]))
        }
        for i in stride(from: 0, to: answers.count - 1, by: 2) { answers.swapAt(i, i + 1) }
        let file = bob.directory.appendingPathComponent("mailbox.json")
        try Data(JSONValue.array(answers).serialized()).write(to: file)
        bob.app.close()

        var totalAcks = 0
        var killedMidway = 0
        var perRound: [Int] = []
        for round in 0..<12 {
            // Killed while it works on a random answer (a replayed one once the first rounds stored
            // them all): a kill after a fixed time found it done on a fast machine.
            let (acks, errors) = try runAndKill(
                directory: bob.directory, mode: "sessions", killAfter: 20, killAtAck: Int.random(in: 1...(answers.count - 8)),
                extra: [file.path])
            #expect(errors.isEmpty, "child failed: \(errors)")
            totalAcks += acks.count
            perRound.append(acks.count)
            if !acks.isEmpty, acks.count < answers.count { killedMidway += 1 }
            let app = try CoordsApp.open(directory: bob.directory.path, options: TestApp.options(passphrase: bob.passphrase, clock: clock))
            let received = try app.messages.history(with: aliceID).map(\.text)
            #expect(Set(received).count == received.count, "round \(round): a message stored twice")
            #expect(Set(received).isSubset(of: Set(texts)), "round \(round)")
            app.close()
        }
        // One last run to the end: every message opens, once.
        _ = try runAndKill(directory: bob.directory, mode: "sessions", killAfter: 4, extra: [file.path])
        let app = try CoordsApp.open(directory: bob.directory.path, options: TestApp.options(passphrase: bob.passphrase, clock: clock))
        defer { app.close() }
        let received = try app.messages.history(with: aliceID).map(\.text)
        #expect(Set(received) == Set(texts) && received.count == texts.count, "\(received.count) of \(texts.count) messages")
        #expect(totalAcks > 12, "the child should have processed messages during most rounds")
        #expect(killedMidway >= 1, "no round was killed while messages were being opened (answers acknowledged per round: \(perRound))")
    }

    /// Checks that `db` holds exactly a prefix of the child's commits including every acknowledged one.
    func checkPrefix(_ db: Database, round: Int, acks: [UInt64], committed: inout UInt64) throws {
        let (next, count, intact) = try db.read { tx -> (UInt64, Int, Bool) in
            let next = try tx.open(Self.head).get("next") ?? 0
            let records = try tx.open(Self.records)
            var intact = true
            var expectedKey: UInt64 = 0
            try records.forEach { key, value in
                if key != expectedKey || !Self.matches(value, key: key) { intact = false }
                expectedKey += 1
                return intact
            }
            return (next, try records.count(), intact)
        }
        db.close()
        // Every record of transactions < next, none beyond: no torn transaction.
        #expect(intact, "round \(round): a record is missing or damaged")
        #expect(UInt64(count) == next * Self.perTransaction, "round \(round): \(count) records for \(next) transactions")
        // Every acknowledged transaction is there; at most one unacknowledged one made it.
        let floor = (acks.last.map { $0 + 1 }) ?? committed
        #expect(next >= floor, "round \(round): acknowledged \(floor) transactions, found \(next)")
        #expect(next <= floor + 1, "round \(round): found \(next) transactions, only \(floor) acknowledged")
        #expect(next >= committed, "round \(round): the store went backwards")
        committed = next
    }
}
