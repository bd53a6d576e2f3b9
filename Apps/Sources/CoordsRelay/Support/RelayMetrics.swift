import CoordsBuildInfo
import CoordsCore
import Prometheus

/// The relay's Prometheus metrics (one registry per relay instance, no global state).
final class RelayMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    let uploads: Counter
    let fetches: Counter
    let fetchedIDs: Counter
    let deletes: Counter
    let expired: Counter
    let storeEntries: Gauge
    let messagesPosted: Counter
    let messagesDelivered: Counter
    let messagesAcknowledged: Counter
    let messagesExpired: Counter
    let mailboxEntries: Gauge
    let seenSignatures: Gauge
    let connectionsOpen: Gauge
    let liveConnections: Counter
    let liveOpen: Gauge
    let liveKeys: Gauge
    let pushRegistrations: Gauge
    let pushDropped: Counter
    let prekeyUploads: Counter
    let prekeyBundles: Counter
    let prekeyOneTimeHandedOut: Counter
    let prekeyOwners: Gauge
    let prekeyStock: Gauge
    let objectParts: Counter
    let objectBytesIn: Counter
    let objectBytesOut: Counter
    let objectDownloads: Counter
    let objectsExpired: Counter
    let objects: Gauge
    let objectBytes: Gauge
    private static let buckets: [Duration] = [
        .microseconds(250), .milliseconds(1), .milliseconds(2), .milliseconds(5),
        .milliseconds(10), .milliseconds(20), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .seconds(1)
    ]

    /// `coords_relay_<name>_<unit>`.
    private static func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "coords", subsystem: "relay", metricName: metric, unitName: unit, helpText: help)
    }

    private static var requests: MetricNameDescriptor { name("requests", "total", "Requests by route, method and status") }
    private static var latency: MetricNameDescriptor { name("request_duration", "seconds", "Request latency by route") }
    private static var rejections: MetricNameDescriptor { name("rejections", "total", "Refused requests by reason (rate_limited: this node's own limits)") }

    /// - Parameter rates: the configured per-node rate limits, shown in `coords_relay_rate_limit_info`.
    init(rates: (address: Double, key: Double, message: Double) = (0, 0, 0)) {
        let registry = self.registry
        // A counter is `coords_relay_<metric>_total`, a gauge `coords_relay_<metric>_<unit>`.
        func counter(_ metric: String, _ help: String) -> Counter { registry.makeCounter(descriptor: Self.name(metric, "total", help)) }
        func gauge(_ metric: String, _ unit: String, _ help: String) -> Gauge { registry.makeGauge(descriptor: Self.name(metric, unit, help)) }
        uploads = counter("uploads", "Uploads stored")
        fetches = counter("fetches", "Fetch requests answered")
        fetchedIDs = counter("fetched_ids", "Ids asked for in fetches")
        deletes = counter("deletes", "Blobs deleted by their owner")
        expired = counter("expired", "Blobs forgotten after the TTL")
        storeEntries = gauge("store", "entries", "Blobs currently stored")
        messagesPosted = counter("messages_posted", "Envelopes accepted into mailboxes")
        messagesDelivered = counter("messages_delivered", "Envelopes returned to their recipient")
        messagesAcknowledged = counter("messages_acknowledged", "Envelopes removed by their recipient's ack")
        messagesExpired = counter("messages_expired", "Envelopes swept after expiresAt")
        mailboxEntries = gauge("mailbox", "entries", "Envelopes currently stored")
        seenSignatures = gauge("seen_signatures", "entries", "Mailbox request signatures remembered (accepted once)")
        connectionsOpen = gauge("connections_open", "count", "HTTP connections open now")
        liveConnections = counter("live_connections", "Live channel connections admitted")
        liveOpen = gauge("live_open", "count", "Live channel connections open now")
        liveKeys = gauge("live_keys", "count", "Keys watched by live connections now")
        pushRegistrations = gauge("push_registrations", "count", "Push endpoints registered (expired ones until swept)")
        pushDropped = counter("push_endpoints_dropped", "Push registrations removed because the endpoint failed or was refused")
        prekeyUploads = counter("prekey_uploads", "Prekey uploads stored")
        prekeyBundles = counter("prekey_bundles", "Prekey bundles handed out")
        prekeyOneTimeHandedOut = counter("prekey_one_time_handed_out", "One-time prekeys handed out (each exactly once)")
        prekeyOwners = gauge("prekey_owners", "count", "Identities with a signed prekey")
        prekeyStock = gauge("prekey_one_time_stock", "count", "One-time prekeys in stock, all identities")
        objectParts = counter("object_parts", "Attachment object parts stored")
        objectBytesIn = counter("object_bytes_received", "Attachment object bytes stored")
        objectBytesOut = counter("object_bytes_sent", "Attachment object bytes sent to downloads")
        objectDownloads = counter("object_downloads", "Attachment object downloads started (ranges included)")
        objectsExpired = counter("objects_expired", "Attachment objects swept at their expiry, complete or not")
        objects = gauge("objects", "count", "Attachment objects held (expired ones until swept)")
        objectBytes = gauge("object_size", "bytes", "Whole sizes of the attachment objects held")
        // Rate limits are counted in each process: N relays behind a load balancer allow up to N
        // times these rates in total (docs/RELAY.md, "Scaling").
        registry.makeGauge(
            descriptor: Self.name(
                "rate_limit", "info",
                "Configured rate limits (requests per second, 0 = off); rate limits are per node: each relay process counts only the requests it serves"),
            labels: [
                ("scope", "node"), ("address_rate", "\(rates.address)"), ("key_rate", "\(rates.key)"),
                ("message_rate", "\(rates.message)")
            ]
        ).set(Int64(1))
        registry.makeGauge(
            descriptor: Self.name("build", "info", "The relay's version, commit and store schemas (value 1)"),
            labels: [
                ("version", CoordsVersion.string), ("commit", BuildInfo.commit), ("lmdb_schema", String(RelaySchemaVersions.lmdb)),
                ("postgres_schema", String(RelaySchemaVersions.postgres))
            ]
        ).set(Int64(1))
    }

    /// Counts a push wake by outcome: `delivered`, `failed` (every attempt), `store_unavailable`
    /// (the registration could not be read on any attempt), `coalesced` (folded into a wake
    /// already waiting), `skipped` (too many wakes in flight), `skipped_host`, `skipped_address`.
    func pushWake(_ result: String) {
        registry.makeCounter(descriptor: Self.name("push_wakes", "total", "Push wakes by outcome"), labels: [("result", result)]).increment()
    }

    /// Counts a finished request and its latency.
    func request(route: String, method: String, status: Int, duration: Duration) {
        registry.makeCounter(descriptor: Self.requests, labels: [("route", route), ("method", method), ("status", String(status))]).increment()
        registry.makeDurationHistogram(descriptor: Self.latency, labels: [("route", route)], buckets: Self.buckets).record(duration)
    }

    /// Counts a refused request by reason (the error code).
    func rejection(_ reason: String) {
        registry.makeCounter(descriptor: Self.rejections, labels: [("reason", reason)]).increment()
    }

    /// Counts a connection turned away at accept time (`total_cap`, `address_cap`).
    func connectionRefused(_ reason: String) {
        registry.makeCounter(
            descriptor: Self.name("connections_refused", "total", "Connections refused by the connection caps"),
            labels: [("reason", reason)]
        ).increment()
    }

    /// Counts a connection the relay closed (`idle`, `header_timeout`, `body_timeout`, `malformed_request`).
    func connectionClosed(_ reason: String) {
        registry.makeCounter(
            descriptor: Self.name("connections_closed", "total", "Connections closed by the relay's timeouts and refusals"),
            labels: [("reason", reason)]
        ).increment()
    }

    /// Prometheus text exposition.
    func exposition() -> [UInt8] { registry.emitToBuffer() }
}
