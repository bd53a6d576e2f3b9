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
        store = try await PostgresRelayStore(location: location, poolSize: configuration.postgresPoolSize, logger: logger)
        described = "postgres at \(location.redacted)"
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
    router.addRoutes(operatorRoutes(service: service))
    return router
}

/// Coords v3 and our extensions: `GET version`, `PUT`/`POST`/`DELETE location`.
func coordsRoutes(service: RelayService) -> RouteCollection<RelayRequestContext> {
    let routes = RouteCollection(context: RelayRequestContext.self)
    routes.get("version") { _, _ in response(service.version()) }
    routes.put("location") { request, context in
        await handle(request, context, service, needsBody: true) { try await service.upload(body: $0) }
    }
    routes.post("location") { request, context in
        await handle(request, context, service, needsBody: true) { try await service.fetch(body: $0) }
    }
    routes.delete("location") { request, context in
        await handle(request, context, service, needsBody: true) { try await service.delete(body: $0) }
    }
    return routes
}

/// The §7.3 mailbox: post an envelope (sender-signed inside), list and acknowledge (recipient-signed headers).
func mailboxRoutes(service: RelayService) -> RouteCollection<RelayRequestContext> {
    let routes = RouteCollection(context: RelayRequestContext.self)
    routes.post("v1/relay/messages") { request, context in
        await handle(request, context, service, needsBody: true, limit: service.configuration.maximumMessageBodyBytes) {
            try await service.postMessage(body: $0, clientAddress: clientAddress(request, context, service))
        }
    }
    routes.get("v1/relay/messages") { request, context in
        await signed(request, context, service) { path, headers in
            try await service.listMessages(pathWithQuery: path, query: queryItems(path), headers: headers)
        }
    }
    routes.post("v1/relay/messages/:id/ack") { request, context in
        await signed(request, context, service) { path, headers in
            try await service.acknowledgeMessage(id: context.parameters.get("id") ?? "", method: "POST", pathWithQuery: path, headers: headers)
        }
    }
    routes.delete("v1/relay/messages/:id") { request, context in
        await signed(request, context, service) { path, headers in
            try await service.acknowledgeMessage(id: context.parameters.get("id") ?? "", method: "DELETE", pathWithQuery: path, headers: headers)
        }
    }
    return routes
}

/// `GET /v1/relay/live` without a WebSocket upgrade: 426 (the upgrade itself is taken by the
/// connection's channel before routing, ``RelayHTTPChannel``). Absent when the live channel is
/// off, so such a relay answers 404 like a reference relay.
func liveRoutes(service: RelayService) -> RouteCollection<RelayRequestContext> {
    let routes = RouteCollection(context: RelayRequestContext.self)
    if service.configuration.live.enabled {
        routes.get("v1/relay/live") { _, _ in
            var reply = RelayFailure(426, "upgrade_required", "GET /v1/relay/live is a WebSocket (PROTOCOL.md §8): send Upgrade: websocket").reply
            reply.headers.append(("Upgrade", "websocket"))
            return response(reply)
        }
    }
    return routes
}

/// §8.7 push registration (recipient-signed). Absent when push is off, so such a relay answers
/// 404 like a reference relay.
func pushRoutes(service: RelayService) -> RouteCollection<RelayRequestContext> {
    let routes = RouteCollection(context: RelayRequestContext.self)
    guard service.configuration.push.enabled else { return routes }
    routes.put("v1/relay/push") { request, context in
        await handle(request, context, service, needsBody: true) { body in
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            return try await service.registerPush(
                body: body, pathWithQuery: request.head.path ?? request.uri.description, headers: headers,
                clientAddress: clientAddress(request, context, service))
        }
    }
    routes.delete("v1/relay/push") { request, context in
        await signed(request, context, service) { path, headers in try await service.unregisterPush(pathWithQuery: path, headers: headers) }
    }
    return routes
}

/// The operator's endpoints: `GET healthz` (liveness: the process serves HTTP), `GET readyz`
/// (readiness: the store answers too; 503 `store_unavailable` otherwise) and `GET metrics`
/// (Prometheus text).
func operatorRoutes(service: RelayService) -> RouteCollection<RelayRequestContext> {
    let routes = RouteCollection(context: RelayRequestContext.self)
    routes.get("healthz") { _, _ in
        response(.json(.object(["status": .string("ok")])))
    }
    routes.get("readyz") { _, _ in
        response(
            await service.reply {
                try await service.store.checkReady()
                return .json(.object(["status": .string("ready")]))
            })
    }
    routes.get("metrics") { _, _ in
        Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
            body: .init(byteBuffer: ByteBuffer(bytes: await service.metricsText())))
    }
    return routes
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

/// The relay's routes and their methods, for 405 answers with `Allow` (a `:name` segment matches anything).
let knownRoutes: [(path: [String], methods: [String])] = {
    var routes: [(path: [String], methods: [String])] = []
    for prefix in [["api"], []] {
        routes.append((prefix + ["version"], ["GET"]))
        routes.append((prefix + ["location"], ["PUT", "POST", "DELETE"]))
    }
    routes.append((["v1", "relay", "messages"], ["GET", "POST"]))
    routes.append((["v1", "relay", "messages", ":id", "ack"], ["POST"]))
    routes.append((["v1", "relay", "messages", ":id"], ["DELETE"]))
    routes.append((["v1", "relay", "live"], ["GET"]))
    routes.append((["v1", "relay", "push"], ["PUT", "DELETE"]))
    routes.append((["healthz"], ["GET"]))
    routes.append((["readyz"], ["GET"]))
    routes.append((["metrics"], ["GET"]))
    return routes
}()

/// The methods the route at `path` answers, or nil when no route has that path.
func allowedMethods(path: String) -> [String]? {
    let segments = path.split(separator: "?", maxSplits: 1).first.map { $0.split(separator: "/").map(String.init) } ?? []
    var methods: [String] = []
    for route in knownRoutes where route.path.count == segments.count {
        if zip(route.path, segments).allSatisfy({ $0.hasPrefix(":") || $0 == $1 }) { methods += route.methods }
    }
    if methods.contains("GET") { methods.append("HEAD") }  // Hummingbird answers HEAD for every GET route
    return methods.isEmpty ? nil : methods
}

/// Converts a ``RelayReply`` into a Hummingbird response.
func response(_ reply: RelayReply) -> Response {
    var headers = HTTPFields()
    for (name, value) in reply.headers {
        if let field = HTTPField.Name(name) { headers[field] = value }
    }
    return Response(status: .init(code: reply.status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: reply.body)))
}

/// Shared path of the body-carrying routes: address limit, content type, body size (checked
/// against Content-Length first, then while collecting, never buffering past the limit).
func handle(
    _ request: Request, _ context: RelayRequestContext, _ service: RelayService, needsBody: Bool, limit: Int? = nil,
    _ body: @escaping @Sendable ([UInt8]) async throws -> RelayReply
) async -> Response {
    var request = request
    let limit = limit ?? service.configuration.maximumBodyBytes
    let reply = await service.reply {
        try service.limit(address: clientAddress(request, context, service))
        guard let type = request.headers[.contentType]?.lowercased(),
            type == "application/json" || type.hasPrefix("application/json;")
        else {
            throw RelayFailure(415, "unsupported_media_type", "send the body as Content-Type: application/json")
        }
        if let declared = request.headers[.contentLength].flatMap(Int.init), declared > limit {
            throw RelayFailure(413, "body_too_large", "the body is \(declared) bytes; the limit is \(limit)")
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw RelayFailure(413, "body_too_large", "the body is larger than \(limit) bytes")
        } catch is HTTPParserError {
            throw RelayFailure(400, "malformed_body", "the request body is not valid HTTP/1.1 (e.g. broken chunked encoding)")
        }
        return try await body(Array(buffer.readableBytesView))
    }
    return response(reply)
}

/// Shared path of the recipient-signed mailbox routes: address limit, then the handler with the
/// request target exactly as sent (the signed string covers it) and lowercased header names.
func signed(
    _ request: Request, _ context: RelayRequestContext, _ service: RelayService,
    _ body: @escaping @Sendable (String, [String: String]) async throws -> RelayReply
) async -> Response {
    let reply = await service.reply {
        try service.limit(address: clientAddress(request, context, service))
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName] = field.value }
        return try await body(request.head.path ?? request.uri.description, headers)
    }
    return response(reply)
}

/// The query items of a request target (`?a=1&b=2`), without percent-decoding (ids are hex).
func queryItems(_ target: String) -> [String: String] {
    guard let mark = target.firstIndex(of: "?") else { return [:] }
    var items: [String: String] = [:]
    for pair in target[target.index(after: mark)...].split(separator: "&") {
        let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        if let name = parts.first, items[String(name)] == nil { items[String(name)] = parts.count > 1 ? String(parts[1]) : "" }
    }
    return items
}

/// The client's address: the peer, or the first `X-Forwarded-For` entry behind a trusted proxy.
func clientAddress(_ request: Request, _ context: RelayRequestContext, _ service: RelayService) -> String {
    clientAddress(headers: request.headers, remoteAddress: context.remoteAddress, policy: service.configuration.addresses)
}

/// The key the per-address limits count a request under (``AddressPolicy/key(forwardedFor:remoteAddress:)``):
/// the client's address, normalised, from `X-Forwarded-For` only when the peer is a trusted proxy.
func clientAddress(headers: HTTPFields, remoteAddress: String?, policy: AddressPolicy) -> String {
    policy.key(forwardedFor: headers[.xForwardedFor], remoteAddress: remoteAddress)
}

extension HTTPField.Name {
    /// `X-Forwarded-For` (a valid token, so the failable initialiser cannot fail; `.accept` is never used).
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For") ?? .accept
}

/// Counts every request (route, method, status, latency), logs it without payloads, and turns
/// framework errors (404, 405, …) into the relay's JSON error bodies.
struct RelayMiddleware: RouterMiddleware {
    typealias Context = RelayRequestContext
    let service: RelayService

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let response: Response
        do {
            response = try await next(request, context)
        } catch let error as HTTPError {
            if error.status.code == 404, let allowed = allowedMethods(path: request.uri.path),
                !allowed.contains(request.method.rawValue)
            {
                var failure = RelayFailure(
                    405, "method_not_allowed",
                    "\(request.uri.path) answers \(allowed.joined(separator: ", ")), not \(request.method.rawValue)"
                ).reply
                failure.headers.append(("Allow", allowed.joined(separator: ", ")))
                response = CoordsRelay.response(failure)
            } else {
                let failure = RelayFailure(
                    Int(error.status.code), error.status.code == 404 ? "not_found" : "http_error",
                    error.body ?? error.status.reasonPhrase)
                response = CoordsRelay.response(failure.reply)
            }
        } catch {
            response = CoordsRelay.response(RelayFailure(500, "internal", "the relay could not complete the request").reply)
        }
        let route = context.endpointPath ?? "unmatched"
        service.metrics.request(
            route: route, method: request.method.rawValue, status: Int(response.status.code),
            duration: ContinuousClock.now - start)
        let elapsed = ContinuousClock.now - start
        // The access log: the route template, never the target, a body, a signature or a key.
        context.logger.info(
            "request",
            metadata: [
                "method": "\(request.method.rawValue)", "route": "\(route)", "status": "\(response.status.code)",
                "duration_ms": "\(milliseconds(elapsed))",
                "request_bytes": "\(request.headers[.contentLength].flatMap(Int.init) ?? 0)",
                "response_bytes": "\(response.body.contentLength ?? 0)"
            ])
        return response
    }
}

/// Answers HEAD like GET without the body (RFC 9110 §9.3.2): the same status and headers, the
/// length the body would have. The router matches routes by method, so HEAD is turned into GET
/// before routing.
struct HeadAsGet<Inner: HTTPResponder>: HTTPResponder where Inner.Context == RelayRequestContext {
    let inner: Inner

    func respond(to request: Request, context: RelayRequestContext) async throws -> Response {
        guard request.method == .head else { return try await inner.respond(to: request, context: context) }
        var head = request.head
        head.method = .get
        let full = try await inner.respond(to: Request(head: head, body: request.body), context: context)
        var headers = full.headers
        if let length = full.body.contentLength { headers[.contentLength] = String(length) }
        return Response(status: full.status, headers: headers, body: ResponseBody())
    }
}

/// A duration in milliseconds with three decimals ("0.412").
func milliseconds(_ duration: Duration) -> String {
    let (seconds, attoseconds) = duration.components
    let micros = seconds.multipliedReportingOverflow(by: 1_000_000).partialValue.addingReportingOverflow(attoseconds / 1_000_000_000_000).partialValue
    let whole = micros / 1000
    let fraction = abs(micros % 1000)
    return "\(whole)." + (fraction < 10 ? "00" : (fraction < 100 ? "0" : "")) + "\(fraction)"
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
