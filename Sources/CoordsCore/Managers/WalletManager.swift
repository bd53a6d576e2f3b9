#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a host can ask the wallet to do (``WalletManager/dispatch(_:)``).
public enum WalletManagerAction: Sendable {
    case createIdentity(name: String, server: String)
    case importSeed(SecretBytes, name: String, server: String)
    case importBackup([UInt8], passphrase: String)
    case setProfile(name: String?, server: String?)
    case setStrictMode(Bool)
}

/// What the wallet tells the host, after the fact.
public enum WalletManagerReconcileMessage: Sendable, Equatable, ReconcileMessage {
    case identityCreated(id: String)
    case identityImported(id: String)
    case backupRestored(id: String, friendCount: Int)
    case profileChanged(name: String, server: String)
    case strictModeChanged(Bool)
    case errorOccurred(code: Int32, message: String)
}

/// The user's own profile: display name and relay.
public struct Profile: Sendable, Equatable, Codable {
    public var name: String
    public var server: String
}

/// The identity wallet: creates or imports the Ed25519 identity (kept in the ``Keychain``),
/// exports and imports encrypted backups, and answers questions about the identity (id, friend
/// link, safety numbers, signatures). The private key never leaves the core except inside an
/// encrypted backup.
public actor WalletManager {
    /// Reconcile messages, after the change they describe was committed.
    public nonisolated var updates: Receiver<WalletManagerReconcileMessage> { reconciler.updates }

    /// Performs `action`; a failure is reported as ``WalletManagerReconcileMessage/errorOccurred(code:message:)``.
    public func dispatch(_ action: WalletManagerAction) {
        reconciler.reportingFailure {
            switch action {
            case .createIdentity(let name, let server): _ = try createIdentity(name: name, server: server)
            case .importSeed(let seed, let name, let server): _ = try importSeed(seed, name: name, server: server)
            case .importBackup(let data, let passphrase): _ = try importBackup(data, passphrase: passphrase)
            case .setProfile(let name, let server): try setProfile(name: name, server: server)
            case .setStrictMode(let strict): try setStrictMode(strict)
            }
        }
    }

    // MARK: Identity

    /// Creates a new identity and stores its seed in the keychain.
    /// - Returns: the new id (base64url public key).
    /// - Throws: ``WalletManagerError/identityExists(id:)``, ``WireError/invalidServerURL(_:)``,
    ///   keychain and store errors.
    public func createIdentity(name: String, server: String) throws -> String {
        try Self.validate(server: server)
        if let existing = try? context.identity.get() { throw WalletManagerError.identityExists(id: existing.id) }
        let signing = try Ed25519SigningKey.generate(using: context.random)
        let id = try install(signing)
        try storeProfile(name: name, server: server) { $0.append(.identityCreated(id: id)) }
        return id
    }

    /// Imports an identity from its 32-byte seed.
    /// - Throws: ``WalletManagerError/identityExists(id:)`` when another identity is loaded,
    ///   ``CryptoError/invalidKeyLength(what:expected:actual:)``, keychain and store errors.
    public func importSeed(_ seed: SecretBytes, name: String, server: String) throws -> String {
        try Self.validate(server: server)
        let signing = try Ed25519SigningKey(seed: seed)
        if let existing = try? context.identity.get(), existing.publicKey != signing.publicKey {
            throw WalletManagerError.identityExists(id: existing.id)
        }
        let id = try install(signing)
        try storeProfile(name: name, server: server) { $0.append(.identityImported(id: id)) }
        return id
    }

    /// Changes the display name and/or relay.
    /// - Throws: ``WireError/invalidServerURL(_:)``, store errors.
    public func setProfile(name: String?, server: String?) throws {
        if let server { try Self.validate(server: server) }
        let current = try? profile()
        try storeProfile(name: name ?? current?.name ?? "", server: server ?? current?.server ?? "") { _ in }
    }

    /// Strict mode refuses fetched entries the relay did not signature-stamp (PROTOCOL.md §6):
    /// safer against a malicious relay, but a reference relay's entries are then all refused.
    /// - Throws: store errors.
    public func setStrictMode(_ strict: Bool) throws {
        try reconciler.write(context.database) { tx, messages in
            try tx.open(Tables.settings).put(SettingKey.strictMode, strict)
            messages.append(.strictModeChanged(strict))
        }
    }

    private func install(_ signing: Ed25519SigningKey) throws -> String {
        let identity = try Identity(signing: signing)
        try context.keychain.save(signing.seed, name: IdentityHolder.keychainName)
        context.identity.set(identity)
        return identity.id
    }

    private func storeProfile(name: String, server: String, extra: (inout [WalletManagerReconcileMessage]) -> Void) throws {
        try reconciler.write(context.database) { tx, messages in
            let settings = try tx.open(Tables.settings)
            try settings.put(SettingKey.name, name)
            if !server.isEmpty { try settings.put(SettingKey.server, server) }
            extra(&messages)
            messages.append(.profileChanged(name: name, server: server))
        }
    }

    static func validate(server: String) throws {
        _ = try RelayAPI.endpoint(server: server, path: "")
    }

    // MARK: Getters (synchronous, from the keychain-loaded identity and the store)

    /// Whether an identity is loaded.
    public nonisolated var hasIdentity: Bool { context.identity.isLoaded }

    /// The identity's public key.
    /// - Throws: ``WalletManagerError/noIdentity``.
    public nonisolated func publicKey() throws -> Ed25519PublicKey { try context.identity.get().publicKey }

    /// The identity's id (base64url public key).
    /// - Throws: ``WalletManagerError/noIdentity``.
    public nonisolated func id() throws -> String { try context.identity.get().id }

    /// The stored profile.
    /// - Throws: store errors.
    public nonisolated func profile() throws -> Profile {
        try context.database.read { tx in
            let settings = try tx.open(Tables.settings)
            return Profile(name: try settings.get(SettingKey.name) ?? "", server: try settings.get(SettingKey.server) ?? "")
        }
    }

    /// Whether strict mode is on (see ``setStrictMode(_:)``).
    /// - Throws: store errors.
    public nonisolated func isStrictMode() throws -> Bool { try context.isStrictMode() }

    /// The user's own friend link (`coord://…`), to share with friends.
    /// - Throws: ``WalletManagerError/noIdentity``, ``WalletManagerError/noServer``.
    public nonisolated func friendLink() throws -> String {
        let identity = try context.identity.get()
        let profile = try profile()
        guard !profile.server.isEmpty else { throw WalletManagerError.noServer }
        return FriendLink(publicKey: identity.publicKey, server: profile.server, name: profile.name).link
    }

    /// The safety number shared with `friend` (PROTOCOL.md §7.4); both sides see the same digits.
    /// - Throws: ``WalletManagerError/noIdentity``.
    public nonisolated func safetyNumber(with friend: Ed25519PublicKey) throws -> String {
        SafetyNumber.compute(try context.identity.get().publicKey, friend)
    }

    /// Signs `message` with the identity.
    /// - Throws: ``WalletManagerError/noIdentity``.
    public nonisolated func sign(_ message: [UInt8]) throws -> [UInt8] {
        try context.identity.get().signing.signature(for: message)
    }

    // MARK: Backups

    /// Exports the identity, profile and friends, encrypted under `passphrase` (see docs/BACKUP.md).
    /// - Throws: ``WalletManagerError/noIdentity``, ``CryptoError``, store errors.
    public func exportBackup(passphrase: String) throws -> [UInt8] {
        let identity = try context.identity.get()
        let profile = try profile()
        let contents = try context.database.read { tx -> BackupContents in
            let strict = try tx.open(Tables.settings).get(SettingKey.strictMode) == true
            let friends = try tx.open(Tables.friends).entries().map { key, record in
                BackupContents.Friend(
                    id: key.base64URL, name: record.name, server: record.server, shareWith: record.shareWith,
                    fetchFrom: record.fetchFrom, addedAt: record.addedAt, trust: record.trust, shareUntil: record.shareUntil)
            }
            return BackupContents(
                name: profile.name, server: profile.server, strictMode: strict, friends: friends,
                exportedAt: context.clock.now())
        }
        return try Backup.seal(
            seed: identity.signing.seed, contents: contents, passphrase: passphrase,
            parameters: context.backupParameters, random: context.random)
    }

    /// Restores a backup: identity (into the keychain), profile and friends.
    /// - Returns: the restored id.
    /// - Throws: ``WalletManagerError/wrongPassphrase``, ``WalletManagerError/invalidBackup(_:)``,
    ///   ``WalletManagerError/unsupportedBackupVersion(_:)``, ``WalletManagerError/identityExists(id:)``
    ///   (another identity is loaded), keychain and store errors.
    public func importBackup(_ data: [UInt8], passphrase: String) throws -> String {
        let (seed, contents) = try Backup.open(data, passphrase: passphrase)
        let signing = try Ed25519SigningKey(seed: seed)
        if let existing = try? context.identity.get(), existing.publicKey != signing.publicKey {
            throw WalletManagerError.identityExists(id: existing.id)
        }
        var friends: [(Ed25519PublicKey, FriendRecord)] = []
        for friend in contents.friends {
            guard let key = try? Ed25519PublicKey(base64URL: friend.id), let x = try? X25519PublicKey(ed25519: key) else {
                throw WalletManagerError.invalidBackup("friend \(friend.id.prefix(8))… has an invalid key")
            }
            friends.append(
                (
                    key,
                    FriendRecord(
                        name: friend.name, server: friend.server, shareWith: friend.shareWith,
                        fetchFrom: friend.fetchFrom, addedAt: friend.addedAt,
                        x25519PublicKey: Base64.encode(x.rawRepresentation), trust: friend.trust, shareUntil: friend.shareUntil)
                ))
        }
        let id = try install(signing)
        try reconciler.write(context.database) { tx, messages in
            let settings = try tx.open(Tables.settings)
            try settings.put(SettingKey.name, contents.name)
            if !contents.server.isEmpty { try settings.put(SettingKey.server, contents.server) }
            try settings.put(SettingKey.strictMode, contents.strictMode)
            let table = try tx.open(Tables.friends)
            let limits = try tx.open(Tables.shareLimits)
            for (key, restored) in friends {
                // Never widen a share (PROTOCOL.md §9.3): what this device has now, or remembers
                // of a removed friend, limits what the backup says.
                var record = restored
                let current = try table.get(key)
                let limit = try limits.get(key)
                if current?.shareWith == false || limit?.paused == true { record.shareWith = false }
                record.shareUntil = [record.shareUntil, current?.shareUntil, limit?.until].compactMap { $0 }.min()
                try table.put(key, record)
            }
            messages.append(.backupRestored(id: id, friendCount: friends.count))
        }
        return id
    }

    // MARK: Wiring

    let context: AppContext
    let reconciler: Reconciler<WalletManagerReconcileMessage>

    init(context: AppContext, spine: UpdateSpine) {
        self.context = context
        reconciler = Reconciler(spine, as: AppUpdate.wallet, manager: "wallet", logger: context.logger)
    }
}

/// The plaintext of a backup after the seed.
struct BackupContents: Codable, Sendable {
    struct Friend: Codable, Sendable {
        var id: String, name: String, server: String, shareWith: Bool, fetchFrom: Bool, addedAt: UInt64, trust: TrustState
        /// When sharing ends (ms); absent in backups made before expiring shares.
        var shareUntil: UInt64?
    }
    var name: String
    var server: String
    var strictMode: Bool
    var friends: [Friend]
    var exportedAt: UInt64
}

/// The backup file format, version 1 (docs/BACKUP.md).
///
/// ```
/// "CRDSBKUP" (8) | version 1 (1) | opsLimit u64 | memLimit u64 | salt (16) | nonce (12)
///   | AES-256-GCM(key = Argon2id(passphrase, salt), seed (32) ‖ UTF-8 JSON contents) + tag
/// ```
/// The first 53 bytes are the associated data, so no header field can be changed unnoticed.
enum Backup {
    static let magic = Array("CRDSBKUP".utf8)
    static let version: UInt8 = 1
    static let headerByteCount = 53

    static func seal(
        seed: SecretBytes, contents: BackupContents, passphrase: String, parameters: Argon2id.Parameters,
        random: any RandomSource
    ) throws -> [UInt8] {
        let salt = try random.bytes(Argon2id.saltByteCount)
        let nonce = try random.bytes(AES256GCM.nonceByteCount)
        var header = magic + [version]
        header.appendBigEndian(parameters.opsLimit)
        header.appendBigEndian(parameters.memLimitBytes)
        header += salt + nonce
        let key = try Argon2id.deriveKey(passphrase: passphrase, salt: salt, parameters: parameters)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = Array(try encoder.encode(contents))
        let plaintext = SecretBytes(count: seed.count + json.count) { out in
            seed.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[0..<$0.count]).copyMemory(from: $0) }
            json.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[seed.count...]).copyMemory(from: $0) }
        }
        return header + (try AES256GCM.seal(plaintext, key: key, nonce: try AES256GCM.Nonce(nonce), associatedData: header))
    }

    static func open(_ data: [UInt8], passphrase: String) throws -> (seed: SecretBytes, contents: BackupContents) {
        guard data.count >= headerByteCount + AES256GCM.tagByteCount + Ed25519SigningKey.seedByteCount else {
            throw WalletManagerError.invalidBackup("too short (\(data.count) bytes)")
        }
        guard Array(data[0..<8]) == magic else { throw WalletManagerError.invalidBackup("not a CoordsCore backup (bad magic)") }
        guard data[8] == version else { throw WalletManagerError.unsupportedBackupVersion(data[8]) }
        // The length was checked above, so both fields are there.
        let parameters = Argon2id.Parameters(
            opsLimit: try ByteReader.bigEndian(UInt64.self, in: data, at: 9),
            memLimitBytes: try ByteReader.bigEndian(UInt64.self, in: data, at: 17))
        let salt = Array(data[25..<41])
        let nonce = Array(data[41..<53])
        let key: SecretBytes
        do {
            key = try Argon2id.deriveKey(passphrase: passphrase, salt: salt, parameters: parameters)
        } catch CryptoError.invalidParameter(let why) {
            throw WalletManagerError.invalidBackup("key derivation parameters out of range: \(why)")
        }
        let plaintext: SecretBytes
        do {
            plaintext = try AES256GCM.openSecret(
                Array(data[headerByteCount...]), key: key, nonce: try AES256GCM.Nonce(nonce),
                associatedData: Array(data[0..<headerByteCount]))
        } catch CryptoError.authenticationFailed {
            throw WalletManagerError.wrongPassphrase
        }
        let seed = try plaintext.slice(0..<Ed25519SigningKey.seedByteCount)
        let json = plaintext.withUnsafeBytes { Data($0[Ed25519SigningKey.seedByteCount...]) }  // not secret
        let contents: BackupContents
        do {
            contents = try JSONDecoder().decode(BackupContents.self, from: json)
        } catch {
            throw WalletManagerError.invalidBackup("contents are not valid: \(error)")
        }
        return (seed, contents)
    }
}
