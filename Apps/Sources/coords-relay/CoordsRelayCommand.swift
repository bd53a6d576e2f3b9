import ArgumentParser
import CoordsBuildInfo
import CoordsCore
import CoordsRelay
import Hummingbird
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Reads an environment variable.
func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }

@main
struct CoordsRelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coords-relay",
        abstract: "The untrusted Coords relay: stores and forwards opaque, signed location blobs.",
        discussion: """
            Without a subcommand, coords-relay serves (see `coords-relay serve --help` for every \
            option). `coords-relay migrate` moves an LMDB relay's data into PostgreSQL; `backup` and `restore` copy an LMDB relay. Operator's guide: https://github.com/coords/coordscore/blob/main/docs/RELAY.md
            """,
        version: BuildVersion.line(adding: RelaySchemaVersions.summary),
        subcommands: [Serve.self, Migrate.self, Backup.self, Restore.self, CheckStore.self],
        defaultSubcommand: Serve.self)
}

/// `coords-relay serve` (the default): the relay itself.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the relay (the default subcommand).",
        discussion: """
            A drop-in replacement for the reference Coords server (PUT/POST /api/location, \
            GET /api/version) with the CoordsCore extensions: signature stamps on fetches, replay \
            and rollback refusal, signed deletes, expiry, rate limits, persistence (LMDB, or \
            PostgreSQL shared by several relays). Every option can also be set through the \
            environment variable in brackets. Operator's guide: https://github.com/coords/coordscore/blob/main/docs/RELAY.md
            """)

    @OptionGroup(title: "Network") var network: NetworkOptions
    @OptionGroup(title: "Storage") var storage: StorageOptions
    @OptionGroup(title: "Rate limits") var rateLimits: RateLimitOptions
    @OptionGroup(title: "Mailbox") var mailbox: MailboxOptions
    @OptionGroup(title: "Connections") var connections: ConnectionOptions
    @OptionGroup(title: "Live channel") var live: LiveOptions
    @OptionGroup(title: "Push") var push: PushOptions
    @OptionGroup(title: "Attachment objects") var objects: ObjectOptions
    @OptionGroup(title: "Logging") var logging: LoggingOptions

    /// Every group, in the order their options are applied.
    private var groups: [any ServeOptionGroup] { [network, storage, rateLimits, mailbox, connections, live, push, objects, logging] }

    /// Malformed environment values; each group checked its own options already.
    func validate() throws { try Env.check() }

    func run() async throws {
        var configuration = RelayConfiguration()
        for group in groups { group.apply(to: &configuration) }
        LoggingSystem.bootstrap(logging.format.factory)
        var logger = Logger(label: "coords.relay")
        logger.logLevel = configuration.logLevel
        // Refusals in words before anything says "starting": the address, then the data directory.
        if let problem = listenProblem(host: network.host, port: network.port) {
            printError("coords-relay: error: \(problem)")
            throw ExitCode(69)  // EX_UNAVAILABLE
        }
        if configuration.postgresURL == nil, let directory = configuration.dataDirectory, mkdir(directory, 0o700) == 0 || errno == EEXIST,
            let problem = RelayBackup.privacyProblem(directory)
        {
            printError("coords-relay: error: \(problem)")
            throw ExitCode(73)  // EX_CANTCREAT: the directory is not safe to keep data in
        }
        if configuration.postgresURL == nil, let directory = configuration.dataDirectory,
            let problem = DataDirectoryLock.acquire(directory)
        {
            printError("coords-relay: error: \(problem)")
            throw ExitCode(75)  // EX_TEMPFAIL: try again once the other relay stopped
        }
        let app = try await openApplication(configuration, logger: logger)
        do {
            try await app.runService()  // until SIGTERM/SIGINT; in-flight requests finish first
        } catch {
            if "\(error)".contains("Address already in use") {  // taken between the check and the bind
                printError("coords-relay: error: \(network.host):\(network.port) is already in use: another process listens there")
                throw ExitCode(69)
            }
            throw error
        }
        logger.info("coords-relay stopped")
    }

    /// The relay with its store open (a service closes the store after the server drained or
    /// failed); PostgreSQL that cannot be used is one line and exit 69.
    private func openApplication(_ configuration: RelayConfiguration, logger: Logger) async throws -> some ApplicationProtocol {
        do {
            return try await buildApplication(configuration: configuration, postgresPassword: environment("PGPASSWORD"), logger: logger)
        } catch  where configuration.postgresURL != nil {
            // One clear line and a non-zero exit, never a crash (the password is never printed).
            printError("coords-relay: error: \(error)")
            throw ExitCode(69)  // EX_UNAVAILABLE
        } catch let error as StoreError {
            // A damaged or truncated data.mdb is refused before LMDB maps it: one line, exit 74.
            printError("coords-relay: error: the data in \(configuration.dataDirectory ?? "memory") cannot be used: \(error)")
            throw ExitCode(74)  // EX_IOERR
        }
    }
}
