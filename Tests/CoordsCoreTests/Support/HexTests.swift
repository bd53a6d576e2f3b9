import Testing

@testable import CoordsCore

@Suite struct HexTests {
    /// RFC 4648 §10's base16 test vectors.
    @Test func rfc4648Vectors() {
        let vectors = [("", ""), ("f", "66"), ("fo", "666f"), ("foo", "666f6f"), ("foob", "666f6f62"), ("fooba", "666f6f6261"), ("foobar", "666f6f626172")]
        for (text, hex) in vectors {
            #expect(Hex.encode(Array(text.utf8)) == hex)
            #expect(Hex.decode(hex) == Array(text.utf8))
            #expect(Hex.decode(hex.uppercased()) == Array(text.utf8))
        }
    }

    @Test func everyByteRoundTrips() {
        let all = (0...255).map { UInt8($0) }
        let text = Hex.encode(all)
        #expect(text.utf8.count == 512)
        #expect(text.hasPrefix("000102") && text.hasSuffix("fdfeff"))
        #expect(text == text.lowercased())
        #expect(Hex.decode(text) == all)
    }

    @Test func digitValuesAreExactlyTheHexDigits() {
        let digits = Array("0123456789abcdef".utf8)
        for c in UInt8.min...UInt8.max {
            let expected: UInt8? =
                digits.firstIndex(of: c).map(UInt8.init) ?? digits.firstIndex(of: c | 0x20).flatMap { c >= 0x41 && c <= 0x46 ? UInt8($0) : nil }
            #expect(Hex.value(of: c) == expected, "byte \(c)")
        }
        for nibble in UInt8.min...UInt8.max { #expect(Hex.digit(nibble) == digits[Int(nibble & 0x0f)]) }
    }

    @Test func malformedTextIsNil() {
        for bad in ["0", "abc", "0g", "g0", "zz", " 00", "00 ", "-1", "+f", "0x00", "é0"] {
            #expect(Hex.decode(bad) == nil, "\(bad)")
        }
    }
}
