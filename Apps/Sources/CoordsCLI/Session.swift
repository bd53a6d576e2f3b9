import ArgumentParser
import CoordsCore
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Options every command shares.
public struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: "Data directory (default ~/.coords) [COORDS_HOME].")
    var home: String?

    public init() {}

    /// The data directory to use.
    var path: String {
        if let home { return home }
        if let home = environment("COORDS_HOME") { return home }
        return (environment("HOME") ?? ".") + "/.coords"
    }
}

/// The options of commands that print data: the data directory and `--json`.
public struct CommandOptions: ParsableArguments {
    @OptionGroup var global: GlobalOptions
    @Flag(name: .long, help: "Print one JSON object for scripts (its schema: the CLI guide, see coords --help).")
    var json = false

    public init() {}
}

/// Whether a command delivers the outbox before its own work.
enum OutboxFirst {
    /// It does not talk to a relay.
    case no
    /// It talks to a relay: deliver what waits first, printing what happened unless `json`.
    case deliver(json: Bool)
}

/// The one way a command uses the data directory: opens it (passphrase, keychain, store),
/// delivers the outbox first when asked, runs `body`, and closes it whatever happens; errors are
/// reported by ``runReporting(_:)`` (one line, exit status 1 or 69).
func withSession(
    _ options: GlobalOptions, outbox: OutboxFirst = .no, checkingFirst check: () throws -> Void = {}, _ body: (Session) async throws -> Void
) async throws {
    try await runReporting {
        try check()
        let session = try Session.open(options)
        defer { session.close() }
        if case .deliver(let json) = outbox {
            // Prekeys and friends' bundles first: a message sent now uses them (PROTOCOL.md §10).
            await PrekeyRefresh.refresh(session)
            OutboxDelivery.print(await OutboxDelivery.flush(session), json: json)
        }
        try await body(session)
    }
}

/// A command that works in the data directory: it declares its options and ``run(in:)``, and
/// the protocol's `run()` opens the session through ``withSession(_:outbox:_:)`` — passphrase,
/// keychain, store, the outbox delivered first when ``outboxFirst`` asks, the session closed
/// whatever happens, and every error reported in one line (exit status 1 or 69).
protocol SessionCommand: AsyncParsableCommand {
    /// The data directory and `--json`.
    var options: CommandOptions { get }
    /// Whether the outbox is delivered before ``run(in:)``: `.deliver(json:)` for commands that
    /// talk to a relay anyway. Default: `.no`.
    var outboxFirst: OutboxFirst { get }
    /// Refuses arguments that are wrong before the session opens, so no passphrase is asked for
    /// in vain; throws a ``CLIFailure`` saying what to do. Default: nothing to check.
    func checkArguments() throws
    /// The command's work, in an open session (closed by the caller afterwards).
    func run(in session: Session) async throws
}

extension SessionCommand {
    var outboxFirst: OutboxFirst { .no }

    func checkArguments() throws {}

    func run() async throws {
        try await withSession(options.global, outbox: outboxFirst, checkingFirst: checkArguments) { session in try await run(in: session) }
    }
}

/// An open data directory and what commands need around it.
struct Session {
    let app: CoordsApp
    let home: String

    /// Opens the data directory of an existing identity.
    /// - Throws: ``CLIFailure`` (no data yet, no passphrase), keychain and store errors.
    static func open(_ options: GlobalOptions) throws -> Session {
        let home = options.path
        guard access(home + "/keychain.bin", F_OK) == 0 else {
            throw CLIFailure("no Coords identity in \(home); run `coords init --server URL --name NAME` first (or pass --home)")
        }
        let passphrase = try Passphrase.read(prompt: "Passphrase for \(home): ", confirm: false)
        return try open(directory: home, home: home, passphrase: passphrase)
    }

    /// Creates a new data directory atomically: everything is built in a hidden sibling
    /// directory that is renamed to `home` only when `body` succeeded, so a failure (a bad
    /// server URL, a refused backup, Ctrl-C) leaves no keychain or store behind. `home` must not
    /// exist yet or be an empty directory.
    /// - Throws: ``CLIFailure`` (an identity or other files already there), whatever `body` throws.
    static func create<T>(_ options: GlobalOptions, _ body: (Session) async throws -> T) async throws -> T {
        let home = options.path
        if access(home + "/keychain.bin", F_OK) == 0 {
            throw CLIFailure("\(home) already has a Coords identity; it is never replaced (use another --home)")
        }
        let existed = isEmptyDirectory(home)
        if !existed && access(home, F_OK) == 0 {
            throw CLIFailure("\(home) already exists and is not an empty directory; choose another --home")
        }
        let passphrase = try Passphrase.read(prompt: "Passphrase for \(home): ", confirm: true)
        let trimmed = home.hasSuffix("/") && home.count > 1 ? String(home.dropLast()) : home
        let parent = trimmed.contains("/") ? String(trimmed[..<(trimmed.lastIndex(of: "/") ?? trimmed.startIndex)]) : "."
        let staging = (parent.isEmpty ? "" : parent) + "/.coords-init-\(getpid())"
        if mkdir(parent.isEmpty ? "/" : parent, 0o700) != 0 && errno != EEXIST {
            throw CLIFailure("cannot create \(parent): \(String(cString: strerror(errno)))")
        }
        removeTree(staging)
        var session: Session?
        do {
            let opened = try open(directory: staging, home: home, passphrase: passphrase)
            session = opened
            let result = try await body(opened)
            opened.close()
            session = nil
            if existed { rmdir(home) }
            guard rename(staging, home) == 0 else {
                throw CLIFailure("cannot move the new data directory into place at \(home): \(String(cString: strerror(errno)))")
            }
            return result
        } catch {
            session?.close()
            removeTree(staging)
            throw error
        }
    }

    private static func open(directory: String, home: String, passphrase: String) throws -> Session {
        var appOptions = CoordsApp.Options(keychain: .file(.passphrase(passphrase)))
        appOptions.keychainParameters = try cost(environment("COORDS_KEYCHAIN_COST"), default: .interactive)
        appOptions.backupParameters = try cost(environment("COORDS_BACKUP_COST"), default: .moderate)
        if let file = environment("COORDS_PLACES_FILE") {
            do {
                appOptions.places = .index(try PlaceIndex(contentsOfFile: file))
            } catch {
                throw CLIFailure("COORDS_PLACES_FILE: \(error.description)")
            }
        }
        var logger = Logger(label: "coords")
        logger.logLevel = .error
        appOptions.logger = logger
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { throw CLIFailure("cannot create \(directory): \(String(cString: strerror(errno)))") }
        return Session(app: try CoordsApp.open(directory: directory, options: appOptions), home: home)
    }

    static func cost(_ name: String?, default fallback: Argon2id.Parameters) throws -> Argon2id.Parameters {
        guard let name else { return fallback }
        guard let preset = Argon2id.Parameters(preset: name) else {
            throw CLIFailure("unknown cost \"\(name)\" (minimum, interactive or moderate)")
        }
        return preset
    }

    func close() { app.close() }

    /// Writes `public.json` (0600): the id, name, relay and link, which are not secret, so
    /// `coords whoami` can show them without the passphrase. Best effort: whoami falls back to
    /// unlocking the keychain when the file is missing or unreadable.
    func writePublicProfile() {
        // public.json is a convenience copy (see above): without an identity, server or store there is nothing to write.
        guard let id = try? app.wallet.id(), let profile = try? app.wallet.profile(), let link = try? app.wallet.friendLink() else { return }
        let value = JSONValue.object(["id": .string(id), "name": .string(profile.name), "server": .string(profile.server), "link": .string(link)])
        // Likewise: commands that need it read the store when the file is missing.
        try? writeFile(app.directory + "/" + PublicProfile.fileName, value.serialized() + [0x0A])
    }
}

/// The public part of an identity, kept beside the keychain in `public.json`.
struct PublicProfile {
    static let fileName = "public.json"
    let id: String, name: String, server: String, link: String

    /// Reads `home/public.json`; nil when it is missing or not what `writePublicProfile` writes.
    static func read(home: String) -> PublicProfile? {
        // Missing, unreadable or not ours: nil by contract (the caller unlocks the store instead).
        guard let bytes = try? readFile(home + "/" + fileName), bytes.count < 65_536,
            let object = (try? JSONValue.parse(bytes))?.objectValue,
            let id = object["id"]?.stringValue, let name = object["name"]?.stringValue,
            let server = object["server"]?.stringValue, let link = object["link"]?.stringValue,
            let parsed = try? FriendLink.parse(link), parsed.id == id
        else { return nil }
        return PublicProfile(id: id, name: name, server: server, link: link)
    }
}
