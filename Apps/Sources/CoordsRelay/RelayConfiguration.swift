import CoordsCore
import Logging

/// Everything an operator can tune (flags and environment of `coords-relay`, docs/RELAY.md).
public struct RelayConfiguration: Sendable {
    /// Interface to bind (`127.0.0.1`; `0.0.0.0` behind a proxy or in a container).
    public var host = "127.0.0.1"
    /// TCP port (0 picks a free one).
    public var port = 8080
    /// Directory of the LMDB store; nil keeps everything in memory.
    public var dataDirectory: String?
    /// PostgreSQL instead of LMDB: a libpq-style URL (`postgres://user:password@host:5432/db?sslmode=require`);
    /// several relays on one database serve the same data (docs/RELAY.md, "Scaling").
    public var postgresURL: String?
    /// Most connections this relay keeps open to PostgreSQL.
    public var postgresPoolSize = 16
    /// Where fetches read, when set: a libpq-style URL of the cluster's synchronous standby
    /// (HAProxy's port that checks Patroni's `GET /sync`); fetches fall back to `postgresURL`
    /// while it does not answer (docs/RELAY.md, "Read replicas").
    public var postgresReadURL: String?
    /// Commit durability of the LMDB store.
    public var durability: Database.Durability = .durable
    /// Blobs not refreshed within this many seconds are forgotten (default 7 days).
    public var ttlSeconds: UInt64 = 7 * 24 * 3600
    /// How often expired blobs and old tombstones are swept, in seconds.
    public var sweepIntervalSeconds: UInt64 = 60
    /// Largest request body accepted (bigger ones get 413 before being buffered).
    public var maximumBodyBytes = 96 * 1024
    /// Request bodies held in memory at once, every connection together (503 `busy` beyond;
    /// a body is read only after its route checked the headers it can, its signature among them).
    public var maximumBodyBytesInFlight = 64 * 1_048_576
    /// Largest decoded blob (the reference limit).
    public var maximumBlobBytes = 65_536
    /// Most ids per fetch (the reference limit).
    public var maximumFetchIDs = 50
    /// Accepted clock difference for signed timestamps, in seconds (both directions).
    public var clockSkewSeconds: UInt64 = RelayAPI.signatureWindowSeconds
    /// Requests per second per client address (0 disables the limit) and burst size.
    public var addressRate: Double = 20
    /// Requests one client address may make at once before ``addressRate`` applies.
    public var addressBurst: Double = 60
    /// Signed writes (uploads, deletes) per second per key (0 disables) and burst size.
    public var keyRate: Double = 1
    /// Signed writes one key may make at once before ``keyRate`` applies.
    public var keyBurst: Double = 10
    /// Mailbox (§7.3): longest envelope lifetime accepted (`expiresAt − createdAt`), seconds.
    public var maximumMessageTTLSeconds: UInt64 = 86_400
    /// Most unexpired signature-checked envelopes waiting for one recipient (429 beyond).
    public var maximumMessagesPerRecipient = 500
    /// Most unexpired envelopes *without* `senderKey` waiting for one recipient: a separate
    /// quota, so unsigned junk can never crowd out a friend's signed message (429 beyond).
    public var maximumUnauthenticatedMessagesPerRecipient = 50
    /// Most envelopes stored in total (507 beyond).
    public var maximumMessages = 1_000_000
    /// Largest decoded sealed payload (413 beyond).
    public var maximumMessagePayloadBytes = 131_072
    /// Largest mailbox POST body (the payload in base64 plus the header fields).
    public var maximumMessageBodyBytes = 192 * 1024
    /// Require `senderKey` on posted envelopes so every one is signature-checked (401 without).
    public var strictMailbox = false
    /// Messages posted per second per sender (0 disables) and burst size. The sender is the
    /// verified `senderKey`, or the client address for envelopes without one.
    public var messageRate: Double = 5
    /// Envelopes one sender may post at once before ``messageRate`` applies.
    public var messageBurst: Double = 30
    /// Envelopes one client address (``AddressPolicy``: an IPv4 address or an IPv6 /64) may
    /// queue for one recipient: a budget of this many that refills at this many per hour (0
    /// disables). Sender keys are free to make, so the per-sender rate alone let one address fill
    /// a stranger's mailbox from fresh keys; with this, filling the 500 slots takes ten addresses
    /// (or networks) per hour, and a friend on another address still gets through.
    public var maximumMessagesPerAddressPerRecipient = 50
    /// Most mailbox request signatures remembered at once (§7.3 accepted-once); beyond it signed
    /// mailbox requests get 503 until old ones expire.
    public var maximumSeenSignatures = 1_000_000
    /// HTTP connection limits (idle timeout, deadlines, caps): see ``ConnectionLimits``.
    public var connections = ConnectionLimits()
    /// The live channel (`GET /v1/relay/live`, PROTOCOL.md §8) and its limits: see ``LiveLimits``.
    public var live = LiveLimits()
    /// Push endpoints for sleeping phones (`/v1/relay/push`, PROTOCOL.md §8.7): see ``PushLimits``.
    public var push = PushLimits()
    /// Prekey bundles (PROTOCOL.md §10.3).
    public var prekeys = PrekeyLimits()
    /// Attachment object limits (PROTOCOL.md §12.4).
    public var objects = ObjectLimits()
    /// How a request's client address is found and normalised for the per-address limits
    /// (IPv6 prefix, trusted proxies): see ``AddressPolicy``.
    public var addresses = AddressPolicy()
    /// Read `X-Forwarded-For` from a proxy on this machine (loopback); ``AddressPolicy/trustedProxies`` adds others.
    public var trustForwardedFor: Bool {
        get { addresses.trustForwardedFor }
        set { addresses.trustForwardedFor = newValue }
    }
    /// The version `GET /api/version` reports (the reference Android app needs ≥ 2026.1.6).
    public var version = "2026.11.0"
    /// Log level.
    public var logLevel: Logger.Level = .info

    /// The defaults, as documented on each property (docs/RELAY.md lists them with their flags).
    public init() {}
}

/// The live channel's limits (PROTOCOL.md §8.4). Each live connection is also an HTTP
/// connection, so ``ConnectionLimits`` apply to it as well.
public struct LiveLimits: Sendable, Equatable {
    /// Offer the live channel at all (off: `GET /v1/relay/live` answers 404, like a reference relay).
    public var enabled = true
    /// Most keys one connection may watch (close 4413 beyond).
    public var maximumIDsPerConnection = 1000
    /// Most live connections from one client address (close 4429 beyond).
    public var maximumConnectionsPerAddress = 8
    /// Most live connections in total (close 4429 beyond).
    public var maximumConnections = 10_000
    /// Notices waiting for one slow client before it is closed with 4503.
    public var queueLength = 256
    /// Seconds between the relay's pings; a client that has not answered one when the next is
    /// due is closed (1001, "Ping timeout").
    public var pingIntervalSeconds: UInt64 = 30
    /// A connection that watches nothing (no key, no mailbox) this many seconds after it opened
    /// or after its last unsubscribe is closed with 4408.
    public var idleTimeoutSeconds: UInt64 = 60
    /// Seconds one frame may take to be written to a client before the connection is dropped
    /// without further ado: a client that stops reading fills its socket and would otherwise hold
    /// the connection (and its queue) for ever. Also the longest a closing handshake may take.
    public var writeTimeoutSeconds: UInt64 = 10

    /// The defaults, as documented on each property.
    public init() {}
}

/// Push endpoints (PROTOCOL.md §8.7): registrations, wakes, retries.
public struct PushLimits: Sendable, Equatable {
    /// Offer push registration at all (off: `/v1/relay/push` answers 404, like a reference relay).
    public var enabled = true
    /// Accept `http://` endpoints and loopback addresses (tests only: `--push-allow-loopback`).
    /// Private, link-local and other non-public addresses stay refused.
    public var allowLoopback = false
    /// Most registrations stored (507 beyond).
    public var maximumRegistrations = 100_000
    /// A registration's lifetime when the request names none, and the bounds of `ttl`, seconds.
    public var defaultTTLSeconds: UInt64 = 604_800
    /// The shortest `ttl` accepted (400 below).
    public var minimumTTLSeconds: UInt64 = 60
    /// The longest `ttl` accepted (400 above).
    public var maximumTTLSeconds: UInt64 = 2_592_000
    /// At most one wake per endpoint this often; envelopes in between fold into the next wake.
    public var coalesceMilliseconds: UInt64 = 5_000
    /// Waits before the retries of a failed wake (one attempt plus one per entry).
    public var retryDelaysMilliseconds: [UInt64] = [1_000, 2_000, 4_000, 8_000]
    /// Longest wait for an endpoint's answer to one attempt.
    public var timeoutMilliseconds: UInt64 = 10_000
    /// Consecutive failed wakes (every attempt failed) after which the registration is removed.
    public var failedWakesBeforeDrop = 3
    /// Most endpoints being woken at once; wakes beyond it are skipped (counted in the metrics).
    public var maximumConcurrentWakes = 256
    /// Of those, most wakes in flight to one endpoint host: endpoints that never answer (one
    /// host's, however many registrations point there) hold at most this many slots, so the
    /// other mailboxes' wakes still go out.
    public var maximumConcurrentWakesPerHost = 16
    /// And most wakes in flight for the registrations of one client address (normalised like the
    /// rate limits: an IPv6 client by its prefix): one address registering many mailboxes on
    /// endpoints that never answer — on as many hosts as it likes — holds at most this many.
    public var maximumConcurrentWakesPerAddress = 16

    /// The defaults, as documented on each property.
    public init() {}
}

/// What the HTTP layer allows one connection, and how many connections it keeps.
public struct ConnectionLimits: Sendable, Equatable {
    /// A keep-alive connection with no request in progress is closed after this many seconds.
    public var idleTimeoutSeconds: UInt64 = 30
    /// A request's head (request line and headers) must arrive within this many seconds of its
    /// first byte (or of the connection opening), else 408 and close.
    public var headerTimeoutSeconds: UInt64 = 10
    /// A request's body must arrive within this many seconds of its head, else the connection closes.
    public var bodyTimeoutSeconds: UInt64 = 30
    /// Most open connections in total (more are answered 503 and closed). At start the relay
    /// lowers it to fit the process's open-file limit (`ulimit -n`), keeping room for the store.
    public var maximumConnections = 4096
    /// Most open connections from one client address (more are answered 503 and closed). Behind
    /// a proxy every connection comes from the proxy: raise it there.
    public var maximumConnectionsPerAddress = 128

    /// The defaults, as documented on each property.
    public init() {}
}

/// Limits of the prekey routes (PROTOCOL.md §10.3): draining protection.
public struct PrekeyLimits: Sendable, Equatable {
    /// Bundle requests one requester (key, or address when anonymous) may make per hour (429 beyond).
    public var requestsPerHour: Double = 60
    /// One-time prekeys one requester key receives per target per hour (429 beyond).
    public var oneTimePerRequesterPerTargetPerHour: Double = 1
    /// One-time prekeys one target hands out per hour (beyond: bundles without one).
    public var oneTimePerTargetPerHour: Double = 20
    /// One-time prekeys kept per owner (`OPK_STOCK`).
    public var stock = ForwardSecrecy.oneTimePrekeyStock
    /// Largest PUT body, bytes.
    public var maximumBodyBytes = 32_768

    /// The defaults of §10.3.
    public init() {}
}
