import CoordsCore
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@testable import CoordsRelay

/// Issue 37, defect 7: per-address limits keyed on the exact address string let one IPv6 /64
/// through as 2^64 clients, and trusted any peer's `X-Forwarded-For`.
@Suite struct AddressPolicyTests {
    @Test func addressesAreNormalised() {
        let policy = AddressPolicy()
        #expect(policy.key(forwardedFor: nil, remoteAddress: "192.0.2.7") == "192.0.2.7")
        #expect(policy.key(forwardedFor: nil, remoteAddress: "::ffff:192.0.2.7") == "192.0.2.7")
        #expect(policy.key(forwardedFor: nil, remoteAddress: "2001:db8:1:2:aaaa::1") == "2001:db8:1:2::/64")
        #expect(policy.key(forwardedFor: nil, remoteAddress: "2001:DB8:1:2:ffff:ffff:ffff:ffff") == "2001:db8:1:2::/64")
        #expect(policy.key(forwardedFor: nil, remoteAddress: "[2001:db8:1:2::9]") == "2001:db8:1:2::/64")
        #expect(policy.key(forwardedFor: nil, remoteAddress: "fe80::1%eth0") == "fe80::/64")
        #expect(policy.key(forwardedFor: nil, remoteAddress: "::1") == "::/64")
        #expect(policy.key(forwardedFor: nil, remoteAddress: "garbage") == "unknown")
        #expect(policy.key(forwardedFor: nil, remoteAddress: nil) == "unknown")
        var wide = AddressPolicy()
        wide.ipv6PrefixLength = 48
        #expect(wide.key(forwardedFor: nil, remoteAddress: "2001:db8:1:2::1") == "2001:db8:1::/48")
        wide.ipv6PrefixLength = 128
        #expect(wide.key(forwardedFor: nil, remoteAddress: "2001:db8::1") == "2001:db8:0:0:0:0:0:1/128")
    }

    @Test func forwardedForIsReadOnlyFromTrustedProxiesRightToLeft() throws {
        var policy = AddressPolicy()
        // Not trusted: the header is ignored, whatever it says.
        #expect(policy.key(forwardedFor: "198.51.100.1", remoteAddress: "127.0.0.1") == "127.0.0.1")
        policy.trustForwardedFor = true
        #expect(policy.key(forwardedFor: "198.51.100.1", remoteAddress: "127.0.0.1") == "198.51.100.1")
        #expect(policy.key(forwardedFor: "198.51.100.1", remoteAddress: "203.0.113.5") == "203.0.113.5")  // not loopback
        // A client's own forged entries stand left of what the proxy appended: the rightmost untrusted one counts.
        #expect(policy.key(forwardedFor: "1.1.1.1, 2.2.2.2, 198.51.100.1", remoteAddress: "127.0.0.1") == "198.51.100.1")
        #expect(policy.key(forwardedFor: "2001:db8:5:6::77", remoteAddress: "::1") == "2001:db8:5:6::/64")
        #expect(policy.key(forwardedFor: "not an address", remoteAddress: "127.0.0.1") == "127.0.0.1")
        #expect(policy.key(forwardedFor: "", remoteAddress: "127.0.0.1") == "127.0.0.1")
        policy.trustedProxies = [try #require(IPNetwork("10.0.0.0/8")), try #require(IPNetwork("2001:db8:ff::/48"))]
        #expect(policy.key(forwardedFor: "198.51.100.1, 10.1.2.3", remoteAddress: "10.9.9.9") == "198.51.100.1")
        #expect(policy.key(forwardedFor: "198.51.100.1", remoteAddress: "2001:db8:ff:1::2") == "198.51.100.1")
        #expect(policy.key(forwardedFor: "198.51.100.1", remoteAddress: "11.0.0.1") == "11.0.0.1")
        #expect(IPNetwork("10.0.0.0/33") == nil && IPNetwork("10.0.0.0/x") == nil && IPNetwork("nope") == nil && IPNetwork("::/0") != nil)
    }

    /// 40 requests from 40 addresses of one /64 through a trusted proxy share one budget.
    @Test func oneIPv6NetworkIsOneClient() async throws {
        var configuration = RelayHarness.defaultConfiguration()
        configuration.addressRate = 1
        configuration.addressBurst = 5
        configuration.trustForwardedFor = true
        let relay = RelayHarness(configuration: configuration)
        try await relay.test(.live) { client in
            var passed = 0
            for i in 1...40 {
                var headers = RelayHarness.json
                headers[.xForwardedFor] = "2001:db8:1:2::\(String(i, radix: 16))"
                let response = try await client.execute(uri: "/api/location", method: .post, headers: headers, body: RelayHarness.fetchBody([]))
                if response.status == .ok { passed += 1 }
            }
            #expect(passed == 5)
            var other = RelayHarness.json
            other[.xForwardedFor] = "2001:db8:1:3::1"
            #expect(try await client.execute(uri: "/api/location", method: .post, headers: other, body: RelayHarness.fetchBody([])).status == .ok)
        }
    }
}
