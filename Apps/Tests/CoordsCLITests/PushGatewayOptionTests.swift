import ArgumentParser
import CoordsCore
import Testing

@testable import CoordsCLI

/// `coords push register --gateway URL --gateway-key KEY --apns HEX|--fcm TOKEN` (PROTOCOL.md
/// §8.8): the endpoint registered is the gateway's with the device token sealed to its key, which
/// only that key opens; the options go together or not at all.
@Suite struct PushGatewayOptionTests {
    @Test func theRegisteredEndpointCarriesTheDeviceSealedToTheGateway() throws {
        let gateway = try X25519PrivateKey.generate()
        let key = Base64.encode(gateway.publicKey.rawRepresentation)
        let apns = String(repeating: "0f", count: 32)
        let register = try Push.Register.parse(["--gateway", "https://push.example.com", "--gateway-key", key, "--apns", apns, "--apns-development"])
        let endpoint = try register.resolvedEndpoint()
        #expect(endpoint.hasPrefix("https://push.example.com/up/"))
        let token = try PushGatewayToken.open(String(endpoint.dropFirst("https://push.example.com/up/".count)), with: [gateway])
        #expect(token == (try PushGatewayToken(platform: .apns, device: apns, environment: .development)))
        #expect(!endpoint.contains(apns))  // the relay never sees the device token

        let fcm = try Push.Register.parse(["--gateway", "https://push.example.com/", "--gateway-key", key, "--fcm", "abc:DEF-123_x"])
        let opened = try PushGatewayToken.open(String(try fcm.resolvedEndpoint().dropFirst("https://push.example.com/up/".count)), with: [gateway])
        #expect(opened.platform == .fcm && opened.device == "abc:DEF-123_x")

        // A plain endpoint is registered as given.
        #expect(try Push.Register.parse(["https://push.example.net/up/x"]).resolvedEndpoint() == "https://push.example.net/up/x")
    }

    @Test func optionsThatDoNotGoTogetherAreRefused() throws {
        let key = Base64.encode(try X25519PrivateKey.generate().publicKey.rawRepresentation)
        let refused: [[String]] = [
            [], ["https://a.example/up", "--gateway", "https://g.example", "--gateway-key", key, "--fcm", "a"],
            ["--gateway", "https://g.example", "--fcm", "a"], ["--gateway", "https://g.example", "--gateway-key", key],
            ["--gateway", "https://g.example", "--gateway-key", key, "--fcm", "a", "--apns", String(repeating: "a", count: 64)],
            ["https://a.example/up", "--fcm", "a"], ["--gateway", "https://g.example", "--gateway-key", key, "--fcm", "a", "--apns-development"]
        ]
        for arguments in refused {
            #expect(throws: (any Error).self, "\(arguments)") { try Push.Register.parse(arguments) }
        }
        // Parsed, but the key or the token is wrong: a clear error, no request.
        #expect(throws: (any Error).self) {
            try Push.Register.parse(["--gateway", "https://g.example", "--gateway-key", "short", "--fcm", "a"]).resolvedEndpoint()
        }
        #expect(throws: WireError.self) {
            try Push.Register.parse(["--gateway", "https://g.example", "--gateway-key", key, "--apns", "XYZ"]).resolvedEndpoint()
        }
        #expect(throws: WireError.self) {
            try Push.Register.parse(["--gateway", "http://g.example", "--gateway-key", key, "--fcm", "a"]).resolvedEndpoint()
        }
    }
}
