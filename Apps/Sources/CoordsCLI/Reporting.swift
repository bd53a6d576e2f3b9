import ArgumentParser
import CoordsCore

#if canImport(Glibc)
import Glibc
#endif

/// Reads an environment variable.
func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }

/// A failure the CLI reports as `coords: <message>` and exit status 1 (``ExitStatus/usage``).
struct CLIFailure: Error, CustomStringConvertible {
    let description: String
    /// A failure whose text may quote remote parties: its control characters are made visible.
    init(_ description: String) { self.description = Terminal.safe(description, keepingNewlines: true) }
}

/// Runs a command body, printing any error in one clear line on standard error: exit status 69
/// when a relay could not be reached, 1 for everything else (ExitCode passes through).
func runReporting(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let exit as ExitCode {
        throw exit
    } catch let failure as NetworkFailure {
        printError("coords: \(failure.description)")
        throw ExitCode(ExitStatus.unavailable)
    } catch {
        printError("coords: \(describe(error))")
        throw ExitCode.failure
    }
}

/// Human-readable text for errors, with advice for the common ones.
func describe(_ error: any Error) -> String {
    switch error {
    case KeychainError.wrongPassphrase:
        return "wrong passphrase for this data directory (set COORDS_PASSPHRASE or type it again)"
    case let error as StoreError:
        if case .alreadyOpen = error { return "another coords command is using this data directory right now; try again" }
        return error.description
    case let error as any CoordsCoreError: return error.description
    default: return "\(error)"
    }
}

/// Prints a line on standard error, control characters made visible like ``printLine(_:)``.
func printError(_ text: String) {
    var line = Terminal.safe(text, keepingNewlines: true) + "\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}
