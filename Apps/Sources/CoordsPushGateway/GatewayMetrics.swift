import CoordsBuildInfo
import CoordsCore
import Prometheus
import Synchronization

/// The gateway's Prometheus metrics (`GET /metrics`): wakes by answer, provider errors by
/// reason, provider tokens made, and the build.
public final class GatewayMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let providers: [any PushProvider]

    private static func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "coords", subsystem: "gateway", metricName: metric, unitName: unit, helpText: help)
    }

    init(providers: [any PushProvider]) {
        self.providers = providers
        registry.makeGauge(
            descriptor: Self.name("build", "info", "The gateway's version and commit (value 1)"),
            labels: [("version", CoordsVersion.string), ("commit", BuildInfo.commit)]
        ).set(Int64(1))
    }

    /// Counts a wake by the answer the relay got: `delivered`, `device_gone`, `unknown_token`,
    /// `platform_not_served`, `token_rate_limited`, `address_rate_limited`, `busy`,
    /// `provider_refused`, `provider_unavailable`, `body_too_large`, `method_not_allowed`.
    public func answered(_ answer: GatewayAnswer) {
        registry.makeCounter(
            descriptor: Self.name("wakes", "total", "Wakes by the answer given to the relay"),
            labels: [("result", answer.code), ("status", String(answer.status))]
        ).increment()
    }

    /// Counts an answer of a provider other than success, by its reason (APNs `reason`, FCM
    /// `errorCode`/`status`, `no_answer`, `oauth_…`).
    func providerError(_ provider: String, _ reason: String) {
        registry.makeCounter(
            descriptor: Self.name("provider_errors", "total", "Provider answers other than success, by reason"),
            labels: [("provider", provider), ("reason", reason)]
        ).increment()
    }

    /// Prometheus text, with each provider's credential count as of now.
    func exposition() -> [UInt8] {
        for provider in providers {
            registry.makeGauge(
                descriptor: Self.name("provider_tokens_made", "count", "APNs provider tokens signed / FCM access tokens obtained since start"),
                labels: [("provider", provider.platform.rawValue)]
            ).set(Int64(provider.refreshes))
        }
        return registry.emitToBuffer()
    }
}
