import CoordsCore

#if canImport(Glibc)
import Glibc
#endif

/// Passphrases from `COORDS_PASSPHRASE` or the terminal (not echoed).
enum Passphrase {
    /// - Throws: ``CLIFailure``: "no passphrase given" when the variable is empty, no terminal
    ///   can be asked, or nothing was typed — never "wrong passphrase".
    static func read(prompt: String, confirm: Bool, variable: String = "COORDS_PASSPHRASE") throws -> String {
        if let value = environment(variable) {
            guard !value.isEmpty else { throw CLIFailure("no passphrase given: \(variable) is set but empty") }
            if confirm && value.count < 8 { throw CLIFailure("choose a passphrase of at least 8 characters (\(variable))") }
            return value
        }
        let terminal = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard terminal >= 0 else {
            throw CLIFailure("no passphrase given: set \(variable) or run in a terminal")
        }
        close(terminal)
        guard let first = getpass(prompt).map({ String(cString: $0) }), !first.isEmpty else {
            throw CLIFailure("no passphrase given")
        }
        if confirm {
            guard first.count >= 8 else { throw CLIFailure("choose a passphrase of at least 8 characters") }
            let again = getpass("Repeat: ").map { String(cString: $0) }
            guard again == first else { throw CLIFailure("the passphrases do not match") }
        }
        return first
    }
}
