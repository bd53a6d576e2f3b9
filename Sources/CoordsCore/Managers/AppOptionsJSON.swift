/// An option a host gave as JSON does not parse (the C ABI's `options_json`): code 103, the C
/// ABI's `COORDS_ERR_INVALID_ARGUMENT`. The description names the field.
public struct OptionsError: CoordsCoreError {
    public var code: Int32 { 103 }
    public let description: String

    /// An error whose description names the field and what is wrong with it.
    public init(_ description: String) { self.description = description }
}

extension Argon2id.Parameters {
    /// A named cost: `minimum`, `interactive` or `moderate`; nil for any other name.
    public init?(preset: String) {
        switch preset {
        case "minimum": self = .minimum
        case "interactive": self = .interactive
        case "moderate": self = .moderate
        default: return nil
        }
    }

    /// A cost as JSON: a preset name, or `{"ops_limit": n, "mem_limit": n}` (checked against
    /// libsodium's limits).
    /// - Throws: ``OptionsError``.
    public init(json value: JSONValue) throws {
        if let name = value.stringValue {
            guard let preset = Self(preset: name) else { throw OptionsError("unknown cost preset \(value.serializedString)") }
            self = preset
            return
        }
        guard let object = value.objectValue, let ops = object["ops_limit"]?.uint64Value, let mem = object["mem_limit"]?.uint64Value else {
            throw OptionsError("a cost is \"minimum\", \"interactive\", \"moderate\" or {\"ops_limit\": n, \"mem_limit\": n}")
        }
        self.init(opsLimit: ops, memLimitBytes: mem)
        do {
            try validate()
        } catch {
            throw OptionsError("\(error)")
        }
    }
}

extension CoordsApp.Options {
    /// The option names ``init(json:keychain:)`` knows.
    public static let jsonKeys: Set<String> = ["passphrase", "key_base64", "keychain_cost", "backup_cost", "update_capacity", "durability", "places"]

    /// Options from the JSON object hosts pass (the C ABI's `options_json`, docs/ABI.md):
    /// `passphrase` or `key_base64` (standard base64, 32 bytes) seals the file keychain unless
    /// `keychain` is given; `keychain_cost` and `backup_cost` (``Argon2id/Parameters/init(json:)``);
    /// `update_capacity` (1…1,000,000); `durability` (`durable`, `no_meta_sync`, `no_sync`);
    /// `places` (`bundled`, `none`, or the path of a CGEO file). Unknown keys are refused, so a
    /// misspelt option is never silently ignored.
    /// - Throws: ``OptionsError``; ``GeocodingError`` when the `places` file does not load.
    public init(json object: JSONObject, keychain: (any Keychain)? = nil) throws {
        if let unknown = object.keys.first(where: { !Self.jsonKeys.contains($0) }) { throw OptionsError("unknown option \"\(unknown)\"") }
        if let keychain {
            self.init(keychain: .custom(keychain))
        } else if let passphrase = object["passphrase"]?.stringValue {
            self.init(keychain: .file(.passphrase(passphrase)))
        } else if let key = object["key_base64"]?.stringValue {
            guard let bytes = try? Base64.decode(key, variant: .standard, field: "key_base64"), bytes.count == 32 else {
                throw OptionsError("key_base64 must be 32 bytes in standard base64")
            }
            self.init(keychain: .file(.key(SecretBytes(copying: bytes))))
        } else {
            throw OptionsError("options_json needs \"passphrase\" or \"key_base64\" to seal the keychain")
        }
        keychainParameters = try object["keychain_cost"].map(Argon2id.Parameters.init(json:)) ?? .interactive
        backupParameters = try object["backup_cost"].map(Argon2id.Parameters.init(json:)) ?? .moderate
        if let capacity = object["update_capacity"] {
            guard let n = capacity.uint64Value, n >= 1, n <= 1_000_000 else { throw OptionsError("update_capacity must be 1…1000000") }
            updateCapacity = Int(n)
        }
        switch object["durability"]?.stringValue {
        case nil, "durable": store.durability = .durable
        case "no_meta_sync": store.durability = .noMetaSync
        case "no_sync": store.durability = .noSync
        default: throw OptionsError("durability must be \"durable\", \"no_meta_sync\" or \"no_sync\"")
        }
        if let places = object["places"], places.stringValue == nil {
            throw OptionsError("places must be \"bundled\", \"none\" or the path of a CGEO file")
        }
        switch object["places"]?.stringValue {
        case nil, "bundled": places = .bundled
        case "none": places = .none
        case let path?: places = .index(try PlaceIndex(contentsOfFile: path))
        }
    }
}
