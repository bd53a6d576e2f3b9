import AsyncHTTPClient
import CoordsCore
import Crypto
import Foundation
import NIOCore
import Synchronization

/// The publisher's APNs credentials for token-based authentication (Apple: "Establishing a
/// token-based connection to APNs"): the `.p8` signing key, its key id, the team id, and the
/// app's bundle id (the `apns-topic`).
public struct APNsCredentials: Sendable {
    /// The signing key from the `.p8` file (PKCS#8 PEM, P-256).
    let key: P256.Signing.PrivateKey
    /// The 10-character key id Apple shows beside the key.
    public let keyID: String
    /// The 10-character team id.
    public let teamID: String
    /// The app's bundle id.
    public let topic: String

    /// Reads the `.p8` text and checks the ids.
    /// - Throws: ``GatewaySetupError`` naming what is wrong (not a P-256 PKCS#8 key, an id that
    ///   is not 10 letters and digits, an empty topic).
    public init(p8 pem: String, keyID: String, teamID: String, topic: String) throws {
        do {
            key = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw GatewaySetupError("the APNs key is not a P-256 private key in PKCS#8 PEM (the .p8 file Apple gives)")
        }
        func isID(_ text: String) -> Bool {
            text.utf8.count == 10 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }
        }
        guard isID(keyID) else { throw GatewaySetupError("the APNs key id is 10 capital letters and digits") }
        guard isID(teamID) else { throw GatewaySetupError("the APNs team id is 10 capital letters and digits") }
        guard !topic.isEmpty, topic.utf8.count <= 255,
            topic.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { throw GatewaySetupError("the APNs topic (the app's bundle id) is 1 to 255 printable characters") }
        self.keyID = keyID
        self.teamID = teamID
        self.topic = topic
    }
}

/// APNs over HTTP/2 (Apple: "Sending notification requests to APNs", "Handling notification
/// responses from APNs"): `POST /3/device/<token>` with a provider authentication token, a
/// background push with no content, folded by `apns-collapse-id`.
public final class APNsProvider: PushProvider {
    /// APNs tokens.
    public var platform: PushGatewayToken.Platform { .apns }

    /// The body of every wake: a background notification, nothing else.
    public static let body = #"{"aps":{"content-available":1}}"#
    /// The collapse id: a newer wake replaces one APNs still holds.
    public static let collapseID = "coords-wake"

    let credentials: APNsCredentials
    /// `https://api.push.apple.com` (production tokens) and `https://api.sandbox.push.apple.com`.
    let productionURL: String
    let developmentURL: String
    /// A token is made anew once it is this old (Apple: not more often than every 20 minutes,
    /// at least every 60).
    let tokenLifetime: Duration
    /// How long APNs keeps an undelivered wake (`apns-expiration`).
    let expirationSeconds: UInt64
    let timeout: Duration
    private let clock: @Sendable () -> UInt64

    private struct Cached {
        var token: String
        var made: ContinuousClock.Instant
    }
    private let cached = Mutex<Cached?>(nil)
    private let refreshCount = Mutex(0)

    /// - Parameters:
    ///   - clock: seconds since 1970 (the token's `iat`, the wake's expiration).
    public init(
        credentials: APNsCredentials, productionURL: String = "https://api.push.apple.com",
        developmentURL: String = "https://api.sandbox.push.apple.com", tokenLifetime: Duration = .seconds(40 * 60),
        expirationSeconds: UInt64 = 86_400, timeout: Duration = .seconds(5), clock: @escaping @Sendable () -> UInt64
    ) {
        self.credentials = credentials
        self.productionURL = productionURL.hasSuffix("/") ? String(productionURL.dropLast()) : productionURL
        self.developmentURL = developmentURL.hasSuffix("/") ? String(developmentURL.dropLast()) : developmentURL
        self.tokenLifetime = tokenLifetime
        self.expirationSeconds = expirationSeconds
        self.timeout = timeout
        self.clock = clock
    }

    /// Provider tokens signed so far (metrics).
    public var refreshes: Int { refreshCount.withLock { $0 } }

    /// The provider token to send: the cached one while younger than ``tokenLifetime``, else a
    /// new one. With `refreshing` (APNs called the token expired), a token older than a second
    /// is replaced: many wakes refused together make one new token, not one each.
    func providerToken(refreshing: Bool = false) throws -> String {
        let now = ContinuousClock.now
        func usable(_ current: Cached) -> Bool {
            let age = now - current.made
            return age < tokenLifetime && !(refreshing && age > .seconds(1))
        }
        if let current = cached.withLock({ $0 }), usable(current) { return current.token }
        let token = try WebToken.es256(
            key: credentials.key, header: ["kid": .text(credentials.keyID)],
            claims: ["iss": .text(credentials.teamID), "iat": .number(clock())])
        return cached.withLock { slot in
            // Another wake may have made one meanwhile: use it.
            if let current = slot, current.made > now { return current.token }
            slot = Cached(token: token, made: now)
            refreshCount.withLock { $0 += 1 }
            return token
        }
    }

    /// Sends the background wake to `token`'s device at the APNs service that issued it (see
    /// ``PushProvider/wake(_:client:refreshing:)``).
    public func wake(_ token: PushGatewayToken, client: HTTPClient, refreshing: Bool) async -> ProviderOutcome {
        let bearer: String
        do {
            bearer = try providerToken(refreshing: refreshing)
        } catch {
            return .failed(reason: "signing_failed")
        }
        let base = token.environment == .development ? developmentURL : productionURL
        var request = HTTPClientRequest(url: base + "/3/device/" + token.device)
        request.method = .POST
        request.headers.add(name: "authorization", value: "bearer " + bearer)
        request.headers.add(name: "apns-topic", value: credentials.topic)
        request.headers.add(name: "apns-push-type", value: "background")
        request.headers.add(name: "apns-priority", value: "5")  // background pushes must be 5
        request.headers.add(name: "apns-collapse-id", value: Self.collapseID)
        request.headers.add(name: "apns-expiration", value: String(clock().addingReportingOverflow(expirationSeconds).partialValue))
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: Self.body))
        switch await exchange(request, client: client, timeout: timeout) {
        case .failure(let outcome): return outcome
        case .success(let answer): return Self.classify(answer)
        }
    }

    /// What an APNs answer means (Apple, "Handling notification responses from APNs", the
    /// status codes and the `reason` values of the JSON body).
    static func classify(_ answer: ProviderAnswer) -> ProviderOutcome {
        let reason = answer.body?.objectValue?["reason"]?.stringValue.map(Self.sanitized) ?? "status_\(answer.status)"
        switch answer.status {
        case 200: return .delivered
        case 410: return .gone(reason: reason)  // Unregistered, ExpiredToken: the token is no longer active
        case 400 where ["BadDeviceToken", "DeviceTokenNotForTopic"].contains(reason): return .gone(reason: reason)
        case 403 where reason == "ExpiredProviderToken": return .refreshCredentials(reason: reason)
        case 429, 500, 503: return .retry(after: answer.retryAfter, reason: reason)  // TooManyRequests, InternalServerError, ServiceUnavailable/Shutdown
        default: return .failed(reason: reason)  // BadTopic, InvalidProviderToken, TopicDisallowed, …: the gateway's setup
        }
    }

    /// A reason as a metrics label: letters and digits only, at most 40 (a provider's text is untrusted).
    static func sanitized(_ text: String) -> String {
        let kept = text.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_") }
        return kept.isEmpty ? "unknown" : String(String.UnicodeScalarView(kept.prefix(40)))
    }
}

/// A gateway setting that cannot be used: what is wrong, in one sentence.
public struct GatewaySetupError: Error, CustomStringConvertible {
    /// What is wrong, in one sentence.
    public let description: String
    /// An error saying `description`.
    public init(_ description: String) { self.description = description }
}
