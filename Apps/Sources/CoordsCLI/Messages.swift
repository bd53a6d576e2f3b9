import ArgumentParser
import CoordsCore

/// `coords send NAME TEXT`: seals a message for a friend and posts it to their relay (queued in
/// the outbox when the relay cannot be reached; exit status 75 then).
struct Send: SessionCommand {
    static let configuration = CommandConfiguration(abstract: "Send a friend an end-to-end sealed message.")
    @OptionGroup var options: CommandOptions
    @Argument(help: "The friend's name or id.") var friend: String
    @Argument(help: "The text (quote it).") var text: String

    var outboxFirst: OutboxFirst { .deliver(json: options.json) }

    func checkArguments() throws {
        guard text.contains(where: { !$0.isWhitespace }) else {
            throw CLIFailure("the message is empty; write some text, e.g. coords send \(friend) \"on my way\"")
        }
    }

    func run(in session: Session) async throws {
        let target = try findFriend(friend, in: session)
        let sent = try await session.app.messages.send(text, to: target.id)
        let report = try await OutboxDelivery.deliver(id: sent.outboxID, sent.request, session: session)
        let name = target.name.isEmpty ? String(target.id.prefix(8)) : target.name
        if options.json {
            printJSON(
                .object([
                    "id": .string(sent.message.id), "friend_id": .string(target.id), "queued": .bool(report.isQueued),
                    "error": report.reason.map { .string($0) } ?? .null
                ]))
        } else if report.isDelivered {
            printLine("Sent to \(name).")
        } else if report.isQueued {
            printLine("Could not reach \(name)'s relay (\(report.reason ?? "unknown error")); the message is queued and will be retried.")
        }
        guard report.isDelivered || report.isQueued else {
            throw CLIFailure("\(name)'s relay refused the message: \(report.reason ?? "unknown error")")
        }
        if report.isQueued { throw ExitCode(ExitStatus.queued) }
    }
}

/// `coords inbox`: fetches new messages, acknowledges them, sends receipts, and lists conversations.
struct Inbox: SessionCommand {
    static let configuration = CommandConfiguration(abstract: "Fetch new messages and list your conversations.")
    @OptionGroup var options: CommandOptions

    var outboxFirst: OutboxFirst { .deliver(json: options.json) }

    func run(in session: Session) async throws {
        let outcome = try await MessageDelivery.sync(session)
        let names = Dictionary(try session.app.friends.list().map { ($0.id, $0.name) }, uniquingKeysWith: { a, _ in a })
        let conversations = try session.app.messages.conversations()
        if options.json {
            printJSON(
                .object([
                    "received": .array(outcome.received.map(messageJSON)),
                    "delivered": .array(outcome.delivered.map { .string($0) }),
                    "rejected": .array(
                        outcome.rejected.map { .object(["id": .string($0.id), "code": .integer(UInt64(clamping: $0.code)), "message": .string($0.reason)]) }
                    ),
                    "conversations": .array(
                        conversations.map { c in
                            .object([
                                "friend_id": .string(c.friendID), "name": .string(c.name), "messages": .integer(UInt64(c.messageCount)),
                                "last": c.lastMessage.map(messageJSON) ?? .null
                            ])
                        })
                ]))
            return
        }
        let now = nowMilliseconds()
        for message in outcome.received {
            printLine(
                "\(Terminal.safe(names[message.peer] ?? String(message.peer.prefix(8)))) (\(age(since: message.sentAt, now: now)) ago): \(Terminal.safe(message.text))"
            )
        }
        for rejection in outcome.rejected { printLine("Refused a message (\(Terminal.safe(rejection.id.prefix(8)))…): \(Terminal.safe(rejection.reason))") }
        for line in rotationLines(outcome, session: session) { printLine(line) }
        if outcome.received.isEmpty { printLine("No new messages.") }
        if !conversations.isEmpty {
            var table = TextTable("FRIEND", "MESSAGES", "LAST", "AGE")
            for c in conversations {
                let last = c.lastMessage.map { ($0.outgoing ? "you: " : "") + String($0.text.prefix(40)) } ?? "—"
                table.add(c.name, String(c.messageCount), last, c.lastMessage.map { age(since: $0.storedAt, now: now) } ?? "—")
            }
            printLine(table.render())
        }
    }
}

/// `coords chat NAME`: the conversation with one friend (fetching new messages first).
struct Chat: SessionCommand {
    static let configuration = CommandConfiguration(abstract: "Show the conversation with a friend.")
    @OptionGroup var options: CommandOptions
    @Argument(help: "The friend's name or id.") var friend: String
    @Option(help: "Show at most this many of the latest messages.") var limit: Int = 50
    @Option(
        name: .customLong("disappear-after"),
        help: "Delete local copies of this conversation's new messages after this many seconds (0 turns it off).")
    var disappearAfter: UInt64?
    @Flag(
        name: .shortAndLong,
        help: "Stay and show the friend's new messages as they arrive (live channel; polled every 60 s where there is none). Ctrl-C stops.")
    var follow = false

    func validate() throws {
        guard !(follow && options.json) else { throw ValidationError("--follow prints lines as messages arrive; it does not combine with --json") }
    }

    func run(in session: Session) async throws {
        let target = try findFriend(friend, in: session)
        if let seconds = disappearAfter {
            try await session.app.messages.setDisappearing(friendID: target.id, after: seconds == 0 ? nil : seconds)
        }
        OutboxDelivery.print(await OutboxDelivery.flush(session), json: options.json)
        var unreachable: String?
        do {
            _ = try await MessageDelivery.sync(session)
        } catch {
            unreachable = describe(error)  // the stored conversation is still shown
        }
        try await session.app.messages.sweepExpired()
        let history = try session.app.messages.history(with: target.id, limit: max(1, limit))
        defer {
            if let unreachable { printError("coords: could not fetch new messages: \(unreachable); showing what is stored here") }
        }
        if options.json {
            printJSON(.object(["friend_id": .string(target.id), "name": .string(target.name), "messages": .array(history.map(messageJSON))]))
            if unreachable != nil { throw ExitCode(ExitStatus.unavailable) }
            return
        }
        let name = target.name.isEmpty ? String(target.id.prefix(8)) : target.name
        if history.isEmpty { printLine("No messages with \(name) yet. Send one with `coords send \(name) \"…\"`.") }
        let now = nowMilliseconds()
        for message in history {
            let who = message.outgoing ? "you" : name
            let state = message.outgoing ? " [\(message.status.rawValue)]" : ""
            printLine("\(age(since: message.sentAt, now: now)) ago  \(Terminal.safe(who)): \(Terminal.safe(message.text))\(state)")
        }
        if follow { try await Self.follow(target.id, session: session) }
        if unreachable != nil { throw ExitCode(ExitStatus.unavailable) }
    }

    /// Shows `friendID`'s messages as they arrive until interrupted: live notices from the own
    /// relay, and a mailbox sync every 60 s besides (for a relay without the live channel).
    static func follow(_ friendID: String, session: Session) async throws {
        let watcher = LiveWatcher(
            session: session, onLocations: { _ in }, onMessages: { printLive($0, session: session, only: friendID) },
            onStatus: { printLine($0) })
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await watcher.run() }
            group.addTask {
                while true {
                    try await Task.sleep(for: .seconds(60))
                    // A failed poll is tried again in 60 s; the live channel carries on meanwhile.
                    if let outcome = try? await MessageDelivery.sync(session) { printLive(outcome, session: session, only: friendID) }
                }
            }
            try await group.next()
            try await group.next()
        }
    }
}

func messageJSON(_ m: MessageRecord) -> JSONValue {
    .object([
        "id": .string(m.id), "friend_id": .string(m.peer), "outgoing": .bool(m.outgoing), "kind": .string(m.kind),
        "text": .string(m.text), "sent_at_ms": .integer(m.sentAt), "status": .string(m.status.rawValue)
    ])
}

/// Talking to relays about messages.
enum MessageDelivery {
    /// Fetches our mailbox (with `fetch`, a signed mailbox fetch the core prepared, or a fresh
    /// one), processes it, then sends the acks and the receipts.
    static func sync(_ session: Session, fetch: PreparedRequest? = nil) async throws -> MessagesOutcome {
        let result = try await RelayHTTP.send(try fetch ?? session.app.messages.prepareFetch())
        guard result.status == 200 else { throw CLIFailure(RelayHTTP.refusal(result, action: "list your messages")) }
        let outcome = try await session.app.messages.processFetchResponse(result.body)
        // An ack that does not arrive leaves the envelope on the relay: the next sync sees a duplicate and acks again.
        for ack in outcome.acks { _ = try? await RelayHTTP.send(ack) }
        if !outcome.conflicts.isEmpty { _ = try? await sendReseal(session: session) }  // a conflict pauses sharing at once
        // A lost session: the core queued a reset to the friend in a new session; send it now (PROTOCOL.md §10.8).
        if !outcome.broken.isEmpty { OutboxDelivery.print(await OutboxDelivery.flush(session), json: true) }
        for receipt in outcome.receipts {
            // The core records the answer: delivered, or left in the outbox for a retry.
            _ = try await OutboxDelivery.deliver(id: receipt.id, receipt.item.request, session: session)
        }
        try await session.app.messages.sweepExpired()
        return outcome
    }
}
