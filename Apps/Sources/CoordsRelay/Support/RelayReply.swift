import CoordsCore

/// An HTTP answer of the relay, independent of the server framework.
public struct RelayReply: Sendable, Equatable {
    /// The HTTP status code.
    public var status: Int
    /// Header fields in the order they are sent.
    public var headers: [(String, String)]
    /// The body bytes (empty for 204).
    public var body: [UInt8]

    public static func == (a: RelayReply, b: RelayReply) -> Bool {
        a.status == b.status && a.body == b.body && a.headers.map { "\($0.0): \($0.1)" } == b.headers.map { "\($0.0): \($0.1)" }
    }

    /// 204 No Content.
    static let noContent = RelayReply(status: 204, headers: [], body: [])

    /// 200 with a JSON body.
    static func json(_ value: JSONValue, status: Int = 200) -> RelayReply {
        RelayReply(status: status, headers: [("Content-Type", "application/json")], body: value.serialized())
    }
}

/// A refused request: status, a stable machine-readable code, and a sentence for people.
/// Every error body is JSON `{"error": code, "message": text}` (PROTOCOL.md §6).
public struct RelayFailure: Error, Sendable, Equatable {
    /// The HTTP status code (4xx or 5xx).
    public var status: Int
    /// The stable machine-readable code, e.g. `stale_upload` (the body's `"error"`).
    public var code: String
    /// The sentence for people (the body's `"message"`).
    public var message: String
    /// Seconds until a retry may succeed (429).
    public var retryAfter: Int?
    /// Members the body carries besides `error` and `message` (e.g. `stored` of §12.4's 409).
    public var extra: [String: JSONValue] = [:]
    /// Header fields the answer carries besides `Retry-After` (e.g. 416's `Content-Range`).
    public var extraHeaders: [String: String] = [:]

    /// A failure; `retryAfter` becomes a `Retry-After` header.
    public init(_ status: Int, _ code: String, _ message: String, retryAfter: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
    }

    var reply: RelayReply {
        let pairs = [("error", JSONValue.string(code)), ("message", .string(message))] + extra.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        var reply = RelayReply.json(.object(JSONObject(pairs)), status: status)
        if let retryAfter { reply.headers.append(("Retry-After", String(retryAfter))) }
        for (name, value) in extraHeaders.sorted(by: { $0.key < $1.key }) { reply.headers.append((name, value)) }
        return reply
    }
}
