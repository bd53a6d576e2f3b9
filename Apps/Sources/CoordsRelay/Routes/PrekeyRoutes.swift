import CoordsCore
import Hummingbird

/// §10.3 prekeys: the owner's upload and stock (signed), and bundles for anyone (a one-time
/// prekey only for a signed request).
func prekeyRoutes(service: RelayService) -> RouteCollection<RelayRequestContext> {
    let routes = RouteCollection(context: RelayRequestContext.self)
    routes.put("v1/relay/prekeys") { request, context in
        await handle(request, context, service, needsBody: true, limit: service.configuration.prekeys.maximumBodyBytes) { body in
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            return try await service.putPrekeys(body: body, pathWithQuery: request.head.path ?? request.uri.description, headers: headers)
        }
    }
    routes.get("v1/relay/prekeys") { request, context in
        await signed(request, context, service) { path, headers in try await service.prekeyStock(pathWithQuery: path, headers: headers) }
    }
    routes.get("v1/relay/prekeys/:key") { request, context in
        let key = context.parameters.get("key") ?? ""
        let address = clientAddress(request, context, service)
        return await signed(request, context, service) { path, headers in
            try await service.prekeyBundle(key: key, pathWithQuery: path, headers: headers, clientAddress: address)
        }
    }
    return routes
}

extension RelayService {
    /// `PUT /v1/relay/prekeys` (owner-signed): stores the signed prekey and adds one-time prekeys.
    /// - Throws: ``RelayFailure`` 400 `invalid_json`/`invalid_prekey`, 401 (headers, `bad_prekey_signature`),
    ///   409 `stale_prekey`/`prekey_conflict`/`prekey_stock_full`.
    public func putPrekeys(body: [UInt8], pathWithQuery: String, headers: [String: String]) async throws -> RelayReply {
        let owner = try await authenticateCaller(method: "PUT", pathWithQuery: pathWithQuery, headers: headers)
        guard let ownerKey = headers["x-coords-key"].flatMap({ try? Ed25519PublicKey(base64URL: $0) }) else {
            throw RelayFailure(401, "unauthenticated", "X-Coords-Key is not a key")  // checked by authenticateCaller already
        }
        guard PeerID(ownerKey) == owner else { throw RelayFailure(401, "wrong_mailbox", "X-Coords-Key does not match") }
        let (signed, oneTime) = try Self.parsePrekeyUpload(body, owner: ownerKey, now: clock.now())
        let key = try Bytes32(ownerKey.rawRepresentation)
        switch try await store.prekeyPut(owner: key, signed: signed, oneTime: oneTime, stockLimit: configuration.prekeys.stock) {
        case .stored(let stock):
            metrics.prekeyUploads.increment()
            return .json(.object(["signedPrekeyID": .integer(UInt64(signed.id)), "oneTimePrekeys": .integer(UInt64(max(stock, 0)))]))
        case .stale:
            throw RelayFailure(409, "stale_prekey", "the relay holds a newer signed prekey")
        case .conflict:
            throw RelayFailure(409, "prekey_conflict", "a prekey id is already stored with other bytes")
        case .stockFull:
            throw RelayFailure(
                409, "prekey_stock_full", "the relay keeps at most \(configuration.prekeys.stock) one-time prekeys per identity")
        }
    }

    /// The body of a prekey upload, checked against its owner (§10.3): the signed prekey and the
    /// one-time prekeys, every signature verified under `owner`, the times valid at `now` (ms).
    /// - Throws: ``RelayFailure`` 400 `invalid_json`/`invalid_prekey`, 401 `bad_prekey_signature`.
    static func parsePrekeyUpload(_ body: [UInt8], owner: Ed25519PublicKey, now: UInt64) throws -> (SignedPrekey, [OneTimePrekey]) {
        // Anything that is not JSON is answered 400 below.
        guard let object = (try? JSONValue.parse(body, maximumDepth: 4))?.objectValue else {
            throw RelayFailure(400, "invalid_json", "the body is not a JSON object")
        }
        let signed: SignedPrekey
        var oneTime: [OneTimePrekey] = []
        do {
            guard let member = object["signedPrekey"] else { throw WireError.invalidPrekeyBundle("signedPrekey is missing") }
            signed = try SignedPrekey(json: member)
            if let list = object["oneTimePrekeys"] {
                guard let items = list.arrayValue, items.count <= ForwardSecrecy.oneTimePrekeyBatch else {
                    throw WireError.invalidPrekeyBundle("oneTimePrekeys must be an array of at most \(ForwardSecrecy.oneTimePrekeyBatch)")
                }
                oneTime = try items.map(OneTimePrekey.init(json:))
            }
        } catch let WireError.invalidPrekeyBundle(why) {
            throw RelayFailure(400, "invalid_prekey", why)
        }
        do {
            try signed.verify(owner: owner, now: now)
            for prekey in oneTime { try prekey.verify(owner: owner) }
        } catch WireError.prekeyBundleExpired {
            throw RelayFailure(400, "invalid_prekey", "the signed prekey has expired")
        } catch let WireError.invalidPrekeyBundle(why) where why.contains("signature") {
            throw RelayFailure(401, "bad_prekey_signature", why)
        } catch let WireError.invalidPrekeyBundle(why) {
            throw RelayFailure(400, "invalid_prekey", why)
        }
        return (signed, oneTime)
    }

    /// `GET /v1/relay/prekeys` (owner-signed): `{"signedPrekeyID", "signedPrekeyCreated", "oneTimePrekeys"}`.
    public func prekeyStock(pathWithQuery: String, headers: [String: String]) async throws -> RelayReply {
        _ = try await authenticateCaller(method: "GET", pathWithQuery: pathWithQuery, headers: headers)
        guard let ownerKey = headers["x-coords-key"].flatMap({ try? Ed25519PublicKey(base64URL: $0) }) else {
            throw RelayFailure(401, "unauthenticated", "X-Coords-Key is not a key")  // checked by authenticateCaller already
        }
        let stock = try await store.prekeyStock(owner: try Bytes32(ownerKey.rawRepresentation))
        return .json(
            .object([
                "signedPrekeyID": stock.signed.map { .integer(UInt64($0.id)) } ?? .null,
                "signedPrekeyCreated": stock.signed.map { .integer($0.created) } ?? .null,
                "oneTimePrekeys": .integer(UInt64(max(stock.oneTime, 0)))
            ]))
    }

    /// `GET /v1/relay/prekeys/{key}`: the bundle; a one-time prekey only for a signed request,
    /// within the draining limits (beyond them the bundle comes without one). 404 `no_prekeys`
    /// when none is stored; 429 beyond the requests a requester may make.
    public func prekeyBundle(key text: String, pathWithQuery: String, headers: [String: String], clientAddress: String) async throws -> RelayReply {
        guard let target = try? Ed25519PublicKey(base64URL: text) else {
            throw RelayFailure(400, "invalid_key", "the key must be a b64u Ed25519 public key")
        }
        var requester: PeerID?
        if headers["x-coords-key"] != nil || headers["x-coords-signature"] != nil {
            requester = try await authenticateCaller(method: "GET", pathWithQuery: pathWithQuery, headers: headers)
        }
        let limits = prekeyLimiters
        let now = clock.now()
        if let retry = limits.requests.take(requester.map { "k:" + $0.hex } ?? "a:" + clientAddress, now: now) {
            throw RelayFailure(429, "rate_limited", "too many prekey bundle requests; retry later", retryAfter: retry)
        }
        // One-time prekeys are charged only when one is handed out (a 404 or an empty stock costs nothing).
        let pairName = requester.map { $0.hex + ">" + text }
        let takeOneTime = pairName.map { limits.pair.available($0, now: now) && limits.target.available(text, now: now) } ?? false
        guard let found = try await store.prekeyBundle(owner: try Bytes32(target.rawRepresentation), takeOneTime: takeOneTime, now: now) else {
            throw RelayFailure(404, "no_prekeys", "this relay holds no prekeys for that key")
        }
        if found.oneTime != nil, let pairName {
            _ = limits.pair.take(pairName, now: now)
            _ = limits.target.take(text, now: now)
        }
        metrics.prekeyBundles.increment()
        if found.oneTime != nil { metrics.prekeyOneTimeHandedOut.increment() }
        return .json(PrekeyBundle(identity: target, signedPrekey: found.signed, oneTimePrekey: found.oneTime).json)
    }

    /// Forgets expired signed prekeys and their owners' one-time prekeys.
    func sweepPrekeys() async throws {
        let removed = try await store.prekeySweep(now: clock.now())
        if removed > 0 { logger.info("expired prekeys swept", metadata: ["owners": "\(removed)"]) }
        let now = clock.now()
        prekeyLimiters.requests.prune(now: now)
        prekeyLimiters.pair.prune(now: now)
        prekeyLimiters.target.prune(now: now)
    }
}
