import ArgumentParser
import AsyncHTTPClient
import CoordsCore
import Logging
import NIOCore
import NIOHTTP1

#if canImport(Glibc)
import Glibc
#endif

/// Reads an environment variable.
func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }

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

/// Whether `path` is a directory with no entries.
func isEmptyDirectory(_ path: String) -> Bool {
    guard let directory = opendir(path) else { return false }
    defer { closedir(directory) }
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name != "." && name != ".." { return false }
    }
    return true
}

/// Removes a directory tree we created (the staging directory of `coords init`); never follows symlinks.
func removeTree(_ path: String) {
    var info = stat()
    guard lstat(path, &info) == 0 else { return }
    if (info.st_mode & S_IFMT) == S_IFDIR, let directory = opendir(path) {
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        closedir(directory)
        for name in names { removeTree(path + "/" + name) }
        rmdir(path)
    } else {
        unlink(path)
    }
}

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

/// What a relay answered.
struct HTTPResult {
    let status: Int
    let body: [UInt8]
    var isSuccess: Bool { (200..<300).contains(status) }
}

/// The relay could not be reached (DNS, connection refused, timeout, TLS).
struct NetworkFailure: Error, CustomStringConvertible {
    let description: String
}

/// Sends prepared requests with AsyncHTTPClient, within the client's limits (PROTOCOL.md §4.1):
/// connect, read and whole-request deadlines, the request's own answer-size cap, and no
/// redirects. A relay that breaks a limit is reported as unreachable or refused, never waited on.
enum RelayHTTP {
    /// One client for the process: a refused or unreachable relay fails within seconds instead
    /// of being retried until the request deadline — the outbox is the CLI's retry mechanism.
    static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(ClientLimits.connectSeconds), read: .seconds(ClientLimits.readSeconds))
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.redirectConfiguration = .disallow
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    /// The whole request was not done within its deadline.
    private struct DeadlineExceeded: Error {}

    /// Sends `request` and reads its answer: at most `request.maximumResponseBytes`, all within
    /// `timeout` seconds (the head, the body and everything before them).
    /// - Throws: ``NetworkFailure`` (unreachable, too slow, or an answer over the cap).
    static func send(_ request: PreparedRequest, timeout: Int64 = ClientLimits.requestSeconds) async throws -> HTTPResult {
        var http = HTTPClientRequest(url: request.url)
        http.method = HTTPMethod(rawValue: request.method)
        for header in request.headers { http.headers.add(name: header.name, value: header.value) }
        if !request.body.isEmpty { http.body = .bytes(ByteBuffer(bytes: request.body)) }
        let limit = request.maximumResponseBytes
        let prepared = http
        do {
            return try await withThrowingTaskGroup(of: HTTPResult.self) { group in
                group.addTask {
                    let response = try await client.execute(prepared, deadline: .now() + .seconds(timeout))
                    let body = try await response.body.collect(upTo: limit)
                    return HTTPResult(status: Int(response.status.code), body: Array(body.readableBytesView))
                }
                group.addTask {
                    try await Task.sleep(for: .seconds(timeout))
                    throw DeadlineExceeded()
                }
                defer { group.cancelAll() }
                guard let first = try await group.next() else { throw DeadlineExceeded() }
                return first
            }
        } catch is DeadlineExceeded {
            throw NetworkFailure(description: "cannot reach \(request.url): no complete answer within \(timeout) s")
        } catch is NIOTooManyBytesError {
            throw NetworkFailure(description: "\(request.url) answered with more than \(limit) bytes; refused")
        } catch {
            throw NetworkFailure(description: "cannot reach \(request.url): \(networkReason(error))")
        }
    }

    private static func networkReason(_ error: any Error) -> String {
        let text = "\(error)"
        if text.contains("connectTimeout") || text.contains("deadlineExceeded") { return "timed out" }
        if text.contains("Connection refused") || text.contains("connection refused") { return "connection refused" }
        if text.contains("handshakeFailed") || text.contains("WRONG_VERSION_NUMBER") {
            return "the TLS handshake failed (if the relay serves plain http, use an http:// server URL)"
        }
        return text.count > 160 ? String(text.prefix(160)) + "…" : text
    }

    /// A sentence for a relay's refusal, with advice.
    static func refusal(_ result: HTTPResult, action: String) -> String {
        let error = RelayAPI.error(status: result.status, body: result.body)
        guard case .relayError(let status, let code, let message) = error else { return error.description }
        let advice: String
        let aboutTime = code == "timestamp_too_old" || code == "timestamp_in_future" || message.contains("timestamp")
        switch (status, code) {
        case (401, _) where aboutTime: advice = " — check this computer's clock"
        case (401, _): advice = " — the relay did not accept the signature"
        case (409, _): advice = " — the relay already has a newer upload from you"
        case (413, _): advice = " — too many friends for one upload"
        case (429, _): advice = " — the relay is rate limiting; try again later"
        case (500..<600, _): advice = " — the relay has a problem; try again later"  // callers that queue say so themselves
        default: advice = ""
        }
        return "the relay refused to \(action) (\(status)\(code.map { " \(Terminal.safe($0))" } ?? "")): \(Terminal.safe(message))\(advice)"
    }
}
