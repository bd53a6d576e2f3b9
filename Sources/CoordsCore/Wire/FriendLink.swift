/// A `coord://` friend link (PROTOCOL.md §5): `coord://<host>/add/<pubkey b64u>#<name>`.
///
/// The name sits in the fragment, so no server that sees the link learns it.
public struct FriendLink: Sendable, Hashable {
    /// The friend's id: base64url (no padding) of their 32-byte public key.
    public var id: String
    /// The friend's relay, always with a scheme (`https://` + the link's host when parsed).
    public var server: String
    /// The display name the friend suggested (may be empty).
    public var name: String

    /// The link scheme.
    public static let scheme = "coord://"

    /// Creates a link from its parts (not validated; ``link`` encodes whatever is given).
    public init(id: String, server: String, name: String) {
        self.id = id
        self.server = server
        self.name = name
    }

    /// Creates a link for a public key.
    public init(publicKey: Ed25519PublicKey, server: String, name: String) {
        self.init(id: publicKey.base64URL, server: server, name: name)
    }

    /// The link text: the server without a leading `https://`/`http://` or trailing `/`, and the
    /// name percent-encoded (only `A–Z a–z 0–9 - _ . ~` stay literal; `%XX` is uppercase).
    public var link: String {
        Self.scheme + ServerURL.withoutScheme(server) + "/add/" + id + "#" + Self.percentEncode(name)
    }

    /// The public key, when ``id`` is a valid one.
    /// - Throws: ``WireError/invalidPublicKeyID(_:)``.
    public func publicKey() throws -> Ed25519PublicKey { try Ed25519PublicKey(base64URL: id) }

    /// Parses a link.
    ///
    /// Surrounding whitespace is ignored. The link must start with `coord://`, contain a `#`
    /// (the name after it may be empty), and `/add/` between a non-empty host and a non-empty
    /// key that is canonical base64url of exactly 32 bytes. In the name, `%XX` escapes are
    /// decoded (`+` stays `+`, a malformed escape is kept as written) and the result must be
    /// UTF-8. The server becomes `https://` + host (which may carry a port or a path; trailing
    /// slashes are dropped).
    /// - Throws: ``WireError/invalidFriendLink(_:)`` naming what is wrong.
    public static func parse(_ text: String) throws -> FriendLink {
        let trimmed = trimWhitespace(text)
        guard trimmed.hasPrefix(scheme) else {
            throw WireError.invalidFriendLink("it must start with \(scheme)")
        }
        let afterScheme = trimmed.dropFirst(scheme.count)
        guard let hash = afterScheme.firstIndex(of: "#") else {
            throw WireError.invalidFriendLink("it has no #name part (the name may be empty, the # is required)")
        }
        let path = afterScheme[..<hash]
        let encodedName = afterScheme[afterScheme.index(after: hash)...]
        guard let add = path.firstRange(of: "/add/") else {
            throw WireError.invalidFriendLink("it has no /add/ between the server and the key")
        }
        var host = path[..<add.lowerBound]
        let key = path[add.upperBound...]
        // Trailing slashes are dropped, as ``link`` drops them, so a link parses to the same
        // server as the link printed from it (found by the friend-link fuzz target).
        while host.hasSuffix("/") { host = host.dropLast() }
        guard !host.isEmpty else { throw WireError.invalidFriendLink("the server part is empty") }
        guard !key.isEmpty else { throw WireError.invalidFriendLink("the key part is empty") }
        guard let keyBytes = try? Base64.decode(String(key), field: "key") else {
            throw WireError.invalidFriendLink("the key is not canonical base64url without padding")
        }
        guard keyBytes.count == Ed25519PublicKey.byteCount else {
            throw WireError.invalidFriendLink("the key decodes to \(keyBytes.count) bytes instead of 32")
        }
        guard let name = percentDecode(encodedName) else {
            throw WireError.invalidFriendLink("the name is not valid UTF-8 once percent-decoded")
        }
        return FriendLink(id: String(key), server: "https://" + host, name: name)
    }

    static func percentEncode(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0f)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func percentDecode(_ text: Substring) -> String? {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "%"), i + 2 < bytes.count,
                let hi = Hex.value(of: bytes[i + 1]), let lo = Hex.value(of: bytes[i + 2])
            {
                out.append(hi << 4 | lo)
                i += 3
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    private static func trimWhitespace(_ text: String) -> Substring {
        var s = Substring(text)
        while let first = s.first, first.isWhitespace { s = s.dropFirst() }
        while let last = s.last, last.isWhitespace { s = s.dropLast() }
        return s
    }
}

/// The marker colour the Coords apps draw for a friend (PROTOCOL.md §5).
///
/// h = 0; for each UTF-8 byte b of the base64url id, h = h·31 + b (wrapping u64);
/// hue = h mod 360, saturation 0.65, lightness 0.45; HSL → RGB with each channel truncated.
public struct MarkerColor: Sendable, Hashable {
    /// The red channel (0…255).
    public var red: UInt8
    /// The green channel (0…255).
    public var green: UInt8
    /// The blue channel (0…255).
    public var blue: UInt8

    /// The hue in degrees (0…359) the colour was made from.
    public var hue: Int

    /// The colour for an id (base64url public key).
    public init(id: String) {
        var h: UInt64 = 0
        for byte in id.utf8 { h = h &* 31 &+ UInt64(byte) }
        hue = Int(h % 360)
        let saturation = 0.65
        let lightness = 0.45
        let chroma = (1 - abs(2 * lightness - 1)) * saturation
        let sector = Double(hue) / 60
        let x = chroma * (1 - abs(sector.truncatingRemainder(dividingBy: 2) - 1))
        let m = lightness - chroma / 2
        let (r, g, b): (Double, Double, Double)
        switch hue / 60 {
        case 0: (r, g, b) = (chroma, x, 0)
        case 1: (r, g, b) = (x, chroma, 0)
        case 2: (r, g, b) = (0, chroma, x)
        case 3: (r, g, b) = (0, x, chroma)
        case 4: (r, g, b) = (x, 0, chroma)
        default: (r, g, b) = (chroma, 0, x)
        }
        func channel(_ v: Double) -> UInt8 { UInt8(clamping: Int(((v + m) * 255).rounded(.towardZero))) }
        red = channel(r)
        green = channel(g)
        blue = channel(b)
    }

    /// `#RRGGBB`, uppercase.
    public var hex: String {
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = [UInt8(ascii: "#")]
        for c in [red, green, blue] { out += [digits[Int(c >> 4)], digits[Int(c & 0x0f)]] }
        return String(decoding: out, as: UTF8.self)
    }
}
