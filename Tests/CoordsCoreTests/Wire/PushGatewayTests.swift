import Foundation
import Testing

@testable import CoordsCore

/// `KnownAnswers/gateway-v1.json`: PROTOCOL.md §8.8 tokens sealed by a second implementation
/// (scripts/make-gateway-vectors.py, libsodium's parts and Python alone). Every token opens to its
/// platform and device; every refused one fails with the push-token error; tokens sealed here open
/// there's way and round-trip; hostile input never traps.
@Suite struct PushGatewayTests {
    struct Vectors: Decodable {
        struct Gateway: Decodable { let secret_key: String, public_key: String }
        struct Token: Decodable {
            let description: String, json: String, token: String, endpoint: String, platform: String, device: String
            let env: String?
        }
        struct Rejected: Decodable { let description: String, token: String }
        let gateway: Gateway, base_url: String, tokens: [Token], rejected: [Rejected]

        static func load() throws -> Vectors {
            let url = Fixtures.repositoryRoot.appendingPathComponent("Tests/CoordsCoreTests/KnownAnswers/gateway-v1.json")
            return try JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url))
        }

        func key() throws -> X25519PrivateKey {
            try X25519PrivateKey(rawRepresentation: SecretBytes(copying: try Base64.decode(gateway.secret_key)))
        }
    }

    @Test func theIndependentTokensOpenToTheirDevice() throws {
        let vectors = try Vectors.load()
        let key = try vectors.key()
        #expect(key.publicKey.rawRepresentation == (try Base64.decode(vectors.gateway.public_key)))
        #expect(vectors.tokens.count == 4)
        for vector in vectors.tokens {
            let token = try PushGatewayToken.open(vector.token, with: [key])
            #expect(token.platform.rawValue == vector.platform, "\(vector.description)")
            #expect(token.device == vector.device, "\(vector.description)")
            #expect(token.environment?.rawValue == vector.env, "\(vector.description)")
            #expect(vector.endpoint == vectors.base_url + "/up/" + vector.token)
            #expect(vector.token.utf8.count == PushGatewayToken.tokenLength)
        }
        // A gateway that rotated its key still opens tokens sealed to the previous one.
        let newer = try X25519PrivateKey.generate()
        #expect(try PushGatewayToken.open(vectors.tokens[0].token, with: [newer, key]).platform == .apns)
        #expect(throws: WireError.self) { try PushGatewayToken.open(vectors.tokens[0].token, with: [newer]) }
    }

    @Test func everyRefusedTokenIsRefused() throws {
        let vectors = try Vectors.load()
        let key = try vectors.key()
        #expect(vectors.rejected.count >= 19)
        for vector in vectors.rejected {
            do {
                _ = try PushGatewayToken.open(vector.token, with: [key])
                Issue.record("opened: \(vector.description)")
            } catch let error as WireError {
                guard case .invalidPushToken = error else {
                    Issue.record("\(vector.description): \(error)")
                    continue
                }
                #expect(error.code == 351)
            }
        }
    }

    @Test func aSealedTokenOpensAndNoOneElseOpensIt() throws {
        let gateway = try X25519PrivateKey.generate()
        let other = try X25519PrivateKey.generate()
        let apns = try PushGatewayToken(platform: .apns, device: String(repeating: "ab", count: 32), environment: .development)
        let fcm = try PushGatewayToken(platform: .fcm, device: "cX9-abc_DEF:123")
        for token in [apns, fcm] {
            let sealed = try token.sealed(to: gateway.publicKey)
            #expect(sealed.utf8.count == PushGatewayToken.tokenLength)  // the platform does not show
            #expect(try PushGatewayToken.open(sealed, with: [gateway]) == token)
            #expect(throws: WireError.self) { try PushGatewayToken.open(sealed, with: [other]) }
            #expect(try token.sealed(to: gateway.publicKey) != sealed)  // a fresh box each time
        }
        #expect(try PushGatewayToken(platform: .apns, device: String(repeating: "0", count: 64)).environment == .production)
        let endpoint = try fcm.endpoint(gateway: "https://push.example.com/", key: gateway.publicKey)
        #expect(endpoint.hasPrefix("https://push.example.com/up/") && endpoint.utf8.count == 28 + PushGatewayToken.tokenLength)
        let token = String(endpoint.dropFirst("https://push.example.com/up/".count))
        #expect(try PushGatewayToken.open(token, with: [gateway]) == fcm)
        #expect(throws: WireError.self) { try fcm.endpoint(gateway: "http://push.example.com", key: gateway.publicKey) }
        #expect(throws: WireError.self) {
            try fcm.endpoint(gateway: "https://push.example.com/" + String(repeating: "a", count: 260), key: gateway.publicKey)
        }
    }

    @Test func deviceTokensOutsideTheRulesAreRefused() {
        let refused: [(PushGatewayToken.Platform, String, PushGatewayToken.Environment?)] = [
            (.apns, String(repeating: "a", count: 62), nil), (.apns, String(repeating: "a", count: 65), nil),
            (.apns, String(repeating: "A", count: 64), nil), (.apns, String(repeating: "g", count: 64), nil),
            (.apns, String(repeating: "a", count: 202), nil), (.fcm, "", nil), (.fcm, "a/b", nil), (.fcm, "a b", nil),
            (.fcm, String(repeating: "a", count: 401), nil), (.fcm, "abc", .production), (.fcm, "é", nil)
        ]
        for (platform, device, environment) in refused {
            #expect(throws: WireError.self, "\(platform) \(device.prefix(10))") {
                try PushGatewayToken(platform: platform, device: device, environment: environment)
            }
        }
    }

    @Test func hostileTokensNeverTrap() throws {
        let key = try X25519PrivateKey.generate()
        var generator = SeededGenerator(seed: 8_8)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/!é\u{0}")
        for _ in 0..<300 {
            let length = [0, 1, 746, 747, 748, 2000].randomElement(using: &generator) ?? 747
            let text = String((0..<length).map { _ in alphabet.randomElement(using: &generator) ?? "A" })
            #expect(throws: WireError.self) { try PushGatewayToken.open(text, with: [key]) }
        }
        // Sealed garbage of every length around 512 opens but is refused.
        for count in [0, 1, 511, 512, 513, 4096] {
            let sealed = Base64.encode(try SealedBox.seal([UInt8](repeating: 0x7B, count: count), to: key.publicKey))
            #expect(throws: WireError.self) { try PushGatewayToken.open(sealed, with: [key]) }
        }
        #expect(SealedBox.sizesMatchLibsodium)
        #expect(SealedBox.open([], with: key) == nil)
        #expect(SealedBox.open([UInt8](repeating: 0, count: 47), with: key) == nil)
    }
}
