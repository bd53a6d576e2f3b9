/// A relay's server URL, read one way everywhere: `http://` or `https://` (any letter case)
/// followed by a host (not empty, not starting with `/` or `:`), no whitespace, control
/// characters, `#` or `?`, and trailing slashes dropped. ``RelayAPI/endpoint(server:path:)``
/// validates with it, friend links print it without the scheme, the live channel turns its
/// scheme into `ws`/`wss`, and "is this my own relay" compares its rests.
public struct ServerURL: Sendable, Equatable {
    /// The URL as given, without trailing slashes.
    public let text: String
    /// Whether the scheme is `https`.
    public let isSecure: Bool
    /// What follows the scheme: host, optional port and path (no trailing slash).
    public let rest: Substring

    /// Reads `server`; nil when it is not an http(s) URL of that shape.
    public init?(_ server: String) {
        guard let (secure, rest, trimmed) = Self.split(server), let first = rest.first, first != "/", first != ":",
            !trimmed.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7f || $0 == "#" || $0 == "?" })
        else { return nil }
        (text, isSecure, self.rest) = (String(trimmed), secure, rest)
    }

    /// `server` without its `http://`/`https://` scheme and trailing slashes, or `server` without
    /// trailing slashes when it has no such scheme (what a friend link shows, what "the same
    /// relay" compares). Never fails.
    public static func withoutScheme(_ server: String) -> Substring {
        split(server)?.rest ?? trimmingSlashes(Substring(server))
    }

    /// The scheme (secure or not), the rest after it, and the whole without trailing slashes.
    private static func split(_ server: String) -> (secure: Bool, rest: Substring, trimmed: Substring)? {
        let trimmed = trimmingSlashes(Substring(server))
        for (scheme, secure) in [("https://", true), ("http://", false)] {
            guard trimmed.utf8.count >= scheme.utf8.count, trimmed.prefix(scheme.count).lowercased() == scheme else { continue }
            return (secure, trimmed.dropFirst(scheme.count), trimmed)
        }
        return nil
    }

    private static func trimmingSlashes(_ text: Substring) -> Substring {
        var text = text
        while text.hasSuffix("/") { text = text.dropLast() }
        return text
    }
}
