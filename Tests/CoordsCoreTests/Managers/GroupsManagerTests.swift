import Foundation
import Testing

@testable import CoordsCore

/// Groups through the managers (PROTOCOL.md §11): several apps, friends with each other, whose
/// outboxes are delivered into each other's mailboxes by a tiny in-memory relay.
@Suite struct GroupsManagerTests {
    /// People who are all friends with each other, and their mailboxes.
    final class Mesh: @unchecked Sendable {
        let clock = ManualClock(milliseconds: 1_800_000_000_000)
        var apps: [String: TestApp] = [:]
        var ids: [String: String] = [:]
        /// Mailboxes by recipient peer id (hex): the envelopes waiting, in arrival order.
        var mailboxes: [String: [JSONValue]] = [:]
        /// Every envelope posted, for tests that replay or inspect them.
        var posted: [JSONValue] = []

        init(_ names: [String], friends: Bool = true) async throws {
            for name in names {
                let app = try TestApp(name: name, clock: clock)
                apps[name] = app
                ids[name] = try await app.app.wallet.createIdentity(name: name.capitalized, server: "https://relay.test")
            }
            guard friends else { return }
            for a in names {
                for b in names where a != b { try await befriend(a, b) }
            }
        }

        func befriend(_ a: String, _ b: String) async throws {
            _ = try await app(a).friends.add(id: id(b), server: "https://relay.test", name: b.capitalized)
        }

        func app(_ name: String) -> CoordsApp { apps[name]!.app }  // test names are fixed
        func id(_ name: String) -> String { ids[name]! }  // test names are fixed
        func peer(_ name: String) throws -> String { PeerID(try Ed25519PublicKey(base64URL: id(name))).hex }

        /// Posts every envelope in `name`'s outbox to its recipient's mailbox (202).
        func flush(_ name: String) async throws {
            for entry in try app(name).outbox.pending() where entry.item.kind.isEnvelope {
                let envelope = try JSONValue.parse(entry.item.request.body)
                let recipient = try #require(envelope.objectValue?["recipientID"]?.stringValue)
                mailboxes[recipient, default: []].append(envelope)
                posted.append(envelope)
                _ = try await app(name).outbox.report(id: entry.id, status: 202)
            }
        }

        /// `name` fetches its mailbox (optionally in reverse order); acknowledged envelopes leave it.
        @discardableResult
        func fetch(_ name: String, reversed: Bool = false) async throws -> MessagesOutcome {
            let box = try peer(name)
            // As a relay does: at most the oldest fetchLimit.
            let packets = Array((reversed ? Array((mailboxes[box] ?? []).reversed()) : mailboxes[box] ?? []).prefix(MessagesManager.fetchLimit))
            let outcome = try await app(name).messages.processFetchResponse(JSONValue.object(["packets": .array(packets)]).serialized())
            let acked = Set(outcome.acks.compactMap { $0.url.split(separator: "/").dropLast().last.map(String.init) })
            mailboxes[box] = (mailboxes[box] ?? []).filter { !acked.contains($0.objectValue?["id"]?.stringValue ?? "") }
            try await flush(name)
            return outcome
        }

        /// Everyone flushes and fetches until no mailbox changes.
        func settle(_ names: [String]? = nil) async throws {
            let who = names ?? apps.keys.sorted()
            for name in who { try await flush(name) }
            for _ in 0..<8 {
                let before = mailboxes.values.map(\.count).reduce(0, +)
                for name in who { try await fetch(name) }
                if mailboxes.values.map(\.count).reduce(0, +) == 0 || mailboxes.values.map(\.count).reduce(0, +) == before { break }
            }
        }

        func texts(_ name: String, _ group: String) throws -> [String] { try app(name).groups.history(groupID: group).map(\.text) }
    }

    @Test func threeFriendsCreateTalkAndAgree() async throws {
        let mesh = try await Mesh(["alice", "bob", "carol"])
        let created = try await mesh.app("alice").groups.create(name: "Trip to Porto", members: [mesh.id("bob"), mesh.id("carol")])
        #expect(created.group.members.count == 3 && created.group.isAdmin && created.unreachable.isEmpty)
        #expect(created.queued.count == 4)  // the statement and alice's sender key, for each
        try await mesh.settle()
        for name in ["bob", "carol"] {
            let group = try mesh.app(name).groups.group(created.group.id)
            #expect(group.name == "Trip to Porto" && group.members.count == 3 && !group.isAdmin && group.status == .member)
            #expect(group.epoch == 0)
        }
        let sent = try await mesh.app("alice").groups.send("at the station", to: created.group.id)
        #expect(sent.queued.count == 2 && sent.message.group == created.group.id)
        try await mesh.flush("alice")
        try await mesh.fetch("bob")
        try await mesh.settle()
        #expect(try mesh.texts("bob", "Trip to Porto") == ["at the station"])
        #expect(try mesh.texts("carol", "Trip to Porto") == ["at the station"])
        #expect(try mesh.app("bob").groups.history(groupID: created.group.id).first?.peer == mesh.id("alice"))
        _ = try await mesh.app("bob").groups.send("coming", to: created.group.id)
        _ = try await mesh.app("carol").groups.send("me too", to: created.group.id)
        try await mesh.settle()
        for name in ["alice", "bob", "carol"] {
            #expect(Set(try mesh.texts(name, created.group.id)) == ["at the station", "coming", "me too"])
        }
        // Group messages never make a 1:1 conversation and never send receipts.
        #expect(try mesh.app("bob").messages.history(with: mesh.id("alice")).isEmpty)
        #expect(try mesh.app("bob").outbox.pending().isEmpty)
    }

    /// One friend's group messages on a chain she never hands out (the attack: a valid group, then
    /// 100 version-4 envelopes) never stop the rest of the mailbox from being read: they are held
    /// on the device, bounded per sender, acknowledged on the relay, opened when the key comes,
    /// and dropped (reported) when it never does.
    @Test func messagesWaitingForAKeyNeverBlockTheMailbox() async throws {
        let mesh = try await Mesh(["alice", "bob", "mallory"])
        let created = try await mesh.app("mallory").groups.create(name: "Spam", members: [mesh.id("alice")])
        try await mesh.settle()
        func forgetTheirChains() throws -> [(key: [UInt8], value: SenderChainRecord)] {
            try mesh.app("alice").context.database.write { tx in
                let chains = try tx.open(Tables.groupChains)
                let theirs = try chains.entries().filter { !$0.value.isOwn }
                for entry in theirs { _ = try chains.delete(entry.key) }
                return theirs
            }
        }
        let saved = try forgetTheirChains()
        #expect(saved.count == 1)
        for i in 0..<100 { _ = try await mesh.app("mallory").groups.send("spam \(i)", to: created.group.id) }
        try await mesh.flush("mallory")
        _ = try await mesh.app("bob").messages.send("hello", to: mesh.id("alice"))
        try await mesh.flush("bob")
        let box = try mesh.peer("alice")
        #expect(mesh.mailboxes[box]?.count == 101)

        let first = try await mesh.fetch("alice")  // the oldest 100: all Mallory's
        #expect(first.waiting.count == 100 && first.received.isEmpty)
        let dropped = first.rejected.filter { $0.code == GroupsManagerError.waitingDropped("").code }
        #expect(dropped.count == 100 - Groups.waitingPerSender)
        #expect(first.acks.count == 100 && mesh.mailboxes[box]?.count == 1)
        #expect(first.more)  // full and new: the host fetches again at once
        let second = try await mesh.fetch("alice")
        #expect(second.received.map(\.text) == ["hello"] && !second.more)
        #expect(mesh.mailboxes[box]?.isEmpty == true)

        // The key comes (the chain back, then a statement in an answer): the held ones open, in order.
        try mesh.app("alice").context.database.write { tx in
            for entry in saved { try tx.open(Tables.groupChains).put(entry.key, entry.value) }
        }
        _ = try await mesh.app("mallory").groups.add(groupID: created.group.id, members: [mesh.id("bob")])
        try await mesh.flush("mallory")
        let third = try await mesh.fetch("alice")
        #expect(third.received.map(\.text) == (100 - Groups.waitingPerSender..<100).map { "spam \($0)" })
        #expect(try mesh.app("alice").context.database.read { tx in try tx.open(Tables.groupWaiting).count() } == 0)

        // A key that never comes: held for a day, then dropped and reported.
        _ = try forgetTheirChains()
        try await mesh.settle(["bob"])
        _ = try await mesh.app("mallory").groups.send("late", to: created.group.id)
        try await mesh.flush("mallory")
        #expect(try await mesh.fetch("alice").waiting.count == 1)
        mesh.clock.advance(byMilliseconds: Groups.waitingKeep)
        let expired = try await mesh.fetch("alice")
        #expect(expired.rejected.map(\.code) == [GroupsManagerError.waitingDropped("").code])
        #expect(try mesh.app("alice").context.database.read { tx in try tx.open(Tables.groupWaiting).count() } == 0)
    }

    /// A relay that hands a sender's messages over backwards, or one of them late, does not
    /// reorder the conversation: history is in the order they were written.
    @Test func messagesDeliveredOutOfOrderReadInTheOrderWritten() async throws {
        let mesh = try await Mesh(["alice", "bob"])
        let created = try await mesh.app("alice").groups.create(name: "Order", members: [mesh.id("bob")])
        try await mesh.settle()
        for text in ["one", "two", "three"] {
            _ = try await mesh.app("alice").groups.send(text, to: created.group.id)
            mesh.clock.advance(byMilliseconds: 1_000)
        }
        try await mesh.flush("alice")
        let outcome = try await mesh.fetch("bob", reversed: true)
        #expect(outcome.received.map(\.text) == ["three", "two", "one"])
        #expect(try mesh.texts("bob", created.group.id) == ["one", "two", "three"])
        #expect(try mesh.app("bob").groups.history(groupID: created.group.id, limit: 2).map(\.text) == ["two", "three"])
    }

    @Test func aNewMemberReadsOnlyWhatFollowsAndARemovedOneNothingAfter() async throws {
        let mesh = try await Mesh(["alice", "bob", "carol", "dave"])
        let group = try await mesh.app("alice").groups.create(name: "Family", members: [mesh.id("bob"), mesh.id("carol")]).group.id
        try await mesh.settle()
        _ = try await mesh.app("alice").groups.send("before dave", to: group)
        try await mesh.settle()
        _ = try await mesh.app("alice").groups.add(groupID: group, members: [mesh.id("dave")])
        try await mesh.settle()
        #expect(try mesh.app("dave").groups.group(group).members.count == 4)
        #expect(try mesh.app("bob").groups.group(group).members.count == 4)
        _ = try await mesh.app("bob").groups.send("welcome dave", to: group)
        try await mesh.settle()
        #expect(try mesh.texts("dave", group) == ["welcome dave"])

        // The envelope of "before dave", as carol got it: dave has alice's chain only from a later
        // iteration, so even the same sealed bytes addressed to him open nothing.
        let earlier = try #require(mesh.posted.first { $0.objectValue?["protocolVersion"]?.uint64Value == Envelope.groupProtocolVersion })
        let sealed = try Base64.decode(try #require(earlier.objectValue?["sealedPayloadBase64"]?.stringValue), variant: .standard, field: "x")
        let alice = try mesh.app("alice").context.identity.get()
        let replay = try Envelope.sealGroup(
            sealed, id: try Envelope.newUUID(), from: alice.signing, to: try Ed25519PublicKey(base64URL: mesh.id("dave")),
            createdAt: mesh.clock.milliseconds / 1000, expiresAt: mesh.clock.milliseconds / 1000 + 3600)
        let refused = try await mesh.app("dave").messages.processFetchResponse(JSONValue.object(["packets": .array([replay.json])]).serialized())
        #expect(refused.received.isEmpty && refused.rejected.map(\.code) == [WireError.duplicateMessage.code])

        // Carol is removed: she learns it, erases the group's chains, and gets nothing sent after.
        _ = try await mesh.app("alice").groups.remove(groupID: group, members: [mesh.id("carol")])
        try await mesh.settle()
        #expect(try mesh.app("carol").groups.group(group).status == .removed)
        #expect(try mesh.app("bob").groups.group(group).members.count == 3)
        let chains = try mesh.app("carol").context.database.read { tx in try tx.open(Tables.groupChains).count() }
        #expect(chains == 0)
        let carolBox = try mesh.peer("carol")
        let before = mesh.posted.filter { $0.objectValue?["recipientID"]?.stringValue == carolBox }.count
        _ = try await mesh.app("bob").groups.send("carol is gone", to: group)
        _ = try await mesh.app("alice").groups.send("yes", to: group)
        try await mesh.settle()
        #expect(mesh.posted.filter { $0.objectValue?["recipientID"]?.stringValue == carolBox }.count == before)
        #expect(!(try mesh.texts("carol", group)).contains("carol is gone"))
        #expect(Set(try mesh.texts("dave", group)).isSuperset(of: ["carol is gone", "yes"]))
        // She cannot send any more, nor change the group.
        await #expect(throws: GroupsManagerError.self) { try await mesh.app("carol").groups.send("hello?", to: group) }
    }

    @Test func onlyAdminsChangeAndForgedChangesAreRefused() async throws {
        let mesh = try await Mesh(["alice", "bob", "carol", "dave"])
        let group = try await mesh.app("alice").groups.create(name: "Team", members: [mesh.id("bob"), mesh.id("carol")]).group.id
        try await mesh.settle()
        await #expect(throws: GroupsManagerError.notAnAdmin(id: group)) {
            try await mesh.app("bob").groups.add(groupID: group, members: [mesh.id("dave")])
        }
        // Bob signs an "add dave" himself and sends it to carol: refused, her state unchanged.
        let bob = try mesh.app("bob").context.identity.get()
        let found = try mesh.app("bob").context.database.write { tx -> GroupStatement? in
            let id = try GroupID(base64URL: group)
            guard let record = try tx.open(Tables.groups).get(id.bytes) else { return nil }
            return try GroupsManager.heads(tx, id, record).first
        }
        let head = try #require(found)
        let forged = try GroupStatement.make(
            group: head.group, epoch: 1, previous: head.hash, author: bob.signing, at: mesh.clock.milliseconds,
            state: try GroupState(
                name: "Team", members: head.state.members + [GroupMember(key: try Ed25519PublicKey(base64URL: mesh.id("dave")), isAdmin: true)]))
        let payload = MessagePayload(
            kind: "group-statement", id: try Envelope.newUUID(), text: "", sentAt: mesh.clock.milliseconds,
            extra: JSONObject([("group", .string(group)), ("statements", .array([.string(Base64.encode(forged.bytes))]))]))
        let request = try mesh.app("bob").context.database.write { tx in
            try SessionsManager.sealEnvelope(
                tx, payload: payload, to: try Ed25519PublicKey(base64URL: mesh.id("carol")), identity: bob, now: mesh.clock.milliseconds,
                random: SystemRandomSource())
        }
        let updates = mesh.app("carol").groups.updates
        let outcome = try await mesh.app("carol").messages.processFetchResponse(
            JSONValue.object(["packets": .array([try JSONValue.parse(request.body)])]).serialized())
        #expect(try mesh.app("carol").groups.group(group).members.count == 3)
        // The user sees the refusal with the mailbox answer's rejections (`inbox --json` "rejected"), too.
        #expect(outcome.rejected.map(\.code) == [GroupsManagerError.notAnAdmin(id: "").code])
        var refused: [Int32] = []
        while let update = try? updates.tryRecv() { if case .statementRefused(_, let code, _) = update { refused.append(code) } }
        #expect(refused == [GroupsManagerError.notAnAdmin(id: "").code])
        // Leaving is the one change a member makes alone.
        _ = try await mesh.app("bob").groups.leave(groupID: group)
        try await mesh.settle()
        #expect(try mesh.app("alice").groups.group(group).members.map(\.id).sorted() == [mesh.id("alice"), mesh.id("carol")].sorted())
        #expect(try mesh.app("bob").groups.group(group).status == .left)
    }

    @Test func twoAdminsAtOnceGiveEveryoneTheSameConflictThenTheSameState() async throws {
        let mesh = try await Mesh(["alice", "bob", "carol"])
        let created = try await mesh.app("alice").groups.create(name: "Hike", members: [mesh.id("bob"), mesh.id("carol")])
        try await mesh.settle()
        _ = try await mesh.app("alice").groups.setAdmin(groupID: created.group.id, member: mesh.id("bob"), isAdmin: true)
        try await mesh.settle()
        // Both rename before hearing of the other.
        _ = try await mesh.app("alice").groups.rename(groupID: created.group.id, to: "Hike A")
        _ = try await mesh.app("bob").groups.rename(groupID: created.group.id, to: "Hike B")
        try await mesh.flush("alice")
        try await mesh.flush("bob")
        try await mesh.fetch("carol", reversed: true)
        try await mesh.settle()
        let views = try ["alice", "bob", "carol"].map { try mesh.app($0).groups.group(created.group.id) }
        #expect(views.allSatisfy { $0.inConflict && $0.epoch == 2 })
        #expect(Set(views.map(\.name)).count == 1)
        #expect(Set(views.map { $0.members.map(\.id) }).count == 1)
        // The next change builds on one candidate: the conflict ends the same way everywhere.
        _ = try await mesh.app("alice").groups.rename(groupID: created.group.id, to: "Hike")
        try await mesh.settle()
        let after = try ["alice", "bob", "carol"].map { try mesh.app($0).groups.group(created.group.id) }
        #expect(after.allSatisfy { !$0.inConflict && $0.epoch == 3 && $0.name == "Hike" })
    }

    @Test func aMemberOfflineDuringTwoChangesCatchesUpInOrder() async throws {
        let mesh = try await Mesh(["alice", "bob", "carol", "dave"])
        let group = try await mesh.app("alice").groups.create(name: "Book club", members: [mesh.id("bob"), mesh.id("carol")]).group.id
        try await mesh.settle()
        // Carol is away for two changes; her mailbox fills.
        _ = try await mesh.app("alice").groups.add(groupID: group, members: [mesh.id("dave")])
        try await mesh.settle(["alice", "bob", "dave"])
        _ = try await mesh.app("alice").groups.rename(groupID: group, to: "Books")
        try await mesh.settle(["alice", "bob", "dave"])
        _ = try await mesh.app("dave").groups.send("hi all", to: group)
        try await mesh.settle(["alice", "bob", "dave"])
        // Back, she reads the mailbox newest first: statements wait for their predecessors.
        let back = try await mesh.fetch("carol", reversed: true)
        #expect(back.rejected.isEmpty && back.waiting.isEmpty)
        try await mesh.settle()
        let carol = try mesh.app("carol").groups.group(group)
        #expect(carol.name == "Books" && carol.epoch == 2 && carol.members.count == 4)
        #expect(try mesh.texts("carol", group) == ["hi all"])
    }

    @Test func sharingWithAGroupSealsForItsMembersOnce() async throws {
        let mesh = try await Mesh(["alice", "bob", "carol"])
        let group = try await mesh.app("alice").groups.create(name: "Walk", members: [mesh.id("bob"), mesh.id("carol")]).group.id
        try await mesh.settle()
        _ = try await mesh.app("alice").friends.pause(id: mesh.id("bob"))
        _ = try await mesh.app("alice").friends.pause(id: mesh.id("carol"))
        let fix = try Location(latitude: 41.15, longitude: -8.61, timestamp: mesh.clock.milliseconds)
        #expect(try await mesh.app("alice").location.prepareUpload(fix).recipientCount == 1)
        let reseal = try await mesh.app("alice").groups.setSharing(groupID: group, true)
        #expect(reseal?.item.kind == .reseal)
        #expect(try mesh.app("alice").friends.shareRecipients().count == 2)
        mesh.clock.advance(byMilliseconds: 1000)
        let next = try Location(latitude: 41.16, longitude: -8.62, timestamp: mesh.clock.milliseconds)
        #expect(try await mesh.app("alice").location.prepareUpload(next).recipientCount == 3)
        // Carol removed from the group: she is left out at once, and the reseal is queued.
        let removal = try await mesh.app("alice").groups.remove(groupID: group, members: [mesh.id("carol")])
        #expect(removal.queued.contains { $0.item.kind == .reseal })
        #expect(try mesh.app("alice").friends.shareRecipients().count == 1)
        _ = try await mesh.app("alice").groups.setSharing(groupID: group, false)
        #expect(try mesh.app("alice").friends.shareRecipients().isEmpty)
    }

    /// Issue 59, defect 8: one friend cannot fill the user's group table. Past
    /// ``Groups/maximumGroupsPerInviter`` groups they run, their invitation is refused and reported;
    /// another friend's is still accepted, and the user still creates groups.
    @Test func oneFriendCannotTakeEveryGroupPlace() async throws {
        let mesh = try await Mesh(["alice", "bob", "mallory"])
        for index in 0..<Groups.maximumGroupsPerInviter {
            _ = try await mesh.app("mallory").groups.create(name: "m\(index)", members: [mesh.id("bob")])
        }
        try await mesh.flush("mallory")
        #expect(try await mesh.fetch("bob").rejected.isEmpty)
        #expect(try mesh.app("bob").groups.groups().count == Groups.maximumGroupsPerInviter)
        _ = try await mesh.app("mallory").groups.create(name: "one too many", members: [mesh.id("bob")])
        try await mesh.flush("mallory")
        let refused = try await mesh.fetch("bob")
        #expect(refused.rejected.map(\.code).contains(GroupsManagerError.notInvited("").code), "\(refused.rejected)")
        #expect(refused.rejected.contains { $0.reason.contains("the most one friend may") })
        #expect(try mesh.app("bob").groups.groups().count == Groups.maximumGroupsPerInviter)
        _ = try await mesh.app("alice").groups.create(name: "Alice's", members: [mesh.id("bob")])
        try await mesh.settle()
        #expect(try mesh.app("bob").groups.groups().contains { $0.name == "Alice's" })
        _ = try await mesh.app("bob").groups.create(name: "Bob's own", members: [mesh.id("alice")])
    }

    @Test func limitsAreStatedAndRefused() async throws {
        let mesh = try await Mesh(["alice", "bob"])
        await #expect(throws: GroupsManagerError.self) { try await mesh.app("alice").groups.create(name: "x", members: [mesh.id("alice")]) }
        await #expect(throws: GroupsManagerError.self) { try await mesh.app("alice").groups.create(name: "x", members: [mesh.id("bob"), mesh.id("bob")]) }
        await #expect(throws: GroupsManagerError.self) { try await mesh.app("alice").groups.create(name: "x", members: ["not-an-id"]) }
        await #expect(throws: WireError.self) { try await mesh.app("alice").groups.create(name: String(repeating: "n", count: 65), members: [mesh.id("bob")]) }
        let group = try await mesh.app("alice").groups.create(name: "x", members: [mesh.id("bob")]).group.id
        await #expect(throws: GroupsManagerError.messageTooLong(bytes: Groups.maximumTextBytes + 1, maximum: Groups.maximumTextBytes)) {
            try await mesh.app("alice").groups.send(String(repeating: "a", count: Groups.maximumTextBytes + 1), to: group)
        }
        await #expect(throws: GroupsManagerError.stillMember(id: group)) { try await mesh.app("alice").groups.delete(groupID: group) }
        for index in 1..<Groups.maximumGroups { _ = try await mesh.app("alice").groups.create(name: "g\(index)", members: [mesh.id("bob")]) }
        await #expect(throws: GroupsManagerError.tooManyGroups(maximum: Groups.maximumGroups)) {
            try await mesh.app("alice").groups.create(name: "one more", members: [mesh.id("bob")])
        }
        // The last member cannot leave (nobody would hold the group) but may forget it, which frees its place.
        _ = try await mesh.app("alice").groups.remove(groupID: "g1", members: [mesh.id("bob")])
        await #expect(throws: GroupsManagerError.self) { try await mesh.app("alice").groups.leave(groupID: "g1") }
        try await mesh.app("alice").groups.delete(groupID: "g1")
        _ = try await mesh.app("alice").groups.create(name: "one more", members: [mesh.id("bob")])
    }
}
