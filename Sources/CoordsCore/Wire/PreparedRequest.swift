/// An HTTP request the core has prepared and the host performs.
///
/// The core never does I/O: it hands the host a URL, method, headers and body; the host sends
/// them with whatever HTTP stack it has and hands the response back.
public struct PreparedRequest: Sendable, Equatable {
    /// One header line.
    public struct Header: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// Absolute URL, e.g. `https://coord.is/api/location`.
    public var url: String
    /// HTTP method: `GET`, `PUT`, `POST` or `DELETE`.
    public var method: String
    /// Headers in the order they should be sent.
    public var headers: [Header]
    /// The body bytes (empty for GET).
    public var body: [UInt8]

    /// Creates a request.
    public init(url: String, method: String, headers: [Header] = [], body: [UInt8] = []) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
    }

    /// The value of the first header named `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The record hosts receive through the C ABI:
    /// `{"url","method","headers":{name: value},"body_base64"}` (standard base64 with padding).
    public var json: JSONValue {
        .object([
            "url": .string(url),
            "method": .string(method),
            "headers": .object(JSONObject(headers.map { ($0.name, .string($0.value)) })),
            "body_base64": .string(Base64.encode(body, variant: .standard)),
        ])
    }
}
