import ArgumentParser
import CoordsBuildInfo
import CoordsCore
import Dispatch
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// `coords`: the command-line host of CoordsCore.
public struct CoordsCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "coords",
        abstract: "End-to-end encrypted location sharing from the terminal.",
        discussion: """
            The data directory (--home, default ~/.coords) holds your identity (in a keychain sealed \
            with your passphrase: COORDS_PASSPHRASE or a prompt), your friends and their last \
            positions. Requests the relay could not take are queued in the outbox; every command \
            that talks to a relay sends the outbox first. Friends' positions are named offline from \
            bundled GeoNames data; set COORDS_PLACES_FILE to a CGEO file \
            (built by the source tree's build-geodata script) for the larger set. Every data command takes \
            --json (one object; times in milliseconds, keys ending _ms). Its schemas, and \
            everything else a script relies on: https://github.com/coords/coordscore/blob/main/docs/CLI.md

            Exit status: 0 done; 1 usage or input error, or a refusal; 2 a fetch reached only \
            some relays; 69 no relay could be reached; 75 queued in the outbox for later. Errors \
            go to standard error, data to standard output.
            """,
        version: BuildVersion.line(),
        subcommands: [
            Init.self, WhoAmI.self, Add.self, Friends.self, Verify.self, Remove.self, Share.self, Fetch.self,
            Watch.self, Delete.self, ShareWith.self, Pause.self, Rotate.self, Revoke.self, Rekey.self, Send.self, Save.self, Inbox.self, Chat.self, Push.self,
            Backup.self,
            Outbox.self, GroupCommand.self, GroupsList.self, Mute.self, Unmute.self, Quiet.self, Receipts.self, Strict.self
        ])

    public init() {}

    /// The `coords` executable's entry, from a synchronous `main` before any task ran: makes
    /// NIO's two event-loop threads Swift concurrency's global executor, runs
    /// ``main(arguments:)`` there and parks the main thread. On Linux, the first job on
    /// libdispatch's global queues starts its thread-pool monitor, a timer that wakes the process
    /// every second for as long as it runs (swift-corelibs-libdispatch, src/event/workqueue.c,
    /// `_dispatch_workq_init_once`): 3,600 wake-ups an hour an idle `coords watch` never asked
    /// for (docs/PERFORMANCE.md, "Battery"). The CLI never blocks a thread waiting for another
    /// task, so sharing the event loops is safe.
    public static func start(arguments: [String]) -> Never {
        _ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        Task { await main(arguments: arguments) }
        dispatchMain()
    }

    /// Parses `arguments` (without the program name), runs the command and exits with the
    /// documented status: 0 done, 1 usage or input error (ArgumentParser's own 64 included),
    /// 2 a fetch reached only some relays, 69 it reached none, 75 work queued for later.
    /// Help and `--version` print to standard output and exit 0.
    public static func main(arguments: [String]) async -> Never {
        if let unknown = unknownCommand(arguments) {
            printError(unknown)
            Glibc.exit(ExitStatus.usage)
        }
        do {
            var command = try parseAsRoot(arguments)
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
            exit(withError: nil)
        } catch {
            if exitCode(for: error) == .validationFailure {
                printError(fullMessage(for: error))
                Glibc.exit(ExitStatus.usage)
            }
            exit(withError: error)
        }
    }
}

extension CoordsCommand {
    /// The refusal for a first word that is no command (`coords shrae --home X` used to say
    /// "Unknown option '--home'", blaming the next word), with the nearest command when one is
    /// close; nil when the first word is an option or a command.
    static func unknownCommand(_ arguments: [String]) -> String? {
        guard let first = arguments.first, !first.hasPrefix("-") else { return nil }
        let names = configuration.subcommands.map { $0._commandName } + ["help"]
        guard !names.contains(first) else { return nil }
        let word = Terminal.safe(first)
        let nearest = names.map { ($0, editDistance($0, first)) }.min { $0.1 < $1.1 }
        if let (name, distance) = nearest, distance <= 2 {
            return "coords: unknown command '\(word)' — did you mean '\(name)'? (coords --help lists the commands)"
        }
        return "coords: unknown command '\(word)' (coords --help lists the commands)"
    }

    /// Levenshtein distance between two short words (Unicode scalars), for suggestions.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.unicodeScalars.prefix(64))
        let b = Array(b.unicodeScalars.prefix(64))
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: b.count)
            for (j, y) in b.enumerated() {
                current[j + 1] = Swift.min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}

/// The exit statuses of `coords` (docs/CLI.md and `coords --help`).
enum ExitStatus {
    /// Everything asked for was done.
    static let success: Int32 = 0
    /// A usage or input error, or a refusal (wrong passphrase, unknown friend, the relay said no).
    static let usage: Int32 = 1
    /// A fetch reached only some of the relays (the others are listed on standard error).
    static let partial: Int32 = 2
    /// No relay could be reached (a fetch, the inbox).
    static let unavailable: Int32 = 69
    /// Requests were queued in the outbox for a later command (EX_TEMPFAIL).
    static let queued: Int32 = 75
}
