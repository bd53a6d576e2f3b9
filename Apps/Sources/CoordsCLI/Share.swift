import ArgumentParser
import CoordsCore

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
    static let configuration = CommandConfiguration(
        abstract: "Share your position with your friends.",
        discussion: """
            With --group NAME, your positions are also sealed for every member of that group (and \
            --off stops it); --lat and --lon then also share a fix at once.
            """)
    @OptionGroup var options: CommandOptions
    @Option(parsing: .unconditional, help: "Latitude in degrees (south is negative: --lat -33.87).") var lat: Double?
    @Option(parsing: .unconditional, help: "Longitude in degrees (west is negative: --lon -9.14).") var lon: Double?
    @Option(parsing: .unconditional, help: "Altitude in metres (below sea level is negative).") var alt: Double = 0
    @Option(help: "Accuracy radius in metres.") var accuracy: Float = 0
    @Option(help: "Share with this group's members from now on (its name or id).") var group: String?
    @Flag(help: "With --group: stop sharing with the group.") var off = false

    /// Like every command that talks to a relay: prekeys published and friends' bundles fetched
    /// when due (so the positions it seals are forward-secret for friends who announced), then
    /// the outbox delivered.
    var outboxFirst: OutboxFirst { .deliver(json: options.json) }

    func validate() throws {
        guard (lat == nil) == (lon == nil) else { throw ValidationError("give both --lat and --lon") }
        guard group != nil || lat != nil else { throw ValidationError("give --lat and --lon (or --group NAME to share with a group)") }
        guard group != nil || !off else { throw ValidationError("--off goes with --group NAME") }
    }

    func run(in session: Session) async throws {
        if let group {
            let found = try findGroup(group, in: session)
            if let reseal = try await session.app.groups.setSharing(groupID: found.id, !off) {
                _ = try await OutboxDelivery.deliver(id: reseal.id, reseal.item.request, session: session)
            }
            let line =
                off ? "Stopped sharing with \(Terminal.safe(found.name))." : "Sharing with \(Terminal.safe(found.name)) (\(found.members.count) members)."
            guard let lat, let lon else {
                if options.json { return printJSON(.object(["group": .string(found.id), "sharing": .bool(!off)])) }
                return printLine(line)
            }
            if !options.json { printLine(line) }
            try await shareFix(lat: lat, lon: lon, session: session)
            return
        }
        guard let lat, let lon else { return }  // validate() requires them without --group
        try await shareFix(lat: lat, lon: lon, session: session)
    }

    private func shareFix(lat: Double, lon: Double, session: Session) async throws {
        let fix = try Location(latitude: lat, longitude: lon, altitude: alt, accuracy: accuracy, timestamp: nowMilliseconds())
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
