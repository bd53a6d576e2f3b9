import ArgumentParser
import CoordsCore

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
                            "location": friend.location.map(\.hostJSON) ?? .null,
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
