import Testing

@testable import CoordsCLI

/// Issue 37, defect 9: nothing a remote party wrote reaches the terminal as a control sequence.
@Suite struct TerminalTests {
    /// Every code point class: C0, DEL, C1, bidi and invisible format characters are escaped;
    /// printable ASCII, Latin-1, other scripts, emoji (with joiners and variation selectors) are not.
    @Test func everyCodePointClass() {
        var unsafe: [UInt32] = Array(0x00...0x1F) + [0x7F] + Array(0x80...0x9F)
        unsafe += [0x061C, 0x200B, 0x200E, 0x200F, 0x2028, 0x2029] + Array(0x202A...0x202E) + Array(0x2060...0x2069) + [0xFEFF]
        for value in unsafe {
            let scalar = Unicode.Scalar(value)!
            let text = "a" + String(Character(scalar)) + "b"
            let safe = Terminal.safe(text)
            #expect(safe == "a\\u{\(String(value, radix: 16, uppercase: true))}b", "U+\(String(value, radix: 16))")
            #expect(!safe.unicodeScalars.contains { Terminal.isUnsafe($0) })
        }
        let kept = "Zürich, Ελλάδα, 東京, مرحبا, 👨‍👩‍👧 ❤️ ~!@#$%^&*()_+{}|:\"<>?`-=[]\\;',./"
        #expect(Terminal.safe(kept) == kept)
        for value in UInt32(0x20)...0x7E { #expect(!Terminal.isUnsafe(Unicode.Scalar(value)!)) }
        for value in UInt32(0xA0)...0xFF { #expect(!Terminal.isUnsafe(Unicode.Scalar(value)!)) }
    }

    @Test func newlinesOnlyWhereTheCLIPutThem() {
        #expect(Terminal.safe("one\ntwo") == "one\\u{A}two")
        #expect(Terminal.safe("one\ntwo\u{1B}[2J", keepingNewlines: true) == "one\ntwo\\u{1B}[2J")
        #expect(CLIFailure("relay says \u{9B}31m\nhi").description == "relay says \\u{9B}31m\nhi")
    }

    @Test func jsonStaysValidJSON() {
        #expect(Terminal.safeJSON(#"{"a":"x\#u{9B}y\#u{202E}z"}"#) == #"{"a":"x\u009by\u202ez"}"#)
        #expect(Terminal.safeJSON(#"{"a":"plain"}"#) == #"{"a":"plain"}"#)
    }
}
