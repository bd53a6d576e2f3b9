#if canImport(Glibc)
import Glibc
#endif

/// Who a request counts as, for every per-address limit (rate limits, connection and live caps):
/// an IPv4 address as it is, an IPv6 address reduced to its network prefix (/64 by default: one
/// subscriber gets a whole /64, so counting single IPv6 addresses would give one client 2^64
/// budgets), and `X-Forwarded-For` read only when the peer is a trusted proxy.
public struct AddressPolicy: Sendable, Equatable {
    /// Bits of an IPv6 address that name a client (1…128).
    public var ipv6PrefixLength = 64
    /// Read `X-Forwarded-For` from loopback peers (a proxy on the same machine).
    public var trustForwardedFor = false
    /// Further proxies whose `X-Forwarded-For` is read (addresses or CIDR networks).
    public var trustedProxies: [IPNetwork] = []

    /// The defaults: /64, no proxy trusted.
    public init() {}

    /// Whether a peer at `address` is a proxy whose `X-Forwarded-For` counts.
    func trusts(_ address: IPAddress) -> Bool {
        (trustForwardedFor && address.isLoopback) || trustedProxies.contains { $0.contains(address) }
    }

    /// The key the limits count a request under: the client address (from `X-Forwarded-For`,
    /// walked from the right past trusted proxies, when the peer is trusted), normalised.
    /// An unparseable peer counts as "unknown"; an unparseable forwarded entry ends the walk.
    public func key(forwardedFor: String?, remoteAddress: String?) -> String {
        guard let peer = remoteAddress.flatMap({ IPAddress(parsing: Substring($0)) }) else { return "unknown" }
        var client = peer
        if let forwardedFor, trusts(peer) {
            for entry in forwardedFor.split(separator: ",", omittingEmptySubsequences: false).reversed().prefix(16) {
                guard let address = IPAddress(parsing: entry.trimmingSpaces) else { break }
                client = address
                if !trusts(address) { break }
            }
        }
        return client.key(ipv6PrefixLength: ipv6PrefixLength)
    }
}

extension IPAddress {
    /// Parses address text as it appears in a peer address or an `X-Forwarded-For` entry:
    /// IPv4 or IPv6, brackets and a `%zone` allowed; an IPv4-mapped IPv6 address becomes its
    /// IPv4 address. Nil for anything else.
    init?(parsing text: Substring) {
        var text = text
        if text.hasPrefix("["), text.hasSuffix("]") { text = text.dropFirst().dropLast() }
        if let percent = text.firstIndex(of: "%") { text = text[..<percent] }
        guard !text.isEmpty, text.utf8.count <= 64, let parsed = IPAddress(literal: String(text)) else { return nil }
        let raw = parsed.bytes
        let mapped = raw.count == 16 && raw.prefix(10).allSatisfy { $0 == 0 } && raw[10] == 0xFF && raw[11] == 0xFF
        guard let address = mapped ? IPAddress(bytes: Array(raw[12...])) : parsed else { return nil }
        self = address
    }

    /// Whether it is 127.0.0.0/8 or ::1.
    var isLoopback: Bool { bytes.count == 4 ? bytes[0] == 127 : bytes == [UInt8](repeating: 0, count: 15) + [1] }

    /// The text the limits count: IPv4 dotted; IPv6 as its first `ipv6PrefixLength` bits in
    /// 16-bit hex groups followed by `/length` (e.g. `2001:db8:0:1::/64`).
    func key(ipv6PrefixLength: Int) -> String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        let length = min(max(ipv6PrefixLength, 1), 128)
        let masked = IPNetwork.mask(bytes, length)
        let groups = stride(from: 0, to: 16, by: 2).map { String(UInt16(masked[$0]) << 8 | UInt16(masked[$0 + 1]), radix: 16) }
        var end = groups.count
        while end > 0 && groups[end - 1] == "0" { end -= 1 }
        return groups[..<end].joined(separator: ":") + (end < groups.count ? "::" : "") + "/\(length)"
    }
}

/// An address or a CIDR network (`10.0.0.0/8`, `2001:db8::/32`, `192.0.2.7`).
public struct IPNetwork: Sendable, Equatable {
    let base: [UInt8]
    let length: Int

    /// Parses `address` or `address/length`; nil when either part is invalid.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(parsing: parts[0].trimmingSpaces) else { return nil }
        let maximum = address.bytes.count * 8
        if parts.count == 2 {
            guard let length = Int(parts[1]), (0...maximum).contains(length) else { return nil }
            self.length = length
        } else {
            length = maximum
        }
        base = Self.mask(address.bytes, length)
    }

    /// Whether `address` lies in the network (same family, same first `length` bits).
    func contains(_ address: IPAddress) -> Bool {
        address.bytes.count == base.count && Self.mask(address.bytes, length) == base
    }

    /// `bytes` with every bit after the first `length` cleared.
    static func mask(_ bytes: [UInt8], _ length: Int) -> [UInt8] {
        bytes.indices.map { index in
            let bits = min(max(length - index * 8, 0), 8)
            return bytes[index] & ~(UInt8.max >> bits)
        }
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return text
    }
}
