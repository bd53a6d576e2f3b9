#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a host can ask the wallet to do (``WalletManager/dispatch(_:)``).
public enum WalletManagerAction: Sendable {
    /// WalletManager/createIdentity(name:server:).
    case createIdentity(name: String, server: String)
    /// WalletManager/importSeed(_:name:server:).
    case importSeed(SecretBytes, name: String, server: String)
    /// WalletManager/importBackup(_:passphrase:).
    case importBackup([UInt8], passphrase: String)
    /// WalletManager/setProfile(name:server:).
    case setProfile(name: String?, server: String?)
    /// WalletManager/setStrictMode(_:).
    case setStrictMode(Bool)
}

/// What the wallet tells the host, after the fact.
public enum WalletManagerReconcileMessage: Sendable, Equatable, ReconcileMessage {
    /// The manager's name in its log lines and in the C ABI's update records (`"manager"`).
    public static let manager = "wallet"

    /// A new identity was created; `id` is its public key (base64url).
    case identityCreated(id: String)
    /// An identity was imported from its seed.
    case identityImported(id: String)
    /// A backup was restored: the identity and `friendCount` friends.
    case backupRestored(id: String, friendCount: Int)
    /// The display name or the relay changed (both given as they now are).
    case profileChanged(name: String, server: String)
    /// Strict mode (refuse fetched locations the relay did not vouch for) was turned on or off.
    case strictModeChanged(Bool)
    /// The identity rotated (PROTOCOL.md §9.1); `revoked`: the old key was declared compromised.
    case identityRotated(from: String, to: String, revoked: Bool)
    /// A dispatched action failed: the failure's stable code (``InternalError``, 199, for an error from outside CoordsCore) and its description.
    case errorOccurred(code: Int32, message: String)
}

/// The user's own profile: display name and relay.
public struct Profile: Sendable, Equatable, Codable {
    /// The name friends see in your link.
    public var name: String
    /// Your relay, exactly as your link gives it.
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
        // No identity loaded (get's only error) is the case that may go on.
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
        // No identity loaded (get's only error): the import may go on.
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
        // A store that cannot be read is an error, never an empty name or server written back.
        let current = try profile()
        try storeProfile(name: name ?? current.name, server: server ?? current.server) { _ in }
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

    // MARK: Rotation (PROTOCOL.md §9)

    /// Rotates the identity: a new Ed25519 key (and, optionally, a new relay) bound to the old one
    /// by a statement both keys sign. The new key becomes the identity at once; the old seed stays
    /// in the keychain until every friend has the statement (``MessagesManager/queueRotationStatements(onlyFor:)``
    /// seals it from the old identity; delivered outbox entries tick friends off), then it is
    /// wiped. ``CoordsApp/rotateIdentity(server:revoke:)`` does the whole sequence.
    /// - Parameters:
    ///   - newServer: the new relay (nil: stay on the current one).
    ///   - revoke: the old key is compromised (a lost device; run it from a restored backup):
    ///     friends refuse everything it signs from now on (§9.2).
    /// - Returns: the statement.
    /// - Throws: ``WalletManagerError/noIdentity``, ``WalletManagerError/noServer``,
    ///   ``WireError/invalidServerURL(_:)``, ``WireError/invalidRotation(_:)``, keychain and store errors.
    public func rotate(server newServer: String? = nil, revoke: Bool = false) throws -> RotationStatement {
        let old = try context.identity.get()
        let current = try context.database.read { tx in try tx.open(Tables.settings).get(SettingKey.server) }
        guard let server = newServer ?? current, !server.isEmpty else { throw WalletManagerError.noServer }
        try Self.validate(server: server)
        let new = try Ed25519SigningKey.generate(using: context.random)
        let statement = try RotationStatement.make(old: old.signing, new: new, server: server, at: context.clock.now(), revokes: revoke)
        let friendIDs = try context.database.read { tx in
            try tx.open(Tables.friends).entries().filter { $0.value.trust != .blocked }.map { $0.key.base64URL }
        }
        // A statement still owed to some friends is kept as a link of the chain they follow, with
        // the seed it needs under a name of its own (issue 37: rotating twice stranded them).
        let owed = try context.database.read { tx in try tx.open(Tables.rotation).get(RotationState.key) }
        var link: RotationLink?
        if let owed, let text = owed.statement, !owed.pending.isEmpty, let from = owed.previous.last,
            let seed = try context.keychain.load(name: IdentityHolder.previousKeychainName)
        {
            try context.keychain.save(seed, name: RotationLink.keychainName(for: from))
            link = RotationLink(from: from, statement: text, pending: owed.pending)
        }
        // Keychain first (the old seed kept under its own name), then the store: a crash between
        // the two leaves the new identity loaded and the statement unsent, which a rotate retry
        // replaces with a fresh one.
        try context.keychain.save(old.signing.seed, name: IdentityHolder.previousKeychainName)
        let id = try install(new)
        try reconciler.write(context.database) { tx, messages in
            try tx.open(Tables.settings).put(SettingKey.server, server)
            let rotation = try tx.open(Tables.rotation)
            var state = try rotation.get(RotationState.key) ?? RotationState()
            if let link { state.older = (state.older ?? []) + [link] }
            state.previous.append(old.id)
            state.statement = String(decoding: statement.json.serialized(), as: UTF8.self)
            state.pending = friendIDs
            try rotation.put(RotationState.key, state)
            // Sessions and prekeys belong to the old identity (PROTOCOL.md §10.11).
            try SessionsManager.endIdentity(tx)
            // The next upload is the new identity's: nothing it signs is older than this.
            let uploads = try tx.open(Tables.uploadState)
            var upload = try uploads.get(UploadState.key) ?? UploadState()
            upload.lastUploadedFix = nil
            upload.pendingFixes = []
            try uploads.put(UploadState.key, upload)
            messages.append(.identityRotated(from: old.id, to: id, revoked: revoke))
        }
        return statement
    }

    /// Wipes the previous identity's seed when no friend waits for its rotation statement any
    /// more (delivered outbox entries also do this as the last one goes).
    /// - Throws: keychain and store errors.
    public func finishRotationIfDelivered() throws {
        let pending = try context.database.read { tx in try tx.open(Tables.rotation).get(RotationState.key)?.pending ?? [] }
        if pending.isEmpty { try context.keychain.delete(name: IdentityHolder.previousKeychainName) }
    }

    /// The identities this one rotated from (b64u ids), oldest first.
    /// - Throws: store errors.
    public nonisolated func previousIdentities() throws -> [String] {
        try context.database.read { tx in try tx.open(Tables.rotation).get(RotationState.key)?.previous ?? [] }
    }

    /// A signed delete of the previous identity's blob from its relay (§9.1: the old blob goes
    /// away once the new identity uploads), while the previous seed is still in the keychain.
    /// - Parameter server: the relay the previous identity published to.
    /// - Throws: ``WalletManagerError/noIdentity`` when no previous seed is kept, keychain errors.
    public nonisolated func preparePreviousDelete(server: String) throws -> PreparedRequest {
        guard let seed = try context.keychain.load(name: IdentityHolder.previousKeychainName) else { throw WalletManagerError.noIdentity }
        let old = try Ed25519SigningKey(seed: seed)
        // Later than anything the old key signed: the relay refuses a delete not newer than the upload.
        let now = context.clock.now()
        let timestamp = try context.database.write { tx in
            let table = try tx.open(Tables.uploadState)
            var state = try table.get(UploadState.key) ?? UploadState()
            let signed = LocationManager.nextSignedTimestamp(&state, now: now)
            try table.put(UploadState.key, state)
            return signed
        }
        return try RelayAPI.prepareDelete(timestamp: timestamp, signer: old, server: server)
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
                exportedAt: context.clock.now(), previous: try tx.open(Tables.rotation).get(RotationState.key)?.previous)
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
        // A backup of the identity this one rotated to (PROTOCOL.md §9.1) replaces it: the later one wins.
        if let existing = try? context.identity.get(), existing.publicKey != signing.publicKey, contents.previous?.contains(existing.id) != true {
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
            if let previous = contents.previous, !previous.isEmpty {
                let rotation = try tx.open(Tables.rotation)
                var state = try rotation.get(RotationState.key) ?? RotationState()
                state.previous = previous
                try rotation.put(RotationState.key, state)
            }
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
        reconciler = Reconciler(spine, as: AppUpdate.wallet, from: \.wallet, logger: context.logger)
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
    /// Identities this one rotated from (PROTOCOL.md §9.1), oldest first; absent before rotations.
    var previous: [String]?
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
