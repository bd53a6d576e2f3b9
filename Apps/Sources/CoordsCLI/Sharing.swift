import ArgumentParser
import CoordsCore

#if canImport(Glibc)
import Glibc
#endif

/// Shares one fix: sealed and queued in the outbox, then sent at once; the core decides what
/// the relay's answer means. Returns a line to print, and whether it waits in the outbox.
/// - Throws: ``CLIFailure`` when the relay refused the upload for good.
func share(_ fix: Location, session: Session) async throws -> (message: String, queued: Bool, upload: PreparedUpload) {
    let upload = try await session.app.location.prepareUpload(fix)
    let report = try await OutboxDelivery.send(.upload, upload.request, reference: String(fix.timestamp), location: fix, session: session)
    if report.isDelivered {
        let friends = upload.recipientCount - 1
        return ("Shared \(describe(fix)) with \(friends) friend\(friends == 1 ? "" : "s") (\(upload.blobByteCount)-byte sealed blob).", false, upload)
    }
    let reason = report.reason ?? "unknown error"
    guard report.isQueued else { throw CLIFailure("the relay refused to store the upload: \(reason)") }
    return ("The upload could not be stored (\(reason)); it is queued and the next command will retry it.", true, upload)
}

struct Share: SessionCommand {
    static let configuration = CommandConfiguration(abstract: "Share your position with your friends.")
    @OptionGroup var options: CommandOptions
    @Option(parsing: .unconditional, help: "Latitude in degrees (south is negative: --lat -33.87).") var lat: Double
    @Option(parsing: .unconditional, help: "Longitude in degrees (west is negative: --lon -9.14).") var lon: Double
    @Option(parsing: .unconditional, help: "Altitude in metres (below sea level is negative).") var alt: Double = 0
    @Option(help: "Accuracy radius in metres.") var accuracy: Float = 0

    func run(in session: Session) async throws {
        let fix = try Location(latitude: lat, longitude: lon, altitude: alt, accuracy: accuracy, timestamp: nowMilliseconds())
        OutboxDelivery.print(await OutboxDelivery.flush(session), json: options.json)
        let (message, queued, upload) = try await share(fix, session: session)
        if options.json {
            printJSON(
                .object([
                    "queued": .bool(queued), "fix_timestamp_ms": .integer(fix.timestamp),
                    "recipient_count": .integer(UInt64(upload.recipientCount)), "blob_bytes": .integer(UInt64(upload.blobByteCount)),
                    "message": .string(message)
                ]))
        } else {
            printLine(message)
        }
        if queued { throw ExitCode(ExitStatus.queued) }
    }
}

/// What one relay request of a fetch could not do.
struct FetchFailure {
    let server: String
    let message: String
}

/// Fetches every friend (all servers in parallel, batches of 50) and processes each answer as it
/// arrives, so a slow relay (at most its own deadline, PROTOCOL.md §4.1) delays no other.
/// `requests` is how many relay requests were made (one per server and batch of 50 friends).
func fetchAll(session: Session) async throws -> (outcome: FetchOutcome, failures: [FetchFailure], requests: Int) {
    let fetches = try await session.app.location.prepareFetches()
    return try await withThrowingTaskGroup(of: (RelayAPI.PreparedFetch, Result<HTTPResult, any Error>).self) { group in
        for fetch in fetches {
            group.addTask { (fetch, await Result { try await RelayHTTP.send(fetch.request) }) }
        }
        var total = FetchOutcome()
        var failures: [FetchFailure] = []
        for try await (fetch, result) in group {
            switch result {
            case .success(let response) where response.status == 200:
                do {
                    total.merge(try await session.app.location.processFetchResponse(response.body))
                } catch {
                    failures.append(FetchFailure(server: fetch.server, message: describe(error)))
                }
            case .success(let response):
                failures.append(FetchFailure(server: fetch.server, message: RelayHTTP.refusal(response, action: "answer the fetch")))
            case .failure(let error):
                failures.append(FetchFailure(server: fetch.server, message: describe(error)))
            }
        }
        return (total, failures, fetches.count)
    }
}

/// The exit status of a fetch: 0 when every relay request worked, 69 when none did, 2 when some did.
func fetchStatus(failures: Int, requests: Int) -> Int32 {
    if failures == 0 { return ExitStatus.success }
    return failures >= requests ? ExitStatus.unavailable : ExitStatus.partial
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}

struct Fetch: SessionCommand {
    static let configuration = CommandConfiguration(abstract: "Fetch your friends' positions.")
    @OptionGroup var options: CommandOptions

    var outboxFirst: OutboxFirst { .deliver(json: options.json) }

    func run(in session: Session) async throws {
        let (outcome, failures, requests) = try await fetchAll(session: session)
        try report(outcome, failures: failures, session: session, json: options.json)
        let status = fetchStatus(failures: failures.count, requests: requests)
        if status != ExitStatus.success { throw ExitCode(status) }
    }
}

/// Prints every fetched friend (table or JSON) on standard output; refusals of single entries
/// go with the data, relays that could not be asked go to standard error.
func report(_ outcome: FetchOutcome, failures: [FetchFailure], session: Session, json: Bool) throws {
    let locations = try session.app.location.friendLocations()
    let verified = Set(try session.app.friends.list().filter { $0.trust == .verified }.map(\.id))
    let updated = Set(outcome.updated.map(\.id))
    let now = nowMilliseconds()
    for failure in failures { printError("coords: could not fetch from \(failure.server): \(failure.message)") }
    if json {
        printJSON(
            .object([
                "friends": .array(
                    locations.map { friend in
                        .object([
                            "id": .string(friend.id), "name": .string(friend.name),
                            "verified": .bool(verified.contains(friend.id)),
                            "signature": friend.authenticity.map { .string(signatureWord($0)) } ?? .null,
                            "location": friend.location.map(locationJSON) ?? .null,
                            "relay_updated_ms": friend.updated.map { .integer($0.multipliedReportingOverflow(by: 1000).overflow ? .max : $0 * 1000) } ?? .null,
                            "place": friend.place.map { .string($0.displayName) } ?? .null,
                            "place_phrase": friend.place.map { .string($0.phrase(accuracyMetres: Double(friend.location?.accuracy ?? 0))) } ?? .null,
                            "new": .bool(updated.contains(friend.id))
                        ])
                    }),
                "rejected": .array(
                    outcome.rejected.map {
                        .object([
                            "id": .string($0.id), "code": .integer(UInt64(clamping: $0.error.code)),
                            "message": .string($0.error.description)
                        ])
                    }),
                "failures": .array(failures.map { .object(["server": .string($0.server), "message": .string($0.message)]) })
            ]))
        return
    }
    if locations.isEmpty {
        printLine("You do not fetch anyone yet. Add a friend with `coords add LINK`.")
    } else {
        var table = TextTable("NAME", "LOCATION", "PLACE", "AGE", "SIGNATURE", "VERIFIED", "NEW")
        for friend in locations {
            let name = friend.name.isEmpty ? String(friend.id.prefix(8)) : friend.name
            table.add(
                name, friend.location.map(describe) ?? "no position yet",
                friend.place.map { $0.phrase(accuracyMetres: Double(friend.location?.accuracy ?? 0)) } ?? "—",
                friend.location.map { age(since: $0.timestamp, now: now) } ?? "—",
                friend.authenticity.map(signatureWord) ?? "—", verified.contains(friend.id) ? "yes" : "no",
                updated.contains(friend.id) ? "new" : "")
        }
        printLine(table.render())
    }
    for rejection in outcome.rejected { printLine(rejectionLine(rejection)) }
}

/// "Refused abcdefgh…: <why>", with what to do when the answer is ordinary: a blob not sealed for
/// this identity is what friends upload until they have seen the user's new key (after `coords
/// rotate`) or added the user at all.
func rejectionLine(_ rejection: FetchRejection) -> String {
    let line = "Refused \(Terminal.safe(rejection.id.prefix(8)))…: \(Terminal.safe(rejection.error.description))"
    guard case .notARecipient = rejection.error else { return line }
    return line
        + " — this friend has not shared with your current key yet (after `coords rotate` they reseal once they fetch"
        + " your rotation statement; a friend who has not added you shares nothing); it clears when they next share"
}

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
func printLive(_ outcome: MessagesOutcome, session: Session, only friendID: String? = nil) {
    // Names only label lines: without the list, ids are shown.
    let names = Dictionary(((try? session.app.friends.list()) ?? []).map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first })
    for message in outcome.received where friendID == nil || message.peer == friendID {
        let name = names[message.peer].flatMap { $0.isEmpty ? nil : $0 } ?? String(message.peer.prefix(8))
        printLine("\(Terminal.safe(name)): \(Terminal.safe(message.text))")
    }
    if friendID == nil { for line in rotationLines(outcome, session: session) { printLine(line) } }
}

struct Delete: SessionCommand {
    static let configuration = CommandConfiguration(abstract: "Remove your position from your relay.")
    @OptionGroup var options: CommandOptions

    var outboxFirst: OutboxFirst { .deliver(json: options.json) }

    func run(in session: Session) async throws {
        let server = try session.app.wallet.profile().server
        let request = try await session.app.location.prepareDelete()
        let report = try await OutboxDelivery.send(.delete, request, session: session)
        if report.isDelivered {
            if options.json { return printJSON(.object(["server": .string(server), "deleted": .bool(true), "queued": .bool(false)])) }
            return printLine("Your position is deleted from \(server).")
        }
        let reason = report.reason ?? "unknown error"
        guard report.isQueued else { throw CLIFailure("the relay refused to delete your position: \(reason)") }
        if options.json {
            printJSON(.object(["server": .string(server), "deleted": .bool(false), "queued": .bool(true)]))
        } else {
            printLine("The delete could not be sent (\(reason)); it is queued and the next command will retry it.")
        }
        throw ExitCode(ExitStatus.queued)
    }
}

struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Export or import an encrypted backup of your identity and friends.",
        subcommands: [Export.self, Import.self])

    struct Export: SessionCommand {
        static let configuration = CommandConfiguration(abstract: "Write an encrypted backup to a file.")
        @OptionGroup var options: CommandOptions
        @Argument(help: "The backup file to write.") var file: String

        func run(in session: Session) async throws {
            let passphrase = try Passphrase.read(prompt: "Backup passphrase: ", confirm: true, variable: "COORDS_BACKUP_PASSPHRASE")
            let backup = try await session.app.wallet.exportBackup(passphrase: passphrase)
            try writeFile(file, backup)
            if options.json { return printJSON(.object(["file": .string(file), "bytes": .integer(UInt64(backup.count))])) }
            printLine("Wrote an encrypted backup (\(backup.count) bytes) to \(file). Keep the passphrase somewhere safe.")
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Restore a backup into a new data directory.",
            discussion: "Atomic like `coords init`: a failure leaves no data directory behind.")
        @OptionGroup var options: CommandOptions
        @Argument(help: "The backup file to read.") var file: String

        func run() async throws {
            try await runReporting {
                let backup = try readFile(file)
                let passphrase = try Passphrase.read(prompt: "Backup passphrase: ", confirm: false, variable: "COORDS_BACKUP_PASSPHRASE")
                let (id, friends, home) = try await Session.create(options.global) { session in
                    let id = try await session.app.wallet.importBackup(backup, passphrase: passphrase)
                    session.writePublicProfile()
                    return (id, try session.app.friends.list().count, session.home)
                }
                if options.json { return printJSON(.object(["id": .string(id), "friends": .integer(UInt64(friends))])) }
                printLine("Restored identity \(id) with \(friends) friend(s) into \(home).")
            }
        }
    }
}

struct Outbox: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show or send requests waiting for the relay.",
        subcommands: [List.self, Flush.self], defaultSubcommand: List.self)

    struct List: SessionCommand {
        static let configuration = CommandConfiguration(abstract: "List queued requests.")
        @OptionGroup var options: CommandOptions

        func run(in session: Session) async throws {
            let entries = try session.app.outbox.pending()
            let now = nowMilliseconds()
            if options.json {
                printJSON(
                    .object([
                        "entries": .array(
                            entries.map {
                                .object([
                                    "id": .integer($0.id), "kind": .string($0.item.kind.rawValue), "url": .string($0.item.request.url),
                                    "queued_at_ms": .integer($0.item.createdAt), "attempts": .integer(UInt64($0.item.attempts)),
                                    "last_error": $0.item.lastError.map { .string($0) } ?? .null
                                ])
                            })
                    ]))
                return
            }
            guard !entries.isEmpty else { return printLine("The outbox is empty.") }
            var table = TextTable("ID", "KIND", "QUEUED", "ATTEMPTS", "LAST ERROR")
            for entry in entries {
                table.add(
                    String(entry.id), entry.item.kind.rawValue, age(since: entry.item.createdAt, now: now) + " ago",
                    String(entry.item.attempts), entry.item.lastError ?? "—")
            }
            printLine(table.render())
        }
    }

    struct Flush: SessionCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send queued requests now.",
            discussion: "Exit status 0 when the outbox is empty afterwards, 75 when some requests still wait.")
        @OptionGroup var options: CommandOptions

        func run(in session: Session) async throws {
            let report = await OutboxDelivery.flush(session)
            if options.json {
                printJSON(
                    .object([
                        "delivered": .array(report.delivered.map { .string($0) }),
                        "dropped": .array(report.dropped.map { .string($0) }),
                        "still_queued": .integer(UInt64(report.stillQueued))
                    ]))
            } else {
                OutboxDelivery.print(report, json: false)
                if report.delivered.isEmpty && report.dropped.isEmpty && report.stillQueued == 0 { printLine("Nothing to send.") }
            }
            if report.stillQueued > 0 { throw ExitCode(ExitStatus.queued) }
        }
    }
}

/// Writes a file readable by its owner only (0600), also when it already existed with wider
/// permissions: the mode is set on the open descriptor before any byte is written.
func writeFile(_ path: String, _ bytes: [UInt8]) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
    guard fd >= 0 else { throw CLIFailure("cannot write \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    guard fchmod(fd, 0o600) == 0 else { throw CLIFailure("cannot make \(path) private (0600): \(String(cString: strerror(errno)))") }
    var written = 0
    while written < bytes.count {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress?.advanced(by: written), bytes.count - written) }
        guard n > 0 else { throw CLIFailure("cannot write \(path): \(String(cString: strerror(errno)))") }
        written += n
    }
}

func readFile(_ path: String) throws -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw CLIFailure("cannot read \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n >= 0 else { throw CLIFailure("cannot read \(path): \(String(cString: strerror(errno)))") }
        if n == 0 { break }
        bytes += chunk[0..<n]
        guard bytes.count <= 16 << 20 else { throw CLIFailure("\(path) is larger than 16 MiB; not a backup") }
    }
    return bytes
}
