import CPlatform
import Logging

/// Any manager's reconcile message, as ``CoordsApp/nextUpdate(timeout:)`` delivers them.
public enum AppUpdate: Sendable, Equatable {
    /// A ``WalletManager`` message.
    case wallet(WalletManagerReconcileMessage)
    /// A ``FriendsManager`` message.
    case friends(FriendsManagerReconcileMessage)
    /// A ``LocationManager`` message.
    case location(LocationManagerReconcileMessage)
    /// An ``OutboxManager`` message.
    case outbox(OutboxManagerReconcileMessage)
    /// A ``MessagesManager`` message.
    case messages(MessagesManagerReconcileMessage)
    /// A ``GroupsManager`` message.
    case groups(GroupsManagerReconcileMessage)
}

extension AppUpdate {
    /// The message when it is a ``WalletManager``'s (the spine routes effect lists by these).
    var wallet: WalletManagerReconcileMessage? { if case .wallet(let m) = self { m } else { nil } }
    /// The message when it is a ``FriendsManager``'s.
    var friends: FriendsManagerReconcileMessage? { if case .friends(let m) = self { m } else { nil } }
    /// The message when it is a ``LocationManager``'s.
    var location: LocationManagerReconcileMessage? { if case .location(let m) = self { m } else { nil } }
    /// The message when it is an ``OutboxManager``'s.
    var outbox: OutboxManagerReconcileMessage? { if case .outbox(let m) = self { m } else { nil } }
    /// The message when it is a ``MessagesManager``'s.
    var messages: MessagesManagerReconcileMessage? { if case .messages(let m) = self { m } else { nil } }
    /// The message when it is a ``GroupsManager``'s.
    var groups: GroupsManagerReconcileMessage? { if case .groups(let m) = self { m } else { nil } }
}

/// The result of waiting for an update.
public enum NextUpdate: Sendable, Equatable {
    /// A manager sent this update.
    case update(AppUpdate)
    /// No update came within the timeout.
    case timedOut
    /// The app was closed; no more updates will come.
    case closed
}

/// The root object for one data directory: the store, the keychain and the managers.
///
/// ```swift
/// let app = try CoordsApp.open(directory: "/var/lib/me/coords", options: .init(keychain: .file(.passphrase("…"))))
/// let id = try await app.wallet.createIdentity(name: "Alice", server: "https://coord.is")
/// let upload = try await app.location.prepareUpload(try Location(latitude: 47.37, longitude: 8.54, timestamp: now))
/// ```
/// There is no process-wide instance: open as many apps (on different directories) as you
/// like. The directory holds `store/` (LMDB, 0600) and, with the file keychain, `keychain.bin` (0600).
public final class CoordsApp: Sendable {
    /// Where the identity key lives.
    public enum KeychainChoice: Sendable {
        /// ``FileKeychain`` in the data directory, unlocked with a host key or a passphrase.
        case file(FileKeychain.Unlock)
        /// The host's own keychain.
        case custom(any Keychain)
    }

    /// How to open an app.
    public struct Options: Sendable {
        /// Where the identity key lives (the file keychain, or the host's own).
        public var keychain: KeychainChoice
        /// Argon2id cost of a new passphrase keychain (default: interactive).
        public var keychainParameters: Argon2id.Parameters = .interactive
        /// Argon2id cost of exported backups (default: moderate).
        public var backupParameters: Argon2id.Parameters = .moderate
        /// Capacity of each manager's reconcile channel; when full, messages are dropped with a warning.
        public var updateCapacity: Int = 256
        /// The clock every manager reads (``TimeSource/system``; tests pass a fixed one).
        public var clock: TimeSource = .system
        /// The source of nonces, keys and ids (tests pass a deterministic one).
        public var random: any RandomSource = SystemRandomSource()
        /// Where the core logs (never a secret): swift-log, label `coords.core` by default.
        public var logger = Logger(label: "coords.core")
        /// How the LMDB store is opened (map size, durability, …).
        public var store = Database.Options()
        /// Where friends' place names come from (``FriendLocation/place``): the bundled
        /// `cities15000` set by default, a loaded index (e.g. `cities1000`), or none.
        public var places: PlaceSource = .bundled

        /// Options with `keychain` and every other setting at its default.
        public init(keychain: KeychainChoice) { self.keychain = keychain }
    }

    /// The data directory.
    public let directory: String
    /// Your identity, profile, backups and rotation.
    public let wallet: WalletManager
    /// Your friends: adding, trust, sharing and pausing.
    public let friends: FriendsManager
    /// Your position for friends, and theirs for you: uploads and fetches.
    public let location: LocationManager
    /// Requests waiting to be sent (offline), retried with backoff.
    public let outbox: OutboxManager
    /// Sealed 1:1 messages through the relay (§7).
    public let messages: MessagesManager
    /// Forward secrecy (§10): own prekeys, friends' bundles, sessions.
    public let sessions: SessionsManager
    /// Groups (§11): circles of friends sharing positions and messages.
    public let groups: GroupsManager
    /// The live channel's client side (§8): which relays to hold WebSockets to and what their
    /// frames mean. The host owns the sockets.
    public let live: LiveSession
    let context: AppContext
    /// The host loop's tickets and periodic requests (``due(now:only:ignoringBackoff:)``).
    let loop = HostLoop()
    /// Every manager's update channel, in one list.
    private let spine: UpdateSpine

    /// Opens (creating if needed) the app in `directory` and loads the identity if there is one.
    /// The store is sealed at rest under a key kept in the keychain (`store.dek`, made on first
    /// open); a store written in the clear by 1.0.0 is migrated into a new sealed file first.
    /// - Throws: ``KeychainError/wrongPassphrase`` (checked at open), ``StoreError`` (including
    ///   ``StoreError/alreadyOpen(path:)`` when this directory is already open in this process,
    ///   ``StoreError/storeKeyMissing`` and ``StoreError/wrongStoreKey`` when the keychain does not
    ///   hold this store's key),
    ///   ``KeychainError``, ``CryptoError``.
    public static func open(directory: String, options: Options) throws -> CoordsApp {
        if mkdir(directory, 0o700) != 0 && coords_errno() != EEXIST {
            throw StoreError.openFailed(path: directory, .system(coords_errno()))
        }
        let keychain: any Keychain
        switch options.keychain {
        case .file(let unlock):
            keychain = try FileKeychain(
                path: directory + "/keychain.bin", unlock: unlock,
                parameters: options.keychainParameters, random: options.random)
        case .custom(let custom):
            keychain = custom
        }
        let database = try SealedStore.open(
            directory: directory, options: options.store, keychain: keychain, random: options.random,
            progress: { options.logger.notice("\($0)") })
        do {
            let identity = IdentityHolder()
            if let seed = try keychain.load(name: IdentityHolder.keychainName) {
                identity.set(try Identity(signing: Ed25519SigningKey(seed: seed)))
            }
            let context = AppContext(
                database: database, keychain: keychain, identity: identity, clock: options.clock,
                random: options.random, logger: options.logger, backupParameters: options.backupParameters,
                places: options.places)
            return CoordsApp(directory: directory, context: context, capacity: options.updateCapacity)
        } catch {
            database.close()
            throw error
        }
    }

    /// Replaces the store's key (DEK): a new random key, every value sealed again under it, the
    /// old key destroyed (docs/STORE.md, "Rekey"). Crash-safe: after a kill at any point the
    /// store opens with the old key or the new one. Other transactions wait while it runs.
    /// - Throws: ``StoreError`` (``StoreError/sealedValueRejected(table:reason:)`` for a damaged
    ///   value: nothing changes then), ``KeychainError``.
    public func rekeyStore() throws {
        try SealedStore.rekey(database: context.database, keychain: context.keychain, random: context.random)
    }

    private init(directory: String, context: AppContext, capacity: Int) {
        self.directory = directory
        self.context = context
        // The spine makes and registers each manager's channel; nextUpdate and close walk it in
        // this order.
        let spine = UpdateSpine(capacity: capacity)
        self.spine = spine
        // Each manager is given only managers below it in the stated order (docs/ARCHITECTURE.md,
        // Manager order), so no two of them can hold each other. The spine walks the channels in
        // the order made here.
        wallet = WalletManager(context: context, spine: spine)
        sessions = SessionsManager(context: context)
        friends = FriendsManager(context: context, spine: spine)
        location = LocationManager(context: context, spine: spine)
        outbox = OutboxManager(context: context, spine: spine, location: location)
        groups = GroupsManager(context: context, outbox: outbox, location: location, spine: spine)
        messages = MessagesManager(context: context, outbox: outbox, groups: groups, spine: spine)
        live = LiveSession(context: context, location: location, messages: messages)
    }

    /// Closes the store and ends the update channels (listeners finish after draining).
    /// Later calls on the managers throw ``StoreError/closed``. Idempotent.
    public func close() {
        context.database.close()
        spine.close()
    }

    /// Whether ``close()`` was called.
    public var isClosed: Bool { context.database.isClosed }

    /// Waits for the next reconcile message of any manager (wallet, friends, location, outbox,
    /// then messages when several are queued). For hosts that poll (the C ABI); Swift hosts may instead
    /// iterate each manager's `updates`. The two compete: each message is delivered once.
    /// - Parameter timeout: how long to wait; nil waits until a message arrives or the app closes.
    public func nextUpdate(timeout: Duration?) -> NextUpdate {
        let deadline = timeout.map(monotonicDeadline(after:))
        while true {
            let generation = spine.doorbell.generation
            if let update = spine.next() { return .update(update) }
            if spine.isFinished { return .closed }
            if !spine.doorbell.wait(after: generation, until: deadline) { return .timedOut }
        }
    }
}

// MARK: Identity rotation (PROTOCOL.md §9)

/// What ``CoordsApp/rotateIdentity(server:revoke:)`` prepared: send `statements` (or let the
/// outbox retry them), `upload`, then `deletePrevious`.
public struct IdentityRotation: Sendable {
    /// The signed statement.
    public var statement: RotationStatement
    /// The new id (b64u).
    public var id: String
    /// One envelope per friend, from the previous identity, queued in the outbox (kind `rotation`).
    public var statements: [OutboxEntry]
    /// The last fix, sealed and signed by the new identity (nil when nothing was shared yet).
    public var upload: PreparedUpload?
    /// A delete of the previous identity's blob from its relay, signed by the previous key.
    public var deletePrevious: PreparedRequest
}

extension CoordsApp {
    /// Rotates the identity end to end (PROTOCOL.md §9.1): new key (and relay, optionally),
    /// statements for every friend in the outbox, the new identity's upload, and the delete of
    /// the old blob. With `revoke` the old key is declared compromised (§9.2): run it from a
    /// restored backup on a new device after a loss.
    /// - Throws: ``WalletManagerError/noIdentity``, ``WalletManagerError/noServer``,
    ///   ``WireError/invalidServerURL(_:)``, keychain and store errors.
    public func rotateIdentity(server: String? = nil, revoke: Bool = false) async throws -> IdentityRotation {
        let previousServer = try wallet.profile().server
        let statement = try await wallet.rotate(server: server, revoke: revoke)
        let deletePrevious = try wallet.preparePreviousDelete(server: previousServer)
        let statements = try await messages.queueRotationStatements()
        try await wallet.finishRotationIfDelivered()
        let upload = try await location.prepareReseal(force: true)
        return IdentityRotation(
            statement: statement, id: statement.new.base64URL, statements: statements, upload: upload, deletePrevious: deletePrevious)
    }
}
