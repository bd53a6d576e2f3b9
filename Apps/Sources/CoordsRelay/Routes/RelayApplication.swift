import CoordsCore
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// The request context: Hummingbird's core storage plus the client's address.
public struct RelayRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The peer's IP address (nil in router tests).
    public let remoteAddress: String?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress?.ipAddress
    }
}

/// The relay `configuration` describes, ready to run: opens the store it asks for (PostgreSQL
/// when `postgresURL` is set, LMDB in `dataDirectory`, memory otherwise), builds the routes and
/// middleware, and adds the expiry sweeper and a service that closes the store once the server
/// has drained its requests on graceful shutdown (or when the application fails). Logs
/// "coords-relay starting" with the address and the store.
/// - Parameter postgresPassword: used when the URL carries none (`PGPASSWORD`).
/// - Throws: ``PostgresRelayStore`` errors (unreachable, refused, schema newer than this relay),
///   ``StoreError`` for LMDB.
public func buildApplication(configuration: RelayConfiguration, postgresPassword: String? = nil, logger: Logger) async throws
    -> some ApplicationProtocol
{
    let store: any RelayStore
    let described: String
    if let url = configuration.postgresURL {
        let location = try PostgresLocation(url: url, environmentPassword: postgresPassword)
        let reads = try configuration.postgresReadURL.map { try PostgresLocation(url: $0, environmentPassword: postgresPassword) }
        store = try await PostgresRelayStore(location: location, readLocation: reads, poolSize: configuration.postgresPoolSize, logger: logger)
        described = "postgres at \(location.redacted)" + (reads.map { ", fetches from \($0.redacted)" } ?? "")
    } else if let directory = configuration.dataDirectory {
        store = try LMDBRelayStore(directory: directory, durability: configuration.durability, logger: logger)
        described = "lmdb at \(directory)"
    } else {
        store = MemoryRelayStore()
        described = "memory"
    }
    let service = RelayService(configuration: configuration, store: store, logger: logger)
    logger.info(
        "coords-relay starting",
        metadata: ["address": "\(configuration.host):\(configuration.port)", "store": "\(described)", "ttl": "\(configuration.ttlSeconds)s"])
    return assemble(service: service, router: buildRouter(service: service), closingStore: true)
}

/// Builds the relay on `service` (whose store the caller opened and closes): routes, middleware
/// and the expiry sweeper. Tests use it (`app.test(.router)` in process, `.live` over a socket).
public func buildApplication(service: RelayService) -> some ApplicationProtocol {
    assemble(service: service, router: buildRouter(service: service), closingStore: false)
}

/// Closes the store after graceful shutdown reached it: services shut down in reverse order, so
/// this one (added first) runs its close after the server drained and the sweeper stopped.
struct StoreCloser: Service {
    let store: any RelayStore

    func run() async throws {
        try? await gracefulShutdown()  // returns on graceful shutdown, throws on cancellation: close either way
        await store.close()
    }
}

/// The relay's routes and middleware on `service`, without a server: the application serves
/// it, and the fuzz target drives it in process with arbitrary requests. The routes come in
/// three collections: Coords v3 (under `/api` and, like the reference deployment, at the root),
/// the §7.3 mailbox, and the operator's endpoints.
public func buildRouter(service: RelayService) -> Router<RelayRequestContext> {
    let router = Router(context: RelayRequestContext.self)
    router.add(middleware: RelayMiddleware(service: service))
    let coords = coordsRoutes(service: service)
    router.addRoutes(coords, atPath: "api")
    router.addRoutes(coords, atPath: "")
    router.addRoutes(mailboxRoutes(service: service))
    router.addRoutes(liveRoutes(service: service))
    router.addRoutes(pushRoutes(service: service))
    router.addRoutes(prekeyRoutes(service: service))
    router.addRoutes(objectRoutes(service: service))
    router.addRoutes(operatorRoutes(service: service))
    return router
}

/// Builds the assembled application around ``buildRouter(service:)``.
private func assemble(service: RelayService, router: Router<RelayRequestContext>, closingStore: Bool) -> some ApplicationProtocol {
    let configuration = service.configuration
    var logger = service.logger
    logger.logLevel = configuration.logLevel
    let limits = effectiveConnectionLimits(configuration.connections)
    let registry = ConnectionRegistry(limits: limits)
    let metrics = service.metrics
    var app = Application(
        responder: HeadAsGet(inner: router.buildResponder()),
        server: HTTPServerBuilder { responder in
            RelayHTTPChannel(responder: responder, limits: limits, registry: registry, metrics: metrics, service: service)
        },
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "coords-relay"),
        logger: logger)
    if closingStore { app.addServices(StoreCloser(store: service.store)) }  // first: shut down last
    app.addServices(ExpirySweeper(service: service))
    if let push = service.push { app.addServices(push) }
    if configuration.live.enabled, let announcements = service.store.announcements() {
        app.addServices(LiveBridge(service: service, announcements: announcements))
    }
    return app
}

/// The connection limits, with the total cap lowered to fit the open-file limit (`ulimit -n`):
/// each connection is a descriptor, and the store, the listener and the logs need some too.
func effectiveConnectionLimits(_ requested: ConnectionLimits) -> ConnectionLimits {
    var limits = requested
    var rlim = rlimit()
    if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &rlim) == 0, rlim.rlim_cur != rlim_t.max {
        let available = Int(clamping: rlim.rlim_cur).subtractingSaturating(64)
        limits.maximumConnections = max(1, min(limits.maximumConnections, available))
    }
    limits.maximumConnectionsPerAddress = max(1, min(limits.maximumConnectionsPerAddress, limits.maximumConnections))
    return limits
}

/// Forgets expired blobs every `sweepIntervalSeconds` until graceful shutdown.
struct ExpirySweeper: Service {
    let service: RelayService

    func run() async throws {
        let interval = Duration.seconds(Int64(clamping: max(service.configuration.sweepIntervalSeconds, 1)))
        do {
            try await cancelWhenGracefulShutdown {
                while true {
                    try await Task.sleep(for: interval)
                    do { _ = try await service.sweep() } catch {
                        service.logger.error("sweep failed", metadata: ["error": "\(error)"])
                    }
                }
            }
        } catch is CancellationError {
            return
        }
    }
}
