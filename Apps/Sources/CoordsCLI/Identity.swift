import ArgumentParser
import CoordsCore

/// `coords rotate [--server URL]`: move to a new key (and relay); friends follow (PROTOCOL.md §9.1).
struct Rotate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Move to a new key (and relay, with --server): your friends follow without adding you again.",
        discussion: "Each friend gets a statement signed by your old and your new key. Statements that cannot be delivered now wait in the outbox.")
    @OptionGroup var options: CommandOptions
    @Option(help: "The relay the new identity publishes to (default: the current one).") var server: String?

    func run() async throws { try await rotateIdentity(options, server: server, revoke: false) }
}

/// `coords revoke [--server URL]`: after losing a device, from a restored backup.
struct Revoke: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "After losing a device: rotate and declare the old key compromised (run it from your restored backup).",
        discussion: """
            Friends refuse anything signed by the old key from now on. If the thief rotates too, friends see two \
            different rotations and ask to compare safety numbers again instead of following either.
            """)
    @OptionGroup var options: CommandOptions
    @Option(help: "The relay the new identity publishes to (default: the current one).") var server: String?

    func run() async throws { try await rotateIdentity(options, server: server, revoke: true) }
}

/// `coords rekey`: a new store key; every stored value sealed again (docs/STORE.md).
struct Rekey: SessionCommand {
    static let configuration = CommandConfiguration(
        abstract: "Seal the local store under a new key and destroy the old one.",
        discussion: """
            Everything this device keeps (friends, positions, messages, settings, the outbox) is sealed at \
            rest under a random store key kept in the keychain. rekey makes a new key, seals every value \
            again and destroys the old key, so a copy of the store taken earlier no longer opens with \
            what the keychain holds. Safe to interrupt: the store opens with the old key or the new one.
            """)
    @OptionGroup var options: CommandOptions

    func run(in session: Session) async throws {
        let started = nowMilliseconds()
        try session.app.rekeyStore()
        let elapsed = nowMilliseconds().subtractingSaturating(started)
        if options.json { return printJSON(.object(["rekeyed": .bool(true), "elapsed_ms": .integer(elapsed)])) }
        printLine("The store is sealed under a new key; the old key is destroyed (\(elapsed) ms).")
    }
}

/// The shared path of `rotate` and `revoke`: rotate, send the statements, the new identity's
/// upload and the delete of the old blob; queue what cannot be sent (exit 75).
private func rotateIdentity(_ options: CommandOptions, server: String?, revoke: Bool) async throws {
    let json = options.json
    try await withSession(options.global) { session in
        let previous = try session.app.wallet.id()
        let rotation = try await session.app.rotateIdentity(server: server, revoke: revoke)
        session.writePublicProfile()
        let report = await OutboxDelivery.flush(session)  // the statements (and anything else waiting)
        var uploaded = false
        if let upload = rotation.upload {
            let sent = try await OutboxDelivery.send(.reseal, upload.request, reference: String(upload.fixTimestamp), session: session)
            uploaded = sent.isDelivered
        }
        // Best effort, reported as previous_deleted: the old blob also expires on its relay.
        let deleted = ((try? await RelayHTTP.send(rotation.deletePrevious))?.isSuccess) ?? false
        let pending = try session.app.outbox.pending().filter { $0.item.kind == .rotation }.count
        let delivered = rotation.statements.count - pending
        if json {
            printJSON(
                .object([
                    "id": .string(rotation.id), "previous_id": .string(previous), "server": .string(rotation.statement.server),
                    "revoked": .bool(revoke), "statements_delivered": .integer(UInt64(max(delivered, 0))),
                    "statements_queued": .integer(UInt64(pending)), "uploaded": .bool(uploaded), "previous_deleted": .bool(deleted)
                ]))
        } else {
            OutboxDelivery.print(report, json: false)
            printLine(
                "\(revoke ? "Revoked" : "Rotated"): your id is now \(rotation.id.prefix(12))… (was \(previous.prefix(12))…), on \(rotation.statement.server).")
            printLine(
                "\(delivered) of \(rotation.statements.count) friend\(rotation.statements.count == 1 ? "" : "s") got the statement"
                    + (pending > 0 ? "; \(pending) wait in the outbox (the next command retries them)." : "."))
            if revoke { printLine("Friends refuse anything signed by the old key from now on.") }
        }
        if pending > 0 || (rotation.upload != nil && !uploaded) { throw ExitCode(ExitStatus.queued) }
    }
}

/// One line per friend a rotation put in conflict (PROTOCOL.md §9.2), one per friend who moved.
func rotationLines(_ outcome: MessagesOutcome, session: Session) -> [String] {
    var lines: [String] = []
    // Lines for people: without the friend list they are left out, the outcome itself was stored.
    let friends = (try? session.app.friends.list()) ?? []
    for id in outcome.conflicts {
        guard let friend = friends.first(where: { $0.id == id }) else { continue }
        let name = friend.name.isEmpty ? String(id.prefix(8)) : friend.name
        let keys = friend.conflictKeys.map { String($0.prefix(8)) + "…" }.joined(separator: " or ")
        lines.append(
            "\(name): conflict — two different key rotations arrived (\(keys)); sharing with \(name) is paused. Compare safety numbers again, then coords verify \(name) --key ID."
        )
    }
    let moved = outcome.rotated.count - outcome.conflicts.count
    if moved > 0 { lines.append("\(moved) friend\(moved == 1 ? "" : "s") moved to a new key (signed by the old and the new key); coords friends lists them.") }
    for id in outcome.resets {
        let name = friends.first(where: { $0.id == id }).map { $0.name.isEmpty ? String(id.prefix(8)) : $0.name } ?? String(id.prefix(8))
        lines.append("\(name): session reset — messages sent meanwhile may be lost; the new session is forward-secret as before.")
    }
    return lines
}
