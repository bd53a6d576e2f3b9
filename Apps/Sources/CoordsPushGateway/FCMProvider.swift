import AsyncHTTPClient
import CoordsCore
import Foundation
import NIOCore
import Synchronization
import _CryptoExtras

/// A Firebase service account, as the JSON key file Google's console gives: the project, the
/// account's e-mail, its RSA key and key id, and the OAuth2 token URI.
public struct FCMServiceAccount: Sendable {
    /// `project_id`: the FCM v1 URL's `projects/<id>`.
    public let projectID: String
    /// `client_email`: the assertion's `iss`.
    public let clientEmail: String
    /// `private_key_id`: the assertion header's `kid`.
    public let privateKeyID: String
    /// `token_uri`: where the assertion is exchanged for an access token (the assertion's `aud`).
    public let tokenURI: String
    let key: _RSA.Signing.PrivateKey

    /// Reads a service-account key file's JSON.
    /// - Throws: ``GatewaySetupError`` naming the member that is missing or unusable.
    public init(json bytes: [UInt8]) throws {
        // Any parse failure is the one setup error below: the file is the publisher's, the sentence says what to fix.
        guard bytes.count <= 64 * 1024, let object = (try? JSONValue.parse(bytes, maximumDepth: 4))?.objectValue else {
            throw GatewaySetupError("the FCM service account file is not a JSON object (at most 64 KiB)")
        }
        func member(_ name: String) throws -> String {
            guard let text = object[name]?.stringValue, !text.isEmpty else {
                throw GatewaySetupError("the FCM service account file has no \"\(name)\"")
            }
            return text
        }
        guard try member("type") == "service_account" else { throw GatewaySetupError("the FCM key file is not a service account's (\"type\")") }
        projectID = try member("project_id")
        guard projectID.utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D }), projectID.utf8.count <= 63 else {
            throw GatewaySetupError("the FCM project_id is not a project id (a-z, 0-9, -)")
        }
        clientEmail = try member("client_email")
        privateKeyID = try member("private_key_id")
        tokenURI = try member("token_uri")
        guard tokenURI.lowercased().hasPrefix("https://") else { throw GatewaySetupError("the FCM token_uri is not an https:// URL") }
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: try member("private_key"))
        } catch let error as GatewaySetupError {
            throw error
        } catch {
            throw GatewaySetupError("the FCM private_key is not an RSA private key of at least 2,048 bits in PEM")
        }
    }
}

/// FCM HTTP v1 (Firebase: "Send messages with the FCM HTTP v1 API", "FCM error codes"):
/// `POST /v1/projects/<id>/messages:send` with an OAuth2 access token from the service
/// account's JWT-bearer assertion (RFC 7523; Google: "Using OAuth 2.0 for Server to Server
/// Applications"), cached until shortly before it expires. A data-only, high-priority message
/// with a collapse key: no notification, no content.
public final class FCMProvider: PushProvider {
    /// FCM tokens.
    public var platform: PushGatewayToken.Platform { .fcm }

    /// The OAuth2 scope FCM's send API needs.
    public static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    /// The collapse key: a newer wake replaces one FCM still holds.
    public static let collapseKey = "coords-wake"

    let account: FCMServiceAccount
    /// `https://fcm.googleapis.com`.
    let sendURL: String
    /// How long FCM keeps an undelivered wake (`android.ttl`).
    let ttlSeconds: UInt64
    let timeout: Duration
    private let clock: @Sendable () -> UInt64

    private struct Access {
        var token: String
        var made: ContinuousClock.Instant
        var refreshAt: ContinuousClock.Instant
    }
    private struct State {
        var access: Access?
        var pending: Task<Result<String, ProviderOutcome>, Never>?
    }
    private let state = Mutex(State())
    private let refreshCount = Mutex(0)

    /// - Parameter clock: seconds since 1970 (the assertion's `iat` and `exp`).
    public init(
        account: FCMServiceAccount, sendURL: String = "https://fcm.googleapis.com", ttlSeconds: UInt64 = 86_400,
        timeout: Duration = .seconds(5), clock: @escaping @Sendable () -> UInt64
    ) {
        self.account = account
        self.sendURL = sendURL.hasSuffix("/") ? String(sendURL.dropLast()) : sendURL
        self.ttlSeconds = ttlSeconds
        self.timeout = timeout
        self.clock = clock
    }

    /// Access tokens obtained so far (metrics).
    public var refreshes: Int { refreshCount.withLock { $0 } }

    /// The message of every wake to `device`.
    func message(device: String) -> String {
        let android = JSONValue.object([
            "priority": .string("HIGH"), "collapse_key": .string(Self.collapseKey), "ttl": .string("\(ttlSeconds)s")
        ])
        let message = JSONValue.object(["token": .string(device), "data": .object(["type": .string("coords-wake")]), "android": android])
        return JSONValue.object(["message": message]).serializedString
    }

    /// Sends the data-only wake to `token`'s device (see ``PushProvider/wake(_:client:refreshing:)``);
    /// obtains an access token first when none is cached.
    public func wake(_ token: PushGatewayToken, client: HTTPClient, refreshing: Bool) async -> ProviderOutcome {
        let bearer: String
        switch await accessToken(client: client, refreshing: refreshing) {
        case .success(let token): bearer = token
        case .failure(let outcome): return outcome
        }
        var request = HTTPClientRequest(url: sendURL + "/v1/projects/" + account.projectID + "/messages:send")
        request.method = .POST
        request.headers.add(name: "authorization", value: "Bearer " + bearer)
        request.headers.add(name: "content-type", value: "application/json; charset=utf-8")
        request.body = .bytes(ByteBuffer(string: message(device: token.device)))
        switch await exchange(request, client: client, timeout: timeout) {
        case .failure(let outcome): return outcome
        case .success(let answer): return Self.classify(answer)
        }
    }

    /// What an FCM v1 answer means (Firebase, "FCM error codes": `error.status` and the
    /// `FcmError` detail's `errorCode`; a `google.rpc.BadRequest` field violation naming
    /// `message.token` is a bad token).
    static func classify(_ answer: ProviderAnswer) -> ProviderOutcome {
        if answer.status == 200 { return .delivered }
        let error = answer.body?.objectValue?["error"]?.objectValue
        let details = error?["details"]?.arrayValue?.compactMap(\.objectValue) ?? []
        let code = details.lazy.compactMap { $0["errorCode"]?.stringValue }.first ?? error?["status"]?.stringValue
        let reason = code.map(APNsProvider.sanitized) ?? "status_\(answer.status)"
        let namesToken = details.contains { detail in
            detail["fieldViolations"]?.arrayValue?.contains { $0.objectValue?["field"]?.stringValue == "message.token" } ?? false
        }
        switch (answer.status, reason) {
        case (404, _), (_, "UNREGISTERED"): return .gone(reason: reason)
        case (400, _) where namesToken: return .gone(reason: reason)
        case (403, "SENDER_ID_MISMATCH"): return .gone(reason: reason)
        case (401, _): return .refreshCredentials(reason: reason)
        case (429, _), (500, _), (503, _): return .retry(after: answer.retryAfter, reason: reason)  // QUOTA_EXCEEDED, INTERNAL, UNAVAILABLE
        default: return .failed(reason: reason)  // INVALID_ARGUMENT (the message), THIRD_PARTY_AUTH_ERROR, …
        }
    }

    // MARK: The OAuth2 access token

    /// The access token: the cached one until its refresh time; else one request to the token
    /// URI shared by every wake that needs it meanwhile. With `refreshing` (FCM answered 401), a
    /// token older than a second is replaced.
    func accessToken(client: HTTPClient, refreshing: Bool) async -> Result<String, ProviderOutcome> {
        let now = ContinuousClock.now
        let task = state.withLock { state -> Task<Result<String, ProviderOutcome>, Never>? in
            if let access = state.access, now < access.refreshAt, !(refreshing && now - access.made > .seconds(1)) { return nil }
            if let pending = state.pending { return pending }
            let started = Task { await self.obtain(client: client) }
            state.pending = started
            return started
        }
        guard let task else {
            if let token = state.withLock({ $0.access?.token }) { return .success(token) }
            return await accessToken(client: client, refreshing: false)
        }
        return await task.value
    }

    /// One exchange of a fresh assertion for an access token; stores it before returning.
    private func obtain(client: HTTPClient) async -> Result<String, ProviderOutcome> {
        let result = await exchangeAssertion(client: client)
        state.withLock { state in
            state.pending = nil
            if case .success(let (token, lifetime)) = result {
                let made = ContinuousClock.now
                // Refreshed five minutes before it expires, or halfway for a short-lived token.
                let margin = min(Duration.seconds(300), lifetime / 2)
                state.access = Access(token: token, made: made, refreshAt: made + lifetime - margin)
            }
        }
        return result.map(\.0)
    }

    private func exchangeAssertion(client: HTTPClient) async -> Result<(String, Duration), ProviderOutcome> {
        let now = clock()
        let assertion: String
        do {
            assertion = try WebToken.rs256(
                key: account.key, header: ["kid": .text(account.privateKeyID)],
                claims: [
                    "iss": .text(account.clientEmail), "scope": .text(Self.scope), "aud": .text(account.tokenURI),
                    "iat": .number(now), "exp": .number(now.addingReportingOverflow(3600).partialValue)
                ])
        } catch {
            return .failure(.failed(reason: "signing_failed"))
        }
        var request = HTTPClientRequest(url: account.tokenURI)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        // The assertion is base64url and dots: nothing in it needs percent-encoding.
        request.body = .bytes(ByteBuffer(string: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + assertion))
        let answer: ProviderAnswer
        switch await exchange(request, client: client, timeout: timeout) {
        case .failure(let outcome): return .failure(outcome)
        case .success(let read): answer = read
        }
        let body = answer.body?.objectValue
        guard answer.status == 200 else {
            let reason = "oauth_" + (body?["error"]?.stringValue.map(APNsProvider.sanitized) ?? "status_\(answer.status)")
            return .failure(answer.status == 429 || answer.status >= 500 ? .retry(after: answer.retryAfter, reason: reason) : .failed(reason: reason))
        }
        // The token goes into a header: visible ASCII only, bounded.
        guard let token = body?["access_token"]?.stringValue, (1...4096).contains(token.utf8.count),
            token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { return .failure(.failed(reason: "oauth_malformed_answer")) }
        let seconds = body?["expires_in"]?.uint64Value ?? 3600
        refreshCount.withLock { $0 += 1 }
        return .success((token, .seconds(Int64(min(max(seconds, 1), 86_400)))))
    }
}
