import Testing

@testable import CoordsCore

/// The options hosts pass as JSON, validated in the core (the C ABI passes them through).
@Suite struct AppOptionsJSONTests {
    func options(_ text: String) throws -> CoordsApp.Options {
        guard let object = try JSONValue.parse(Array(text.utf8)).objectValue else { throw OptionsError("not an object") }
        return try CoordsApp.Options(json: object)
    }

    @Test func validOptionsSetEveryField() throws {
        let parsed = try options(
            #"{"passphrase": "pw", "keychain_cost": "minimum", "backup_cost": {"ops_limit": 1, "mem_limit": 8192}, "update_capacity": 7, "durability": "no_sync", "places": "none"}"#
        )
        #expect(
            parsed.keychainParameters.opsLimit == Argon2id.Parameters.minimum.opsLimit && parsed.backupParameters.opsLimit == 1
                && parsed.backupParameters.memLimitBytes == 8192)
        #expect(parsed.updateCapacity == 7 && parsed.store.durability == .noSync)
        if case .none = parsed.places {} else { Issue.record("places should be none") }
        #expect(
            try options(#"{"key_base64": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}"#).keychainParameters.memLimitBytes
                == Argon2id.Parameters.interactive.memLimitBytes)
    }

    @Test func everyBadOptionIsRefusedWithItsName() {
        let cases: [(String, String)] = [
            (#"{"passphrase": "pw", "pasphrase": "x"}"#, "unknown option \"pasphrase\""),
            (#"{}"#, "needs \"passphrase\" or \"key_base64\""),
            (#"{"key_base64": "AAAA"}"#, "key_base64 must be 32 bytes"),
            (#"{"passphrase": "pw", "keychain_cost": "fast"}"#, "unknown cost preset"),
            (#"{"passphrase": "pw", "backup_cost": {"ops_limit": 0, "mem_limit": 1}}"#, "opsLimit"),
            (#"{"passphrase": "pw", "backup_cost": 5}"#, "a cost is"),
            (#"{"passphrase": "pw", "update_capacity": 0}"#, "update_capacity must be"),
            (#"{"passphrase": "pw", "update_capacity": 1e30}"#, "update_capacity must be"),
            (#"{"passphrase": "pw", "durability": "sometimes"}"#, "durability must be"),
            (#"{"passphrase": "pw", "places": 3}"#, "places must be")
        ]
        for (json, message) in cases {
            do {
                _ = try options(json)
                Issue.record("\(json) was accepted")
            } catch let error as OptionsError {
                #expect(error.code == 103 && error.description.contains(message), "\(json): \(error)")
            } catch {
                Issue.record("\(json): \(error)")
            }
        }
        #expect(Argon2id.Parameters(preset: "moderate")?.memLimitBytes == Argon2id.Parameters.moderate.memLimitBytes)
        #expect(Argon2id.Parameters(preset: "Moderate") == nil)
    }
}
