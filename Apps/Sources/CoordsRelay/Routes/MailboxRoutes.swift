import CoordsCore
import Hummingbird

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
