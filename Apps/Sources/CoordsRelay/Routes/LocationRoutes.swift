import CoordsCore
import Hummingbird

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
