import CoordsCore

/// The CLI's side of the one wake (``CoordsApp/due(now:only:ignoringBackoff:)``,
/// ``CoordsApp/report(id:status:body:)``): it carries the requests the core hands out and hands
/// every answer back. Which requests, when to retry, what an answer means, which reseal a
/// share's end owes — all the core's. `coords watch` runs it until stopped; every other command
/// runs the turns it needs (the outbox first, prekeys for a message, the mailbox to read it).
enum HostTurn {
    /// Performs every request the core hands out now (only `purposes`, nil: all) side by side,
    /// and reports each answer; runs again while the last turn handed out something (a delivery
    /// may queue the next statement of a chain; a full mailbox reads on), at most `turns` times.
    /// A request that gets no answer is reported as status 0 with the failure.
    /// - Returns: every request with what the core made of its answer, in the order answered.
    /// - Throws: store and keychain errors from the core.
    static func run(
        _ session: Session, only purposes: Set<HostRequestPurpose>? = nil, ignoringBackoff: Bool = false, turns: Int = 8
    ) async throws -> [(request: HostRequest, answer: HostAnswer)] {
        var answered: [(request: HostRequest, answer: HostAnswer)] = []
        for _ in 0..<max(turns, 1) {
            let requests = try await session.app.due(only: purposes, ignoringBackoff: ignoringBackoff)
            guard !requests.isEmpty else { break }
            let results = await withTaskGroup(of: (HostRequest, Int, [UInt8]).self) { group in
                for request in requests { group.addTask { await perform(request) } }
                var results: [(HostRequest, Int, [UInt8])] = []
                for await result in group { results.append(result) }
                return results
            }
            for (request, status, body) in results {
                answered.append((request, try await session.app.report(id: request.id, status: status, body: body)))
            }
        }
        return answered
    }

    /// The status and body of one request, or status 0 and the failure's description.
    private static func perform(_ request: HostRequest) async -> (HostRequest, Int, [UInt8]) {
        do {
            let result = try await RelayHTTP.send(request.request)
            return (request, result.status, result.body)
        } catch {
            return (request, 0, Array(describe(error).utf8))
        }
    }

    /// What the outbox entries of `answered` came to, for a command's report.
    static func outboxReport(_ answered: [(request: HostRequest, answer: HostAnswer)], session: Session) -> OutboxDelivery.Report {
        var report = OutboxDelivery.Report()
        for (request, answer) in answered {
            guard case .outbox(let outcome) = answer else { continue }
            let name = "\(request.outboxKind?.rawValue ?? "request") #\(request.outboxID ?? 0)"
            switch outcome.decision {
            case .delivered: report.delivered.append(name)
            case .dropped(let reason): report.dropped.append("\(name): \(Terminal.safe(reason))")
            case .retry, .signAgain, .unknown: break
            }
        }
        do {
            report.stillQueued = try session.app.outbox.pending().count
        } catch {
            report.problems.append("could not read the outbox: \(describe(error))")
        }
        return report
    }

    /// The forward-secrecy problems of `answered` (prekeys not published, a bundle refused), one
    /// line each, for standard error.
    static func prekeyProblems(_ answered: [(request: HostRequest, answer: HostAnswer)]) -> [String] {
        answered.compactMap { request, answer in
            switch answer {
            case .failed(_, let reason) where request.purpose == .prekeys: "publishing prekeys: \(reason)"
            case .failed(_, let reason) where request.purpose == .bundle: "a friend's prekeys: \(reason)"
            case .bundle(let friend, .refused(_, let reason)): "refused the prekey bundle of \(friend.prefix(8))…: \(reason)"
            default: nil
            }
        }
    }
}
