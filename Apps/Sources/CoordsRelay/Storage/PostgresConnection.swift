import CoordsCore
import CoordsTLS
import Logging
import NIOCore
import NIOSSL
import PostgresNIO
import Synchronization

/// Where a PostgreSQL store connects: parsed from a libpq-style URL
/// (`postgres://user:password@host:port/database?sslmode=require`).
public struct PostgresLocation: Sendable, Equatable {
    /// The server's host name or address.
    public var host: String
    /// The server's port (5432 when the URL names none).
    public var port: Int
    /// The role to log in as.
    public var username: String
    /// The role's password, if the URL has one (errors show the URL with it redacted).
    public var password: String?
    /// The database name.
    public var database: String
    /// `disable`, `allow`, `prefer` (libpq's default), `require`, `verify-ca` or `verify-full`.
    public var sslMode: String
    /// `sslrootcert`: a PEM file of the certificate authorities `verify-ca`/`verify-full` trust,
    /// instead of the system's trust store (or the bundle `SSL_CERT_FILE` names). Nil: that store.
    public var sslRootCert: String?

    /// Parses `url`; the password may also come from `PGPASSWORD` (`environmentPassword`).
    /// - Throws: ``RelayStoreError`` naming what is wrong (never a crash on a strange URL).
    public init(url: String, environmentPassword: String? = nil) throws {
        guard let schemeEnd = url.range(of: "://"), ["postgres", "postgresql"].contains(url[..<schemeEnd.lowerBound].lowercased()) else {
            throw RelayStoreError(description: "the PostgreSQL URL must start with postgres:// (got \(Self.redacted(url)))")
        }
        var rest = url[schemeEnd.upperBound...]
        var query = Substring("")
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        var path = Substring("")
        if let slash = rest.firstIndex(of: "/") {
            path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        var user = Substring("postgres")
        var password: Substring?
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = credentials.firstIndex(of: ":") {
                user = credentials[..<colon]
                password = credentials[credentials.index(after: colon)...]
            } else {
                user = credentials
            }
        }
        var host = rest
        var port = 5432
        guard !host.contains(",") else {
            throw RelayStoreError(
                description:
                    "the PostgreSQL URL names several hosts; the relay connects to one address: put HAProxy with Patroni's health checks in front of the cluster and give its address (docs/RELAY.md, \"High availability\")"
            )
        }
        if host.hasPrefix("["), host.firstIndex(of: "]") == nil {
            throw RelayStoreError(description: "the PostgreSQL URL has an unclosed [ in its host")
        }
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {  // [::1]:5432
            let after = host[host.index(after: close)...]
            if after.hasPrefix(":") {
                guard let p = Int(after.dropFirst()), (1...65535).contains(p) else {
                    throw RelayStoreError(description: "the PostgreSQL URL has an invalid port")
                }
                port = p
            }
            host = host[host.index(after: host.startIndex)..<close]
        } else if let colon = host.lastIndex(of: ":") {
            guard let p = Int(host[host.index(after: colon)...]), (1...65535).contains(p) else {
                throw RelayStoreError(description: "the PostgreSQL URL has an invalid port")
            }
            port = p
            host = host[..<colon]
        }
        guard !host.isEmpty else { throw RelayStoreError(description: "the PostgreSQL URL has no host") }
        self.host = Self.percentDecoded(host)
        self.port = port
        self.username = Self.percentDecoded(user)
        self.password = password.map(Self.percentDecoded) ?? environmentPassword
        self.database = path.isEmpty ? self.username : Self.percentDecoded(path)
        var mode = "prefer"  // libpq's default: TLS when the server offers it, not verified
        var rootCert: String?
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0] == "sslmode" { mode = String(parts[1]) }
            if parts.count == 2, parts[0] == "sslrootcert" { rootCert = Self.percentDecoded(parts[1]) }
        }
        sslRootCert = rootCert
        guard ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"].contains(mode) else {
            throw RelayStoreError(description: "sslmode must be disable, prefer, require, verify-ca or verify-full (got \(mode))")
        }
        sslMode = mode
    }

    /// The URL without its password (for logs and errors).
    public var redacted: String { "postgres://\(username)@\(host):\(port)/\(database)?sslmode=\(sslMode)" }

    /// `url` with everything between its scheme and its last `@` (user and password) replaced
    /// by `…`, also when the scheme is missing or misplaced (`user:password@host`).
    static func redacted(_ url: String) -> String {
        guard let at = url.lastIndex(of: "@") else { return url }
        let host = String(url[url.index(after: at)...])
        guard let scheme = url.range(of: "://"), scheme.upperBound <= at else { return "…@" + host }
        return String(url[..<scheme.upperBound]) + "…@" + host
    }

    private static func percentDecoded(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8)[...]
        while let byte = iterator.popFirst() {
            if byte == UInt8(ascii: "%"), let high = iterator.first.flatMap(Hex.value(of:)),
                let low = iterator.dropFirst().first.flatMap(Hex.value(of:))
            {
                bytes.append(high << 4 | low)
                iterator = iterator.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Who finished first, the work or its timer; the first to ``decide()`` wins, and deciding
/// cancels the timer (also when the timer is armed after the work already finished).
final class Deadline: Sendable {
    private let state = Mutex<(decided: Bool, timer: Task<Void, Never>?)>((false, nil))

    /// True for the first caller only; cancels the timer.
    func decide() -> Bool {
        let (first, timer) = state.withLock { state -> (Bool, Task<Void, Never>?) in
            defer { state.decided = true }
            return (!state.decided, state.timer)
        }
        timer?.cancel()
        return first
    }

    /// Hands over the timer task (cancelled at once if the work already finished).
    func arm(_ timer: Task<Void, Never>) {
        let decided = state.withLock { state -> Bool in
            state.timer = timer
            return state.decided
        }
        if decided { timer.cancel() }
    }
}

/// How a PostgreSQL relay store reaches its database: the TLS policy of `sslmode`, the first
/// connection that turns a wrong password or an unreachable host into one sentence, and the
/// deadline that turns a silent database into a 503.
extension PostgresRelayStore {
    /// libpq's `sslmode` as a TLS policy — the one mapping for the pool and the first connection:
    /// nil is plain text; otherwise the configuration and whether TLS is required (`prefer`/`allow`:
    /// used when the server offers it). `prefer` and `require` encrypt without checking, as libpq;
    /// `verify-ca` checks the chain against `sslrootcert` (or the trust store: the system's, or
    /// `SSL_CERT_FILE`'s), and `verify-full` the host name too.
    /// - Throws: ``RelayStoreError`` when `sslrootcert` or the trust store cannot be read.
    static func tlsPolicy(_ location: PostgresLocation) throws -> (configuration: TLSConfiguration, required: Bool)? {
        switch location.sslMode {
        case "disable": return nil
        case "allow", "prefer", "require":
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = .none
            return (configuration, location.sslMode == "require")
        default:  // verify-ca, verify-full
            var configuration: TLSConfiguration
            do {
                configuration = try TrustStore.clientConfiguration()
            } catch {
                throw RelayStoreError(description: "sslmode=\(location.sslMode): \(error)")
            }
            if let path = location.sslRootCert {
                let roots = (try? NIOSSLCertificate.fromPEMFile(path)) ?? []  // unreadable or not PEM: refused just below
                guard !roots.isEmpty else {
                    throw RelayStoreError(description: "sslrootcert names \(path), which is not a readable file of PEM certificates")
                }
                configuration.trustRoots = .certificates(roots)
            }
            if location.sslMode == "verify-ca" { configuration.certificateVerification = .noHostnameVerification }
            return (configuration, true)
        }
    }

    static func tls(_ location: PostgresLocation) throws -> PostgresClient.Configuration.TLS {
        guard let policy = try tlsPolicy(location) else { return .disable }
        return policy.required ? .require(policy.configuration) : .prefer(policy.configuration)
    }

    /// One direct connection before the pool starts: the pool retries failed connections quietly,
    /// so a wrong password or an unreachable host would only show as timeouts. Here they become
    /// one clear sentence.
    static func checkConnection(_ location: PostgresLocation, timeout: Duration, logger: Logger) async throws {
        let tls: PostgresConnection.Configuration.TLS
        if let policy = try tlsPolicy(location) {
            let context = try NIOSSLContext(configuration: policy.configuration)
            tls = policy.required ? .require(context) : .prefer(context)
        } else {
            tls = .disable
        }
        let configuration = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.username,
            password: location.password, database: location.database, tls: tls)
        do {
            try await withDeadline(timeout, what: "connect") {
                let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
                try await connection.close()
            }
        } catch let error as PSQLError {
            let state = error.serverInfo?[.sqlState] ?? ""
            let message = error.serverInfo?[.message] ?? "\(error.code)"
            if state.hasPrefix("28") {
                throw RelayStoreError(
                    description:
                        "PostgreSQL at \(location.host):\(location.port) refused user \(location.username): \(message) (check the password in the URL or PGPASSWORD)"
                )
            }
            if state == "3D000" {
                throw RelayStoreError(description: "PostgreSQL at \(location.host):\(location.port) has no database \(location.database): \(message)")
            }
            if error.code == .server {
                throw RelayStoreError(description: "PostgreSQL at \(location.host):\(location.port) refused the connection: \(message) (SQLSTATE \(state))")
            }
            if let underlying = error.underlying, CertificateDiagnosis.isCertificateRefusal(underlying) {
                let why = await CertificateDiagnosis.explain(
                    underlying, host: location.host, port: location.port, server: "PostgreSQL",
                    advice: "name the authority's PEM file in the URL's sslrootcert (or in SSL_CERT_FILE)",
                    startTLS: CertificateDiagnosis.postgresSSLRequest)
                throw RelayStoreError(description: "TLS with PostgreSQL at \(location.host):\(location.port) failed (sslmode=\(location.sslMode)): \(why)")
            }
            if let tlsError = error.underlying as? NIOSSLError {
                throw RelayStoreError(
                    description:
                        "TLS with PostgreSQL at \(location.host):\(location.port) failed (sslmode=\(location.sslMode)): \(tlsError) (verify-full needs a certificate the trust store or sslrootcert vouches for, issued for this host name; require encrypts without checking)"
                )
            }
            throw RelayStoreError(
                description: "cannot reach PostgreSQL at \(location.host):\(location.port): \(error.underlying.map { "\($0)" } ?? "\(error.code)")")
        } catch let error as RelayStoreUnavailable {
            throw RelayStoreError(description: "cannot reach PostgreSQL at \(location.host):\(location.port): \(error.description)")
        } catch let error as RelayStoreError {
            throw error
        } catch {
            throw RelayStoreError(description: "cannot reach PostgreSQL at \(location.host):\(location.port): \(error)")
        }
    }

    /// The result of `body`, or ``RelayStoreUnavailable`` after `timeout` — without waiting for
    /// `body` to notice its cancellation (a request for a pool connection may not). The timer is
    /// cancelled as soon as `body` finishes: thousands of requests a second must not leave
    /// thousands of sleeping timers behind.
    static func withDeadline<R: Sendable>(
        _ timeout: Duration, what: String,
        _ body: @escaping @Sendable () async throws -> R
    ) async throws -> R {
        let deadline = Deadline()
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<R, any Error>) in
            let work = Task {
                let result: Result<R, any Error>
                do { result = .success(try await body()) } catch { result = .failure(error) }
                if deadline.decide() { continuation.resume(with: result) }
            }
            deadline.arm(
                Task {
                    do { try await Task.sleep(for: timeout) } catch { return }  // cancelled: the work finished first
                    if deadline.decide() {
                        work.cancel()
                        continuation.resume(throwing: RelayStoreUnavailable(description: "the database did not answer within \(timeout) (\(what))"))
                    }
                })
        }
    }
}

/// Whether `error` says the store's disk is full: LMDB's ENOSPC or EDQUOT on a write or commit, a
/// full map, LMDB's EIO while `dataDirectory`'s filesystem has under 16 MiB free (LMDB reports a
/// short write, what a nearly full disk gives, as EIO), or PostgreSQL's `disk_full` (SQLSTATE
/// 53100). Such a request answers 507 `storage_full` (nothing of it was committed), never 500.
func storeDiskIsFull(_ error: any Error, dataDirectory: String?) -> Bool {
    switch error {
    case let store as StoreError:
        switch store {
        case .mapFull: return true
        case .storage(_, let code):
            if code == .system(ENOSPC) || code == .system(EDQUOT) { return true }
            guard code == .system(EIO), let dataDirectory else { return false }
            var stats = statvfs()
            guard statvfs(dataDirectory, &stats) == 0 else { return false }
            let free = UInt64(stats.f_bavail).multipliedReportingOverflow(by: UInt64(stats.f_frsize))
            return !free.overflow && free.partialValue < 16 * 1_048_576
        default: return false
        }
    case let postgres as PSQLError:
        return postgres.serverInfo?[.sqlState] == "53100"
    default:
        return false
    }
}
