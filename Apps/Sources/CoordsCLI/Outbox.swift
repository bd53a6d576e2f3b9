import CoordsCore

/// Sends what the outbox holds: queued uploads and deletes from earlier commands that could not
/// reach the relay. Every command that talks to the network flushes it first.
enum OutboxDelivery {
    /// Requests signed longer ago than this are signed again before sending (relays accept 300 s).
    static let resignAfter: UInt64 = 240

    struct Report {
        var delivered: [String] = []
        /// Entries left in the outbox afterwards (failed now, or not due yet after an earlier failure).
        var stillQueued = 0
        var dropped: [String] = []
        /// What went wrong besides the entries themselves (printed, never fatal to the command).
        var problems: [String] = []
    }

    /// Tries every queued entry once, oldest first. A command is a person (or a script) asking
    /// now, so entries still backing off from an earlier failure are tried too; the backoff
    /// schedule serves long-running hosts that retry on their own.
    static func flush(_ session: Session) async -> Report {
        var report = Report()
        var tried = Set<UInt64>()
        // A delivered rotation statement may make the next one of a chain due (the identity
        // rotated again before a friend had the first): a few more rounds send those too.
        for _ in 0..<8 {
            let entries = ((try? session.app.outbox.pending()) ?? []).filter { !tried.contains($0.id) }
            guard !entries.isEmpty else { break }
            tried.formUnion(entries.map(\.id))
            let before = report.delivered.count
            await flush(entries, session: session, into: &report)
            let rotations = report.delivered[before...].contains { $0.hasPrefix("rotation ") }
            guard rotations else { break }
            do {
                guard try await !session.app.messages.queueRotationStatements().isEmpty else { break }
            } catch {
                report.problems.append("could not queue the next rotation statements: \(describe(error))")
                break
            }
        }
        // What is left (the failures of this round).
        if let pending = try? session.app.outbox.pending() { report.stillQueued = pending.count }
        return report
    }

    private static func flush(_ entries: [OutboxEntry], session: Session, into report: inout Report) async {
        for entry in entries {
            do {
                var request = entry.item.request
                let signedAt = (try? JSONValue.parse(request.body))?.objectValue?["timestamp"]?.uint64Value ?? 0
                let now = nowMilliseconds() / 1000
                if now > signedAt + resignAfter {
                    guard let fresh = try await refresh(entry, session: session) else {
                        try await session.app.outbox.remove(id: entry.id)
                        report.dropped.append("\(entry.item.kind) #\(entry.id) (a newer one replaced it)")
                        continue
                    }
                    request = fresh
                    try await session.app.outbox.replaceRequest(id: entry.id, with: fresh)
                }
                let result = try await RelayHTTP.send(request)
                let isMessage = entry.item.kind == "message" || entry.item.kind == "receipt"
                if result.isSuccess || (isMessage && result.status == 409) {  // 409: the relay already has that envelope
                    try await session.app.outbox.markDelivered(id: entry.id)
                    if entry.item.kind == "upload" || entry.item.kind == "reseal", let fix = entry.item.reference.flatMap(UInt64.init) {
                        try? await session.app.location.markUploadSucceeded(fixTimestamp: fix)
                    }
                    if entry.item.kind == "message", let id = entry.item.reference { try? await session.app.messages.markSent(id: id) }
                    report.delivered.append("\(entry.item.kind) #\(entry.id)")
                } else if result.status == 429 || result.status >= 500 {
                    try await session.app.outbox.markFailed(id: entry.id, error: "relay answered \(result.status)")
                    report.stillQueued += 1
                } else {
                    // 4xx: retrying the same request cannot help.
                    try await session.app.outbox.remove(id: entry.id)
                    report.dropped.append("\(entry.item.kind) #\(entry.id): " + RelayHTTP.refusal(result, action: "take it"))
                }
            } catch let failure as NetworkFailure {
                try? await session.app.outbox.markFailed(id: entry.id, error: failure.description)
                report.stillQueued += 1
            } catch {
                try? await session.app.outbox.markFailed(id: entry.id, error: describe(error))
                report.stillQueued += 1
            }
        }
    }

    /// A freshly signed version of a queued request, or nil when it is no longer needed.
    static func refresh(_ entry: OutboxEntry, session: Session) async throws -> PreparedRequest? {
        switch entry.item.kind {
        case "upload":
            guard let location = entry.item.location else { return nil }
            do {
                return try await session.app.location.prepareUpload(location).request
            } catch WireError.staleLocation {
                return nil
            }
        case "delete":
            return try await session.app.location.prepareDelete()
        case "reseal":  // the latest fix, sealed for whoever is shared with now
            return try await session.app.location.prepareReseal(force: true)?.request
        default:
            return entry.item.request
        }
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
