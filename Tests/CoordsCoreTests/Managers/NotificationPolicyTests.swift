import Foundation
import Testing

@testable import CoordsCore

/// The notification policy (issue 43): mute per conversation, quiet hours in the user's local
/// time, delivery receipts on or off, and the decision every received message carries.
@Suite struct NotificationPolicyTests {
    typealias Pair = MessagesManagerTests.Pair

    // 1_800_000_000_000 ms is 2027-01-15 08:00:00 UTC.
    static let eightUTC: UInt64 = 1_800_000_000_000
    static let hour: UInt64 = 3_600_000

    @Test func quietHoursParseAndRunOverMidnightInLocalTime() throws {
        let night = try QuietHours(parsing: "22:00-07:00", utcOffsetMinutes: 60)  // UTC+1
        #expect(night.start == 1_320 && night.end == 420 && night.description == "22:00-07:00")
        // 08:00 UTC is 09:00 local: outside. 21:30 UTC is 22:30 local: inside. 05:59 UTC is 06:59 local: inside; 06:00 UTC is 07:00: outside.
        #expect(!night.contains(Self.eightUTC))
        #expect(night.contains(Self.eightUTC + 13 * Self.hour + 30 * 60_000))
        #expect(night.contains(Self.eightUTC + 21 * Self.hour + 59 * 60_000))
        #expect(!night.contains(Self.eightUTC + 22 * Self.hour))
        let lunch = try QuietHours(parsing: "12:00-13:30", utcOffsetMinutes: -300)  // UTC−5
        #expect(lunch.contains(Self.eightUTC + 9 * Self.hour) && !lunch.contains(Self.eightUTC + 10 * Self.hour + 30 * 60_000))
        #expect(QuietHours(settingText: night.settingText) == night && QuietHours(settingText: "1,2") == nil && QuietHours(settingText: "1,1,0") == nil)
        #expect(lunch.contains(0) == false && night.contains(.max) == night.contains(.max))  // extremes never trap
        for bad in ["", "22-07", "22:00", "24:00-07:00", "22:60-07:00", "22:00-22:00", "2200-0700", "-1:00-07:00", "22:00-07:00-01:00", "٢٢:00-07:00"] {
            #expect(throws: MessagesManagerError.self, "\(bad)") { try QuietHours(parsing: bad, utcOffsetMinutes: 0) }
        }
        #expect(throws: MessagesManagerError.self) { try QuietHours(start: 0, end: 60, utcOffsetMinutes: 841) }
        #expect(throws: MessagesManagerError.self) { try QuietHours(start: 0, end: 1_440, utcOffsetMinutes: 0) }
    }

    @Test func theDecisionFollowsKindMuteAndQuietHours() throws {
        let policy = NotificationPolicy()
        let now = Self.eightUTC
        #expect(policy.shouldNotify(kind: "text", mutedUntil: nil, at: now))
        #expect(policy.shouldNotify(kind: "file", mutedUntil: now, at: now), "a mute that ended")
        #expect(!policy.shouldNotify(kind: "text", mutedUntil: now + 1, at: now))
        #expect(!policy.shouldNotify(kind: "text", mutedUntil: NotificationPolicy.forever, at: .max - 1))
        for kind in ["receipt", "rotation", "poll", "group-statement", ""] { #expect(!policy.shouldNotify(kind: kind, mutedUntil: nil, at: now)) }
        let quiet = NotificationPolicy(quietHours: try QuietHours(parsing: "07:00-09:00", utcOffsetMinutes: 0))
        #expect(!quiet.shouldNotify(kind: "text", mutedUntil: nil, at: now))
        #expect(quiet.shouldNotify(kind: "text", mutedUntil: nil, at: now + Self.hour))
    }

    @Test func receivedMessagesCarryTheDecisionAndMutesEnd() async throws {
        let p = try await Pair()
        #expect(p.clock.milliseconds == Self.eightUTC)
        let first = try await p.alice.app.messages.send("one", to: p.bobID)
        var outcome = try await p.bob.app.messages.processFetchResponse(try Pair.packets([first.request]))
        #expect(outcome.received.map(\.notify) == [true])
        // Bob mutes Alice for 8 hours: her next message is stored, does not notify; the mute is persisted.
        try await p.bob.app.messages.mute(p.aliceID, until: p.clock.milliseconds + 8 * Self.hour)
        #expect(try await p.bob.app.messages.mutedUntil(p.aliceID) == p.clock.milliseconds + 8 * Self.hour)
        let second = try await p.alice.app.messages.send("two", to: p.bobID)
        outcome = try await p.bob.app.messages.processFetchResponse(try Pair.packets([second.request]))
        #expect(outcome.received.map(\.notify) == [false] && outcome.received.map(\.text) == ["two"])
        try p.bob.reopen()
        #expect(try p.bob.app.messages.history(with: p.aliceID).map(\.notify) == [true, false])
        // Eight hours later the mute has ended by itself.
        p.clock.advance(byMilliseconds: 8 * Self.hour)
        #expect(try await p.bob.app.messages.mutedUntil(p.aliceID) == nil)
        let third = try await p.alice.app.messages.send("three", to: p.bobID)
        outcome = try await p.bob.app.messages.processFetchResponse(try Pair.packets([third.request]))
        #expect(outcome.received.map(\.notify) == [true])
        // Forever, then unmuted; a disappearing setting changed in between keeps the mute.
        try await p.bob.app.messages.mute(p.aliceID, until: NotificationPolicy.forever)
        try await p.bob.app.messages.setDisappearing(friendID: p.aliceID, after: 600)
        #expect(try await p.bob.app.messages.mutedUntil(p.aliceID) == NotificationPolicy.forever)
        try await p.bob.app.messages.mute(p.aliceID, until: nil)
        #expect(try await p.bob.app.messages.mutedUntil(p.aliceID) == nil)
        // Our own messages carry no decision.
        #expect(try p.alice.app.messages.history(with: p.bobID).allSatisfy { $0.notify == nil })
        // Unknown conversations are refused clearly.
        for unknown in ["", "nobody", String(repeating: "A", count: 22), String(repeating: "B", count: 43)] {
            await #expect(throws: MessagesManagerError.unknownConversation(unknown)) { try await p.bob.app.messages.mute(unknown, until: 1) }
        }
    }

    @Test func quietHoursSilenceEveryConversationInTheirWindow() async throws {
        let p = try await Pair()
        // 08:00 UTC is 09:00 in UTC+1: inside 08:30-10:00.
        try await p.bob.app.messages.setQuietHours(try QuietHours(parsing: "08:30-10:00", utcOffsetMinutes: 60))
        #expect(try p.bob.app.messages.notificationPolicy().quietHours?.description == "08:30-10:00")
        let inside = try await p.alice.app.messages.send("inside", to: p.bobID)
        #expect(try await p.bob.app.messages.processFetchResponse(try Pair.packets([inside.request])).received.map(\.notify) == [false])
        p.clock.advance(byMilliseconds: Self.hour)  // 10:00 local: the window closed
        let after = try await p.alice.app.messages.send("after", to: p.bobID)
        #expect(try await p.bob.app.messages.processFetchResponse(try Pair.packets([after.request])).received.map(\.notify) == [true])
        try await p.bob.app.messages.setQuietHours(nil)
        #expect(try p.bob.app.messages.notificationPolicy() == NotificationPolicy())
    }

    @Test func receiptsOffSendsNone() async throws {
        let p = try await Pair()
        #expect(try p.bob.app.messages.notificationPolicy().deliveryReceipts)
        try await p.bob.app.messages.setDeliveryReceipts(false)
        let sent = try await p.alice.app.messages.send("no receipt, please", to: p.bobID)
        let outcome = try await p.bob.app.messages.processFetchResponse(try Pair.packets([sent.request]))
        #expect(outcome.received.map(\.text) == ["no receipt, please"] && outcome.receipts.isEmpty)
        #expect(try p.bob.app.outbox.pending().isEmpty)
        try p.bob.reopen()
        #expect(try p.bob.app.messages.notificationPolicy().deliveryReceipts == false)
        try await p.bob.app.messages.setDeliveryReceipts(true)
        let next = try await p.alice.app.messages.send("now yes", to: p.bobID)
        #expect(try await p.bob.app.messages.processFetchResponse(try Pair.packets([next.request])).receipts.count == 1)
    }

    @Test func aMutedGroupStaysQuietWhileItsMembersChatsStillNotify() async throws {
        let mesh = try await GroupsManagerTests.Mesh(["alice", "bob", "carol"])
        let group = try await mesh.app("alice").groups.create(name: "Hike", members: [mesh.id("bob"), mesh.id("carol")]).group.id
        try await mesh.settle()
        try await mesh.app("bob").messages.mute(group, until: NotificationPolicy.forever)
        #expect(try await mesh.app("bob").messages.mutedUntil(group) == NotificationPolicy.forever)
        _ = try await mesh.app("alice").groups.send("summit at noon", to: group)
        _ = try await mesh.app("alice").messages.send("just for you", to: mesh.id("bob"))
        try await mesh.flush("alice")
        let outcome = try await mesh.fetch("bob")
        let byText = Dictionary(uniqueKeysWithValues: outcome.received.map { ($0.text, $0.notify) })
        #expect(byText["summit at noon"] == false && byText["just for you"] == true)
        let carol = try await mesh.fetch("carol")
        #expect(carol.received.first { $0.text == "summit at noon" }?.notify == true)
    }
}
