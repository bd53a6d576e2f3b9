import Foundation
import Testing

@testable import CoordsCore

/// Project Wycheproof (Vectors/wycheproof/, copied unchanged) through the crypto layer's public
/// API: every valid case gives the right answer, every invalid one is refused, and acceptable
/// ones are recorded (counted) rather than left untested.
@Suite struct WycheproofTests {
    /// One test case of a Wycheproof file (`testGroups[].tests[]`) with its group's fields, read
    /// by name: a missing or mistyped field throws, so a case can never pass on a default.
    struct Case {
        let group: JSONObject
        let test: JSONObject
        let file: String

        var id: String { test["tcId"]?.int64Value.map(String.init) ?? "?" }
        var result: String { test["result"]?.stringValue ?? "" }
        var isValid: Bool { result == "valid" }
        /// The case's field `name`, hex-decoded.
        func hex(_ name: String) throws -> [UInt8] { try Hex.vector(try Self.field(test, name, file, \.stringValue)) }
        /// The case's whole-number field `name`.
        func int(_ name: String) throws -> Int { Int(try Self.field(test, name, file, \.int64Value)) }
        /// The group's whole-number field `name` (key, nonce and tag sizes).
        func groupInt(_ name: String) throws -> Int { Int(try Self.field(group, name, file, \.int64Value)) }

        static func field<T>(_ object: JSONObject, _ name: String, _ file: String, _ read: (JSONValue) -> T?) throws -> T {
            guard let value = object[name].flatMap(read) else { throw VectorFileError(description: "\(file): a case without a usable \(name)") }
            return value
        }
    }

    struct VectorFileError: Error, CustomStringConvertible { let description: String }

    /// Every case of the file `name`; throws unless their number is the file's `numberOfTests`.
    static func cases(_ name: String, in directory: URL = Fixtures.vectorsDirectory.appendingPathComponent("wycheproof")) throws -> [Case] {
        let bytes = try [UInt8](Data(contentsOf: directory.appendingPathComponent(name)))
        guard let file = try JSONValue.parse(bytes).objectValue, let groups = file["testGroups"]?.arrayValue,
            let count = file["numberOfTests"]?.int64Value
        else { throw VectorFileError(description: "\(name) is not a Wycheproof file") }
        let cases = groups.compactMap(\.objectValue).flatMap { group in
            (group["tests"]?.arrayValue ?? []).compactMap(\.objectValue).map { Case(group: group, test: $0, file: name) }
        }
        guard cases.count == count else { throw VectorFileError(description: "\(name): \(cases.count) cases read, \(count) announced") }
        return cases
    }

    @Test func ed25519Verify() throws {
        for vector in try Self.cases("ed25519_test.json") {
            // The group's key: {"publicKey": {"pk": hex, …}}; a key the API refuses verifies nothing.
            let pk = try Case.field(vector.group, "publicKey", vector.file, \.objectValue)
            let key = try? Ed25519PublicKey(rawRepresentation: try Hex.vector(try Case.field(pk, "pk", vector.file, \.stringValue)))
            let verified = key?.isValidSignature(try vector.hex("sig"), for: try vector.hex("msg")) ?? false
            #expect(verified == vector.isValid, "ed25519 tcId \(vector.id) (\(vector.result))")
        }
    }

    @Test func x25519SharedSecrets() throws {
        var acceptableAccepted = 0
        var acceptableRefused = 0
        for vector in try Self.cases("x25519_test.json") {
            let scalar = try X25519PrivateKey(rawRepresentation: SecretBytes(copying: try vector.hex("private")))
            let peer = try X25519PublicKey(rawRepresentation: try vector.hex("public"))
            let shared = try? scalar.sharedSecret(with: peer).withUnsafeBytes { Array($0) }
            switch vector.result {
            case "valid":
                #expect(shared == (try vector.hex("shared")), "x25519 tcId \(vector.id)")
            case "acceptable":
                if let shared {
                    // Accepted: then the answer must be the right one.
                    #expect(shared == (try vector.hex("shared")), "x25519 tcId \(vector.id)")
                    acceptableAccepted += 1
                } else {
                    // Refused: only ever for an all-zero result (a small-order peer key).
                    #expect(try vector.hex("shared") == [UInt8](repeating: 0, count: 32), "x25519 tcId \(vector.id) refused")
                    acceptableRefused += 1
                }
            default:
                #expect(shared == nil, "x25519 tcId \(vector.id) must be refused")
            }
        }
        // Recorded: libsodium refuses the 31 cases whose shared secret is zero and accepts the rest.
        #expect(acceptableRefused == 31)
        #expect(acceptableAccepted == 254 - 31)
    }

    @Test(.enabled(if: AES256GCM.isAvailable, "AES-256-GCM needs AES-NI")) func aes256GCM() throws {
        var applicable = 0
        for vector in try Self.cases("aes_gcm_test.json") {
            let key = SecretBytes(copying: try vector.hex("key"))
            let iv = try vector.hex("iv")
            let aad = try vector.hex("aad")
            let message = try vector.hex("msg")
            let sealed = try vector.hex("ct") + (try vector.hex("tag"))
            guard try vector.groupInt("keySize") == 256, try vector.groupInt("ivSize") == 96, try vector.groupInt("tagSize") == 128 else {
                // Outside what this API offers (AES-128/192, other nonce sizes): refused with a
                // parameter error, never a wrong answer.
                #expect(throws: CryptoError.self) { try AES256GCM.open(sealed, key: key, nonce: AES256GCM.Nonce(iv), associatedData: aad) }
                continue
            }
            applicable += 1
            if vector.isValid {
                #expect(try AES256GCM.open(sealed, key: key, nonce: AES256GCM.Nonce(iv), associatedData: aad) == message, "aes-gcm tcId \(vector.id)")
                #expect(try AES256GCM.seal(message, key: key, nonce: AES256GCM.Nonce(iv), associatedData: aad) == sealed, "aes-gcm tcId \(vector.id)")
            } else {
                #expect(throws: CryptoError.authenticationFailed, "aes-gcm tcId \(vector.id)") {
                    try AES256GCM.open(sealed, key: key, nonce: AES256GCM.Nonce(iv), associatedData: aad)
                }
            }
        }
        #expect(applicable > 40)
    }

    @Test func hkdfSHA256() throws {
        for vector in try Self.cases("hkdf_sha256_test.json") {
            let okm = try? HKDF.deriveKey(
                inputKeyMaterial: try vector.hex("ikm"), salt: try vector.hex("salt"), info: try vector.hex("info"),
                outputByteCount: try vector.int("size")
            ).withUnsafeBytes { Array($0) }
            if vector.isValid {
                #expect(okm == (try vector.hex("okm")), "hkdf tcId \(vector.id)")
            } else {
                #expect(okm == nil, "hkdf tcId \(vector.id) must be refused")
            }
        }
    }

    /// The reader itself: a file whose count does not match, or a case without a field, is an
    /// error — never a test that passes on nothing.
    @Test func theVectorReaderRefusesIncompleteFiles() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wycheproof-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(#"{"numberOfTests": 2, "testGroups": [{"tests": [{"tcId": 1, "result": "valid"}]}]}"#.utf8)
            .write(to: directory.appendingPathComponent("short.json"))
        #expect(throws: VectorFileError.self) { _ = try Self.cases("short.json", in: directory) }
        try Data(#"{"testGroups": []}"#.utf8).write(to: directory.appendingPathComponent("bare.json"))
        #expect(throws: VectorFileError.self) { _ = try Self.cases("bare.json", in: directory) }
        let vectors = try Self.cases("hkdf_sha256_test.json")
        #expect(vectors.count > 80)
        #expect(throws: (any Error).self) { _ = try vectors[0].hex("no such field") }
        #expect(try vectors[0].groupInt("keySize") > 0)
        #expect(throws: (any Error).self) { _ = try vectors[0].groupInt("ivSize") }  // an AEAD field HKDF groups lack
    }
}
