#if canImport(Glibc)
import Glibc
#endif

/// Why a push endpoint was refused (PROTOCOL.md §8.7): the reason is shown to the client in the
/// 400 answer and to the operator in the log.
public struct PushEndpointRefusal: Error, Equatable, CustomStringConvertible {
    public var description: String
    /// The host did not resolve: perhaps only for now (a wake retries; a registration is refused).
    public var unresolved: Bool

    init(_ description: String, unresolved: Bool = false) {
        self.description = description
        self.unresolved = unresolved
    }
}

/// A push endpoint URL, parsed strictly (PROTOCOL.md §8.7): `https://host[:port]/path[?query]`,
/// at most 1,024 bytes of printable ASCII, no user information, no fragment. Parsing only checks
/// the text; whether the host may be contacted is ``EndpointPolicy``'s decision on the addresses
/// it resolves to.
public struct PushEndpoint: Sendable, Equatable {
    /// Longest endpoint accepted, in bytes.
    public static let maximumLength = 1024

    /// The URL exactly as registered (what the relay POSTs to).
    public let url: String
    /// `https` (true) or `http` (only with `--push-allow-loopback`).
    public let secure: Bool
    /// The host: a DNS name, or an IP literal without its brackets.
    public let host: String
    /// The port (443 or 80 when the URL names none).
    public let port: Int

    /// Parses `text`.
    /// - Parameter allowInsecure: accept `http://` as well (the test flag); the address rule
    ///   still applies.
    /// - Throws: ``PushEndpointRefusal`` naming the first problem.
    public init(parsing text: String, allowInsecure: Bool) throws(PushEndpointRefusal) {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= Self.maximumLength else {
            throw PushEndpointRefusal("the endpoint must be 1…\(Self.maximumLength) bytes")
        }
        guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw PushEndpointRefusal("the endpoint must be printable ASCII without spaces (percent-encode the rest)")
        }
        guard !bytes.contains(UInt8(ascii: "#")) else { throw PushEndpointRefusal("the endpoint must not have a fragment") }
        let lower = text.lowercased()
        let rest: Substring
        if lower.hasPrefix("https://") {
            secure = true
            rest = text.dropFirst(8)
        } else if lower.hasPrefix("http://"), allowInsecure {
            secure = false
            rest = text.dropFirst(7)
        } else {
            throw PushEndpointRefusal("the endpoint must be an https:// URL")
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        guard !authority.contains("@") else { throw PushEndpointRefusal("the endpoint must not carry user information") }
        var hostPart: Substring
        var portPart: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw PushEndpointRefusal("an IPv6 host must end with ]") }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw PushEndpointRefusal("only :port may follow an IPv6 host") }
                portPart = after.dropFirst()
            }
            guard IPAddress(literal: String(hostPart))?.isV6 == true else { throw PushEndpointRefusal("the bracketed host is not an IPv6 address") }
        } else {
            let pieces = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            hostPart = pieces.first ?? ""
            portPart = pieces.count > 1 ? pieces[1] : nil
            guard hostPart.utf8.count <= 253,
                hostPart.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || Self.isAlphanumeric($0) })
            else {
                throw PushEndpointRefusal("the host must be a DNS name or an IP address")
            }
        }
        guard !hostPart.isEmpty else { throw PushEndpointRefusal("the endpoint has no host") }
        if let portPart {
            guard portPart.count <= 5, portPart.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let port = Int(portPart), (1...65535).contains(port) else {
                throw PushEndpointRefusal("the port must be 1…65535")
            }
            self.port = port
        } else {
            port = secure ? 443 : 80
        }
        host = String(hostPart)
        url = text
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
    }
}

/// An IPv4 (4 bytes) or IPv6 (16 bytes) address.
public struct IPAddress: Sendable, Equatable, CustomStringConvertible {
    /// The address in network byte order: 4 or 16 bytes.
    public let bytes: [UInt8]

    /// An address from its bytes; nil unless there are 4 or 16.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Parses a dotted-quad IPv4 or an IPv6 literal (`inet_pton`); nil for anything else.
    public init?(literal: String) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, literal, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
        } else if inet_pton(AF_INET6, literal, &v6) == 1 {
            bytes = withUnsafeBytes(of: &v6) { Array($0) }
        } else {
            return nil
        }
    }

    var isV6: Bool { bytes.count == 16 }

    public var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = isV6 ? AF_INET6 : AF_INET
        let ok = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &text, socklen_t(text.count)) } != nil
        guard ok else { return "?" }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Which addresses the relay may POST wakes to (PROTOCOL.md §8.7): public unicast only, so a
/// registration can never point the relay at its own network (no SSRF through the relay).
public enum EndpointPolicy {
    /// Whether `address` is a public unicast address. With `allowLoopback` (the test flag)
    /// 127.0.0.0/8 and ::1 are allowed too; nothing else private ever is.
    public static func isPublic(_ address: IPAddress, allowLoopback: Bool) -> Bool {
        let b = address.bytes
        if b.count == 4 { return isPublicV4(b[0], b[1], b[2], b[3], allowLoopback: allowLoopback) }
        // ::/96 holds ::, ::1 and the deprecated IPv4-compatible form; ::ffff:0:0/96 is IPv4-mapped.
        if b[0..<10].allSatisfy({ $0 == 0 }) {
            if b[10] == 0xFF, b[11] == 0xFF { return isPublicV4(b[12], b[13], b[14], b[15], allowLoopback: allowLoopback) }
            if b[10] == 0, b[11] == 0, b[12..<15].allSatisfy({ $0 == 0 }), b[15] == 1 { return allowLoopback }
            return false
        }
        // NAT64 (64:ff9b::/96) carries an IPv4 address in its last 4 bytes; 64:ff9b:1::/48 is local use.
        if b[0] == 0x00, b[1] == 0x64, b[2] == 0xFF, b[3] == 0x9B {
            guard b[4..<12].allSatisfy({ $0 == 0 }) else { return false }
            return isPublicV4(b[12], b[13], b[14], b[15], allowLoopback: false)
        }
        // 6to4 (2002::/16) carries an IPv4 address in bytes 2…5.
        if b[0] == 0x20, b[1] == 0x02 { return isPublicV4(b[2], b[3], b[4], b[5], allowLoopback: false) }
        // 2001::/23 (IETF protocol assignments, Teredo among them), 2001:db8::/32 and 3fff::/20 (documentation).
        if b[0] == 0x20, b[1] == 0x01, b[2] < 0x02 { return false }
        if b[0] == 0x20, b[1] == 0x01, b[2] == 0x0D, b[3] == 0xB8 { return false }
        if b[0] == 0x3F, b[1] == 0xFF, b[2] & 0xF0 == 0 { return false }  // 3fff::/20, documentation (RFC 9637)
        // Everything else must be global unicast (2000::/3): this refuses fc00::/7, fe80::/10,
        // fec0::/10, ff00::/8 and 100::/64 among the rest.
        return b[0] & 0xE0 == 0x20
    }

    private static func isPublicV4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8, allowLoopback: Bool) -> Bool {
        switch (a, b, c) {
        case (127, _, _): return allowLoopback
        case (0, _, _), (10, _, _), (169, 254, _), (192, 168, _): return false
        case (100, 64...127, _), (172, 16...31, _), (198, 18...19, _): return false
        case (192, 0, 0), (192, 0, 2), (192, 88, 99), (198, 51, 100), (203, 0, 113): return false
        default: return a < 224  // 224/4 multicast, 240/4 reserved, 255.255.255.255 broadcast
        }
    }

    /// Resolves `host` (getaddrinfo; an IP literal resolves to itself) and returns its
    /// addresses, or throws when it does not resolve or any address is not public. Blocking:
    /// call it off the event loops and the cooperative pool (``PushDispatcher`` uses NIO's
    /// thread pool).
    public static func check(host: String, allowLoopback: Bool) throws(PushEndpointRefusal) -> [IPAddress] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        defer { if let list { freeaddrinfo(list) } }
        guard status == 0 else { throw PushEndpointRefusal("the endpoint's host \(host) does not resolve", unresolved: true) }
        var addresses: [IPAddress] = []
        var cursor = list
        while let entry = cursor {
            if let sockaddr = entry.pointee.ai_addr {
                if entry.pointee.ai_family == AF_INET {
                    let raw = sockaddr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                    if let address = IPAddress(bytes: withUnsafeBytes(of: raw) { Array($0) }) { addresses.append(address) }
                } else if entry.pointee.ai_family == AF_INET6 {
                    let raw = sockaddr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
                    if let address = IPAddress(bytes: withUnsafeBytes(of: raw) { Array($0) }) { addresses.append(address) }
                }
            }
            cursor = entry.pointee.ai_next
        }
        guard !addresses.isEmpty else { throw PushEndpointRefusal("the endpoint's host \(host) has no IP address", unresolved: true) }
        if let refused = addresses.first(where: { !isPublic($0, allowLoopback: allowLoopback) }) {
            throw PushEndpointRefusal("the endpoint's host \(host) resolves to \(refused), which is not a public address")
        }
        return addresses
    }
}
