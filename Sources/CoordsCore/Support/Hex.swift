/// Base 16: lowercase digits out, either case in. The one hex codec behind peer ids, UUIDs, JSON
/// `\u` escapes, percent-decoding in links and the relay's mailbox keys. Pure computation: never
/// throws, never traps.
public enum Hex {
    /// The value (0…15) of the hex digit `c` (either case), or nil when `c` is not one.
    @inlinable
    public static func value(of c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c &- UInt8(ascii: "A") &+ 10
        default: nil
        }
    }

    /// The lowercase digit of the low four bits of `nibble`.
    @inlinable
    public static func digit(_ nibble: UInt8) -> UInt8 {
        let n = nibble & 0x0f
        return n < 10 ? UInt8(ascii: "0") &+ n : UInt8(ascii: "a") &+ (n &- 10)
    }

    /// `bytes` as lowercase hex, two digits a byte.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(digit(byte >> 4))
            out.append(digit(byte))
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes `text` spells, or nil unless it is an even number of hex digits (either case).
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let high = value(of: chars[i]), let low = value(of: chars[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }
}
