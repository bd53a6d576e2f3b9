/// An HTTP request the core has prepared and the host performs.
///
/// The core never does I/O: it hands the host a URL, method, headers and body; the host sends
/// them with whatever HTTP stack it has and hands the response back.
public struct PreparedRequest: Sendable, Equatable {
    /// One header line.
    public struct Header: Sendable, Equatable {
        /// The field name as it is sent, e.g. `Content-Type` (``PreparedRequest/header(_:)`` compares it case-insensitively).
        public var name: String
        /// The field value.
        public var value: String

        /// The header line `name: value`.
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
    /// `{"url","method","headers":{name: value},"body_base64","max_response_bytes"}` (standard
    /// base64 with padding; the last is ``maximumResponseBytes``, which a host enforces).
    public var json: JSONValue {
        .object([
            "url": .string(url),
            "method": .string(method),
            "headers": .object(JSONObject(headers.map { ($0.name, .string($0.value)) })),
            "body_base64": .string(Base64.encode(body, variant: .standard)),
            "max_response_bytes": .integer(UInt64(clamping: maximumResponseBytes))
        ])
    }
}

extension PreparedRequest {
    /// Parses the record of ``json`` back (hosts hand queued requests back this way).
    /// - Throws: ``WireError/unexpectedJSON(_:)`` when a field is missing or of the wrong type,
    ///   ``WireError/invalidBase64(field:)`` for the body.
    public init(json: JSONValue) throws {
        guard let object = json.objectValue, let url = object["url"]?.stringValue, let method = object["method"]?.stringValue,
            let body = object["body_base64"]?.stringValue
        else {
            throw WireError.unexpectedJSON("a request is {\"url\", \"method\", \"headers\": {…}, \"body_base64\"}")
        }
        var headers: [Header] = []
        if let fields = object["headers"] {
            guard let members = fields.objectValue?.members else { throw WireError.unexpectedJSON("headers must be an object of strings") }
            for member in members {
                guard let value = member.value.stringValue else { throw WireError.unexpectedJSON("header \(member.key) is not a string") }
                headers.append(Header(name: member.key, value: value))
            }
        }
        self.init(url: url, method: method, headers: headers, body: try Base64.decode(body, variant: .standard, field: "body_base64"))
    }
}

extension PreparedRequest.Header: Codable {}

extension PreparedRequest: Codable {
    private enum CodingKeys: String, CodingKey { case url, method, headers, body }

    /// Decodes `{"url","method","headers":[{"name","value"}],"body": base64}`.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        url = try c.decode(String.self, forKey: .url)
        method = try c.decode(String.self, forKey: .method)
        headers = try c.decode([Header].self, forKey: .headers)
        let text = try c.decode(String.self, forKey: .body)
        guard let bytes = try? Base64.decode(text, variant: .standard, field: "body") else {
            throw DecodingError.dataCorruptedError(forKey: .body, in: c, debugDescription: "body is not standard base64")
        }
        body = bytes
    }

    /// Encodes the body as standard base64 (compact, unlike an array of numbers).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(url, forKey: .url)
        try c.encode(method, forKey: .method)
        try c.encode(headers, forKey: .headers)
        try c.encode(Base64.encode(body, variant: .standard), forKey: .body)
    }
}
