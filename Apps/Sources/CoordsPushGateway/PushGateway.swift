import AsyncHTTPClient
import CoordsCore
import CoordsRelay
import CoordsTLS
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// The gateway's limits: rates per device token and per relay address, wakes in flight, and
/// the bounded retries of one wake.
public struct GatewayLimits: Sendable {
    /// Wakes per minute one device may get (0: no limit); a relay folds wakes per mailbox
    /// into at most one every 5 s, so 30 leaves room for several relays.
    public var perTokenPerMinute: Double = 30
    /// Wakes a device may get at once before the rate applies.
    public var perTokenBurst: Double = 10
    /// Wakes per minute one relay address may ask for (0: no limit).
    public var perAddressPerMinute: Double = 6000
    /// Requests one relay address may make at once before its rate applies.
    public var perAddressBurst: Double = 600
    /// Wakes being sent to providers at once; more are answered 429.
    public var maximumInFlight = 512
    /// Attempts per wake (the first included) when the provider answers 429, 5xx or nothing.
    public var attempts = 3
    /// The longest one wake may take, retries included (the relay waits 10 s for an answer).
    public var deadline = Duration.seconds(8)
    /// The pause before a retry when the provider gave no `Retry-After`; doubled each time.
    public var backoff = Duration.milliseconds(500)
    /// One request to a provider, at most.
    public var requestTimeout = Duration.seconds(5)

    /// The defaults above.
    public init() {}
}

/// What the gateway answers a relay (PROTOCOL.md §8.8).
public struct GatewayAnswer: Sendable, Equatable {
    /// 200, 404, 413, 429 or 502.
    public let status: Int
    /// Seconds, for 429 and 502.
    public let retryAfter: Int?
    /// A short code for the body and the metrics.
    public let code: String

    static let delivered = GatewayAnswer(status: 200, retryAfter: nil, code: "delivered")
}

/// The push gateway: opens a wake's token with its keys, applies the limits, and sends one
/// content-free wake through the token's provider, retrying within bounds. Its ``run()`` (a
/// service) owns the HTTP client the providers share (HTTP/2 where the provider offers it:
/// APNs requires it).
public final class PushGateway: Service, Sendable {
    let keys: [X25519PrivateKey]
    let providers: [PushGatewayToken.Platform: any PushProvider]
    let limits: GatewayLimits
    let logger: Logger
    /// Its metrics (`GET /metrics`).
    public let metrics: GatewayMetrics
    private let perToken: RateLimiter
    private let perAddress: RateLimiter
    private let inFlight = Mutex(0)
    private let clientSlot = Mutex<HTTPClient?>(nil)
    private let clock: @Sendable () -> UInt64

    /// - Parameters:
    ///   - keys: the gateway's X25519 keys, current first, then previous ones still opening
    ///     registered tokens.
    ///   - providers: at most one per platform; a token for a platform without one answers 404.
    ///   - clock: milliseconds since 1970, for the rate limits.
    public init(
        keys: [X25519PrivateKey], providers: [any PushProvider], limits: GatewayLimits, logger: Logger,
        clock: @escaping @Sendable () -> UInt64
    ) {
        self.keys = keys
        self.providers = Dictionary(providers.map { ($0.platform, $0) }, uniquingKeysWith: { first, _ in first })
        self.limits = limits
        self.logger = logger
        self.clock = clock
        metrics = GatewayMetrics(providers: providers)
        perToken = RateLimiter(rate: limits.perTokenPerMinute / 60, burst: limits.perTokenBurst)
        perAddress = RateLimiter(rate: limits.perAddressPerMinute / 60, burst: limits.perAddressBurst)
    }

    /// The key apps seal their tokens to (`GET /v1/gateway/key`).
    public var publicKey: X25519PublicKey? { keys.first?.publicKey }

    /// Owns the providers' HTTP client until graceful shutdown; prunes idle rate buckets.
    public func run() async throws {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.timeout = .init(connect: .seconds(3))
        configuration.decompression = .disabled
        configuration.httpVersion = .automatic  // HTTP/2 through ALPN (APNs speaks nothing else)
        configuration.tlsConfiguration = try TrustStore.clientConfiguration()
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        clientSlot.withLock { $0 = client }
        do {
            try await cancelWhenGracefulShutdown {
                while true {
                    try await Task.sleep(for: .seconds(60))
                    let now = self.clock()
                    self.perToken.prune(now: now)
                    self.perAddress.prune(now: now)
                }
            }
        } catch {}  // cancelled or shutting down: either way the client closes below
        clientSlot.withLock { $0 = nil }
        try? await client.shutdown()  // shutting down: a client that fails to close has nothing left to do
    }

    /// Handles one wake (`POST /up/<token>`) from `address` (the relay, as the per-address limit
    /// counts it). Every refusal comes before any provider is asked.
    public func wake(token text: String, address: String) async -> GatewayAnswer {
        let answer = await decide(token: text, address: address)
        metrics.answered(answer)
        return answer
    }

    private func decide(token text: String, address: String) async -> GatewayAnswer {
        if let wait = perAddress.take(address, now: clock()) {
            return GatewayAnswer(status: 429, retryAfter: wait, code: "address_rate_limited")
        }
        let token: PushGatewayToken
        do {
            token = try PushGatewayToken.open(text, with: keys)
        } catch {
            return GatewayAnswer(status: 404, retryAfter: nil, code: "unknown_token")
        }
        guard let provider = providers[token.platform] else {
            logger.warning("a wake for a platform this gateway has no credentials for", metadata: ["platform": "\(token.platform.rawValue)"])
            return GatewayAnswer(status: 404, retryAfter: nil, code: "platform_not_served")
        }
        if let wait = perToken.take(token.platform.rawValue + ":" + token.device, now: clock()) {
            return GatewayAnswer(status: 429, retryAfter: wait, code: "token_rate_limited")
        }
        guard let client = clientSlot.withLock({ $0 }) else { return GatewayAnswer(status: 502, retryAfter: 5, code: "starting") }
        let admitted = inFlight.withLock { count -> Bool in
            guard count < limits.maximumInFlight else { return false }
            count += 1
            return true
        }
        guard admitted else { return GatewayAnswer(status: 429, retryAfter: 1, code: "busy") }
        defer { inFlight.withLock { $0 -= 1 } }
        return await send(token, through: provider, client: client)
    }

    /// The attempts of one wake: a retry after 429/5xx/no answer (`Retry-After` or the backoff)
    /// while attempts and the deadline allow; a new provider credential once after an expiry.
    private func send(_ token: PushGatewayToken, through provider: any PushProvider, client: HTTPClient) async -> GatewayAnswer {
        let start = ContinuousClock.now
        var attempt = 1
        var refreshed = false
        var backoff = limits.backoff
        var refreshing = false
        while true {
            let outcome = await provider.wake(token, client: client, refreshing: refreshing)
            refreshing = false
            let platform = token.platform.rawValue
            if outcome != .delivered { metrics.providerError(platform, outcome.reason) }
            switch outcome {
            case .delivered:
                return .delivered
            case .gone:
                return GatewayAnswer(status: 404, retryAfter: nil, code: "device_gone")
            case .refreshCredentials where !refreshed:
                refreshed = true
                refreshing = true
                continue  // a new credential, once: not counted as an attempt
            case .refreshCredentials, .failed:
                logger.error("the provider refused the wake", metadata: ["provider": "\(platform)", "reason": "\(outcome.reason)"])
                return GatewayAnswer(status: 502, retryAfter: 60, code: "provider_refused")
            case .retry(let after, _):
                let wait = after ?? backoff
                let elapsed = ContinuousClock.now - start
                guard attempt < limits.attempts, elapsed + wait < limits.deadline else {
                    let seconds = Int(max(wait, .seconds(1)).components.seconds)
                    return GatewayAnswer(status: 502, retryAfter: seconds, code: "provider_unavailable")
                }
                try? await Task.sleep(for: wait)  // cancelled (shutdown): checked on the next line
                if Task.isCancelled { return GatewayAnswer(status: 502, retryAfter: 5, code: "shutting_down") }
                attempt += 1
                backoff = backoff * 2
            }
        }
    }
}
