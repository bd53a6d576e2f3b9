import ArgumentParser
import CoordsCore

/// `coords send NAME TEXT`: seals a message for a friend and posts it to their relay (queued in
/// the outbox when the relay cannot be reached; exit status 75 then).
struct Send: SessionCommand {
    static let configuration = CommandConfiguration(abstract: "Send a friend (or, with --group, a group) an end-to-end sealed message.")
    @OptionGroup var options: CommandOptions
    @Option(help: "Send to this group (its name or id); the one argument is then the text.") var group: String?
    @Argument(help: "The friend's name or id (with --group: the text).") var friend: String?
    @Argument(help: "The text (quote it); with --file, a caption (may be left out).") var text: String?
    @Option(help: "Send this file (a photo, a voice note, a document; at most 100 MiB), sealed end to end.") var file: String?
    @Option(name: .customLong("type"), help: "The file's media type, e.g. image/jpeg (default: from its extension).") var mediaType: String?

    var outboxFirst: OutboxFirst { .deliver(json: options.json) }

    /// The text: the second argument, or the only one with --group.
    var body: String { group == nil ? text ?? "" : friend ?? "" }

    func validate() throws {
        if file == nil, mediaType != nil { throw ValidationError("--type goes with --file") }
        if group == nil, friend == nil { throw ValidationError("give the friend and the text: coords send NAME \"on my way\"") }
        if group != nil, friend == nil, file == nil { throw ValidationError("give the text: coords send --group NAME \"on my way\"") }
        if group == nil, text == nil, file == nil { throw ValidationError("give the friend and the text: coords send NAME \"on my way\"") }
        if group != nil, text != nil { throw ValidationError("with --group, give only the text: coords send --group NAME \"on my way\"") }
    }

    func checkArguments() throws {
        if let file {
            try FileToSend.check(path: file, mediaType: mediaType)
            return
        }
        guard body.contains(where: { !$0.isWhitespace }) else {
            let target = group.map { "--group " + $0 } ?? friend ?? "NAME"
            throw CLIFailure("the message is empty; write some text, e.g. coords send \(target) \"on my way\"")
        }
    }

    func run(in session: Session) async throws {
        if let group { return try await sendToGroup(group, session: session) }
        let text = body
        let target = try findFriend(friend ?? "", in: session)
        let sent: SentMessage
        if let file {
            sent = try await FileToSend.send(path: file, mediaType: mediaType, caption: text, to: target.id, session: session, quiet: options.json)
        } else {
            sent = try await session.app.messages.send(text, to: target.id)
        }
        let report = try await OutboxDelivery.deliver(id: sent.outboxID, sent.request, session: session)
        let name = target.name.isEmpty ? String(target.id.prefix(8)) : target.name
        if options.json {
            printJSON(
                .object([
                    "id": .string(sent.message.id), "friend_id": .string(target.id), "queued": .bool(report.isQueued),
                    "error": report.reason.map { .string($0) } ?? .null, "file": sent.message.file?.hostJSON ?? .null
                ]))
        } else if report.isDelivered {
            let what = sent.message.file.map { "\(Terminal.safe($0.name.isEmpty ? "the file" : $0.name)) (\(byteCount($0.size)))" }
            printLine(what.map { "Sent \($0) to \(name)." } ?? "Sent to \(name).")
        } else if report.isQueued {
            printLine("Could not reach \(name)'s relay (\(report.reason ?? "unknown error")); the message is queued and will be retried.")
        }
        guard report.isDelivered || report.isQueued else {
            throw CLIFailure("\(name)'s relay refused the message: \(report.reason ?? "unknown error")")
        }
        if report.isQueued { throw ExitCode(ExitStatus.queued) }
    }

    private func sendToGroup(_ group: String, session: Session) async throws {
        let found = try findGroup(group, in: session)
        let sent: SentGroupMessage
        if let file {
            let upload = try await FileToSend.upload(path: file, session: session, quiet: options.json)
            sent = try await session.app.groups.sendFile(upload.upload, type: mediaType ?? upload.type, name: upload.name, caption: body, to: found.id)
        } else {
            sent = try await session.app.groups.send(body, to: found.id)
        }
        var queued = 0
        var refused: [String] = []
        for entry in sent.queued {
            let report = try await OutboxDelivery.deliver(id: entry.id, entry.item.request, session: session)
            if report.isQueued { queued += 1 } else if !report.isDelivered { refused.append(report.reason ?? "unknown error") }
        }
        if options.json {
            printJSON(
                .object([
                    "id": .string(sent.message.id), "group": .string(found.id), "copies": .integer(UInt64(sent.queued.count)),
                    "queued": .integer(UInt64(queued)), "unreachable": .array(sent.unreachable.map { .string($0) }),
                    "file": sent.message.file?.hostJSON ?? .null
                ]))
        } else {
            printLine("Sent to \(Terminal.safe(found.name)) (\(sent.queued.count) member\(sent.queued.count == 1 ? "" : "s")).")
            if queued > 0 { printLine("\(queued) copies could not reach their relay; they are queued and will be retried.") }
            if !sent.unreachable.isEmpty { printLine("\(sent.unreachable.count) member(s) are not your friends and get no copy.") }
        }
        guard refused.isEmpty else { throw CLIFailure("a relay refused the message: \(refused[0])") }
        if queued > 0 { throw ExitCode(ExitStatus.queued) }
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
                    "received": .array(outcome.received.map(\.hostJSON)),
                    "delivered": .array(outcome.delivered.map { .string($0) }),
                    "rejected": .array(
                        outcome.rejected.map { .object(["id": .string($0.id), "code": .integer(UInt64(clamping: $0.code)), "message": .string($0.reason)]) }
                    ),
                    "waiting": .array(outcome.waiting.map { .string($0) }),
                    "conversations": .array(
                        conversations.map { c in
                            .object([
                                "friend_id": .string(c.friendID), "name": .string(c.name), "messages": .integer(UInt64(c.messageCount)),
                                "last": c.lastMessage.map(\.hostJSON) ?? .null
                            ])
                        })
                ]))
            return
        }
        let now = nowMilliseconds()
        let groupNames = groupNameIndex(session)
        for message in outcome.received {
            let place = message.group.map { "[\(Terminal.safe(groupNames[$0] ?? String($0.prefix(8))))] " } ?? ""
            printLine(
                "\(place)\(Terminal.safe(names[message.peer] ?? String(message.peer.prefix(8)))) (\(age(since: message.sentAt, now: now)) ago): \(shownText(message))"
                    + (message.notify == false ? "  (silent)" : "")
            )
        }
        for rejection in outcome.rejected { printLine("Refused a message (\(Terminal.safe(rejection.id.prefix(8)))…): \(Terminal.safe(rejection.reason))") }
        for line in rotationLines(outcome, session: session) { printLine(line) }
        if !outcome.waiting.isEmpty {
            printLine(
                "\(outcome.waiting.count) group message(s) wait for their sender's key: kept on this device for up to a day, opened when the key comes.")
        }
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
    static let configuration = CommandConfiguration(abstract: "Show the conversation with a friend (or, with --group, a group).")
    @OptionGroup var options: CommandOptions
    @Option(help: "Show this group's conversation (its name or id) instead of a friend's.") var group: String?
    @Argument(help: "The friend's name or id.") var friend: String?
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
        guard (friend == nil) != (group == nil) else { throw ValidationError("name a friend, or a group with --group NAME") }
        guard group == nil || disappearAfter == nil else { throw ValidationError("--disappear-after is for conversations with a friend") }
    }

    func run(in session: Session) async throws {
        if let group { return try await groupChat(group, session: session) }
        let target = try findFriend(friend ?? "", in: session)
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
            printJSON(.object(["friend_id": .string(target.id), "name": .string(target.name), "messages": .array(history.map(\.hostJSON))]))
            if unreachable != nil { throw ExitCode(ExitStatus.unavailable) }
            return
        }
        let name = target.name.isEmpty ? String(target.id.prefix(8)) : target.name
        if history.isEmpty { printLine("No messages with \(name) yet. Send one with `coords send \(name) \"…\"`.") }
        let now = nowMilliseconds()
        for message in history {
            let who = message.outgoing ? "you" : name
            let state = message.outgoing ? " [\(message.status.rawValue)]" : ""
            printLine("\(age(since: message.sentAt, now: now)) ago  \(Terminal.safe(who)): \(shownText(message))\(state)")
        }
        if follow { try await Self.follow(target.id, session: session) }
        if unreachable != nil { throw ExitCode(ExitStatus.unavailable) }
    }

    private func groupChat(_ group: String, session: Session) async throws {
        OutboxDelivery.print(await OutboxDelivery.flush(session), json: options.json)
        var unreachable: String?
        do {
            _ = try await MessageDelivery.sync(session)  // first: it may bring the group, or its new name
        } catch {
            unreachable = describe(error)  // the stored conversation is still shown
        }
        let found = try findGroup(group, in: session)
        defer {
            if let unreachable { printError("coords: could not fetch new messages: \(unreachable); showing what is stored here") }
        }
        let history = try session.app.groups.history(groupID: found.id, limit: max(1, limit))
        if options.json {
            printJSON(.object(["group": try session.app.groups.group(found.id).hostJSON, "messages": .array(history.map(\.hostJSON))]))
            if unreachable != nil { throw ExitCode(ExitStatus.unavailable) }
            return
        }
        let names = Dictionary(try session.app.friends.list().map { ($0.id, $0.name) }, uniquingKeysWith: { a, _ in a })
        if history.isEmpty { printLine("No messages in \(Terminal.safe(found.name)) yet. Send one with `coords send --group \(found.name) \"…\"`.") }
        let now = nowMilliseconds()
        for message in history {
            let who = message.outgoing ? "you" : names[message.peer] ?? String(message.peer.prefix(8))
            let state = message.outgoing ? " [\(message.status.rawValue)]" : ""
            printLine("\(age(since: message.sentAt, now: now)) ago  \(Terminal.safe(who)): \(shownText(message))\(state)")
        }
        if follow { try await Self.follow(nil, groupID: found.id, session: session) }
        if unreachable != nil { throw ExitCode(ExitStatus.unavailable) }
    }

    /// Shows `friendID`'s (or `group`'s) messages as they arrive until interrupted: live notices
    /// from the own relay, and a mailbox sync every 60 s besides (for a relay without the live channel).
    static func follow(_ friendID: String?, groupID: String? = nil, session: Session) async throws {
        let watcher = LiveWatcher(
            session: session, onLocations: { _ in }, onMessages: { printLive($0, session: session, only: friendID, group: groupID) },
            onStatus: { printLine($0) })
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await watcher.run() }
            group.addTask {
                while true {
                    try await Waiting.sleep(seconds: 60)
                    // A failed poll is tried again in 60 s; the live channel carries on meanwhile.
                    if let outcome = try? await MessageDelivery.sync(session) { printLive(outcome, session: session, only: friendID, group: groupID) }
                }
            }
            try await group.next()
            try await group.next()
        }
    }
}

/// Group names by id, to label group messages (an unreadable list labels them by id).
func groupNameIndex(_ session: Session) -> [String: String] {
    // Names only label lines: without the list, group ids are shown.
    Dictionary(((try? session.app.groups.groups()) ?? []).map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first })
}

/// Talking to relays about messages.
enum MessageDelivery {
    /// Fetches our mailbox (with `fetch`, a signed mailbox fetch the core prepared, or a fresh
    /// one), processes it, then sends the acks and the receipts; while the core says more may be
    /// waiting (a full answer), fetches again, up to ``rounds`` answers in all.
    static func sync(_ session: Session, fetch: PreparedRequest? = nil) async throws -> MessagesOutcome {
        var outcome = try await syncOnce(session, fetch: fetch)
        var round = 1
        while outcome.more, round < rounds {
            do {
                outcome.merge(try await syncOnce(session))
            } catch {
                // What the first answers brought is kept and shown; the next sync reads on.
                printError("coords: the mailbox has more, but fetching it failed: \(describe(error))")
                break
            }
            round += 1
        }
        return outcome
    }

    /// Mailbox answers one sync reads at most (100 envelopes each).
    static let rounds = 10

    private static func syncOnce(_ session: Session, fetch: PreparedRequest? = nil) async throws -> MessagesOutcome {
        let result = try await RelayHTTP.send(try fetch ?? session.app.messages.prepareFetch())
        guard result.status == 200 else { throw CLIFailure(RelayHTTP.refusal(result, action: "list your messages")) }
        let outcome = try await session.app.messages.processFetchResponse(result.body)
        // An ack that does not arrive leaves the envelope on the relay: the next sync sees a duplicate and acks again.
        for ack in outcome.acks { _ = try? await RelayHTTP.send(ack) }
        // What the answer made the core queue — receipts, group keys, a session reset (§10.8), the
        // reseal a key conflict owes (§9.2) — goes out in one outbox turn; the core swept too.
        OutboxDelivery.print(await OutboxDelivery.flush(session, ignoringBackoff: false), json: true)
        return outcome
    }
}
