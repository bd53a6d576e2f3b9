/// The limits a client puts on what a relay answers (PROTOCOL.md §4.1). A relay is untrusted:
/// a host that performs a ``PreparedRequest`` reads at most ``PreparedRequest/maximumResponseBytes``
/// of its answer and gives up on the whole exchange after these deadlines, so no relay — the
/// user's own or any friend's — can make it wait or grow without bound.
public enum ClientLimits {
    /// Seconds to open the TCP (and TLS) connection.
    public static let connectSeconds: Int64 = 5
    /// Seconds between bytes of an answer before the request is given up.
    public static let readSeconds: Int64 = 15
    /// Seconds for a whole request: connecting, sending, the answer's head and its whole body.
    public static let requestSeconds: Int64 = 30
    /// Seconds for a live upgrade (§8.1): from the connection opening to a verified `101`.
    public static let upgradeSeconds: Int64 = 10
    /// Bytes a relay may send before a live upgrade completes (the `101` head and anything after it).
    public static let upgradeBytes = 16_384
    /// Seconds a live connection may stay silent (no frame, no ping) before the client closes it:
    /// the relay pings every 30 s (§8.4).
    public static let liveSilenceSeconds: Int64 = 75

    /// The answer to anything but a fetch or a mailbox list: a JSON error or a small JSON object.
    public static let smallAnswerBytes = 65_536

    /// The largest answer to a fetch of ``RelayAPI/maximumFetchBatch`` ids: each entry at most a
    /// base64url blob of ``RelayAPI/maximumBlobByteCount`` bytes plus its id, signature and numbers.
    public static let fetchAnswerBytes = RelayAPI.maximumFetchBatch * (base64Length(RelayAPI.maximumBlobByteCount) + 512)

    /// Envelopes a client asks for in one mailbox list (`limit`, §7.3), and the most it accepts.
    public static let mailboxPackets = 100

    /// The largest answer to a mailbox list: ``mailboxPackets`` envelopes, each at most a base64
    /// payload of ``Envelope/maximumPayloadBytes`` bytes plus its header fields.
    public static let mailboxAnswerBytes = mailboxPackets * (base64Length(Envelope.maximumPayloadBytes) + 2_048)

    /// The most bytes a client reads of the answer to `method` on `url` (a relay URL as the core
    /// prepares it): ``fetchAnswerBytes`` for `POST /api/location`, ``mailboxAnswerBytes`` for
    /// `GET /v1/relay/messages`, ``Objects/maximumStored`` for an object download (a host of
    /// ``ObjectDownload`` reads at most its `storedSize − received`), ``smallAnswerBytes`` for
    /// everything else.
    public static func maximumResponseBytes(method: String, url: String) -> Int {
        let path = Self.path(of: url)
        switch (method.uppercased(), path) {
        case ("POST", RelayAPI.locationPath): return fetchAnswerBytes
        case ("GET", "/v1/relay/messages"): return mailboxAnswerBytes
        case ("GET", let path) where path.hasPrefix("/v1/relay/objects/"): return Int(Objects.maximumStored)
        default: return smallAnswerBytes
        }
    }

    /// The path of an absolute URL, without query or fragment ("/" when it has none).
    static func path(of url: String) -> Substring {
        let lower = url.lowercased()
        let schemeLength = lower.hasPrefix("https://") ? 8 : lower.hasPrefix("http://") ? 7 : 0
        guard schemeLength > 0 else { return "/" }
        let rest = url.dropFirst(schemeLength)
        guard let slash = rest.firstIndex(of: "/") else { return "/" }
        return rest[slash...].prefix { $0 != "?" && $0 != "#" }
    }

    /// Characters of padded base64 (or the upper bound of base64url) for `bytes` bytes.
    static func base64Length(_ bytes: Int) -> Int { (bytes + 2) / 3 * 4 }
}

extension PreparedRequest {
    /// The most bytes a host reads of this request's answer before giving up with an error
    /// (``ClientLimits/maximumResponseBytes(method:url:)``).
    public var maximumResponseBytes: Int { ClientLimits.maximumResponseBytes(method: method, url: url) }
}
