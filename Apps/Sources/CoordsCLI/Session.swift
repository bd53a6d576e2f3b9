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

/// Options of commands that print data.
public struct OutputOptions: ParsableArguments {
    @Flag(name: .long, help: "Print JSON (one object per line) for scripts.")
    var json = false

    public init() {}
}

/// A failure the CLI reports as `coords: <message>` and exit status 1.
struct CLIFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Exit status when work was queued in the outbox for a later retry (EX_TEMPFAIL).
let queuedExitCode: Int32 = 75

/// Runs a command body, printing any error in one clear line.
func runReporting(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let exit as ExitCode {
        throw exit
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

func printError(_ text: String) {
    var line = text + "\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

/// An open data directory and what commands need around it.
struct Session {
    let app: CoordsApp
    let home: String

    /// Opens the data directory. Without `creating`, a directory with no identity is an error.
    /// - Throws: ``CLIFailure`` (no data yet), keychain and store errors.
    static func open(_ options: GlobalOptions, creating: Bool = false) throws -> Session {
        let home = options.path
        let exists = access(home + "/keychain.bin", F_OK) == 0
        if !creating && !exists {
            throw CLIFailure("no Coords identity in \(home); run `coords init --server URL --name NAME` first (or pass --home)")
        }
        let passphrase = try Passphrase.read(prompt: "Passphrase for \(home): ", confirm: creating && !exists)
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
        if mkdir(home, 0o700) != 0 && errno != EEXIST { throw CLIFailure("cannot create \(home): \(String(cString: strerror(errno)))") }
        return Session(app: try CoordsApp.open(directory: home, options: appOptions), home: home)
    }

    static func cost(_ name: String?, default fallback: Argon2id.Parameters) throws -> Argon2id.Parameters {
        switch name {
        case nil: return fallback
        case "minimum": return .minimum
        case "interactive": return .interactive
        case "moderate": return .moderate
        case let other?: throw CLIFailure("unknown cost \"\(other)\" (minimum, interactive or moderate)")
        }
    }

    func close() { app.close() }
}

/// Passphrases from `COORDS_PASSPHRASE` or the terminal (not echoed).
enum Passphrase {
    static func read(prompt: String, confirm: Bool, variable: String = "COORDS_PASSPHRASE") throws -> String {
        if let value = environment(variable) { return value }
        guard isatty(0) != 0 || access("/dev/tty", R_OK) == 0 else {
            throw CLIFailure("no passphrase: set \(variable) or run in a terminal")
        }
        guard let first = getpass(prompt).map({ String(cString: $0) }) else { throw CLIFailure("could not read the passphrase") }
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

/// Sends prepared requests with AsyncHTTPClient.
enum RelayHTTP {
    /// One client for the process: a refused or unreachable relay fails within seconds instead
    /// of being retried until the request deadline — the outbox is the CLI's retry mechanism.
    static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(15))
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    static func send(_ request: PreparedRequest, timeout: Int64 = 15) async throws -> HTTPResult {
        var http = HTTPClientRequest(url: request.url)
        http.method = HTTPMethod(rawValue: request.method)
        for header in request.headers { http.headers.add(name: header.name, value: header.value) }
        if !request.body.isEmpty { http.body = .bytes(ByteBuffer(bytes: request.body)) }
        do {
            let response = try await client.execute(http, timeout: .seconds(timeout))
            let body = try await response.body.collect(upTo: 4 << 20)
            return HTTPResult(status: Int(response.status.code), body: Array(body.readableBytesView))
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
        case (500..<600, _): advice = " — the relay has a problem; the request stays queued"
        default: advice = ""
        }
        return "the relay refused to \(action) (\(status)\(code.map { " \($0)" } ?? "")): \(message)\(advice)"
    }
}
