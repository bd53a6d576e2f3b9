import Testing

@testable import CoordsCore

@Suite struct Base64Tests {
    @Test(arguments: try CoordsV3Vectors.load().keys)
    func keyIdsRoundTrip(_ v: CoordsV3Vectors.Key) throws {
        let bytes = try Hex.vector(v.ed25519_public)
        #expect(Base64.encode(bytes) == v.ed25519_public_b64url)
        #expect(try Base64.decode(v.ed25519_public_b64url) == bytes)
        #expect(try Ed25519PublicKey(base64URL: v.ed25519_public_b64url).rawRepresentation == bytes)
    }

    @Test func urlSafeDecodingIsStrict() throws {
        let good = "a2lVVCplV5oC9ENTDIO_OG0ljiFRkbJVbkWSqkjeBgA"
        #expect(try Base64.decode(good).count == 32)
        for bad in [
            good + "=", good.replacingOccurrences(of: "_", with: "/"), " " + good, good + "\n",
            String(good.dropLast()) + "B",  // non-zero trailing bits
            String(good.dropLast(2)) + "*A", "a", "ab", "abcde"
        ] {
            #expect(throws: WireError.self, "\(bad)") { try Base64.decode(bad) }
        }
        #expect(try Base64.decode("") == [])
    }

    @Test func standardVariantWithPadding() throws {
        #expect(Base64.encode(Array("ab".utf8), variant: .standard) == "YWI=")
        #expect(try Base64.decode("YWI=", variant: .standard) == Array("ab".utf8))
        #expect(throws: WireError.self) { try Base64.decode("YWI", variant: .standard) }
        #expect(throws: WireError.self) { try Base64.decode("YW-=", variant: .standard) }
        #expect(Base64.encode([0xfb, 0xff], variant: .standard) == "+/8=")
        #expect(Base64.encode([0xfb, 0xff]) == "-_8")
    }

    @Test func invalidIdsAreTypedErrors() {
        for bad in ["", "abc", String(repeating: "A", count: 43) + "=", "//" + String(repeating: "A", count: 41)] {
            #expect(throws: WireError.self) { try Ed25519PublicKey(base64URL: bad) }
        }
    }
}

@Suite struct JSONTests {
    @Test func parsesObjectsInOrderWithExactIntegers() throws {
        let value = try JSONValue.parse(#" { "z": 1, "a": [true, false, null, -0.5e3], "big": 18446744073709551615, "s": "\u00e9\ud83d\udeb2\n\"" } "#)
        let object = try #require(value.objectValue)
        #expect(object.keys == ["z", "a", "big", "s"])
        #expect(object["big"]?.uint64Value == .max)
        #expect(object["z"]?.uint64Value == 1)
        #expect(object["a"]?.arrayValue?.count == 4)
        #expect(object["a"]?.arrayValue?[3].doubleValue == -500)
        #expect(object["s"]?.stringValue == "é🚲\n\"")
        #expect(object["missing"] == nil)
    }

    /// Both ways of building an object (a search for a few pairs, a dictionary for many) keep
    /// the first place of a key and the last value given for it.
    @Test(arguments: [3, 8, 9, 60])
    func objectsFromPairsKeepFirstPlacesAndLastValues(count: Int) {
        var pairs = (0..<count).map { ("k\($0)", JSONValue.integer(UInt64($0))) }
        pairs.append(("k1", .string("again")))
        pairs.append(("k0", .null))
        let object = JSONObject(pairs)
        #expect(object.keys == (0..<count).map { "k\($0)" })
        #expect(object["k0"] == .null)
        #expect(object["k1"] == .string("again"))
        #expect(object["k2"] == .integer(UInt64(2)))
        #expect(object["absent"] == nil)
    }

    @Test func serialisationRoundTrips() throws {
        let value: JSONValue = .object(["text": .string("a\"b\\c\n\u{01}é"), "n": .integer(UInt64(42)), "list": .array([.null, .bool(true)])])
        let text = value.serializedString
        #expect(text == #"{"text":"a\"b\\c\n\u0001é","n":42,"list":[null,true]}"#)
        #expect(try JSONValue.parse(text) == value)
    }

    @Test func refusesMalformedInput() {
        let bad = [
            "", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{\"a\":1 \"b\":2}", "01", "1.", "-", "1e", "+1",
            "\"unterminated", "\"bad \\x escape\"", "\"\\ud800\"", "\"\\udc00\"", "\"\u{01}\"", "tru", "nul",
            "{\"a\":1,\"a\":2}", "[1] [2]", "NaN", "'single'"
        ]
        for text in bad {
            #expect(throws: WireError.self, "\(text)") { try JSONValue.parse(text) }
        }
        #expect(throws: WireError.self) { try JSONValue.parse([0x22, 0xff, 0xfe, 0x22]) }  // invalid UTF-8 in a string
    }

    @Test func deepNestingIsAnErrorNotACrash() throws {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: WireError.self) { try JSONValue.parse(deep) }
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(throws: Never.self) { try JSONValue.parse(ok) }
    }
}
