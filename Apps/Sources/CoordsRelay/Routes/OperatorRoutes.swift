import CoordsCore
import Hummingbird

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
