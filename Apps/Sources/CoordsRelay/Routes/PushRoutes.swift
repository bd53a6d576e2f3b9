import CoordsCore
import Hummingbird

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
