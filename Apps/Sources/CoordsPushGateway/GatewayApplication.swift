import CoordsCore
import CoordsRelay
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore

/// The largest wake body read (PROTOCOL.md §8.8: over 1,024 bytes is 413).
let maximumWakeBody = 1024

/// The gateway's routes on `gateway`: `POST /up/<token>` (a wake; any other method 405),
/// `GET /v1/gateway/key`, `GET /healthz`, `GET /metrics`. `addresses` decides who a request
/// counts as (`X-Forwarded-For` from a trusted proxy).
public func buildGatewayRouter(gateway: PushGateway, addresses: AddressPolicy) -> Router<RelayRequestContext> {
    let router = Router(context: RelayRequestContext.self)
    router.post("up/:token") { request, context in
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > maximumWakeBody {
            return refusal(gateway, GatewayAnswer(status: 413, retryAfter: nil, code: "body_too_large"))
        }
        // Read (and bounded) before answering, so a relay's connection stays usable.
        // collect fails only for a body over the bound (or a connection gone mid-body): 413 either way.
        guard (try? await request.body.collect(upTo: maximumWakeBody)) != nil else {
            return refusal(gateway, GatewayAnswer(status: 413, retryAfter: nil, code: "body_too_large"))
        }
        let token = context.parameters.get("token") ?? ""
        let address = addresses.key(forwardedFor: request.headers[HTTPField.Name("X-Forwarded-For") ?? .accept], remoteAddress: context.remoteAddress)
        return reply(await gateway.wake(token: token, address: address))
    }
    for method in [HTTPRequest.Method.get, .put, .delete, .patch] {
        router.on("up/:token", method: method) { _, _ in
            refusal(gateway, GatewayAnswer(status: 405, retryAfter: nil, code: "method_not_allowed"), allow: "POST")
        }
    }
    router.get("v1/gateway/key") { _, _ in
        guard let key = gateway.publicKey else { return reply(GatewayAnswer(status: 503, retryAfter: 5, code: "no_key")) }
        return json(.ok, .object(["key": .string(Base64.encode(key.rawRepresentation))]))
    }
    router.get("healthz") { _, _ in json(.ok, .object(["status": .string("ok")])) }
    router.get("metrics") { _, _ in
        Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
            body: .init(byteBuffer: ByteBuffer(bytes: gateway.metrics.exposition())))
    }
    return router
}

private func json(_ status: HTTPResponse.Status, _ value: JSONValue, headers: HTTPFields = [:]) -> Response {
    var fields = headers
    fields[.contentType] = "application/json"
    return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: value.serialized())))
}

/// A refusal counted in the metrics (wakes the gateway answered itself).
private func refusal(_ gateway: PushGateway, _ answer: GatewayAnswer, allow: String? = nil) -> Response {
    gateway.metrics.answered(answer)
    var response = reply(answer)
    if let allow { response.headers[.allow] = allow }
    return response
}

/// The JSON answer `{"status": <code>}` (delivered) or `{"error": <code>, "message": …}`.
func reply(_ answer: GatewayAnswer) -> Response {
    var headers = HTTPFields()
    if let seconds = answer.retryAfter { headers[.retryAfter] = String(seconds) }
    if answer.status == 200 { return json(.ok, .object(["status": .string(answer.code)]), headers: headers) }
    return json(
        HTTPResponse.Status(code: answer.status), .object(["error": .string(answer.code), "message": .string(message(answer.code))]),
        headers: headers)
}

private func message(_ code: String) -> String {
    switch code {
    case "unknown_token": "the token does not open with this gateway's keys, or breaks PROTOCOL.md §8.8; drop the registration"
    case "device_gone": "the provider says the device token is no longer valid; drop the registration"
    case "platform_not_served": "this gateway has no credentials for the token's platform; drop the registration"
    case "token_rate_limited": "too many wakes for this device; retry after Retry-After seconds"
    case "address_rate_limited": "too many wakes from this address; retry after Retry-After seconds"
    case "busy": "too many wakes in flight; retry after Retry-After seconds"
    case "provider_refused": "the provider refused the gateway's request (its credentials or setup); retry later"
    case "provider_unavailable": "the provider did not accept the wake after retries; retry after Retry-After seconds"
    case "body_too_large": "a wake body is at most 1024 bytes"
    case "method_not_allowed": "a wake is POST /up/<token>"
    default: "the gateway cannot send wakes now; retry later"
    }
}

/// The gateway as a server on `host:port`, with `gateway` as a service beside it.
public func buildGatewayApplication(gateway: PushGateway, addresses: AddressPolicy, host: String, port: Int, logger: Logger)
    -> some ApplicationProtocol
{
    var app = Application(
        router: buildGatewayRouter(gateway: gateway, addresses: addresses),
        configuration: .init(address: .hostname(host, port: port), serverName: "coords-push-gateway"), logger: logger)
    app.addServices(gateway)
    return app
}
