/// A push gateway token (PROTOCOL.md §8.8): a phone's APNs or FCM device token sealed to the
/// gateway's X25519 key, so the relay that stores the endpoint URL learns neither the token nor
/// the platform. The app seals it offline (``sealed(to:)``); the gateway opens it
/// (``open(_:with:)``) and refuses anything that breaks a rule before calling a provider.
public struct PushGatewayToken: Sendable, Equatable {
    /// The provider that wakes the device.
    public enum Platform: String, Sendable, CaseIterable {
        /// Apple's push service (iOS).
        case apns
        /// Firebase Cloud Messaging (Android).
        case fcm
    }

    /// Which APNs service issued an APNs device token.
    public enum Environment: String, Sendable, CaseIterable {
        /// `api.push.apple.com`: App Store and TestFlight builds.
        case production
        /// `api.sandbox.push.apple.com`: development builds.
        case development
    }

    /// The platform.
    public let platform: Platform
    /// The device token: lowercase hexadecimal for APNs, the registration token for FCM.
    public let device: String
    /// APNs: which service issued the token; nil for FCM.
    public let environment: Environment?

    /// The padded plaintext's length: every token is the same length, whatever the platform.
    public static let plaintextByteCount = 512
    /// The token's length in base64url characters (560 sealed bytes).
    public static let tokenLength = 747
    /// The most an endpoint URL may have (PROTOCOL.md §8.7).
    public static let maximumEndpointBytes = 1024

    /// A token for `device` on `platform` (APNs: `environment`, default production).
    /// - Throws: ``WireError/invalidPushToken(_:)`` for a device token §8.8 does not allow (APNs:
    ///   64…200 lowercase hex digits, even; FCM: 1…400 of `A–Z a–z 0–9 - _ :`), or an
    ///   environment given for FCM.
    public init(platform: Platform, device: String, environment: Environment? = nil) throws {
        switch platform {
        case .apns:
            let digits = device.utf8
            guard (64...200).contains(digits.count), digits.count % 2 == 0,
                digits.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
            else {
                throw WireError.invalidPushToken("an APNs device token is 64 to 200 lowercase hexadecimal digits")
            }
            self.environment = environment ?? .production
        case .fcm:
            let characters = device.utf8
            guard (1...400).contains(characters.count),
                characters.allSatisfy({ Self.isFCMByte($0) })
            else {
                throw WireError.invalidPushToken("an FCM registration token is 1 to 400 characters of A-Z a-z 0-9 - _ :")
            }
            guard environment == nil else { throw WireError.invalidPushToken("an FCM token has no APNs environment") }
            self.environment = nil
        }
        self.platform = platform
        self.device = device
    }

    private static func isFCMByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            || byte == 0x2D || byte == 0x5F || byte == 0x3A
    }

    /// The JSON of §8.8 (members in a fixed order).
    var json: String {
        var object = JSONObject()
        object["v"] = .integer(UInt64(1))
        object["platform"] = .string(platform.rawValue)
        object["device"] = .string(device)
        if let environment { object["env"] = .string(environment.rawValue) }
        return String(decoding: JSONValue.object(object).serialized(), as: UTF8.self)
    }

    /// The token sealed to the gateway key `gateway` (base64url, ``tokenLength`` characters;
    /// a fresh sealed box each time).
    /// - Throws: ``CryptoError/weakPublicKey`` for a gateway key libsodium refuses.
    public func sealed(to gateway: X25519PublicKey) throws -> String {
        var plaintext = Array(json.utf8)
        // The initializer's limits keep the JSON under 512 bytes (at most about 440); compared, not assumed.
        guard plaintext.count <= Self.plaintextByteCount else { throw WireError.invalidPushToken("the token's JSON is over 512 bytes") }
        plaintext += [UInt8](repeating: 0x20, count: Self.plaintextByteCount - plaintext.count)
        return Base64.encode(try SealedBox.seal(plaintext, to: gateway))
    }

    /// The endpoint to register with the relay (§8.7): `base` (the gateway's `https://` URL, no
    /// trailing slash needed) + `/up/` + the sealed token.
    /// - Throws: ``WireError/invalidPushToken(_:)`` when the endpoint would pass the §8.7 limit of
    ///   1,024 bytes or `base` is not `https://`; ``CryptoError/weakPublicKey``.
    public func endpoint(gateway base: String, key: X25519PublicKey) throws -> String {
        guard base.lowercased().hasPrefix("https://") else { throw WireError.invalidPushToken("a gateway URL starts with https://") }
        let trimmed = base.hasSuffix("/") ? String(base.dropLast()) : base
        let endpoint = trimmed + "/up/" + (try sealed(to: key))
        guard endpoint.utf8.count <= Self.maximumEndpointBytes else {
            throw WireError.invalidPushToken("the gateway URL is longer than 273 bytes")
        }
        return endpoint
    }

    /// Opens a token with the gateway's keys (current first, then previous ones kept for tokens
    /// still registered) and checks every rule of §8.8.
    /// - Throws: ``WireError/invalidPushToken(_:)`` naming the first rule broken: not base64url of
    ///   560 bytes, opens with none of `keys`, not 512 bytes, padding other than spaces, not one
    ///   JSON object of exactly the allowed members, an unknown version or platform, a device token
    ///   or environment §8.8 does not allow.
    public static func open(_ token: String, with keys: [X25519PrivateKey]) throws -> PushGatewayToken {
        guard token.utf8.count == tokenLength, let sealed = try? Base64.decode(token, field: "token") else {  // any malformed text is one error
            throw WireError.invalidPushToken("not base64url of \(plaintextByteCount + SealedBox.overhead) bytes")
        }
        guard let plaintext = keys.lazy.compactMap({ SealedBox.open(sealed, with: $0) }).first else {
            throw WireError.invalidPushToken("sealed to another gateway, or changed")
        }
        return try plaintext.withUnsafeBytes { bytes in try parse(bytes) }
    }

    private static func parse(_ bytes: UnsafeRawBufferPointer) throws -> PushGatewayToken {
        guard bytes.count == plaintextByteCount else { throw WireError.invalidPushToken("the sealed text is not \(plaintextByteCount) bytes") }
        var end = bytes.count
        while end > 0, bytes[end - 1] == 0x20 { end -= 1 }
        guard end > 0, bytes[end - 1] == 0x7D else {  // "}" ends the object; only spaces follow it
            throw WireError.invalidPushToken("the padding is not spaces after one JSON object")
        }
        let value: JSONValue
        do {
            value = try JSONValue.parse(UnsafeRawBufferPointer(rebasing: bytes[0..<end]), maximumDepth: 2)
        } catch {
            throw WireError.invalidPushToken("not JSON: \(error)")
        }
        guard let object = value.objectValue else { throw WireError.invalidPushToken("not a JSON object") }
        guard Set(object.keys).isSubset(of: ["v", "platform", "device", "env"]) else {
            throw WireError.invalidPushToken("a member §8.8 does not name")
        }
        guard object["v"]?.uint64Value == 1 else { throw WireError.invalidPushToken("version is not 1") }
        guard let name = object["platform"]?.stringValue, let platform = Platform(rawValue: name) else {
            throw WireError.invalidPushToken("an unknown platform")
        }
        guard let device = object["device"]?.stringValue else { throw WireError.invalidPushToken("no device token") }
        var environment: Environment?
        if let member = object["env"] {
            guard let name = member.stringValue, let known = Environment(rawValue: name) else {
                throw WireError.invalidPushToken("an unknown APNs environment")
            }
            environment = known
        }
        if platform == .fcm, environment != nil { throw WireError.invalidPushToken("an FCM token has no APNs environment") }
        return try PushGatewayToken(platform: platform, device: device, environment: environment)
    }
}
