import CoordsCore
import CoordsRelay
import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing
import _CryptoExtras

@testable import CoordsPushGateway

/// The gateway's parts without a network: the tokens it signs, how it reads each provider's
/// documented answers, its key file, its setup refusals and its routes' refusals. The providers
/// themselves are exercised end to end in tests/e2e/test_push_gateway.py.
@Suite struct PushGatewayTests {
    static let rsaPEM: String = {
        guard let key = try? _RSA.Signing.PrivateKey(keySize: .bits2048) else { return "" }
        return key.pemRepresentation
    }()

    /// The three parts of a compact JWS, decoded.
    func parts(_ token: String) throws -> (header: JSONObject, claims: JSONObject, input: [UInt8], signature: [UInt8]) {
        let pieces = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(pieces.count == 3)
        let header = try #require(try JSONValue.parse(Base64.decode(pieces[0])).objectValue)
        let claims = try #require(try JSONValue.parse(Base64.decode(pieces[1])).objectValue)
        return (header, claims, Array((pieces[0] + "." + pieces[1]).utf8), try Base64.decode(pieces[2]))
    }

    @Test func theAPNsTokenIsES256WithKeyIDTeamAndIssueTime() throws {
        let key = P256.Signing.PrivateKey()
        let credentials = try APNsCredentials(p8: key.pemRepresentation, keyID: "ABCDE12345", teamID: "FGHIJ67890", topic: "org.example.app")
        let provider = APNsProvider(credentials: credentials, tokenLifetime: .seconds(2400), clock: { 1_700_000_000 })
        let token = try provider.providerToken()
        let (header, claims, input, signature) = try parts(token)
        #expect(header["alg"] == .string("ES256") && header["kid"] == .string("ABCDE12345") && header.count == 2)
        #expect(claims["iss"] == .string("FGHIJ67890") && claims["iat"] == .integer(UInt64(1_700_000_000)) && claims.count == 2)
        let raw = try P256.Signing.ECDSASignature(rawRepresentation: signature)
        #expect(key.publicKey.isValidSignature(raw, for: input))
        // Reused while young; a refresh replaces only a token older than a second.
        #expect(try provider.providerToken() == token)
        #expect(try provider.providerToken(refreshing: true) == token)
        #expect(provider.refreshes == 1)
    }

    @Test func theFCMAssertionIsRS256() throws {
        let key = try _RSA.Signing.PrivateKey(pemRepresentation: Self.rsaPEM)
        let token = try WebToken.rs256(key: key, header: ["kid": .text("k1")], claims: ["iss": .text("a@b"), "iat": .number(5)])
        let (header, claims, input, signature) = try parts(token)
        #expect(header["alg"] == .string("RS256") && header["typ"] == .string("JWT") && header["kid"] == .string("k1"))
        #expect(claims["iss"] == .string("a@b") && claims["iat"] == .integer(UInt64(5)))
        #expect(key.publicKey.isValidSignature(.init(rawRepresentation: signature), for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5))
    }

    static func answer(_ status: Int, _ body: String? = nil, retryAfter: Duration? = nil) -> ProviderAnswer {
        ProviderAnswer(status: status, retryAfter: retryAfter, body: body.flatMap { try? JSONValue.parse($0) })
    }

    /// Apple, "Handling notification responses from APNs": each status and reason.
    @Test(
        arguments: [
            (200, nil, ProviderOutcome.delivered),
            (410, #"{"reason":"Unregistered","timestamp":1}"#, .gone(reason: "Unregistered")),
            (410, #"{"reason":"ExpiredToken"}"#, .gone(reason: "ExpiredToken")),
            (400, #"{"reason":"BadDeviceToken"}"#, .gone(reason: "BadDeviceToken")),
            (400, #"{"reason":"DeviceTokenNotForTopic"}"#, .gone(reason: "DeviceTokenNotForTopic")),
            (400, #"{"reason":"BadTopic"}"#, .failed(reason: "BadTopic")),
            (403, #"{"reason":"ExpiredProviderToken"}"#, .refreshCredentials(reason: "ExpiredProviderToken")),
            (403, #"{"reason":"InvalidProviderToken"}"#, .failed(reason: "InvalidProviderToken")),
            (429, #"{"reason":"TooManyRequests"}"#, .retry(after: .seconds(3), reason: "TooManyRequests")),
            (500, #"{"reason":"InternalServerError"}"#, .retry(after: .seconds(3), reason: "InternalServerError")),
            (503, "not json", .retry(after: .seconds(3), reason: "status_503")),
            (413, #"{"reason":"Payload\u0000TooLarge<script>"}"#, .failed(reason: "PayloadTooLargescript"))
        ] as [(Int, String?, ProviderOutcome)])
    func apnsAnswers(status: Int, body: String?, expected: ProviderOutcome) {
        #expect(APNsProvider.classify(Self.answer(status, body, retryAfter: .seconds(3))) == expected)
    }

    static func fcmError(_ status: Int, _ code: String, _ errorCode: String? = nil, field: String? = nil) -> String {
        var details: [JSONValue] = []
        if let errorCode { details.append(.object(["@type": .string("type.googleapis.com/google.firebase.fcm.v1.FcmError"), "errorCode": .string(errorCode)])) }
        if let field {
            details.append(
                .object([
                    "@type": .string("type.googleapis.com/google.rpc.BadRequest"),
                    "fieldViolations": .array([.object(["field": .string(field), "description": .string("x")])])
                ]))
        }
        return JSONValue.object(["error": .object(["code": .integer(UInt64(status)), "status": .string(code), "details": .array(details)])]).serializedString
    }

    /// Firebase, "FCM error codes" (`ErrorCode` of the v1 API) and `google.rpc.BadRequest`.
    @Test(
        arguments: [
            (200, #"{"name":"projects/p/messages/1"}"#, ProviderOutcome.delivered),
            (404, fcmError(404, "NOT_FOUND", "UNREGISTERED"), .gone(reason: "UNREGISTERED")),
            (400, fcmError(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", field: "message.token"), .gone(reason: "INVALID_ARGUMENT")),
            (400, fcmError(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", field: "message.android.ttl"), .failed(reason: "INVALID_ARGUMENT")),
            (403, fcmError(403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH"), .gone(reason: "SENDER_ID_MISMATCH")),
            (401, fcmError(401, "UNAUTHENTICATED"), .refreshCredentials(reason: "UNAUTHENTICATED")),
            (401, fcmError(401, "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR"), .refreshCredentials(reason: "THIRD_PARTY_AUTH_ERROR")),
            (429, fcmError(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED"), .retry(after: .seconds(3), reason: "QUOTA_EXCEEDED")),
            (503, fcmError(503, "UNAVAILABLE", "UNAVAILABLE"), .retry(after: .seconds(3), reason: "UNAVAILABLE")),
            (500, fcmError(500, "INTERNAL", "INTERNAL"), .retry(after: .seconds(3), reason: "INTERNAL")),
            (502, "<html>", .failed(reason: "status_502"))
        ] as [(Int, String, ProviderOutcome)])
    func fcmAnswers(status: Int, body: String, expected: ProviderOutcome) {
        #expect(FCMProvider.classify(Self.answer(status, body, retryAfter: .seconds(3))) == expected)
    }

    @Test func retryAfterIsDelaySecondsBoundedToAnHour() {
        #expect(ProviderAnswer.parseRetryAfter("5") == .seconds(5))
        #expect(ProviderAnswer.parseRetryAfter(" 120 ") == .seconds(120))
        #expect(ProviderAnswer.parseRetryAfter("86400") == .seconds(3600))
        for text in ["", "-1", "1.5", "Wed, 21 Oct 2015 07:28:00 GMT", "99999999999999999999", "٣"] {
            #expect(ProviderAnswer.parseRetryAfter(text) == nil, "\(text)")
        }
    }

    @Test func theFCMMessageIsDataOnlyHighPriorityCollapsing() throws {
        let account = try FCMServiceAccount(json: Array(Self.serviceAccount().utf8))
        let provider = FCMProvider(account: account, clock: { 0 })
        let message = try JSONValue.parse(provider.message(device: "tok:1"))
        #expect(
            message
                == .object([
                    "message": .object([
                        "token": .string("tok:1"), "data": .object(["type": .string("coords-wake")]),
                        "android": .object(["priority": .string("HIGH"), "collapse_key": .string("coords-wake"), "ttl": .string("86400s")])
                    ])
                ]))
    }

    static func serviceAccount(_ changes: [String: JSONValue] = [:]) -> String {
        var object = JSONObject()
        for (key, value) in [
            ("type", JSONValue.string("service_account")), ("project_id", .string("coords-test")), ("private_key_id", .string("k1")),
            ("private_key", .string(rsaPEM)), ("client_email", .string("gw@coords-test.iam.gserviceaccount.com")),
            ("token_uri", .string("https://oauth2.googleapis.com/token"))
        ] {
            object[key] = changes[key] ?? value
        }
        return JSONValue.object(object).serializedString
    }

    @Test func credentialsThatCannotWorkAreRefusedInWords() throws {
        let pem = P256.Signing.PrivateKey().pemRepresentation
        #expect(throws: GatewaySetupError.self) { try APNsCredentials(p8: "garbage", keyID: "ABCDE12345", teamID: "FGHIJ67890", topic: "t") }
        #expect(throws: GatewaySetupError.self) { try APNsCredentials(p8: pem, keyID: "short", teamID: "FGHIJ67890", topic: "t") }
        #expect(throws: GatewaySetupError.self) { try APNsCredentials(p8: pem, keyID: "ABCDE12345", teamID: "FGHIJ67890", topic: "a b") }
        for change: [String: JSONValue] in [
            ["type": .string("authorized_user")], ["project_id": .string("Bad/Project")], ["token_uri": .string("http://plain")],
            ["private_key": .string(pem)], ["client_email": .null]
        ] {
            #expect(throws: GatewaySetupError.self, "\(change.keys)") { try FCMServiceAccount(json: Array(Self.serviceAccount(change).utf8)) }
        }
        #expect(throws: GatewaySetupError.self) { try FCMServiceAccount(json: Array("[1]".utf8)) }
    }

    @Test func theKeyFileIsPrivateAndNeverOverwritten() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gateway-key-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/gateway.key"
        let made = try GatewayKeyFile.generate(at: path)
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        #expect(try GatewayKeyFile.load(path).publicKey == made.publicKey)
        #expect(throws: GatewaySetupError.self) { try GatewayKeyFile.generate(at: path) }
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: path)
        #expect(throws: GatewaySetupError.self) { try GatewayKeyFile.load(path) }
        for garbage in ["", "short\n", String(repeating: "A", count: 200)] {
            let other = directory + "/garbage"
            FileManager.default.createFile(atPath: other, contents: Data(garbage.utf8), attributes: [.posixPermissions: 0o600])
            #expect(throws: GatewaySetupError.self) { try GatewayKeyFile.load(other) }
            try FileManager.default.removeItem(atPath: other)
        }
    }

    @Test func refusalsComeBeforeAnyProvider() async throws {
        let key = try X25519PrivateKey(rawRepresentation: SecretBytes(randomCount: 32))
        var limits = GatewayLimits()
        limits.perAddressPerMinute = 60
        limits.perAddressBurst = 2
        let gateway = PushGateway(keys: [key], providers: [], limits: limits, logger: Logger(label: "test"), clock: { 1_000 })
        let app = Application(router: buildGatewayRouter(gateway: gateway, addresses: AddressPolicy()))
        let token = try PushGatewayToken(platform: .fcm, device: "tok").sealed(to: key.publicKey)
        try await app.test(.router) { client in
            let published = try await client.execute(uri: "/v1/gateway/key", method: .get)
            #expect(String(buffer: published.body) == #"{"key":"\#(Base64.encode(key.publicKey.rawRepresentation))"}"#)
            #expect(try await client.execute(uri: "/up/" + token, method: .post, body: ByteBuffer(repeating: 0x20, count: 1025)).status.code == 413)
            #expect(try await client.execute(uri: "/up/" + token, method: .get).status.code == 405)
            let forged = try await client.execute(uri: "/up/" + String(repeating: "A", count: 747), method: .post)
            #expect(forged.status.code == 404 && String(buffer: forged.body).contains("unknown_token"))
            // A token that opens, for a platform without credentials: 404, so the relay drops it.
            let unserved = try await client.execute(uri: "/up/" + token, method: .post)
            #expect(unserved.status.code == 404 && String(buffer: unserved.body).contains("platform_not_served"))
            // Two wakes were the address's burst; the next waits.
            let limited = try await client.execute(uri: "/up/" + token, method: .post)
            #expect(limited.status.code == 429 && limited.headers[.retryAfter] == "1")
        }
        let metrics = String(decoding: gateway.metrics.exposition(), as: UTF8.self)
        #expect(metrics.contains(#"coords_gateway_wakes_total{result="address_rate_limited",status="429"} 1"#))
        #expect(metrics.contains(#"coords_gateway_wakes_total{result="body_too_large",status="413"} 1"#))
    }
}
