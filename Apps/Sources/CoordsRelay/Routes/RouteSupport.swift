import CoordsCore
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle

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
    routes.append((["v1", "relay", "prekeys"], ["GET", "PUT"]))
    routes.append((["v1", "relay", "prekeys", ":key"], ["GET"]))
    routes.append((["v1", "relay", "objects", ":id"], ["GET", "PUT", "DELETE"]))
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

/// Shared path of the body-carrying routes: address limit, content type (`mediaType`, JSON
/// unless said), body size (checked against Content-Length first, then while collecting, never
/// buffering past the limit; 413 with `tooLargeCode`).
func handle(
    _ request: Request, _ context: RelayRequestContext, _ service: RelayService, needsBody: Bool, limit: Int? = nil,
    mediaType: String = "application/json", tooLargeCode: String = "body_too_large",
    _ body: @escaping @Sendable ([UInt8]) async throws -> RelayReply
) async -> Response {
    await handle(
        request, context, service, limit: limit, mediaType: mediaType, tooLargeCode: tooLargeCode, check: {},
        { _, bytes in try await body(bytes) })
}

/// ``handle(_:_:_:needsBody:limit:mediaType:tooLargeCode:_:)`` with a `check` that runs before
/// a byte of the body is read (a route whose signature is in its headers authenticates there,
/// so an unauthenticated body is never buffered). The body is read only within the relay's
/// ``BodyBudget`` (503 `busy` beyond), and `body` gets what `check` returned.
func handle<Checked: Sendable>(
    _ request: Request, _ context: RelayRequestContext, _ service: RelayService, limit: Int? = nil,
    mediaType: String = "application/json", tooLargeCode: String = "body_too_large",
    check: @escaping @Sendable () async throws -> Checked,
    _ body: @escaping @Sendable (Checked, [UInt8]) async throws -> RelayReply
) async -> Response {
    var request = request
    let limit = limit ?? service.configuration.maximumBodyBytes
    let reply = await service.reply {
        try service.limit(address: clientAddress(request, context, service))
        guard let type = request.headers[.contentType]?.lowercased(), type == mediaType || type.hasPrefix(mediaType + ";") else {
            throw RelayFailure(415, "unsupported_media_type", "send the body as Content-Type: \(mediaType)")
        }
        let declared = request.headers[.contentLength].flatMap(Int.init)
        if let declared, declared > limit {
            throw RelayFailure(413, tooLargeCode, "the body is \(declared) bytes; the limit is \(limit)")
        }
        let checked = try await check()
        let reservation = min(max(declared ?? limit, 0), limit)
        guard service.bodies.reserve(reservation) else {
            service.logger.warning("request bodies over budget", metadata: ["in_use": "\(service.bodies.inUse)", "wanted": "\(reservation)"])
            throw RelayFailure(503, "busy", "the relay is reading as many request bodies as it may; retry shortly", retryAfter: 1)
        }
        defer { service.bodies.release(reservation) }
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw RelayFailure(413, tooLargeCode, "the body is larger than \(limit) bytes")
        } catch is HTTPParserError {
            throw RelayFailure(400, "malformed_body", "the request body is not valid HTTP/1.1 (e.g. broken chunked encoding)")
        }
        return try await body(checked, Array(buffer.readableBytesView))
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

/// Answers HEAD like GET without the body (RFC 9110 section 9.3.2): the same status and headers, the
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
