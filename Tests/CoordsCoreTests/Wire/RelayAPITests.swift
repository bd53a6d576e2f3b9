import Testing

@testable import CoordsCore

@Suite struct RelayAPITests {
    static func identity(_ index: Int) throws -> Ed25519SigningKey {
        try Ed25519SigningKey(seed: Hex.vector(CoordsV3Vectors.load().keys[index].seed))
    }

    @Test(arguments: try CoordsV3Vectors.load().uploads)
    func uploadSignatureAndBodyMatchTheVectors(_ v: CoordsV3Vectors.Upload) throws {
        let signer = try Self.identity(v.seed_index)
        let blob = try Hex.vector(v.blob_hex)
        #expect(Hex.encode(RelayAPI.uploadSignedMessage(blob: blob, timestamp: v.timestamp)) == v.signed_message_hex)
        let request = try RelayAPI.prepareUpload(blob: blob, timestamp: v.timestamp, signer: signer, server: "https://coord.is/")
        #expect(request.url == "https://coord.is/api/location")
        #expect(request.method == "PUT")
        #expect(request.header("content-type") == "application/json")
        let body = try #require(try JSONValue.parse(request.body).objectValue)
        #expect(body.keys == ["pubkey", "timestamp", "blob", "signature"])
        #expect(body["pubkey"]?.stringValue == v.body.pubkey)
        #expect(body["timestamp"]?.uint64Value == v.body.timestamp)
        #expect(body["blob"]?.stringValue == v.body.blob)
        #expect(body["signature"]?.stringValue == v.body.signature)
    }

    @Test func serverURLsAreNormalisedOrRefused() throws {
        #expect(try RelayAPI.endpoint(server: "https://coord.is", path: "/api/location") == "https://coord.is/api/location")
        #expect(try RelayAPI.endpoint(server: "http://127.0.0.1:8080///", path: "/api/version") == "http://127.0.0.1:8080/api/version")
        #expect(try RelayAPI.endpoint(server: "https://a.example/base/", path: "/api/location") == "https://a.example/base/api/location")
        for bad in ["", "coord.is", "ftp://coord.is", "https://", "https:///x", "https://a b", "https://a\n", "https://a#frag", "https://:80"] {
            #expect(throws: WireError.self, "\(bad)") { try RelayAPI.endpoint(server: bad, path: "/api/location") }
        }
    }

    @Test func fetchesAreGroupedByServerAndBatchedByFifty() throws {
        var targets: [RelayAPI.FetchTarget] = []
        for i in 0..<120 { targets.append(.init(id: "id\(i)", server: i % 3 == 0 ? "https://b.example" : "https://a.example")) }
        targets.append(.init(id: "id1", server: "https://a.example"))  // duplicate
        targets.append(.init(id: "x", server: "https://a.example/"))  // a different exact server string
        let fetches = try RelayAPI.prepareFetches(targets)
        #expect(fetches.map(\.server) == ["https://b.example", "https://a.example", "https://a.example", "https://a.example/"])
        #expect(fetches.map(\.ids.count) == [40, 50, 30, 1])
        #expect(fetches.allSatisfy { $0.ids.count <= 50 && $0.request.method == "POST" })
        let all = fetches.flatMap(\.ids)
        #expect(Set(all).count == 121)
        let body = try #require(try JSONValue.parse(fetches[1].request.body).objectValue)
        #expect(body["ids"]?.arrayValue?.compactMap(\.stringValue) == fetches[1].ids)
        #expect(fetches[3].request.url == "https://a.example/api/location")
        #expect(try RelayAPI.prepareFetches([]).isEmpty)
    }

    @Test func fetchResponseVector() throws {
        let v = try CoordsV3Vectors.load().fetch_response
        let reader = try X25519PrivateKey(ed25519: Self.identity(v.reader_seed_index))
        let results = try RelayAPI.processFetchResponse(Array(v.body.utf8), reader: reader)
        #expect(results.map(\.id) == v.expected.map(\.pubkey))
        for (result, expected) in zip(results, v.expected) {
            #expect(result.updated == expected.updated, "\(expected.pubkey)")
            if let location = expected.location {
                let opened = try #require(result.location)
                #expect(opened.latitude == location.latitude)
                #expect(opened.longitude == location.longitude)
                #expect(opened.altitude == location.altitude)
                #expect(Double(opened.accuracy) == location.accuracy)
                #expect(opened.timestamp == location.timestamp)
                #expect(result.authenticity == .unverified)
                #expect(result.error == nil)
            } else {
                #expect(result.location == nil)
            }
        }
        #expect(results[1].error == .notARecipient)
        #expect(results[2].authenticity == .absent)
        #expect(results[2].error == nil)
    }

    /// Builds a response entry the way a CoordsCore relay does (§6): with the uploader's signature.
    static func signedEntry(blob: [UInt8], uploader: Ed25519SigningKey, timestamp: UInt64, updated: UInt64) -> JSONValue {
        let body = RelayAPI.uploadBody(blob: blob, timestamp: timestamp, signer: uploader).objectValue
        return .object([
            "blob": body?["blob"] ?? .null, "updated": .integer(updated),
            "signature": body?["signature"] ?? .null, "timestamp": .integer(timestamp)
        ])
    }

    @Test func signedEntriesAreVerifiedAndSubstitutionsDetected() throws {
        let alice = try Ed25519SigningKey.generate()
        let bob = try Ed25519SigningKey.generate()
        let mallory = try Ed25519SigningKey.generate()
        let reader = try X25519PrivateKey(ed25519: bob)
        let here = try Location(latitude: 52.52, longitude: 13.405, timestamp: 1_000).wire
        let blob = try LocationBlob.seal(here, for: [alice.publicKey, bob.publicKey])
        // Mallory seals a fake position for Bob and the relay files it under Alice's id.
        let fake = try LocationBlob.seal(try Location(latitude: 0, longitude: 0, timestamp: 2_000).wire, for: [mallory.publicKey, bob.publicKey])
        let forged = Self.signedEntry(blob: fake, uploader: mallory, timestamp: 100, updated: 101)
        var replaced = Self.signedEntry(blob: blob, uploader: alice, timestamp: 100, updated: 101).objectValue ?? JSONObject()
        replaced["timestamp"] = .integer(UInt64(99))  // signed time altered
        let body: JSONValue = .object(
            JSONObject([
                (alice.publicKey.base64URL, Self.signedEntry(blob: blob, uploader: alice, timestamp: 100, updated: 101)),
                (mallory.publicKey.base64URL + "x", .null)
            ]))
        let results = try RelayAPI.processFetchResponse(body.serialized(), reader: reader)
        #expect(results[0].authenticity == .verified)
        #expect(results[0].location == here.location)
        #expect(results[0].uploadTimestamp == 100)
        #expect(results[1].authenticity == .absent)

        for tampered in [forged, JSONValue.object(replaced)] {
            let response: JSONValue = .object(JSONObject([(alice.publicKey.base64URL, tampered)]))
            let result = try #require(try RelayAPI.processFetchResponse(response.serialized(), reader: reader).first)
            #expect(result.authenticity == .tampered)
            #expect(result.location == nil)
            #expect(result.error == .tamperedEntry(id: alice.publicKey.base64URL))
            #expect(result.updated == 101)
        }
    }

    @Test func strictModeRefusesUnverifiedEntries() throws {
        let v = try CoordsV3Vectors.load().fetch_response
        let reader = try X25519PrivateKey(ed25519: Self.identity(v.reader_seed_index))
        let results = try RelayAPI.processFetchResponse(Array(v.body.utf8), reader: reader, options: .init(requireSignatures: true))
        #expect(results[0].location == nil)
        #expect(results[0].error == .unverifiedEntry(id: v.expected[0].pubkey))
        #expect(results[0].updated == 1_800_000_000)
    }

    @Test func oneBadEntryNeverFailsTheOthers() throws {
        let v = try CoordsV3Vectors.load().fetch_response
        let reader = try X25519PrivateKey(ed25519: Self.identity(v.reader_seed_index))
        var object = try #require(try JSONValue.parse(v.body).objectValue)
        object["junk1"] = .string("not an object")
        object["junk2"] = .object(["blob": .string("!!!"), "updated": .integer(UInt64(5))])
        object["junk3"] = .object(["updated": .integer(UInt64(6))])
        object["junk4"] = .object(["blob": .string("AAAA"), "updated": .integer(UInt64(7))])
        object["junk5"] = .object(["blob": .string("AAAA"), "signature": .string("AAAA")])
        let results = try RelayAPI.processFetchResponse(JSONValue.object(object).serialized(), reader: reader)
        #expect(results.count == 8)
        #expect(results[0].location != nil)
        #expect(results[3...].allSatisfy { $0.location == nil && $0.error != nil })
        #expect(results[4].updated == 5)
        #expect(results[6].error == .blobTooShort(actual: 3, minimum: 123))
        #expect(results[7].authenticity == .tampered)
        for body in ["", "[]", "null", "not json", "{\"a\":1,\"a\":2}"] {
            #expect(throws: WireError.self, "\(body)") { try RelayAPI.processFetchResponse(Array(body.utf8), reader: reader) }
        }
        #expect(try RelayAPI.processFetchResponse(Array("{}".utf8), reader: reader).isEmpty)
    }

    @Test func errorBodiesInBothStyles() {
        #expect(
            RelayAPI.error(status: 401, body: Array("timestamp too old".utf8))
                == .relayError(status: 401, code: nil, message: "timestamp too old"))
        #expect(
            RelayAPI.error(status: 429, body: Array(#"{"error":"rate_limited","message":"slow down"}"#.utf8))
                == .relayError(status: 429, code: "rate_limited", message: "slow down"))
        #expect(RelayAPI.error(status: 500, body: []) == .relayError(status: 500, code: nil, message: "(empty body)"))
        if case .relayError(_, _, let message) = RelayAPI.error(status: 400, body: Array(String(repeating: "x\u{1b}", count: 2000).utf8)) {
            #expect(message.count <= 501)
            #expect(!message.contains("\u{1b}"))
        } else {
            Issue.record("expected a relay error")
        }
    }

    @Test func deleteRequestIsSignedWithItsOwnDomain() throws {
        let key = try Ed25519SigningKey.generate()
        let request = try RelayAPI.prepareDelete(timestamp: 1_800_000_000, signer: key, server: "https://coord.is")
        #expect(request.method == "DELETE")
        let body = try #require(try JSONValue.parse(request.body).objectValue)
        let signature = try Base64.decode(try #require(body["signature"]?.stringValue))
        let message = Array("coords-delete-v1".utf8) + [0, 0, 0, 0, 0x6b, 0x49, 0xd2, 0x00]
        #expect(RelayAPI.deleteSignedMessage(timestamp: 1_800_000_000) == message)
        #expect(key.publicKey.isValidSignature(signature, for: message))
        // A delete signature can never pass as an upload signature of an empty-ish blob.
        #expect(!key.publicKey.isValidSignature(signature, for: RelayAPI.uploadSignedMessage(blob: [], timestamp: 1_800_000_000)))
    }

    @Test func versionAnswers() throws {
        let version = try RelayAPI.parseVersion(Array(#"{"name":"coords","version":"2026.1.6"}"#.utf8))
        #expect(version.isCompatible)
        #expect(!RelayAPI.ServerVersion(name: "coords", version: "2026.1.5").isCompatible)
        #expect(RelayAPI.ServerVersion(name: "coords", version: "2027.0").isCompatible)
        #expect(!RelayAPI.ServerVersion(name: "other", version: "2027.0.0").isCompatible)
        #expect(!RelayAPI.ServerVersion(name: "coords", version: "banana").isCompatible)
        #expect(throws: WireError.self) { try RelayAPI.parseVersion(Array("{}".utf8)) }
        #expect(try RelayAPI.prepareVersionCheck(server: "https://coord.is/").url == "https://coord.is/api/version")
    }

    @Test func preparedRequestRecordForHosts() throws {
        let request = PreparedRequest(
            url: "https://x.example/api/location", method: "POST",
            headers: [.init(name: "Content-Type", value: "application/json")], body: Array("{}".utf8))
        #expect(
            request.json.serializedString
                == #"{"url":"https://x.example/api/location","method":"POST","headers":{"Content-Type":"application/json"},"body_base64":"e30=","max_response_bytes":4394800}"#
        )
    }

    /// PROTOCOL.md §4.1: how much of each answer a host reads, derived from the protocol's limits.
    @Test func responseLimitsFollowTheEndpoint() throws {
        #expect(ClientLimits.fetchAnswerBytes == 4_394_800 && ClientLimits.mailboxAnswerBytes == 17_681_200)
        let fetch = try #require(try RelayAPI.prepareFetches([RelayAPI.FetchTarget(id: "a", server: "https://x.example:8443/")]).first)
        #expect(fetch.request.maximumResponseBytes == ClientLimits.fetchAnswerBytes)
        for (method, url, limit) in [
            ("GET", "https://x.example/v1/relay/messages?recipientID=ab&limit=100", ClientLimits.mailboxAnswerBytes),
            ("get", "HTTP://x.example/v1/relay/messages", ClientLimits.mailboxAnswerBytes),
            ("PUT", "https://x.example/api/location", ClientLimits.smallAnswerBytes),
            ("POST", "https://x.example/v1/relay/messages", ClientLimits.smallAnswerBytes),
            ("POST", "https://x.example/v1/relay/messages/0f7c1b52-8a3e-4d6f-9b0a-1c2d3e4f5a6b/ack", ClientLimits.smallAnswerBytes),
            ("GET", "https://x.example/api/version", ClientLimits.smallAnswerBytes),
            ("POST", "https://x.example/api/location#frag", ClientLimits.fetchAnswerBytes),
            ("POST", "https://x.example", ClientLimits.smallAnswerBytes), ("POST", "not a url", ClientLimits.smallAnswerBytes),
            ("GET", "https://x.example/v1/relay/objects/AQEBAQEBAQEBAQEBAQEBAQ", Int(Objects.maximumStored)),
            ("PUT", "https://x.example/v1/relay/objects/AQEBAQEBAQEBAQEBAQEBAQ?offset=0&stored=16&expires=1", ClientLimits.smallAnswerBytes)
        ] {
            #expect(ClientLimits.maximumResponseBytes(method: method, url: url) == limit, "\(method) \(url)")
        }
        #expect(fetch.request.json.objectValue?["max_response_bytes"]?.uint64Value == UInt64(ClientLimits.fetchAnswerBytes))
    }
}
