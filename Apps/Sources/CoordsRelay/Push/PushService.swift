import CoordsCore
import NIOPosix

/// The §8.7 push registration: `PUT` and `DELETE /v1/relay/push`, signed like a §7.3 request.
extension RelayService {
    /// `PUT /v1/relay/push` with `{"endpoint": "https://…", "ttl": seconds}` → 200
    /// `{"endpoint": …, "expiresAt": unix seconds}`; replaces the mailbox's earlier registration.
    /// `clientAddress` (the normalised address of the caller, ``AddressPolicy``) is stored with it:
    /// the dispatcher shares wake slots per registering address. Refusals: 400 (`invalid_json`,
    /// `invalid_ttl`, `endpoint_refused` with the reason), 401 (the §7.3 headers), 507 (`push_full`).
    public func registerPush(body: [UInt8], pathWithQuery: String, headers: [String: String], clientAddress: String = "") async throws -> RelayReply {
        let recipient = try await authenticateCaller(method: "PUT", pathWithQuery: pathWithQuery, headers: headers)
        let limits = configuration.push
        let (endpoint, ttl) = try Self.parseRegistration(body, limits: limits)
        do {
            let host = endpoint.host
            let allowLoopback = limits.allowLoopback
            _ = try await NIOThreadPool.singleton.runIfActive { try EndpointPolicy.check(host: host, allowLoopback: allowLoopback) }
        } catch let refusal as PushEndpointRefusal {
            throw RelayFailure(400, "endpoint_refused", refusal.description)
        }
        let expiresAt = nowSeconds.addingSaturating(ttl)
        guard
            try await store.pushRegister(
                recipient: recipient.hex, PushRegistration(endpoint: endpoint.url, expiresAt: expiresAt, registeredBy: clientAddress),
                capacity: limits.maximumRegistrations)
        else {
            throw RelayFailure(507, "push_full", "the relay holds its maximum number of push registrations; keep polling")
        }
        return .json(.object(["endpoint": .string(endpoint.url), "expiresAt": .number(String(expiresAt))]))
    }

    /// The body of a registration: the endpoint (parsed, not yet resolved) and the lifetime.
    /// - Throws: ``RelayFailure`` 400 `invalid_json`, `endpoint_refused`, `invalid_ttl`.
    static func parseRegistration(_ body: [UInt8], limits: PushLimits) throws -> (endpoint: PushEndpoint, ttl: UInt64) {
        guard let object = (try? JSONValue.parse(body))?.objectValue else { throw RelayFailure(400, "invalid_json", "the body is not a JSON object") }
        guard let text = object["endpoint"]?.stringValue else { throw RelayFailure(400, "endpoint_refused", "endpoint must be a string (an https:// URL)") }
        var ttl = limits.defaultTTLSeconds
        if let value = object["ttl"] {
            guard let seconds = value.uint64Value, (limits.minimumTTLSeconds...limits.maximumTTLSeconds).contains(seconds) else {
                throw RelayFailure(400, "invalid_ttl", "ttl must be \(limits.minimumTTLSeconds)…\(limits.maximumTTLSeconds) seconds")
            }
            ttl = seconds
        }
        do {
            return (try PushEndpoint(parsing: text, allowInsecure: limits.allowLoopback), ttl)
        } catch {
            throw RelayFailure(400, "endpoint_refused", error.description)
        }
    }

    /// `DELETE /v1/relay/push` → 200 `{"deleted": bool}`. Refusals: 401 (the §7.3 headers).
    public func unregisterPush(pathWithQuery: String, headers: [String: String]) async throws -> RelayReply {
        let recipient = try await authenticateCaller(method: "DELETE", pathWithQuery: pathWithQuery, headers: headers)
        let deleted = try await store.pushRemove(recipient: recipient.hex, endpoint: nil)
        return .json(.object(["deleted": .bool(deleted)]))
    }
}
