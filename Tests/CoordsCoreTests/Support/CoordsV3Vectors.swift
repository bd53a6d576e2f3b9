/// `coords-v3.json`: known answers for PROTOCOL.md §1–§5 from an independent implementation.
struct CoordsV3Vectors: Decodable, Sendable {
    struct Key: Decodable, Sendable, CustomStringConvertible {
        let seed: String, ed25519_public: String, ed25519_public_b64url: String
        let x25519_private_unclamped: String, x25519_public: String
        var description: String { "key \(ed25519_public_b64url.prefix(8))…" }
    }
    struct LocationValues: Decodable, Sendable {
        let latitude: Double, longitude: Double, altitude: Double, accuracy: Double, timestamp: UInt64
    }
    struct WireLocationCase: Decodable, Sendable, CustomStringConvertible {
        let input: LocationValues, wire_hex: String, decoded: LocationValues
        var description: String { "wire \(wire_hex)" }
    }
    struct Blob: Decodable, Sendable, CustomStringConvertible {
        let recipients: [Int], ephemeral_secret: String, dek: String, entry_nonces: [String], data_nonce: String
        let padding_entries: [String], location_wire_hex: String, blob_hex: String, not_readable_by: [Int]
        var description: String { "blob for \(recipients.count) recipients" }
    }
    struct BlobReject: Decodable, Sendable, CustomStringConvertible {
        let why: String, blob_hex: String
        var description: String { why }
    }
    struct UploadBody: Decodable, Sendable { let pubkey: String, timestamp: UInt64, blob: String, signature: String }
    struct Upload: Decodable, Sendable, CustomStringConvertible {
        let seed_index: Int, blob_hex: String, timestamp: UInt64, signed_message_hex: String, body: UploadBody
        var description: String { "upload at \(timestamp)" }
    }
    struct Link: Decodable, Sendable, CustomStringConvertible {
        let pubkey_b64url: String, server: String, name: String, link: String
        var description: String { link }
    }
    struct LinkParse: Decodable, Sendable, CustomStringConvertible {
        let link: String, ok: Bool
        let pubkey: String?, server: String?, name: String?, why: String?
        var description: String { why ?? link }
    }
    struct FetchExpected: Decodable, Sendable {
        let pubkey: String, location: LocationValues?, updated: UInt64?
    }
    struct FetchResponse: Decodable, Sendable {
        let reader_seed_index: Int, body: String, expected: [FetchExpected]
    }

    let keys: [Key]
    let wire_locations: [WireLocationCase]
    let padding: [[Int]]
    let blobs: [Blob]
    let blob_rejects: [BlobReject]
    let uploads: [Upload]
    let links: [Link]
    let link_parse: [LinkParse]
    let fetch_response: FetchResponse

    static func load() throws -> CoordsV3Vectors { try Fixtures.load("coords-v3.json") }
}
