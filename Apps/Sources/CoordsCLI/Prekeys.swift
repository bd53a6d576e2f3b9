/// Keeps forward secrecy running from the CLI (PROTOCOL.md §10): one turn of the one wake for
/// the prekey requests the core says are due (our publication, friends' bundles). Carries bytes
/// only: what is due, whether a bundle is good, and the sweeps are the core's. Failures never
/// stop the command; they are printed on standard error.
enum PrekeyRefresh {
    /// Runs the turn and prints its problems on standard error (also with `--json`).
    static func refresh(_ session: Session) async {
        do {
            for problem in HostTurn.prekeyProblems(try await HostTurn.run(session, only: [.prekeys, .bundle])) {
                printError("coords: forward secrecy: \(problem)")
            }
        } catch {
            printError("coords: forward secrecy: \(describe(error))")
        }
    }
}
