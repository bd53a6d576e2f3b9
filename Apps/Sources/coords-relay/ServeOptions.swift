import ArgumentParser
import CoordsRelay
import Logging

// The options of `coords-relay serve`, in titled groups (one `--help` section each). Each group
// sits with its own checks (`validate()`, which ArgumentParser runs for every group) and the
// code that copies it into the configuration (`apply(to:)`).

/// The relay's defaults, in one place: every option's default value comes from here.
private let defaults = RelayConfiguration()

/// Every numeric option's accepted range, in one table (a value from the command line or the
/// environment outside it is refused before the relay starts, naming the option and the range).
/// The ranges keep every later computation finite: no rate so small that a wait overflows, no
/// size so large that a buffer cannot be made.
enum OptionRange {
    /// A closed range, and whether 0 is accepted besides it (meaning "no limit").
    struct Range {
        let lower: Double
        let upper: Double
        let zeroMeansNoLimit: Bool
    }

    static let table: [String: Range] = [
        "--port": .init(lower: 0, upper: 65_535, zeroMeansNoLimit: false),
        "--ipv6-prefix": .init(lower: 1, upper: 128, zeroMeansNoLimit: false),
        "--postgres-pool-size": .init(lower: 1, upper: 1_000, zeroMeansNoLimit: false),
        "--ttl": .init(lower: 1, upper: 31_536_000, zeroMeansNoLimit: false),
        "--sweep-interval": .init(lower: 1, upper: 86_400, zeroMeansNoLimit: false),
        "--signature-window": .init(lower: 1, upper: 3_600, zeroMeansNoLimit: false),
        "--rate": .init(lower: 0.001, upper: 1_000_000, zeroMeansNoLimit: true),
        "--burst": .init(lower: 1, upper: 1_000_000, zeroMeansNoLimit: false),
        "--key-rate": .init(lower: 0.001, upper: 1_000_000, zeroMeansNoLimit: true),
        "--key-burst": .init(lower: 1, upper: 1_000_000, zeroMeansNoLimit: false),
        "--max-body": .init(lower: 1_024, upper: 67_108_864, zeroMeansNoLimit: false),
        "--message-ttl": .init(lower: 60, upper: 2_592_000, zeroMeansNoLimit: false),
        "--mailbox-size": .init(lower: 1, upper: 1_000_000, zeroMeansNoLimit: false),
        "--mailbox-size-unsigned": .init(lower: 0, upper: 1_000_000, zeroMeansNoLimit: false),
        "--max-messages": .init(lower: 1, upper: 1_000_000_000, zeroMeansNoLimit: false),
        "--message-rate": .init(lower: 0.001, upper: 1_000_000, zeroMeansNoLimit: true),
        "--mailbox-per-address": .init(lower: 1, upper: 1_000_000, zeroMeansNoLimit: true),
        "--idle-timeout": .init(lower: 1, upper: 86_400, zeroMeansNoLimit: false),
        "--header-timeout": .init(lower: 1, upper: 3_600, zeroMeansNoLimit: false),
        "--body-timeout": .init(lower: 1, upper: 86_400, zeroMeansNoLimit: false),
        "--max-connections": .init(lower: 1, upper: 10_000_000, zeroMeansNoLimit: false),
        "--max-connections-per-address": .init(lower: 1, upper: 10_000_000, zeroMeansNoLimit: false),
        "--live-max-connections": .init(lower: 1, upper: 10_000_000, zeroMeansNoLimit: false),
        "--live-connections-per-address": .init(lower: 1, upper: 10_000_000, zeroMeansNoLimit: false),
        "--live-max-ids": .init(lower: 1, upper: 1_000_000, zeroMeansNoLimit: false),
        "--push-max-registrations": .init(lower: 0, upper: 10_000_000, zeroMeansNoLimit: false),
        "--object-quota": .init(lower: 16, upper: 1_099_511_627_776, zeroMeansNoLimit: false),
        "--object-count": .init(lower: 1, upper: 1_000_000, zeroMeansNoLimit: false),
        "--object-total": .init(lower: 16, upper: 1_125_899_906_842_624, zeroMeansNoLimit: false),
        "--object-free-floor": .init(lower: 1, upper: 1_125_899_906_842_624, zeroMeansNoLimit: true)
    ]

    /// Refuses `value` for `option` unless the table accepts it (NaN and infinities never).
    static func check(_ option: String, _ value: Double) throws {
        guard let range = table[option] else { throw ValidationError("\(option) has no range (a bug)") }
        if value == 0 && range.zeroMeansNoLimit { return }
        guard value.isFinite, value >= range.lower, value <= range.upper else {
            let zero = range.zeroMeansNoLimit ? " (or 0 for no limit)" : ""
            throw ValidationError("\(option) must be \(format(range.lower))…\(format(range.upper))\(zero); got \(value)")
        }
    }

    /// The same for an integer option.
    static func check(_ option: String, _ value: Int) throws { try check(option, Double(value)) }

    /// The same for an unsigned option.
    static func check(_ option: String, _ value: UInt64) throws { try check(option, Double(value)) }

    private static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}

/// One titled group of `serve` options.
protocol ServeOptionGroup: ParsableArguments {
    /// Copies the group's values into `configuration`.
    func apply(to configuration: inout RelayConfiguration)
}

/// Where the relay listens.
struct NetworkOptions: ServeOptionGroup {
    @Option(help: "Interface to bind [COORDS_HOST].")
    var host: String = environment("COORDS_HOST") ?? defaults.host

    @Option(help: "TCP port; 0 picks a free one [COORDS_PORT].")
    var port: Int = Env.int("COORDS_PORT", defaults.port)

    @Flag(
        name: .customLong("trust-forwarded-for"),
        help: "Count requests from a proxy on this machine (loopback) by their X-Forwarded-For address [COORDS_TRUST_FORWARDED_FOR=1].")
    var trustForwardedFor: Bool = Env.flag("COORDS_TRUST_FORWARDED_FOR")

    @Option(
        name: .customLong("trusted-proxy"),
        help: "A proxy (address or CIDR network) whose X-Forwarded-For is read too; repeat it for more [COORDS_TRUSTED_PROXIES, comma-separated].")
    var trustedProxies: [String] = environment("COORDS_TRUSTED_PROXIES").map { $0.split(separator: ",").map(String.init) } ?? []

    @Option(name: .customLong("ipv6-prefix"), help: "Bits of an IPv6 address that count as one client for the limits [COORDS_IPV6_PREFIX].")
    var ipv6Prefix: Int = Env.int("COORDS_IPV6_PREFIX", defaults.addresses.ipv6PrefixLength)

    func validate() throws {
        try OptionRange.check("--port", port)
        try OptionRange.check("--ipv6-prefix", ipv6Prefix)
        for proxy in trustedProxies where IPNetwork(proxy) == nil {
            throw ValidationError("--trusted-proxy \(proxy) is not an address or a CIDR network (e.g. 10.0.0.0/8, 2001:db8::/32)")
        }
    }

    func apply(to configuration: inout RelayConfiguration) {
        configuration.host = host
        configuration.port = port
        configuration.trustForwardedFor = trustForwardedFor
        configuration.addresses.trustedProxies = trustedProxies.compactMap(IPNetwork.init)
        configuration.addresses.ipv6PrefixLength = ipv6Prefix
    }
}

/// Where and how long the data is kept.
struct StorageOptions: ServeOptionGroup {
    @Option(name: .customLong("data-dir"), help: "Directory of the LMDB store [COORDS_DATA_DIR].")
    var dataDirectory: String = defaultDataDirectory()

    @Option(
        name: .customLong("postgres"),
        help:
            "Keep the data in PostgreSQL instead of LMDB: postgres://user:password@host:port/db[?sslmode=require] (without sslmode: prefer, as libpq; password also from PGPASSWORD) [COORDS_POSTGRES_URL]."
    )
    var postgresOption: String?
    /// `--postgres`, else `COORDS_POSTGRES_URL` (an optional option takes no default value).
    var postgresURL: String? { postgresOption ?? environment("COORDS_POSTGRES_URL") }

    @Option(
        name: .customLong("postgres-read"),
        help:
            "With --postgres: read fetches from this URL (the cluster's synchronous standby, e.g. HAProxy checking Patroni's /sync), falling back to --postgres while it does not answer [COORDS_POSTGRES_READ_URL]."
    )
    var postgresReadOption: String?
    /// `--postgres-read`, else `COORDS_POSTGRES_READ_URL`.
    var postgresReadURL: String? { postgresReadOption ?? environment("COORDS_POSTGRES_READ_URL") }

    @Option(name: .customLong("postgres-pool-size"), help: "Most PostgreSQL connections this relay keeps open [COORDS_POSTGRES_POOL_SIZE].")
    var postgresPoolSize: Int = Env.int("COORDS_POSTGRES_POOL_SIZE", defaults.postgresPoolSize)

    @Flag(help: "Keep everything in memory instead (lost on exit; for tests and demos) [COORDS_MEMORY=1].")
    var memory: Bool = Env.flag("COORDS_MEMORY")

    @Flag(name: .customLong("no-sync"), help: "Do not fsync commits (faster; an OS crash may lose recent uploads) [COORDS_NO_SYNC=1].")
    var noSync: Bool = Env.flag("COORDS_NO_SYNC")

    @Option(name: .customLong("ttl"), help: "Seconds a blob lives without being refreshed [COORDS_TTL].")
    var ttl: UInt64 = Env.uint64("COORDS_TTL", defaults.ttlSeconds)

    @Option(name: .customLong("sweep-interval"), help: "Seconds between expiry sweeps [COORDS_SWEEP_INTERVAL].")
    var sweepInterval: UInt64 = Env.uint64("COORDS_SWEEP_INTERVAL", defaults.sweepIntervalSeconds)

    @Option(
        name: .customLong("signature-window"),
        help: "Seconds a signed timestamp may be from this relay's clock, either way [COORDS_SIGNATURE_WINDOW].")
    var signatureWindow: UInt64 = Env.uint64("COORDS_SIGNATURE_WINDOW", defaults.clockSkewSeconds)

    func validate() throws {
        try OptionRange.check("--postgres-pool-size", postgresPoolSize)
        guard !(memory && postgresURL != nil) else { throw ValidationError("--memory and --postgres exclude each other") }
        guard postgresReadURL == nil || postgresURL != nil else { throw ValidationError("--postgres-read needs --postgres (where writes go)") }
        try OptionRange.check("--ttl", ttl)
        try OptionRange.check("--sweep-interval", sweepInterval)
        try OptionRange.check("--signature-window", signatureWindow)
    }

    func apply(to configuration: inout RelayConfiguration) {
        configuration.dataDirectory = memory ? nil : dataDirectory
        configuration.postgresURL = postgresURL
        configuration.postgresPoolSize = postgresPoolSize
        configuration.postgresReadURL = postgresReadURL
        configuration.durability = noSync ? .noSync : .durable
        configuration.ttlSeconds = ttl
        configuration.sweepIntervalSeconds = sweepInterval
        configuration.clockSkewSeconds = signatureWindow
    }
}

/// Per-address and per-key rate limits, and the largest body.
struct RateLimitOptions: ServeOptionGroup {
    @Option(name: .customLong("rate"), help: "Requests per second per client address, 0 for no limit [COORDS_RATE].")
    var addressRate: Double = Env.double("COORDS_RATE", defaults.addressRate)

    @Option(name: .customLong("burst"), help: "Burst per client address [COORDS_BURST].")
    var addressBurst: Double = Env.double("COORDS_BURST", defaults.addressBurst)

    @Option(name: .customLong("key-rate"), help: "Uploads and deletes per second per key, 0 for no limit [COORDS_KEY_RATE].")
    var keyRate: Double = Env.double("COORDS_KEY_RATE", defaults.keyRate)

    @Option(name: .customLong("key-burst"), help: "Burst per key [COORDS_KEY_BURST].")
    var keyBurst: Double = Env.double("COORDS_KEY_BURST", defaults.keyBurst)

    @Option(name: .customLong("max-body"), help: "Largest request body in bytes [COORDS_MAX_BODY].")
    var maximumBody: Int = Env.int("COORDS_MAX_BODY", defaults.maximumBodyBytes)

    func validate() throws {
        try OptionRange.check("--rate", addressRate)
        try OptionRange.check("--burst", addressBurst)
        try OptionRange.check("--key-rate", keyRate)
        try OptionRange.check("--key-burst", keyBurst)
        try OptionRange.check("--max-body", maximumBody)
    }

    func apply(to configuration: inout RelayConfiguration) {
        configuration.addressRate = addressRate
        configuration.addressBurst = addressBurst
        configuration.keyRate = keyRate
        configuration.keyBurst = keyBurst
        configuration.maximumBodyBytes = maximumBody
    }
}

/// The 1:1 message mailboxes.
struct MailboxOptions: ServeOptionGroup {
    @Option(name: .customLong("message-ttl"), help: "Longest message lifetime accepted, seconds [COORDS_MESSAGE_TTL].")
    var messageTTL: UInt64 = Env.uint64("COORDS_MESSAGE_TTL", defaults.maximumMessageTTLSeconds)

    @Option(name: .customLong("mailbox-size"), help: "Most messages waiting per recipient [COORDS_MAILBOX_SIZE].")
    var mailboxSize: Int = Env.int("COORDS_MAILBOX_SIZE", defaults.maximumMessagesPerRecipient)

    @Option(
        name: .customLong("mailbox-size-unsigned"),
        help: "Most messages without senderKey waiting per recipient (a separate quota) [COORDS_MAILBOX_SIZE_UNSIGNED].")
    var mailboxSizeUnsigned: Int = Env.int("COORDS_MAILBOX_SIZE_UNSIGNED", defaults.maximumUnauthenticatedMessagesPerRecipient)

    @Option(name: .customLong("max-messages"), help: "Most messages stored in total [COORDS_MAX_MESSAGES].")
    var maximumMessages: Int = Env.int("COORDS_MAX_MESSAGES", defaults.maximumMessages)

    @Option(name: .customLong("message-rate"), help: "Messages per second per sender, 0 for no limit [COORDS_MESSAGE_RATE].")
    var messageRate: Double = Env.double("COORDS_MESSAGE_RATE", defaults.messageRate)

    @Option(
        name: .customLong("mailbox-per-address"),
        help: "Messages one client address may queue for one recipient, refilled per hour; 0 for no limit [COORDS_MAILBOX_PER_ADDRESS].")
    var mailboxPerAddress: Int = Env.int("COORDS_MAILBOX_PER_ADDRESS", defaults.maximumMessagesPerAddressPerRecipient)

    @Flag(name: .customLong("strict-mailbox"), help: "Refuse envelopes without senderKey, so every signature is checked [COORDS_STRICT_MAILBOX=1].")
    var strictMailbox: Bool = Env.flag("COORDS_STRICT_MAILBOX")

    func validate() throws {
        try OptionRange.check("--message-ttl", messageTTL)
        try OptionRange.check("--mailbox-size", mailboxSize)
        try OptionRange.check("--mailbox-size-unsigned", mailboxSizeUnsigned)
        try OptionRange.check("--max-messages", maximumMessages)
        try OptionRange.check("--message-rate", messageRate)
        try OptionRange.check("--mailbox-per-address", mailboxPerAddress)
    }

    func apply(to configuration: inout RelayConfiguration) {
        configuration.maximumMessageTTLSeconds = messageTTL
        configuration.maximumMessagesPerRecipient = mailboxSize
        configuration.maximumUnauthenticatedMessagesPerRecipient = mailboxSizeUnsigned
        configuration.maximumMessages = maximumMessages
        configuration.messageRate = messageRate
        configuration.maximumMessagesPerAddressPerRecipient = mailboxPerAddress
        configuration.strictMailbox = strictMailbox
    }
}

/// Connection caps and deadlines.
struct ConnectionOptions: ServeOptionGroup {
    @Option(name: .customLong("idle-timeout"), help: "Seconds before an idle keep-alive connection is closed [COORDS_IDLE_TIMEOUT].")
    var idleTimeout: UInt64 = Env.uint64("COORDS_IDLE_TIMEOUT", defaults.connections.idleTimeoutSeconds)

    @Option(name: .customLong("header-timeout"), help: "Seconds a request head may take to arrive (408 beyond) [COORDS_HEADER_TIMEOUT].")
    var headerTimeout: UInt64 = Env.uint64("COORDS_HEADER_TIMEOUT", defaults.connections.headerTimeoutSeconds)

    @Option(name: .customLong("body-timeout"), help: "Seconds a request body may take to arrive [COORDS_BODY_TIMEOUT].")
    var bodyTimeout: UInt64 = Env.uint64("COORDS_BODY_TIMEOUT", defaults.connections.bodyTimeoutSeconds)

    @Option(name: .customLong("max-connections"), help: "Most open connections (lowered to fit ulimit -n) [COORDS_MAX_CONNECTIONS].")
    var maximumConnections: Int = Env.int("COORDS_MAX_CONNECTIONS", defaults.connections.maximumConnections)

    @Option(
        name: .customLong("max-connections-per-address"),
        help: "Most open connections from one client address [COORDS_MAX_CONNECTIONS_PER_ADDRESS].")
    var maximumConnectionsPerAddress: Int = Env.int("COORDS_MAX_CONNECTIONS_PER_ADDRESS", defaults.connections.maximumConnectionsPerAddress)

    func validate() throws {
        try OptionRange.check("--idle-timeout", idleTimeout)
        try OptionRange.check("--header-timeout", headerTimeout)
        try OptionRange.check("--body-timeout", bodyTimeout)
        try OptionRange.check("--max-connections", maximumConnections)
        try OptionRange.check("--max-connections-per-address", maximumConnectionsPerAddress)
    }

    func apply(to configuration: inout RelayConfiguration) {
        configuration.connections.idleTimeoutSeconds = idleTimeout
        configuration.connections.headerTimeoutSeconds = headerTimeout
        configuration.connections.bodyTimeoutSeconds = bodyTimeout
        configuration.connections.maximumConnections = maximumConnections
        configuration.connections.maximumConnectionsPerAddress = maximumConnectionsPerAddress
    }
}

/// The live channel (PROTOCOL.md §8).
struct LiveOptions: ServeOptionGroup {
    @Flag(name: .customLong("no-live"), help: "Do not offer the live channel (GET /v1/relay/live answers 404; clients poll) [COORDS_NO_LIVE=1].")
    var noLive: Bool = Env.flag("COORDS_NO_LIVE")

    @Option(name: .customLong("live-max-connections"), help: "Most live channel connections in total [COORDS_LIVE_MAX_CONNECTIONS].")
    var liveMaximumConnections: Int = Env.int("COORDS_LIVE_MAX_CONNECTIONS", defaults.live.maximumConnections)

    @Option(
        name: .customLong("live-connections-per-address"),
        help: "Most live channel connections from one client address [COORDS_LIVE_CONNECTIONS_PER_ADDRESS].")
    var liveConnectionsPerAddress: Int = Env.int("COORDS_LIVE_CONNECTIONS_PER_ADDRESS", defaults.live.maximumConnectionsPerAddress)

    @Option(name: .customLong("live-max-ids"), help: "Most keys one live connection may watch [COORDS_LIVE_MAX_IDS].")
    var liveMaximumIDs: Int = Env.int("COORDS_LIVE_MAX_IDS", defaults.live.maximumIDsPerConnection)

    func validate() throws {
        try OptionRange.check("--live-max-connections", liveMaximumConnections)
        try OptionRange.check("--live-connections-per-address", liveConnectionsPerAddress)
        try OptionRange.check("--live-max-ids", liveMaximumIDs)
    }

    func apply(to configuration: inout RelayConfiguration) {
        configuration.live.enabled = !noLive
        configuration.live.maximumConnections = liveMaximumConnections
        configuration.live.maximumConnectionsPerAddress = liveConnectionsPerAddress
        configuration.live.maximumIDsPerConnection = liveMaximumIDs
    }
}

/// Push wakes for sleeping phones (PROTOCOL.md §8.7).
struct PushOptions: ServeOptionGroup {
    @Flag(name: .customLong("no-push"), help: "Do not offer push registration (/v1/relay/push answers 404) [COORDS_NO_PUSH=1].")
    var noPush: Bool = Env.flag("COORDS_NO_PUSH")

    @Option(name: .customLong("push-max-registrations"), help: "Most push endpoints registered at once [COORDS_PUSH_MAX_REGISTRATIONS].")
    var pushMaximumRegistrations: Int = Env.int("COORDS_PUSH_MAX_REGISTRATIONS", defaults.push.maximumRegistrations)

    @Flag(
        name: .customLong("push-allow-loopback"),
        help: "TESTS ONLY: accept http:// push endpoints and loopback addresses (private ones stay refused) [COORDS_PUSH_ALLOW_LOOPBACK=1].")
    var pushAllowLoopback: Bool = Env.flag("COORDS_PUSH_ALLOW_LOOPBACK")

    func validate() throws {
        try OptionRange.check("--push-max-registrations", pushMaximumRegistrations)
    }

    func apply(to configuration: inout RelayConfiguration) {
        configuration.push.enabled = !noPush
        configuration.push.maximumRegistrations = pushMaximumRegistrations
        configuration.push.allowLoopback = pushAllowLoopback
    }
}

/// Attachment objects (PROTOCOL.md §12.4).
struct ObjectOptions: ServeOptionGroup {
    @Flag(name: .customLong("no-objects"), help: "Do not store attachment objects (/v1/relay/objects answers 404) [COORDS_NO_OBJECTS=1].")
    var noObjects: Bool = Env.flag("COORDS_NO_OBJECTS")

    @Option(name: .customLong("object-quota"), help: "Bytes of objects one key may hold, each at its whole size [COORDS_OBJECT_QUOTA].")
    var quota: UInt64 = Env.uint64("COORDS_OBJECT_QUOTA", defaults.objects.quotaBytes)

    @Option(name: .customLong("object-count"), help: "Objects one key may hold [COORDS_OBJECT_COUNT].")
    var count: Int = Env.int("COORDS_OBJECT_COUNT", defaults.objects.maximumObjectsPerOwner)

    @Option(name: .customLong("object-total"), help: "Bytes of objects the relay stores in total (507 beyond) [COORDS_OBJECT_TOTAL].")
    var total: UInt64 = Env.uint64("COORDS_OBJECT_TOTAL", defaults.objects.maximumTotalBytes)

    @Option(
        name: .customLong("object-free-floor"),
        help: "Bytes an object part must leave free on the data directory's disk, for the mailbox (507 beyond; 0: no floor) [COORDS_OBJECT_FREE_FLOOR].")
    var freeFloor: UInt64 = Env.uint64("COORDS_OBJECT_FREE_FLOOR", defaults.objects.minimumFreeDiskBytes)

    func validate() throws {
        try OptionRange.check("--object-quota", quota)
        try OptionRange.check("--object-count", count)
        try OptionRange.check("--object-total", total)
        try OptionRange.check("--object-free-floor", freeFloor)
    }

    func apply(to configuration: inout RelayConfiguration) {
        configuration.objects.enabled = !noObjects
        configuration.objects.quotaBytes = quota
        configuration.objects.maximumObjectsPerOwner = count
        configuration.objects.maximumTotalBytes = total
        configuration.objects.minimumFreeDiskBytes = freeFloor
    }
}

/// What the relay logs, and how.
struct LoggingOptions: ServeOptionGroup {
    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical [COORDS_LOG_LEVEL].")
    var logLevel: String = environment("COORDS_LOG_LEVEL") ?? defaults.logLevel.rawValue

    @Option(
        name: .customLong("log-format"),
        help: "text, or json: one JSON object per line with the keys ts, level, logger, msg and the metadata [COORDS_LOG_FORMAT].")
    var logFormat: String = environment("COORDS_LOG_FORMAT") ?? "text"

    /// The parsed `--log-level` (checked in ``validate()``).
    var level: Logger.Level { Logger.Level(rawValue: logLevel) ?? .info }
    /// The parsed `--log-format` (checked in ``validate()``).
    var format: RelayLogFormat { RelayLogFormat(rawValue: logFormat) ?? .text }

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
        guard RelayLogFormat(rawValue: logFormat) != nil else { throw ValidationError("--log-format must be text or json") }
    }

    func apply(to configuration: inout RelayConfiguration) {
        configuration.logLevel = level
    }
}

/// The relay's data directory when `--data-dir` is not given: `COORDS_DATA_DIR`, else
/// `./coords-relay-data` — one definition, so `serve`, `backup` and `restore` agree.
func defaultDataDirectory() -> String { environment("COORDS_DATA_DIR") ?? "./coords-relay-data" }
