import CoordsCore
import HTTPTypes
import Hummingbird

/// `GET /v1/relay/live` without a WebSocket upgrade: 426 (the upgrade itself is taken by the
/// connection's channel before routing, ``RelayHTTPChannel``). Absent when the live channel is
/// off, so such a relay answers 404 like a reference relay.
func liveRoutes(service: RelayService) -> RouteCollection<RelayRequestContext> {
    let routes = RouteCollection(context: RelayRequestContext.self)
    if service.configuration.live.enabled {
        routes.get("v1/relay/live") { request, _ in
            var reply: RelayReply
            switch request.headers[HTTPField.Name(IgnoreUnknownUpgrade.refusedUpgradeHeader) ?? .upgrade] {
            case "version":
                reply = RelayFailure(426, "unsupported_websocket_version", "this relay speaks WebSocket version 13 (RFC 6455)").reply
                reply.headers.append(("Sec-WebSocket-Version", "13"))
            case "key":
                reply = RelayFailure(400, "invalid_upgrade", "send exactly one Sec-WebSocket-Key: 16 random bytes in base64 (RFC 6455)").reply
                reply.headers.append(("Sec-WebSocket-Version", "13"))
            case "not-first":
                reply = RelayFailure(400, "upgrade_not_first", "a WebSocket upgrade must be the first request on its connection; open a new one").reply
            default:
                reply = RelayFailure(426, "upgrade_required", "GET /v1/relay/live is a WebSocket (PROTOCOL.md §8): send Upgrade: websocket").reply
                reply.headers.append(("Upgrade", "websocket"))
            }
            return response(reply)
        }
    }
    return routes
}
