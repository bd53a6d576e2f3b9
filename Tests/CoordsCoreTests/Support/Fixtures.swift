import Foundation
import Testing

@testable import CoordsCore

/// Shared test fixtures: vector files, hex, temporary directories.
enum Fixtures {
    /// `Tests/CoordsCoreTests/Vectors/`, the unchanged copies of `../shared/vectors/`.
    static let vectorsDirectory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Vectors")

    /// The repository root (three levels above this file).
    static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Decodes a vector file into `T`.
    static func load<T: Decodable>(_ name: String, as type: T.Type = T.self) throws -> T {
        let data = try Data(contentsOf: vectorsDirectory.appendingPathComponent(name))
        return try JSONDecoder().decode(T.self, from: data)
    }

    /// A fresh empty directory under the system temp folder; the caller removes it.
    static func makeTemporaryDirectory(_ label: String = "coords") throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(label)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// Hex for test vectors: ``Hex/decode(_:)``, throwing instead of returning nil.
extension Hex {
    struct InvalidHex: Error, CustomStringConvertible {
        let text: String
        var description: String { "not hex: \(text.prefix(40))" }
    }

    static func vector(_ text: String) throws -> [UInt8] {
        guard let bytes = decode(text) else { throw InvalidHex(text: text) }
        return bytes
    }
}

/// `standard.json`: published vectors (RFC 8032, RFC 7748, RFC 5869, GCM spec).
struct StandardVectors: Decodable, Sendable {
    struct Ed25519Case: Decodable, Sendable, CustomStringConvertible {
        let secret_key: String, public_key: String, message: String, signature: String
        var description: String { "RFC 8032 message of \(message.count / 2) bytes" }
    }
    struct ScalarMult: Decodable, Sendable { let scalar: String, u: String, output: String }
    struct Exchange: Decodable, Sendable {
        let alice_private: String, alice_public: String, bob_private: String, bob_public: String, shared: String
    }
    struct X25519Section: Decodable, Sendable {
        let scalar_mult: [ScalarMult]
        let exchange: Exchange
    }
    struct GCMCase: Decodable, Sendable, CustomStringConvertible {
        let `case`: Int, key: String, iv: String, plaintext: String, aad: String, ciphertext: String, tag: String
        var description: String { "GCM case \(`case`)" }
    }
    struct HKDFCase: Decodable, Sendable, CustomStringConvertible {
        let `case`: Int, ikm: String, salt: String, info: String, length: Int, okm: String
        var description: String { "RFC 5869 case \(`case`)" }
    }
    let ed25519_rfc8032: [Ed25519Case]
    let x25519_rfc7748: X25519Section
    let aes256gcm_mcgrew_viega: [GCMCase]
    let hkdf_sha256_rfc5869: [HKDFCase]

    static func load() throws -> StandardVectors { try Fixtures.load("standard.json") }
}

/// A database in a fresh temporary directory, removed (after closing) when the value is dropped.
final class TemporaryStore {
    let directory: URL
    let db: Database

    init(schema: Schema, options: Database.Options = Database.Options()) throws {
        directory = try Fixtures.makeTemporaryDirectory("store")
        db = try Database.open(path: directory.path, options: options, schema: schema)
    }

    deinit {
        db.close()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Test-only tables.
enum TestTables {
    static let numbers = TableDefinition<Int64, String>("numbers")
    static let names = TableDefinition<String, UInt64>("names")
    static let blobs = TableDefinition<Bytes32, [UInt8]>("blobs")
    static let schema = Schema(version: 1, tables: [numbers.erased, names.erased, blobs.erased])
}
