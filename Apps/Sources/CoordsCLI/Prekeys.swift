import CoordsCore

/// Keeps forward secrecy running from the CLI (PROTOCOL.md §10): publishes our prekeys when the
/// core says something is due, fetches the bundles of friends it names, and sweeps what expired.
/// Carries bytes only: every decision (what is due, whether a bundle is good) is the core's.
/// Failures never stop the command; refusals are printed on standard error.
enum PrekeyRefresh {
    /// One round: upload if due, each due bundle, the sweep. Returns the problems seen (printed by the caller).
    static func run(_ session: Session) async -> [String] {
        var problems: [String] = []
        let sessions = session.app.sessions
        do {
            if let upload = try sessions.preparePrekeyUpload() {
                do {
                    let answer = try await RelayHTTP.send(upload)
                    if try sessions.processPrekeyUpload(status: answer.status, body: answer.body) == nil, answer.status != 404 {
                        problems.append("publishing prekeys: \(RelayAPI.error(status: answer.status, body: answer.body).description)")
                    }
                } catch {
                    problems.append("publishing prekeys: \(describe(error))")
                }
            }
            for friendID in try sessions.bundlesDue() {
                let request = try sessions.prepareBundleRequest(for: friendID)
                let status: Int
                let body: [UInt8]
                do {
                    let answer = try await RelayHTTP.send(request)
                    (status, body) = (answer.status, answer.body)
                } catch {
                    problems.append("prekeys of \(friendID.prefix(8))…: \(describe(error))")
                    continue
                }
                if case .refused(_, let reason) = try sessions.processBundle(for: friendID, status: status, body: body) {
                    problems.append("refused the prekey bundle of \(friendID.prefix(8))…: \(reason)")
                }
            }
            try sessions.sweep()
        } catch {
            problems.append(describe(error))
        }
        return problems
    }

    /// Runs a round and prints its problems on standard error (also with `--json`).
    static func refresh(_ session: Session) async {
        for problem in await run(session) { printError("coords: forward secrecy: \(problem)") }
    }
}
