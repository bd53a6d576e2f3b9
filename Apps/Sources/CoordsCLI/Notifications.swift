import ArgumentParser
import CoordsCore
import Glibc

/// `coords mute NAME [--for 8h] [--group]` and `coords unmute NAME`: a conversation that stops
/// notifying (its messages still arrive and are stored). The core decides what notifies
/// (docs/MESSAGING.md, Notifications); `coords watch` announces a muted message without a bell.
struct Mute: SessionCommand {
    static let configuration = CommandConfiguration(
        abstract: "Mute a friend's or a group's conversation (for a while, or until unmuted).",
        discussion: "Messages still arrive and are kept; they do not notify. `coords unmute NAME` ends it.")
    @OptionGroup var options: CommandOptions
    @Argument(help: "The friend's name or id (a group's with --group).") var name: String
    @Flag(help: "NAME is a group.") var group = false
    @Option(name: .customLong("for"), help: "How long: 90s, 30m, 8h, 1d, or combined (1h30m). Without it: until unmuted.") var duration: String?

    func validate() throws {
        if let duration, ShareWith.milliseconds(duration) == nil {
            throw ValidationError("--for must be a duration such as 90s, 30m, 8h, 1d or 1h30m")
        }
    }

    func run(in session: Session) async throws {
        let (id, label) = try conversation(name, group: group, in: session)
        let until = duration.flatMap(ShareWith.milliseconds).map { nowMilliseconds().addingSaturating($0) } ?? NotificationPolicy.forever
        try await session.app.messages.mute(id, until: until)
        printMute(id: id, name: label, until: try await session.app.messages.mutedUntil(id), json: options.json)
    }
}

/// `coords unmute NAME [--group]`.
struct Unmute: SessionCommand {
    static let configuration = CommandConfiguration(abstract: "End a mute: the conversation notifies again.")
    @OptionGroup var options: CommandOptions
    @Argument(help: "The friend's name or id (a group's with --group).") var name: String
    @Flag(help: "NAME is a group.") var group = false

    func run(in session: Session) async throws {
        let (id, label) = try conversation(name, group: group, in: session)
        try await session.app.messages.mute(id, until: nil)
        printMute(id: id, name: label, until: nil, json: options.json)
    }
}

/// `coords quiet 22:00-07:00 | off`: no message notifies inside the window of the local day.
struct Quiet: SessionCommand {
    static let configuration = CommandConfiguration(
        abstract: "Set quiet hours (HH:MM-HH:MM in local time), or turn them off.",
        discussion: "Messages received inside the window arrive and are kept; none notifies. Without an argument: show the setting.")
    @OptionGroup var options: CommandOptions
    @Argument(help: "The window, e.g. 22:00-07:00, or off.") var window: String?
    @Option(
        name: .customLong("utc-offset"),
        help: "Your local time minus UTC in minutes (default: this computer's time zone now, e.g. 60 for UTC+1).")
    var utcOffset: Int?

    func checkArguments() throws {
        guard let window, window != "off" else { return }
        do { _ = try QuietHours(parsing: window, utcOffsetMinutes: utcOffset ?? 0) } catch { throw CLIFailure(describe(error)) }
    }

    func run(in session: Session) async throws {
        if let window {
            let hours = window == "off" ? nil : try QuietHours(parsing: window, utcOffsetMinutes: utcOffset ?? localUTCOffsetMinutes())
            try await session.app.messages.setQuietHours(hours)
        }
        printPolicy(try session.app.messages.notificationPolicy(), json: options.json)
    }
}

/// `coords receipts on|off`: whether received texts are confirmed with delivery receipts.
struct Receipts: SessionCommand {
    static let configuration = CommandConfiguration(
        abstract: "Turn delivery receipts on or off.",
        discussion: "A receipt tells the sender, and the relay, when this app fetched. Off, friends see your messages as sent, never delivered.")
    @OptionGroup var options: CommandOptions
    @Argument(help: "on or off (without it: show the setting).") var state: String?

    func validate() throws {
        guard state == nil || state == "on" || state == "off" else { throw ValidationError("say on or off") }
    }

    func run(in session: Session) async throws {
        if let state { try await session.app.messages.setDeliveryReceipts(state == "on") }
        printPolicy(try session.app.messages.notificationPolicy(), json: options.json)
    }
}

/// The conversation id and a name to show for `query`: a group (with `group`) or a friend.
private func conversation(_ query: String, group: Bool, in session: Session) throws -> (id: String, name: String) {
    if group {
        let found = try findGroup(query, in: session)
        return (found.id, found.name)
    }
    let found = try findFriend(query, in: session)
    return (found.id, found.name.isEmpty ? String(found.id.prefix(8)) : found.name)
}

/// This computer's offset from UTC now, in minutes (tm_gmtoff of localtime).
func localUTCOffsetMinutes() -> Int {
    var now = time(nil)
    var local = tm()
    guard localtime_r(&now, &local) != nil else { return 0 }
    return max(-840, min(840, local.tm_gmtoff / 60))
}

private func printMute(id: String, name: String, until: UInt64?, json: Bool) {
    if json {
        printJSON(
            .object([
                "conversation": .string(id), "name": .string(name), "muted": .bool(until != nil),
                "muted_until_ms": until.flatMap { $0 == NotificationPolicy.forever ? nil : JSONValue.integer($0) } ?? .null
            ]))
        return
    }
    let who = Terminal.safe(name)
    switch until {
    case nil: printLine("\(who) is not muted: their messages notify.")
    case NotificationPolicy.forever: printLine("\(who) is muted until you unmute them (`coords unmute \(who)`).")
    case .some(let end): printLine("\(who) is muted for \(timeLeft(until: end, now: nowMilliseconds())).")
    }
}

private func printPolicy(_ policy: NotificationPolicy, json: Bool) {
    if json {
        printJSON(
            .object([
                "quiet_hours": policy.quietHours.map { .string($0.description) } ?? .null,
                "utc_offset_minutes": policy.quietHours.map { .integer(Int64($0.utcOffsetMinutes)) } ?? .null,
                "delivery_receipts": .bool(policy.deliveryReceipts)
            ]))
        return
    }
    if let hours = policy.quietHours {
        let sign = hours.utcOffsetMinutes < 0 ? "-" : "+"
        let offset = abs(hours.utcOffsetMinutes)
        printLine("Quiet hours: \(hours) (UTC\(sign)\(offset / 60)\(offset % 60 == 0 ? "" : ":\(offset % 60 < 10 ? "0" : "")\(offset % 60)")).")
    } else {
        printLine("Quiet hours: off.")
    }
    printLine("Delivery receipts: \(policy.deliveryReceipts ? "on" : "off").")
}
