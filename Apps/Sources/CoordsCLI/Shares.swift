import ArgumentParser
import CoordsCore

/// `coords share-with NAME [--for DURATION | --until TIME]`: share with a friend until a time,
/// for a while, or with no end (resuming a paused share). PROTOCOL.md §9.3.
struct ShareWith: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "share-with", abstract: "Share with a friend for a while, until a time, or again after a pause.",
        discussion: "Without --for or --until the share has no end. When it ends your last position is sealed again without them.")
    @OptionGroup var options: CommandOptions
    @Argument(help: "The friend's name or id.") var friend: String
    @Option(name: .customLong("for"), help: "How long: 90s, 30m, 2h, 1d, or combined (1h30m).") var duration: String?
    @Option(help: "Until this time (RFC 3339, e.g. 2026-11-24T18:00:00Z).") var until: String?

    func validate() throws {
        guard duration == nil || until == nil else { throw ValidationError("give --for or --until, not both") }
        if let duration, ShareWith.milliseconds(duration) == nil {
            throw ValidationError("--for must be a duration such as 90s, 30m, 2h, 1d or 1h30m")
        }
        // The validation error below says what is wrong.
        if let until, (try? RFC3339.parse(until)) == nil { throw ValidationError("--until must be an RFC 3339 time such as 2026-11-24T18:00:00Z") }
    }

    func run(in session: Session) async throws {
        let found = try findFriend(friend, in: session)
        var end: UInt64?
        if let duration, let length = Self.milliseconds(duration) { end = nowMilliseconds().addingSaturating(length) }
        if let until { end = try RFC3339.parse(until).multipliedSaturating(by: 1000) }
        let updated = try await session.app.friends.share(id: found.id, until: end)
        let reseal = try await deliverQueued(session: session)
        printShare(updated, reseal: reseal, json: options.json)
        if reseal.queued { throw ExitCode(ExitStatus.queued) }
    }

    /// "90s", "30m", "2h", "1d", "1h30m" → milliseconds; nil for anything else (or zero).
    static func milliseconds(_ text: String) -> UInt64? {
        var total: UInt64 = 0
        var number: UInt64?
        for character in text.lowercased() {
            if let digit = character.wholeNumberValue, character.isASCII {
                let (shifted, overflow) = (number ?? 0).multipliedReportingOverflow(by: 10)
                guard !overflow else { return nil }
                number = shifted.addingSaturating(UInt64(digit))
                continue
            }
            let unit: UInt64
            switch character {
            case "s": unit = 1_000
            case "m": unit = 60_000
            case "h": unit = 3_600_000
            case "d": unit = 86_400_000
            default: return nil
            }
            guard let value = number else { return nil }
            total = total.addingSaturating(value.multipliedSaturating(by: unit))
            number = nil
        }
        return number == nil && total > 0 ? total : nil
    }
}

/// `coords pause NAME`: stop sharing with a friend for now (`coords share-with NAME` resumes).
struct Pause: SessionCommand {
    static let configuration = CommandConfiguration(
        abstract: "Pause sharing with a friend (your last position is sealed again without them).")
    @OptionGroup var options: CommandOptions
    @Argument(help: "The friend's name or id.") var friend: String

    func run(in session: Session) async throws {
        let found = try findFriend(friend, in: session)
        let updated = try await session.app.friends.pause(id: found.id)
        let reseal = try await deliverQueued(session: session)
        printShare(updated, reseal: reseal, json: options.json)
        if reseal.queued { throw ExitCode(ExitStatus.queued) }
    }
}

/// What resealing after a share ended did.
struct ResealReport {
    /// A reseal was prepared (someone lost their share).
    var resealed: Bool
    /// It could not be sent and waits in the outbox.
    var queued: Bool
    var message: String?
}

/// Delivers what a change of sharing queued, through the one wake (``HostTurn``, outbox only):
/// the core queued the reseal the change owes in the change's own transaction (PROTOCOL.md §9.3),
/// and signs it as it is taken. Says what became of it: nothing was owed, delivered, or queued
/// for the outbox's retry.
/// - Throws: ``CLIFailure`` when the relay refused the reseal for good; store errors.
func deliverQueued(session: Session) async throws -> ResealReport {
    let answered = try await HostTurn.run(session, only: [.outbox], ignoringBackoff: true)
    return try resealReport(answered, session: session)
}

/// What became of the reseal in `answered` (the last one, if several went).
/// - Throws: ``CLIFailure`` when the relay refused it for good.
func resealReport(_ answered: [(request: HostRequest, answer: HostAnswer)], session: Session) throws -> ResealReport {
    let reseals = answered.compactMap { request, answer -> OutboxReport? in
        guard request.outboxKind == .reseal, case .outbox(let report) = answer else { return nil }
        return report
    }
    guard let report = reseals.last else { return ResealReport(resealed: false, queued: false) }
    if report.isDelivered {
        let friends = (try? session.app.friends.shareRecipients().count) ?? 0  // unreadable: the line says 0, the reseal went
        return ResealReport(
            resealed: true, queued: false,
            message: "Your last position is sealed again for the \(friends) friend\(friends == 1 ? "" : "s") you share with now.")
    }
    let reason = report.reason ?? "unknown error"
    guard report.isQueued else { throw CLIFailure("the relay refused to store the resealed position: \(reason)") }
    return ResealReport(
        resealed: true, queued: true,
        message: "Resealing your last position could not be sent (\(reason)); it is queued and the next command retries it.")
}

/// "on", "until 18:00 UTC (1 h left)", "expired", "paused".
func sharingText(_ friend: Friend, now: UInt64) -> String {
    switch friend.sharing {
    case .on: return "on"
    case .paused: return "paused"
    case .expired: return "expired"
    case .until:
        let end = friend.shareUntil ?? now
        return "until \(RFC3339.format(end / 1000)) (\(timeLeft(until: end, now: now)) left)"
    }
}

/// The sharing fields of a friend in JSON.
func sharingJSON(_ friend: Friend) -> [(String, JSONValue)] {
    [("share_state", .string(friend.sharing.rawValue)), ("share_until_ms", friend.shareUntil.map { .integer($0) } ?? .null)]
}

private func printShare(_ friend: Friend, reseal: ResealReport, json: Bool) {
    let name = friend.name.isEmpty ? String(friend.id.prefix(8)) : friend.name
    if json {
        printJSON(
            .object(
                JSONObject(
                    [("id", .string(friend.id)), ("name", .string(friend.name))] + sharingJSON(friend) + [
                        ("resealed", .bool(reseal.resealed)), ("queued", .bool(reseal.queued))
                    ])))
    } else {
        printLine("Sharing with \(name): \(sharingText(friend, now: nowMilliseconds())).")
        if let message = reseal.message { printLine(message) }
    }
}
