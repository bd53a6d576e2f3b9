import ArgumentParser
import CoordsCore

/// `coords watch`: a session command without `--json` (it prints lines as things happen).
struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Share and fetch every N seconds; friends' moves and messages show as they happen.",
        discussion: """
            Holds a live connection (PROTOCOL.md §8) to every friend's relay, so a friend's new position \
            and a new message show within a second; relays without one are polled every round. \
            --poll only polls. The core decides every retry (1 s to 60 s) and wakes it for whatever \
            is due: a share's end, a disappearing message, the outbox; Ctrl-C stops.
            """)
    @OptionGroup var global: GlobalOptions
    @Option(parsing: .unconditional, help: "Latitude to share (omit both to only fetch; south is negative).") var lat: Double?
    @Option(parsing: .unconditional, help: "Longitude to share (west is negative).") var lon: Double?
    @Option(help: "Seconds between rounds.") var interval: Int = 60
    @Option(help: "Stop after this many rounds (0: never).") var count: Int = 0
    @Flag(help: "Only poll every round; no live connection.") var poll = false

    func validate() throws {
        guard (lat == nil) == (lon == nil) else { throw ValidationError("give both --lat and --lon, or neither") }
        guard interval >= 1 else { throw ValidationError("--interval must be at least 1 second") }
    }

    func run() async throws { try await withSession(global) { session in try await run(in: session) } }

    func run(in session: Session) async throws {
        let (lat, lon, interval, count) = (lat, lon, interval, count)
        guard !poll else { return try await Self.rounds(session, lat: lat, lon: lon, interval: interval, count: count) }
        let watcher = LiveWatcher(
            session: session, onLocations: { printLive($0) }, onMessages: { printLive($0, session: session) },
            onStatus: { printLine($0) })
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await watcher.run()
                return false
            }
            group.addTask {
                try await Self.rounds(session, lat: lat, lon: lon, interval: interval, count: count)
                return true
            }
            // The rounds end the command (after --count rounds); the live connections go with them.
            while let roundsEnded = try await group.next(), !roundsEnded {}
            group.cancelAll()
        }
    }

    /// The one wake (``HostTurn``): shares (with --lat/--lon) every `interval` seconds, and runs
    /// every request the core hands out — the outbox, fetches and mailbox reads (every
    /// `interval`), prekeys, bundles, the reseal a share's end owes — sleeping until the core's
    /// next wake. A round is `interval` seconds (and one shared fix with --lat/--lon); the
    /// command ends after `count` of them.
    private static func rounds(_ session: Session, lat: Double?, lon: Double?, interval: Int, count: Int) async throws {
        let every = UInt64(max(interval, 1)).multipliedSaturating(by: 1000)
        session.app.fetchInterval = every
        var round = 0
        var nextRound: UInt64 = 0
        while true {
            if nowMilliseconds() >= nextRound {
                nextRound = nowMilliseconds().addingSaturating(every)
                round += 1
                if let lat, let lon {
                    do {
                        let fix = try Location(latitude: lat, longitude: lon, timestamp: nowMilliseconds())
                        _ = try await session.app.outbox.queueUpload(fix)  // the turn below sends it
                    } catch {
                        printLine("Share failed: \(describe(error))")
                    }
                }
            }
            try show(try await HostTurn.run(session), session: session)
            if count != 0 && round >= count { break }
            // Without a position to share or rounds to count, only the core's wakes matter.
            try await sleepUntilNextWake(session, notAfter: lat != nil || count != 0 ? nextRound : nil)
        }
    }

    /// Prints what a turn did: the friends table after a fetch, messages that arrived, what the
    /// outbox delivered or dropped, a reseal, and what the core reported meanwhile (disappeared
    /// messages); failures say when the core tries again.
    private static func show(_ answered: [(request: HostRequest, answer: HostAnswer)], session: Session) throws {
        var locations: FetchOutcome?
        var failures: [FetchFailure] = []
        var messages = MessagesOutcome()
        for (request, answer) in answered {
            switch answer {
            case .locations(let outcome):
                var total = locations ?? FetchOutcome()
                total.merge(outcome)
                locations = total
            case .messages(let outcome): messages.merge(outcome)
            case .outbox(let report):
                let name = "\(request.outboxKind?.rawValue ?? "request") #\(request.outboxID ?? 0)"
                switch report.decision {
                case .delivered where request.outboxKind == .upload: printLine("Shared your position (\(name)).")
                case .delivered where request.outboxKind == .reseal:
                    if let line = try resealReport([(request, answer)], session: session).message { printLine(line) }
                case .dropped(let reason): printLine("Outbox: dropped \(name): \(Terminal.safe(reason))")
                case .retry(let at, let reason), .signAgain(let at, let reason):
                    printLine("Outbox: \(name) not sent (\(Terminal.safe(reason))); retrying in \(secondsUntil(at)) s.")
                case .delivered, .unknown: break
                }
            case .failed(let at, let reason):
                if request.purpose == .fetch { failures.append(FetchFailure(server: request.request.url, message: reason)) }
                if request.purpose == .mailbox { printLine("Reading your mailbox failed: \(Terminal.safe(reason))") }
                printLine("Retrying in \(secondsUntil(at)) s.")
            case .prekeys, .bundle, .acknowledged, .unknown: break
            }
        }
        for problem in HostTurn.prekeyProblems(answered) { printError("coords: forward secrecy: \(problem)") }
        if locations != nil || !failures.isEmpty { try report(locations ?? FetchOutcome(), failures: failures, session: session, json: false) }
        if !messages.received.isEmpty || !messages.rotated.isEmpty { printLive(messages, session: session) }
        while case .update(let update) = session.app.nextUpdate(timeout: .zero) {
            guard case .messages(.messagesExpired(let ids)) = update, !ids.isEmpty else { continue }
            printLine(ids.count == 1 ? "1 message disappeared." : "\(ids.count) messages disappeared.")
        }
    }

    /// Whole seconds from now until `at` (ms since the epoch), at least 1.
    private static func secondsUntil(_ at: UInt64) -> UInt64 {
        max(1, at.subtractingSaturating(nowMilliseconds()).addingSaturating(999) / 1000)
    }

    /// Sleeps until the core's next wake (``CoordsApp/nextWake(now:)``: a retry, a share's end,
    /// a disappearing message, the next fetch, …), or `notAfter` (the next round); with
    /// neither, a minute; at most an hour. A friend watched over the live channel is not fetched periodically,
    /// so an idle watch wakes only for what the core asks.
    private static func sleepUntilNextWake(_ session: Session, notAfter: UInt64?) async throws {
        let now = nowMilliseconds()
        let wake = [try session.app.nextWake(), notAfter].compactMap { $0 }.min() ?? now.addingSaturating(60_000)
        // At most an hour, so a wall clock set forward meanwhile delays nothing for long.
        let delay = min(wake.subtractingSaturating(now), 3_600_000)
        try await Waiting.sleep(milliseconds: Int64(clamping: max(delay, 10)))
    }
}

/// One line per friend whose position a live notice (or the catch-up fetch) changed, and one per
/// refused notice.
func printLive(_ outcome: FetchOutcome) {
    for friend in outcome.updated {
        guard let location = friend.location else { continue }
        let name = friend.name.isEmpty ? String(friend.id.prefix(8)) : friend.name
        let place = friend.place.map { ", " + $0.phrase(accuracyMetres: Double(location.accuracy)) } ?? ""
        printLine("\(Terminal.safe(name)) is at \(describe(location))\(place) (live)")
    }
    for rejection in outcome.rejected { printLine(rejectionLine(rejection)) }
}

/// One line per message that arrived.
func printLive(_ outcome: MessagesOutcome, session: Session, only friendID: String? = nil, group: String? = nil) {
    // Names only label lines: without the list, ids are shown.
    let names = Dictionary(((try? session.app.friends.list()) ?? []).map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first })
    let groups = groupNameIndex(session)
    for message in outcome.received where friendID == nil || (message.peer == friendID && message.group == nil) {
        guard group == nil || message.group == group else { continue }
        let name = names[message.peer].flatMap { $0.isEmpty ? nil : $0 } ?? String(message.peer.prefix(8))
        let place = message.group.map { "[\(Terminal.safe(groups[$0] ?? String($0.prefix(8))))] " } ?? ""
        // The core decided (mute, quiet hours): a message that should not notify says so.
        let silent = message.notify == false ? "  (silent)" : ""
        printLine("\(place)\(Terminal.safe(name)): \(shownText(message))\(silent)")
    }
    if friendID == nil { for line in rotationLines(outcome, session: session) { printLine(line) } }
}
