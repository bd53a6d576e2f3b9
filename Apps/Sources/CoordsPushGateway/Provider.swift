import AsyncHTTPClient
import CoordsCore
import Foundation
import NIOCore
import NIOHTTP1

/// What one request to a provider came to, as the gateway acts on it.
public enum ProviderOutcome: Error, Sendable, Equatable {
    /// The provider accepted the wake.
    case delivered
    /// The device token is gone or not this app's (APNs 410, 400 `BadDeviceToken`,
    /// `DeviceTokenNotForTopic`; FCM `UNREGISTERED`, a bad `message.token`,
    /// `SENDER_ID_MISMATCH`): the relay should drop the registration.
    case gone(reason: String)
    /// Try again, after `after` when the provider said (`Retry-After`): 429 and 5xx, no answer.
    case retry(after: Duration?, reason: String)
    /// The provider refused the gateway's own credentials as expired (APNs 403
    /// `ExpiredProviderToken`, FCM 401): make a new token once, then try again.
    case refreshCredentials(reason: String)
    /// Anything else (the gateway's configuration, a request the provider finds malformed):
    /// retrying would not help.
    case failed(reason: String)

    /// The short reason, for metrics and logs (never the device token).
    public var reason: String {
        switch self {
        case .delivered: "delivered"
        case .gone(let reason), .retry(_, let reason), .refreshCredentials(let reason), .failed(let reason): reason
        }
    }
}

/// A provider that wakes devices of one platform (APNs or FCM).
public protocol PushProvider: Sendable {
    /// The platform whose tokens it serves.
    var platform: PushGatewayToken.Platform { get }
    /// Sends one content-free wake to `token`'s device. With `refreshing`, the provider
    /// credential it used last is replaced first (the gateway asks once per wake, after
    /// ``ProviderOutcome/refreshCredentials(reason:)``). Never throws: every failure is an outcome.
    func wake(_ token: PushGatewayToken, client: HTTPClient, refreshing: Bool) async -> ProviderOutcome
    /// How many times its credential was made anew (metrics).
    var refreshes: Int { get }
}

/// What both providers read from an answer: the status, the `Retry-After` header and a body
/// bounded to ``maximumBody`` bytes (a provider, or something posing as one, may send more).
struct ProviderAnswer: Sendable {
    let status: Int
    let retryAfter: Duration?
    let body: JSONValue?

    /// The most of an answer's body read (providers' error bodies are a few hundred bytes).
    static let maximumBody = 16 * 1024
    /// The longest `Retry-After` honoured; a longer one is answered to the relay instead.
    static let longestRetryAfter = Duration.seconds(3600)

    /// Reads `response` (body up to ``maximumBody``; more, or not JSON, leaves `body` nil).
    static func read(_ response: HTTPClientResponse) async -> ProviderAnswer {
        let status = Int(response.status.code)
        let retryAfter = response.headers.first(name: "retry-after").flatMap(parseRetryAfter)
        var body: JSONValue?
        // A body over the bound, cut off, or not JSON carries no reason: the status decides alone.
        if let buffer = try? await response.body.collect(upTo: maximumBody) {
            body = try? JSONValue.parse(Array(buffer.readableBytesView), maximumDepth: 16)  // not JSON: no reason, as above
        }
        return ProviderAnswer(status: status, retryAfter: retryAfter, body: body)
    }

    /// `Retry-After` as delay-seconds (RFC 9110 §10.2.3); an HTTP date or anything else is
    /// ignored (the gateway's own backoff applies). At most ``longestRetryAfter``.
    static func parseRetryAfter(_ text: String) -> Duration? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, trimmed.utf8.count <= 10, trimmed.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let seconds = Int64(trimmed)
        else { return nil }
        return min(.seconds(seconds), longestRetryAfter)
    }
}

/// Sends `request` and reads the answer; a transport failure (refused, reset, TLS, timeout)
/// is `.retry`, since the provider may answer the next attempt.
func exchange(_ request: HTTPClientRequest, client: HTTPClient, timeout: Duration) async -> Result<ProviderAnswer, ProviderOutcome> {
    // Our own setting, kept within 1…120 s so the conversion to nanoseconds cannot overflow.
    let deadline = NIODeadline.now() + .seconds(min(max(timeout.components.seconds, 1), 120))
    do {
        let response = try await client.execute(request, deadline: deadline)
        return .success(await ProviderAnswer.read(response))
    } catch {
        return .failure(.retry(after: nil, reason: "no_answer"))
    }
}
