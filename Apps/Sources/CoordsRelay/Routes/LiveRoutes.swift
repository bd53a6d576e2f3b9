import CoordsCore
import Hummingbird

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
