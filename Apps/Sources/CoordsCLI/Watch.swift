import ArgumentParser
import CoordsCore

/// `coords watch`: a session command without `--json` (it prints lines as things happen).
struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Share and fetch every N seconds; friends' moves and messages show as they happen.",
        discussion: """
            Holds a live connection (PROTOCOL.md §8) to every friend's relay, so a friend's new position \
            and a new message show within a second; relays without one are polled every round. \
            --poll only polls. Failures back off from 1 s to 60 s; Ctrl-C stops.
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

    /// Shares (with --lat/--lon) and fetches every friend, every `interval` seconds.
    private static func rounds(_ session: Session, lat: Double?, lon: Double?, interval: Int, count: Int) async throws {
        var failures = 0
        var round = 0
        while count == 0 || round < count {
            round += 1
            var failed = false
            // Prekeys due, friends' bundles due (the core limits both), then the outbox (PROTOCOL.md §10).
            if round > 1 { await PrekeyRefresh.refresh(session) }
            OutboxDelivery.print(await OutboxDelivery.flush(session), json: false)
            await resealAfterShareEnded(session)
            if let lat, let lon {
                do {
                    let fix = try Location(latitude: lat, longitude: lon, timestamp: nowMilliseconds())
                    let (message, queued, _) = try await share(fix, session: session)
                    printLine(message)
                    failed = failed || queued
                } catch {
                    printLine("Share failed: \(describe(error))")
                    failed = true
                }
            }
            do {
                let (outcome, fetchFailures, _) = try await fetchAll(session: session)
                try report(outcome, failures: fetchFailures, session: session, json: false)
                failed = failed || !fetchFailures.isEmpty
            } catch {
                printLine("Fetch failed: \(describe(error))")
                failed = true
            }
            if count != 0 && round >= count { break }
            failures = failed ? failures + 1 : 0
            // The core's backoff (1 s → 60 s), counted in whole seconds.
            let delay = failures == 0 ? interval : Int(Backoff.delay(attempts: UInt32(clamping: failures)) / 1000)
            if failures > 0 { printLine("Retrying in \(delay) s.") }
            try await sleepHandlingTimers(seconds: delay, session: session)
        }
    }

    /// Seals the last position again when a share ended (nothing when none did); a failure is
    /// printed and the next round tries again.
    private static func resealAfterShareEnded(_ session: Session) async {
        do {
            if let message = try await sendReseal(session: session).message { printLine("A share ended. " + message) }
        } catch {
            printLine("A share ended, but your last position could not be sealed again: \(describe(error))")
        }
    }

    /// Sleeps `seconds`, waking when a share ends (PROTOCOL.md §9.3) to seal the last position
    /// again without that friend at once, when disappearing messages are due, to delete them and
    /// destroy their keys on time (docs/STORE.md), and when the outbox's next retry is due.
    private static func sleepHandlingTimers(seconds: Int, session: Session) async throws {
        let deadline = nowMilliseconds().addingSaturating(UInt64(max(seconds, 0)).multipliedSaturating(by: 1000))
        while case let now = nowMilliseconds(), now < deadline {
            // A store error here only costs this early wake-up: the next round reseals and sweeps anyway.
            let expiry = (try? session.app.location.nextShareExpiry()) ?? nil
            let sweep = (try? session.app.messages.nextExpiry()) ?? nil
            // Likewise the outbox: a store error costs its early retry, the next round flushes it.
            let retry = (try? session.app.outbox.nextWake()) ?? nil
            let wake = min(deadline, expiry ?? deadline, sweep ?? deadline, retry.map { max($0, now) } ?? deadline)
            try await Task.sleep(for: .milliseconds(Int64(clamping: wake.subtractingSaturating(now))))
            if let retry, nowMilliseconds() >= retry {
                OutboxDelivery.print(await OutboxDelivery.flush(session, ignoringBackoff: false), json: false)
            }
            if let expiry, nowMilliseconds() >= expiry { await resealAfterShareEnded(session) }
            if let sweep, nowMilliseconds() >= sweep {
                do {
                    let gone = try await session.app.messages.sweepExpired()
                    if !gone.isEmpty { printLine(gone.count == 1 ? "1 message disappeared." : "\(gone.count) messages disappeared.") }
                } catch {
                    printLine("Could not delete disappearing messages: \(describe(error))")
                }
            }
        }
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
