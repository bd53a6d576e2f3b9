/// What reaches the user's terminal. Text from a remote party — a friend's message or name, a
/// relay's error code or message, an id a relay sent — may carry control sequences that move the
/// cursor, rewrite earlier lines, set the window title or reverse the text's direction. Every
/// line the CLI prints goes through ``safe(_:keepingNewlines:)``, so none of them can.
enum Terminal {
    /// `text` with every character that could drive a terminal written as a visible `\u{XXXX}`:
    /// the C0 controls (a line feed too, unless `keepingNewlines`), DEL, the C1 controls
    /// (U+0080–U+009F: U+009B is an 8-bit CSI), Unicode's bidirectional and invisible format
    /// characters (U+061C, U+200B, U+200E–U+200F, U+202A–U+202E, U+2060–U+2069, U+FEFF), and the
    /// line and paragraph separators (U+2028, U+2029). Everything else, emoji and joiners
    /// included, is unchanged.
    static func safe(_ text: some StringProtocol, keepingNewlines: Bool = false) -> String {
        guard text.unicodeScalars.contains(where: { isUnsafe($0, keepingNewlines: keepingNewlines) }) else { return String(text) }
        var out = ""
        out.reserveCapacity(text.utf8.count + 16)
        for scalar in text.unicodeScalars {
            if isUnsafe(scalar, keepingNewlines: keepingNewlines) {
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Whether `scalar` is one ``safe(_:keepingNewlines:)`` escapes.
    static func isUnsafe(_ scalar: Unicode.Scalar, keepingNewlines: Bool = false) -> Bool {
        switch scalar.value {
        case 0x0A: !keepingNewlines
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x061C, 0x200B, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A...0x202E, 0x2060...0x2069, 0xFEFF: true
        default: false
        }
    }

    /// A serialised JSON document with the same characters written as JSON escapes (`\u009b`),
    /// so `--json` output stays valid JSON and just as harmless on a terminal. (The serialiser
    /// already escapes C0 controls; outside strings JSON has none of these characters.)
    static func safeJSON(_ json: String) -> String {
        guard json.unicodeScalars.contains(where: { isUnsafe($0) }) else { return json }
        var out = ""
        for scalar in json.unicodeScalars {
            if isUnsafe(scalar) {
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
