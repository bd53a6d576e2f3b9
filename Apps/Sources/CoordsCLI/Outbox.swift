import ArgumentParser
import CoordsCore

/// Carries the outbox's requests to the relays and hands every answer back to the core, which
/// decides what it means (``OutboxManager/report(id:status:body:)``): the CLI holds no delivery
/// policy of its own. Every command that talks to the network flushes it first.
enum OutboxDelivery {
    struct Report {
        var delivered: [String] = []
        /// Entries left in the outbox afterwards (failed now, or not due yet after an earlier failure).
        var stillQueued = 0
        var dropped: [String] = []
        /// What went wrong besides the entries themselves (printed, never fatal to the command).
        var problems: [String] = []
    }

    /// Sends one request and reports the answer (status 0 with the failure when none came).
    /// - Throws: store errors from recording the decision.
    static func deliver(id: UInt64, _ request: PreparedRequest, session: Session) async throws -> OutboxReport {
        let status: Int
        let body: [UInt8]
        do {
            let result = try await RelayHTTP.send(request)
            (status, body) = (result.status, result.body)
        } catch {
            (status, body) = (0, Array(describe(error).utf8))
        }
        return try await session.app.outboxReport(id: id, status: status, body: body)
    }

    /// Tries every due entry once, through the one wake (``HostTurn``, outbox requests only). A
    /// command is a person (or a script) asking now, so by default entries still backing off from
    /// an earlier failure are tried too; `coords watch` passes `ignoringBackoff: false`. Entries
    /// a delivery queued (the next rotation statement of a chain, a reseal it owes) go in the
    /// next turn of the same call.
    static func flush(_ session: Session, ignoringBackoff: Bool = true) async -> Report {
        do {
            return HostTurn.outboxReport(try await HostTurn.run(session, only: [.outbox], ignoringBackoff: ignoringBackoff), session: session)
        } catch {
            var report = Report()
            report.problems.append("could not send the queued requests: \(describe(error))")
            report.stillQueued = (try? session.app.outbox.pending().count) ?? 0  // unreadable: the problem above says so
            return report
        }
    }

    /// Queues `request` and sends it at once; the core's decision says whether it went.
    /// - Throws: store errors.
    static func send(
        _ kind: OutboxKind, _ request: PreparedRequest, reference: String? = nil, location: Location? = nil, session: Session
    ) async throws -> OutboxReport {
        let id = try await session.app.outbox.enqueue(kind: kind, request: request, reference: reference, location: location)
        return try await deliver(id: id, request, session: session)
    }

    /// Prints what a flush did (nothing when nothing happened); problems go to standard error
    /// also with `--json`.
    static func print(_ report: Report, json: Bool) {
        for problem in report.problems { printError("coords: outbox: \(problem)") }
        guard !json else { return }
        if !report.delivered.isEmpty { printLine("Outbox: delivered \(report.delivered.joined(separator: ", ")).") }
        for note in report.dropped { printLine("Outbox: dropped \(note)") }
        if report.stillQueued > 0 { printLine("Outbox: \(report.stillQueued) request(s) still waiting for the relay.") }
    }
}

extension OutboxReport {
    /// Whether the relay took the request.
    var isDelivered: Bool { decision == .delivered }

    /// Whether it stays in the outbox for a later attempt.
    var isQueued: Bool {
        switch decision {
        case .retry, .signAgain: true
        case .delivered, .dropped, .unknown: false
        }
    }

    /// Why it was not delivered (the relay's refusal or the network failure), made safe to
    /// print; nil when it was.
    var reason: String? {
        switch decision {
        case .retry(_, let reason), .signAgain(_, let reason), .dropped(let reason): Terminal.safe(reason)
        case .delivered: nil
        case .unknown: "the outbox entry is gone"
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
