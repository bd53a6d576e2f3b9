import Testing

@testable import CoordsCore

@Suite struct FriendLinkTests {
    @Test(arguments: try CoordsV3Vectors.load().links)
    func generatesTheExactLink(_ v: CoordsV3Vectors.Link) throws {
        let key = try Ed25519PublicKey(base64URL: v.pubkey_b64url)
        #expect(FriendLink(publicKey: key, server: v.server, name: v.name).link == v.link)
        // And it parses back to the same key and name.
        let parsed = try FriendLink.parse(v.link)
        #expect(parsed.id == v.pubkey_b64url)
        #expect(parsed.name == v.name)
    }

    @Test(arguments: try CoordsV3Vectors.load().link_parse)
    func parsesOrRefusesAsListed(_ v: CoordsV3Vectors.LinkParse) throws {
        if v.ok {
            let link = try FriendLink.parse(v.link)
            #expect(link.id == v.pubkey)
            #expect(link.server == v.server)
            #expect(link.name == v.name)
        } else {
            #expect(throws: WireError.self, "\(v.why ?? "")") { try FriendLink.parse(v.link) }
        }
    }

    @Test func errorsNameWhatIsWrong() {
        func message(_ link: String) -> String {
            do {
                _ = try FriendLink.parse(link)
                return ""
            } catch { return "\(error)" }
        }
        #expect(message("https://x/add/k#n").contains("coord://"))
        #expect(message("coord://x/add/k").contains("#"))
        #expect(message("coord://x/k#n").contains("/add/"))
        #expect(message("coord:///add/a2lVVCplV5oC9ENTDIO_OG0ljiFRkbJVbkWSqkjeBgA#n").contains("server"))
        #expect(message("coord://x/add/#n").contains("key part is empty"))
        #expect(message("coord://x/add/a2lVVCplV5oC9ENTDIO_OG0ljiFRkbJVbkWSqkjeBg#n").contains("31 bytes"))
        #expect(message("coord://x/add/a2lVVCplV5oC9ENTDIO_OG0ljiFRkbJVbkWSqkjeBgA#%C3").contains("UTF-8"))
    }

    @Test func malformedEscapesStayAsWritten() throws {
        let key = "a2lVVCplV5oC9ENTDIO_OG0ljiFRkbJVbkWSqkjeBgA"
        #expect(try FriendLink.parse("coord://h/add/\(key)#100%").name == "100%")
        #expect(try FriendLink.parse("coord://h/add/\(key)#%zz%4").name == "%zz%4")
        #expect(try FriendLink.parse("coord://h/add/\(key)#a%2Bb+c").name == "a+b+c")
        #expect(try FriendLink.parse("coord://h/add/\(key)#x#y").name == "x#y")
        #expect(try FriendLink.parse("\n\tcoord://h:1/p/add/\(key)#\u{00A0}").server == "https://h:1/p")
    }
}

@Suite struct MarkerColorTests {
    /// Expected values computed by an independent implementation (Python's `colorsys.hls_to_rgb`
    /// with the §5 hash, channels truncated), for the first eight vector keys.
    @Test(arguments: [
        ("A6EHv_POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg", 326, "#BD287C"),
        ("wrZlO17X0knD6RWU6jrrS_ZGltdaftqAJs7yA4RsQdE", 296, "#B328BD"),
        ("a2lVVCplV5oC9ENTDIO_OG0ljiFRkbJVbkWSqkjeBgA", 82, "#86BD28"),
        ("9Gue0V68FZ98yKO9Qn2X1i4x4zSUlYEA1IeR3gncTFU", 296, "#B328BD"),
        ("-Euo-dPhxibkCepfzjl-O6TAFO42Gf5bGt92AEAy1dk", 83, "#84BD28"),
        ("ruum4npbboqyaeYrWeM8N-T0JgvJtx0rS25p4RHbhCk", 154, "#28BD7C"),
        ("ytYeEduBJGbbvBVpP_Q8Ugp5XFN3fSagAWoAy3VubFY", 107, "#48BD28"),
        ("82WH1YWF2G-41owrkG8ENy2d5gzGrN68156WwGH8C5s", 250, "#4128BD")
    ])
    func matchesIndependentImplementation(_ id: String, _ hue: Int, _ hex: String) {
        let color = MarkerColor(id: id)
        #expect(color.hue == hue)
        #expect(color.hex == hex)
    }

    /// friend-link fuzz crash-9401c875: `coord://host//add/…` parsed to the server
    /// `https://host/`, but the link printed from it says `coord://host/add/…`, which parsed
    /// to `https://host`: one friend, two server strings.
    @Test func trailingSlashesOfTheHostAreDropped() throws {
        let key = try Ed25519SigningKey.generate().publicKey.base64URL
        let link = try FriendLink.parse("coord://relay.example//add/\(key)#Bob")
        #expect(link.server == "https://relay.example")
        let again = try FriendLink.parse(link.link)
        #expect(again.server == link.server && again.id == link.id && again.name == link.name)
        #expect(throws: WireError.self) { try FriendLink.parse("coord:////add/\(key)#Bob") }
    }
}
